"""`probetop stop NAME`: stop a detached session cleanly and print its report."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probetop.probes.core.options import CommandSpec, Option, OptionValueError, parse_duration
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.sessions.control import stop_session
from probetop.tui.sessions.registry import SessionError, SessionInfo, find


def _wait_seconds(text: str) -> float:
    """--wait: a duration (``parse_duration``: 30, 90s, 2m) within 0.1..86400 s."""
    value = parse_duration(text)
    if not 0.1 <= value <= 86400:
        raise OptionValueError(f"must be within 0.1..86400 seconds, got {text}")
    return value


SPEC = CommandSpec(
    name="stop",
    help="stop a detached session and print its report",
    description="""\
Stop a session started with --detach, as SIGTERM stops a headless run: the
probes stop, the recording gets its footer, and the session's report (what
--headless would have printed) is shown here. Without NAME, the only running
session. Exit status 0 when it ended as asked, else the session's own (74: its
recording could not be completed; 99: an --assert failed). A session that had
already finished (--time) is not stopped again: its report and its status are
given all the same (`probetop rm NAME` removes it).
""",
    options=(
        Option(("session",), "the session's name (`probetop ls`)", metavar="NAME", nargs="?"),
        Option(
            ("--wait",),
            "seconds to wait for the session to finish (default 30; 0.1 to 86400)",
            parse=_wait_seconds,
            default=30.0,
            metavar="S",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class StopSettings:
    session: str | None
    wait_s: float = 30.0


def settings(values: Mapping[str, Any], common: CommonOptions) -> StopSettings:
    wait = values.get("wait")
    return StopSettings(session=values.get("session"), wait_s=30.0 if wait is None else float(wait))


def run(plan: RunPlan[StopSettings]) -> int:
    info = find(plan.settings.session)
    if info.state == "finished":
        # Ended by itself (--time, an error) before this stop: its report and
        # its status, as a stop that came just in time would have given them.
        _print_report(info, plan.common.json)
        print(
            f"probetop: session {info.name} had already ended (exit {info.exit_code}); "
            f"recording: {info.recording}; `probetop rm {info.name}` removes it",
            file=sys.stderr if plan.common.json else sys.stdout,
        )
        return exit_status(info)
    if not info.live:
        raise SessionError(
            f"session {info.name} is not running ({info.state}: its process ended without "
            f"a report); recording: {info.recording}; log: {info.log}"
        )
    done = stop_session(info, plan.settings.wait_s)
    if done is None:  # stopped while starting: the command that started it said so
        print(f"probetop: session {info.name} stopped before its probes started; "
              "nothing was recorded and it is not listed")  # fmt: skip
        return 0
    _print_report(done, plan.common.json)
    print(
        f"probetop: session {done.name} {done.state}; recording: {done.recording}",
        file=sys.stderr if plan.common.json else sys.stdout,
    )
    return exit_status(done)


def _print_report(done: SessionInfo, as_json: bool) -> None:
    """The session's report: its log (what --headless printed), or with
    --json one JSON document on stdout, whatever the session printed."""
    if as_json:
        _json_report(done)
        return
    try:
        sys.stdout.write(Path(done.log).read_text())
    except OSError as exc:
        print(f"probetop: warning: cannot read {done.log}: {exc.strerror}", file=sys.stderr)


def _json_report(done: SessionInfo) -> None:
    """``report --json`` of the session's recording: `stop NAME --json` printed
    the session's text report, which no JSON reader takes."""
    from probetop.probes.record import load_session
    from probetop.tui.commands.report import print_report

    session = load_session(done.recording)  # RecordingError: exit 2 with its message
    for warning in session.warnings:
        print(f"probetop: warning: {warning}", file=sys.stderr)
    print_report(session, charts=False, as_json=True)


STOPPED_AS_ASKED = (0, 128 + 1, 128 + 2, 128 + 15)
"""A session's exit status when it ended as `stop` asked (SIGTERM's 143; a
command that reports an interrupted run as 130 or 129)."""


def exit_status(done: SessionInfo) -> int:
    """0 when the session ended as asked; else its own status, so a recording
    that could not be completed (74), a failed --assert (99) or an error is
    never hidden behind a successful `stop`. 1 if it died without one."""
    if done.state != "finished" or done.exit_code is None:
        return 1
    return 0 if done.exit_code in STOPPED_AS_ASKED else done.exit_code
