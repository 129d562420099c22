"""The dashboard's entries in the command palette (ctrl+p).

Every action the keys reach, plus one entry per pane ("Maximise ..."),
built from the app's state each time the palette opens; the mode's own
entries (live: add / stop a probe, record; replay: play, speed) come from
its controller (``tui/ui/modes/``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from textual.app import SystemCommand


class Dashboard(Protocol):
    """What the palette reads and reaches on the dashboard (the app), so this
    module does not import the app that imports it."""

    @property
    def display_paused(self) -> bool: ...
    @property
    def show_hidden(self) -> bool: ...
    @property
    def panes(self) -> Mapping[str, Any]: ...

    def action_help(self) -> None: ...
    def action_maximise(self, probe_id: str | None = None) -> None: ...
    def action_pause_display(self) -> None: ...
    def action_toggle_hidden(self) -> None: ...
    def mode_commands(self) -> Iterable[SystemCommand]: ...


def dashboard_commands(app: Dashboard) -> Iterable[SystemCommand]:
    """The palette entries for ``app`` as it is now."""
    yield SystemCommand("Help", "Keys and what every pane's numbers mean", app.action_help)
    yield SystemCommand(
        "Maximise pane", "Chart the focused pane's longer history", app.action_maximise
    )
    yield SystemCommand(
        "Pause display" if not app.display_paused else "Resume display",
        "Freeze the panes; probes and recording go on",
        app.action_pause_display,
    )
    yield SystemCommand(
        "Show idle devices" if not app.show_hidden else "Hide idle devices",
        "Idle and virtual network interfaces, idle loop devices",
        app.action_toggle_hidden,
    )
    yield from app.mode_commands()  # the mode's own (tui/ui/modes/)
    for pid in app.panes:
        yield SystemCommand(
            f"Maximise {pid}",
            "Chart this pane's longer history",
            lambda pid=pid: app.action_maximise(pid),
        )
