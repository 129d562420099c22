"""`probetop rm NAME...`: forget ended detached sessions and delete their files."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.options import CommandSpec, Option
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.sessions.registry import SessionError, find, remove, session_dirs

SPEC = CommandSpec(
    name="rm",
    help="remove ended detached sessions and their files",
    description="""\
Remove sessions that have ended (finished or died; `probetop ls`): their
metadata, and their recording and log when they live in the state directory
($XDG_STATE_HOME/probetop). A recording written with --record elsewhere is
yours and stays where it is. A running session is refused: stop it first.
Each removed file is named on stdout. Exit status 0 when every NAME was
removed, 2 when one was not (no such session, still running); the others
are removed all the same.
""",
    options=(
        Option(("sessions",), "the sessions' names (`probetop ls`)", metavar="NAME", nargs="+"),
    ),
)


@dataclass(frozen=True, slots=True)
class RmSettings:
    sessions: tuple[str, ...]


def settings(values: Mapping[str, Any], common: CommonOptions) -> RmSettings:
    return RmSettings(sessions=tuple(values.get("sessions") or ()))


def run(plan: RunPlan[RmSettings]) -> int:
    try:
        # The directories once, before any name: refused, it is one error
        # (was: the same line again for every NAME given).
        session_dirs()
    except SessionError as exc:
        print(f"probetop: error: {exc}", file=sys.stderr)
        return exc.exit_code
    status = 0
    for name in plan.settings.sessions:
        try:
            info = find(name)
            for path in remove(info):
                print(f"removed {path}")
        except SessionError as exc:
            print(f"probetop: error: {exc}", file=sys.stderr)
            status = exc.exit_code
    return status
