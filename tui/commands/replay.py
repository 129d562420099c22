"""`probetop replay FILE`: play a recording in the same panes as a live run."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.options import CommandSpec, Option
from probetop.probes.record import SessionLoader
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.commands.report import print_report
from probetop.tui.run.termtext import printable
from probetop.tui.run.viewconfig import Display, ReplayView, parse_speed

SPEC = CommandSpec(
    name="replay",
    help="play a recording in the dashboard (pause, speed, seek)",
    description="""\
Play a recording made with --record in the same panes as a live session.
Keys: space pause/resume, 1/2/3 speed 1x/10x/max, left/right seek 10 s,
home/end jump to start/end. With --headless (or no terminal) it prints the
same summary as `probetop report --no-charts`.
""",
    options=(
        Option(("file",), "a recording (JSON Lines) made with --record", metavar="FILE"),
        Option(("--speed",), "initial playback speed", choices=("1", "10", "max"), default="1"),
    ),
)


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    file: str
    speed: str = "1"


def settings(values: Mapping[str, Any], common: CommonOptions) -> ReplaySettings:
    return ReplaySettings(file=values["file"], speed=values.get("speed", "1"))


HEAD_BYTES = 1 << 18
"""Read before the dashboard opens: minutes of a demo recording, milliseconds
of work. The rest is read while the first frame is on the screen."""


def run(plan: RunPlan[ReplaySettings]) -> int | ReplayView:
    """Headless: the report's summary. Otherwise the dashboard, replaying: it
    opens on the recording's head and reads the rest while it shows it; a
    bad line found then ends the dashboard (exit 2) and is reported exactly
    as one found before it opened (``ReplayMode`` in tui/ui/modes/replay.py,
    through ``Playback.read_rest``)."""
    loader = SessionLoader(plan.settings.file)  # RecordingError: exit 2 with its message
    if plan.common.wants_headless:
        plan.common.note_theme_ignored()
        with loader:
            session = loader.finish()
        for warning in session.warnings:
            print(f"probetop: warning: {printable(warning)}", file=sys.stderr)
        return print_report(session, charts=False, as_json=plan.common.json)
    loader.step(HEAD_BYTES)  # a bad line there: RecordingError (it closes the file)
    title = f"probetop replay {plan.settings.file}"
    return ReplayView(
        loader.session,
        Display(theme=plan.common.theme, command=tuple(plan.common.argv), title=title),
        loader=loader,
        speed=parse_speed(plan.settings.speed),
    )
