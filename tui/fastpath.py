"""The console script: a one-off ``probetop http URL`` without the dashboard's imports.

Scripts call ``probetop http URL`` once per request in loops, as they call curl
and pycurlb (issue 28): the process must start and finish about as fast as
pycurlb's. ``tui.main`` imports what every other command needs (asyncio, the
runner, the session registry, the passive probes); a one-off needs none of it.

Contract: ``entry()`` is the ``probetop`` console script. A command line
that can only be a one-off http request (``http`` first; every ``--option``
spelled out in full and one of curl's, or ``--json``/``--headless``; no
``--`` and no help) is parsed by the same parser as ``tui.main`` and run by
the same command's ``run``, with ``tui.main``'s exit codes and
messages. Anything else, and a plan that turns out not to be a one-off, goes
to ``tui.main`` unchanged (its imports are then paid as before). Every
path makes its dataclasses and patterns from ``tui/run/codecache.py``'s
cache (one for the one-off, one for the rest), saved after ``main``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the stop-signal handler goes in before the other imports)
import gc

# No cyclic garbage collection while the modules load: the classes, dataclasses
# and option tables they build are kept for the process's life, and each of
# the ~17 collections they set off (a one-off's imports) walks them all again.
# ``main`` turns it back on before it runs anything (tui/run/importgc.py).
gc.disable()

from probetop.probes.core import stopsignals

stopsignals.install()  # as tui.main: a signal during start-up is never lost

import os
import sys
from collections.abc import Sequence
from typing import Any

from probetop.tui.run import codecache
from probetop.tui.run.importgc import collect_from_now

#: Common options a one-off takes; any other changes the mode or needs tui.main.
_ONE_OFF_COMMON = ("--json", "--headless")


def one_off_candidate(args: Sequence[str]) -> bool:
    """Whether ``args`` can only be a one-off http request (a cheap look at the
    words; the parsed plan decides in the end)."""
    if not args or args[0] != "http" or "--" in args:
        return False
    from probetop.probes.http import CURL_GROUP, SPEC

    allowed = set(_ONE_OFF_COMMON)
    allowed.update(f for option in SPEC.options if option.group == CURL_GROUP for f in option.flags)
    for word in args[1:]:
        if word in ("-h", "--help"):
            return False
        if word.startswith("--") and word.split("=", 1)[0] not in allowed:
            return False  # a mode option, a common option, or an abbreviation
    return True


def _is_one_off(plan: Any) -> bool:
    common = plan.common
    return (
        plan.command == "http"
        and plan.settings.one_off
        and not plan.settings.watch
        and common.record is None
        and not common.detach
        and common.remote is None
        and common.metrics is None
        and common.textfile is None
        and not common.assertions
    )


def _remember_gettext_lookups() -> None:
    """argparse asks gettext for each of its strings (about 45 for the parser
    tui.cli.parser builds for a one-off, ~55 for the dashboard's), and gettext
    searches the locale directories anew every time, failures included: about
    a third of a one-off's run (profiled), ~5 ms before a dashboard's fork.
    The answer cannot change within a process, so it is kept after the first."""
    import functools
    import gettext

    gettext.find = functools.lru_cache(maxsize=64)(gettext.find)  # type: ignore[assignment]


def _body_key() -> bytes:
    """tui.main's key of request bodies' hashes, its module loaded only when
    a request has a body."""
    from probetop.tui.sessions.registry import body_key

    return body_key()


def _run_full(plan: Any) -> int:
    """A plan the words did not tell apart from a one-off: tui.main runs it."""
    from probetop.probes.record import RecordingError, redact_text
    from probetop.tui.main import run_plan
    from probetop.tui.sessions.registry import SessionError

    try:
        return run_plan(plan)
    except (RecordingError, SessionError) as exc:
        print(f"probetop: error: {redact_text(str(exc))}", file=sys.stderr)
        return exc.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """``tui.main.main``, with one-off http requests run without its imports."""
    args = sys.argv[1:] if argv is None else list(argv)
    # Before the first dataclass and pattern: their code from the last runs' cache.
    codecache.install("http-one-off" if args[:1] == ["http"] else "main")
    if not one_off_candidate(args):
        _remember_gettext_lookups()  # its parser asks as many (~55 for `demo`)
        from probetop.tui.main import main as full_main  # its imports: no collector either

        collect_from_now()
        return full_main(argv)
    if stopsignals.pending():
        return stopsignals.exit_status()
    stopsignals.interrupt_from_now()
    from probetop.probes.core.base import ProbeError

    _remember_gettext_lookups()
    from probetop.probes.record import hide_cmdline_secrets, redact_text, set_body_key_loader
    from probetop.tui.cli.parser import build_parser, make_plan, parse_args

    if argv is None:
        hide_cmdline_secrets()  # as tui.main: ps shows every user the command line
    set_body_key_loader(_body_key)  # as tui.main: -d bodies' hashes in --json
    try:
        # The command is http (one_off_candidate): the others' names decide nothing.
        namespace = parse_args(build_parser({"http"}, others=False), args)
        plan = make_plan(namespace, sys.argv if argv is None else ["probetop", *args])
        if not _is_one_off(plan):
            collect_from_now()
            code = _run_full(plan)
        else:
            from probetop.tui.commands import load

            command = load("http")
            assert command is not None
            collect_from_now()  # the requests run as they always did
            code = int(command.run(plan) or 0)
        sys.stdout.flush()  # a failed write of a buffered report: below, not ignored (tui.main)
        return code
    except ProbeError as exc:
        print(f"probetop: error: {redact_text(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return stopsignals.exit_status()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as exc:
        from probetop.tui.run.launch import output_failed

        code = output_failed(exc)
        if code is None:
            raise
        return code


def entry() -> None:
    """The console script: ``main``, then exit at once (as ``tui.main.entry``)."""
    from probetop.tui.run.hardexit import exit_now, flush_output  # light: os, sys, threading
    from probetop.tui.run.stdio import lost_output, reopen_closed  # light: os, sys

    closed = reopen_closed()  # `probetop ... >&-`: no traceback after the run
    code: int | None = None
    try:
        code = lost_output(closed, main())
        flush_output()
        codecache.save()  # once the output is out: when this run compiled something new
    except KeyboardInterrupt:  # past main's own handling (a flood of kill): its status
        code = None
    exit_now(code)


if __name__ == "__main__":
    entry()
