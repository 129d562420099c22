"""`probetop attach [NAME]`: the dashboard on a detached session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.options import CommandSpec, Option
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.viewconfig import AttachView, Display
from probetop.tui.sessions.attach import AttachedSession
from probetop.tui.sessions.registry import SessionError, find, started

SPEC = CommandSpec(
    name="attach",
    help="show a detached session in the dashboard, with its whole history",
    description="""\
Open the dashboard on a session started with --detach. The panes show the
session's whole history from its start, then follow it live. Keys: left/right
seek 10 s back/forward, home its start, end back to live, space pause;
d detaches (the session keeps running); q asks whether to stop the session.
Any number of views may attach at once. Without NAME, the only running
session.
""",
    options=(
        Option(("session",), "the session's name (`probetop ls`)", metavar="NAME", nargs="?"),
    ),
)


@dataclass(frozen=True, slots=True)
class AttachSettings:
    session: str | None


def settings(values: Mapping[str, Any], common: CommonOptions) -> AttachSettings:
    return AttachSettings(session=values.get("session"))


def run(plan: RunPlan[AttachSettings]) -> AttachView:
    info = find(plan.settings.session)
    if plan.common.wants_headless:
        raise SessionError(
            "attach shows the dashboard and needs a terminal; "
            "`probetop ls` lists sessions, `probetop report FILE` summarises a recording"
        )
    return AttachView(
        AttachedSession.open(started(info)),  # a starting one has no recording yet
        Display(
            theme=plan.common.theme,
            command=tuple(plan.common.argv),
            title=f"probetop attach {info.name}",
        ),
    )
