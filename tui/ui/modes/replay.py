"""Replay mode: play a recording in the live panes (``ReplayView``).

Contract:
- ``PlayerMode`` holds what a replay and an attached view share: a
  ``Playback`` (``tui/ui/replay_view.py``, over the ``ReplayPlayer`` of
  ``tui/ui/replay_clock.py``) and its keys: space (play / pause), s and
  1 / 2 / 3 (speed), left / right (seek 10 s), home / end.
- ``ReplayMode`` plays ``ReplayView.session`` by its records' time stamps,
  from ``ReplayView.speed``; when its ``loader`` has not read the whole
  recording yet, the rest is read after the first frame. After a suspend it
  goes on from where it was shown, not from where the wall clock went.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import ClassVar

from probetop.tui.run.viewconfig import ReplayView
from probetop.tui.ui.modes.base import Mode, ModeHost
from probetop.tui.ui.replay_clock import ReplayPlayer
from probetop.tui.ui.replay_view import REPLAY_FRAME_S, Playback
from textual.app import SystemCommand
from textual.binding import Binding

# Priority: the scrolling pane container binds left / right / home / end
# too and would eat them first; where no player runs the shell's
# check_action disables these, so the keys fall through to scrolling (and
# the arrows to moving between panes) again.
PLAYER_BINDINGS = [
    Binding("space", "play_pause", "Play/pause"),
    Binding("s", "cycle_speed", "Speed"),
    Binding("1", "speed(1)", "1x", show=False),
    Binding("2", "speed(10)", "10x", show=False),
    Binding("3", "speed(0)", "max", show=False),
    Binding("left", "seek(-10)", "-10s", show=False, priority=True),
    Binding("right", "seek(10)", "+10s", show=False, priority=True),
    Binding("home", "seek_to(0)", "Start", show=False, priority=True),
    Binding("end", "seek_to(-1)", "End", show=False, priority=True),
]
PLAYER_ACTIONS = frozenset({"play_pause", "cycle_speed", "speed", "seek", "seek_to"})


class PlayerMode(Mode):
    """A mode whose records come from a recording, through ``self.playback``."""

    ACTIONS: ClassVar[frozenset[str]] = PLAYER_ACTIONS
    playback: Playback

    def __init__(self, host: ModeHost, playback: Playback) -> None:
        super().__init__(host)
        self.playback = playback

    def play_pause(self) -> None:
        self.playback.play_pause()

    def set_speed(self, speed: float) -> None:
        """0 means as fast as the display keeps up ("max")."""
        self.playback.set_speed(speed)

    def cycle_speed(self) -> None:
        self.playback.cycle_speed()

    async def seek(self, t: float) -> None:
        """Show the view at ``t`` s from the start; a negative ``t``: the end."""
        player = self.playback.player
        await self.playback.seek(player.duration_s if t < 0 else t)

    async def seek_by(self, delta: float) -> None:
        await self.playback.seek(self.playback.player.position_s + delta)

    def status_parts(self) -> list[tuple[int, str] | tuple[int, str, str]]:
        return list(self.playback.status_parts())

    def commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Play / pause replay", "space", self.play_pause)
        yield SystemCommand("Replay speed", "1x -> 10x -> max", self.cycle_speed)


class ReplayMode(PlayerMode):
    """See the module docstring."""

    def __init__(self, host: ModeHost, config: ReplayView) -> None:
        session = config.session
        player = ReplayPlayer(session.records(), session.duration_s)
        super().__init__(host, Playback(host, player, replayed=session))
        self.config = config

    async def start(self) -> None:
        self.install_signal_handlers()
        loader, host = self.config.loader, self.host
        if self.playback.start_replay(self.config.session, loader, self.config.speed):
            assert loader is not None
            reader = self.playback.read_rest(loader)
            host.call_after_refresh(lambda: host.run_worker(reader))
        host.set_interval(REPLAY_FRAME_S, self.frame)
        self.frame()

    def frame(self) -> None:
        if not self.host.screens_gone():
            self.playback.replay_frame()

    def view_resumed(self) -> None:
        self.playback.player.start_clock(time.monotonic())
