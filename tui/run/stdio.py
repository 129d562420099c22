"""Standard streams a parent closed (``probetop ... >&-``, ``2>&-``, ``<&-``).

Python leaves ``sys.stdout`` (``stderr``, ``stdin``) None when its
descriptor was closed at start-up: every report, note and error message
then either raised AttributeError (a traceback and exit 1 after the whole
run) or, through ``print(file=None)``, went to stdout instead of stderr.

Contract:
- ``reopen_closed()`` opens /dev/null on each of descriptors 0-2 that is
  closed (so no later ``open`` takes its number and no write fails there),
  gives ``sys`` a stream for it, and returns the numbers that were closed.
  Idempotent. Call it first thing in a console entry point.
- ``lost_output(closed, code)``: the exit status once ``main`` returned:
  a run that succeeded but whose stdout was closed could not write its
  report: 74 (EX_IOERR, as a full disk), said on stderr when it is open.
"""

from __future__ import annotations

import os
import sys

REPORT_LOST_EXIT = 74  # EX_IOERR: the report could not be written (README's table)


def reopen_closed() -> frozenset[int]:
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if 0 in closed or sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (lives as long as sys)
    if 1 in closed or sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if 2 in closed or sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    return frozenset(closed)


def lost_output(closed: frozenset[int], code: int) -> int:
    if 1 not in closed or code != 0:
        return code
    if 2 not in closed:
        print(
            "probetop: error: cannot write the output: stdout was closed (>&-); "
            "redirect it (> FILE, > /dev/null) instead",
            file=sys.stderr,
        )
    return REPORT_LOST_EXIT
