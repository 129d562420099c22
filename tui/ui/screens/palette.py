"""The dashboard's entries in the command palette (ctrl+p).

Every action the keys reach, plus one entry per running probe ("Stop probe
...") and per pane ("Maximise ..."), built from the app's state each time
the palette opens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol

from probetop.tui.run.livesession import LiveSession
from probetop.tui.ui.replay_clock import ReplayPlayer
from textual.app import SystemCommand


class Dashboard(Protocol):
    """What the palette reads and reaches on the dashboard (the app), so this
    module does not import the app that imports it."""

    @property
    def display_paused(self) -> bool: ...
    @property
    def show_hidden(self) -> bool: ...
    @property
    def session(self) -> LiveSession | None: ...
    @property
    def player(self) -> ReplayPlayer | None: ...
    @property
    def panes(self) -> Mapping[str, Any]: ...

    def action_help(self) -> None: ...
    def action_maximise(self, probe_id: str | None = None) -> None: ...
    def action_pause_display(self) -> None: ...
    def action_toggle_hidden(self) -> None: ...
    def action_add_probe(self) -> None: ...
    def action_toggle_record(self) -> None: ...
    def action_play_pause(self) -> None: ...
    def action_cycle_speed(self) -> None: ...
    def stop_probe(self, probe_id: str) -> Awaitable[None]: ...
    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...


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
    session = app.session
    if session is not None:
        yield SystemCommand(
            "Add a probe",
            "Type a probetop command line, e.g. cpu --threads 1",
            app.action_add_probe,
        )
        for pid in session.running():
            yield SystemCommand(
                f"Stop probe {pid}",
                "Cancel it; its pane keeps the data",
                lambda pid=pid: app.run_worker(app.stop_probe(pid)),
            )
        recording = session.recorder is not None
        yield SystemCommand(
            "Stop recording" if recording else "Start recording",
            "Close the recording (footer written)"
            if recording
            else "Record this session to a JSON Lines file",
            app.action_toggle_record,
        )
    if app.player is not None:
        yield SystemCommand("Play / pause replay", "space", app.action_play_pause)
        yield SystemCommand("Replay speed", "1x -> 10x -> max", app.action_cycle_speed)
    for pid in app.panes:
        yield SystemCommand(
            f"Maximise {pid}",
            "Chart this pane's longer history",
            lambda pid=pid: app.action_maximise(pid),
        )
