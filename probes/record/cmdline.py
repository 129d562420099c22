"""This process's command line, as other users see it, redacted in place.

``/proc/PID/cmdline`` (what ``ps``, ``top`` and ``pgrep -f`` show) is
readable by every user of the machine. ``probetop http -u bob:pw -H
'Authorization: Bearer T' ...`` put the password and the token there for the
process's whole life, and a detached session (forked from the command)
carried them for hours. curl overwrites its ``-u`` argument for the same
reason.

Contract:
- ``hide_cmdline_secrets()`` rewrites the bytes of this process's argument
  area (``arg_start``..``arg_end``, fields 48-49 of ``/proc/self/stat``) with
  the command line passed through ``redact_argv``: the same rules as a
  recording's header (credentials, secret headers, URL user-info and
  credential parameters; a request body shows its length only: ``<11
  bytes>``). The area cannot grow: a redacted
  command line longer than the original (a body becomes its digest) is cut
  at the end; a shorter one is padded with NULs. Python's ``sys.argv`` is a
  copy and is not touched: the program goes on with the real values.
- It returns True when the area now holds no secret (nothing to hide, or
  rewritten and read back), False when it could not be rewritten (no
  ``/proc``, an area that does not hold this process's arguments).
- Call it as early as possible and before any fork: a process forked later
  (a detached session) starts with the redacted area. Between ``exec`` and
  the call (the imports, a fraction of a second) the original is visible:
  run commands holding secrets with them in a file (``-H @file``, ``-d
  @file``) where that matters.
"""

from __future__ import annotations

import os
import re
import sys

from probetop.probes.record.redaction import redact_argv

_ARG_START_FIELD = 48  # /proc/PID/stat, 1-based (proc(5))
# A body's digest is shown as its length only: shorter (the area cannot
# grow), and no hash of a guessable body for every user to try candidates on.
_DIGEST = re.compile(r"<(\d+) bytes, [a-z0-9-]+:[0-9a-f]+>")


def _arg_area() -> tuple[int, int] | None:
    try:
        with open("/proc/self/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces and parentheses)
    # start at field 3.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        start = int(fields[_ARG_START_FIELD - 3])
        end = int(fields[_ARG_START_FIELD - 2])
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def _read_cmdline() -> bytes | None:
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def redacted_area(current: bytes, size: int) -> bytes | None:
    """The ``size`` bytes to write over an argument area holding ``current``
    (NUL-terminated arguments); None when nothing needs hiding."""
    args = [os.fsdecode(a) for a in current.split(b"\0")[:-1]]
    redacted = redact_argv(args)
    if redacted == args:
        return None
    shown = [_DIGEST.sub(r"<\1 bytes>", a) for a in redacted]
    new = b"\0".join(os.fsencode(a) for a in shown) + b"\0"
    if len(new) > size:
        new = new[: size - 1] + b"\0"
    return new.ljust(size, b"\0")


def hide_cmdline_secrets() -> bool:
    """Redact this process's command line in place (see the module docstring)."""
    if not sys.platform.startswith("linux"):
        return False
    area = _arg_area()
    current = _read_cmdline()
    if area is None or current is None:
        return False
    start, end = area
    if len(current) != end - start or not current.endswith(b"\0"):
        return False  # not the area as exec left it (already rewritten elsewhere?)
    new = redacted_area(current, end - start)
    if new is None:
        return True
    import ctypes  # here: only a command line with a secret pays for it

    ctypes.memmove(start, new, len(new))
    after = _read_cmdline()
    return after is not None and after.rstrip(b"\0") == new.rstrip(b"\0")
