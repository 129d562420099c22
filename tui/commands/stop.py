"""`probetop stop NAME`: stop a detached session cleanly and print its report."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probetop.probes.core.options import CommandSpec, Option
from probetop.tui.plan import CommonOptions, RunPlan
from probetop.tui.sessions.control import stop_session
from probetop.tui.sessions.registry import SessionError, find

SPEC = CommandSpec(
    name="stop",
    help="stop a detached session and print its report",
    description="""\
Stop a session started with --detach, as SIGTERM stops a headless run: the
probes stop, the recording gets its footer, and the session's report (what
--headless would have printed) is shown here. Without NAME, the only running
session.
""",
    options=(
        Option(("session",), "the session's name (`probetop ls`)", metavar="NAME", nargs="?"),
        Option(
            ("--wait",),
            "seconds to wait for the session to finish (default 30)",
            parse=float,
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
    return StopSettings(session=values.get("session"), wait_s=float(values.get("wait") or 30.0))


def run(plan: RunPlan[StopSettings]) -> int:
    info = find(plan.settings.session)
    if info.state != "running":
        raise SessionError(f"session {info.name} is not running ({info.state})")
    done = stop_session(info, plan.settings.wait_s)
    try:
        sys.stdout.write(Path(done.log).read_text())
    except OSError as exc:
        print(f"probetop: warning: cannot read {done.log}: {exc.strerror}", file=sys.stderr)
    print(f"probetop: session {done.name} {done.state}; recording: {done.recording}")
    return 0 if done.state == "finished" else 1
