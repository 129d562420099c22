"""Attach mode: follow a detached session's recording (``AttachView``).

Contract:
- The same player as a replay (``PlayerMode``) over the session's recording,
  read from its start and followed as it grows (``Playback.attached_frame``
  every ``REPLAY_FRAME_S``); seeking back leaves live, end returns to it.
  A ``RemoteAttachedSession`` (``--remote HOST``) streams it over ssh.
- d closes the view and leaves the session running; q asks whether to stop
  the session (``StopSessionScreen``) while it runs. Nothing runs probes here.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from probetop.tui.run.viewconfig import AttachView
from probetop.tui.sessions.registry import SessionError
from probetop.tui.ui.modes.base import ModeHost
from probetop.tui.ui.modes.replay import PLAYER_ACTIONS, PlayerMode
from probetop.tui.ui.replay_clock import ReplayPlayer
from probetop.tui.ui.replay_view import REPLAY_FRAME_S, Playback
from probetop.tui.ui.screens.stop_session import StopSessionScreen


class AttachMode(PlayerMode):
    """See the module docstring."""

    ACTIONS: ClassVar[frozenset[str]] = PLAYER_ACTIONS | {"detach"}

    def __init__(self, host: ModeHost, config: AttachView) -> None:
        super().__init__(host, Playback(host, ReplayPlayer([]), attached=config.attached))
        self.config = config

    async def start(self) -> None:
        self.install_signal_handlers()
        await self.playback.start_attached()
        self.host.set_interval(REPLAY_FRAME_S, self.frame)

    async def frame(self) -> None:
        if not self.host.screens_gone():
            await self.playback.attached_frame()

    async def detach(self) -> None:
        """Leave the session running and close this view."""
        self.host.exit(0, return_code=0)

    async def quit(self) -> bool:
        attached = self.config.attached
        if attached.state not in ("starting", "running"):
            return False
        if not isinstance(self.host.screen, StopSessionScreen):
            self.host.push_screen(StopSessionScreen(attached.name), self._quit_answered)
        return True

    def _quit_answered(self, answer: bool | None) -> None:
        if answer is None:
            return
        if answer is False:  # d at the question: leave the session running
            self.host.exit(0, return_code=0)
            return
        self.host.run_worker(self._stop_session(), exclusive=True)

    async def _stop_session(self) -> None:
        attached = self.config.attached
        self.host.notify(f"stopping {attached.name}...")
        try:
            await asyncio.to_thread(attached.stop)
        except SessionError as exc:
            self.host.notify(str(exc), title="not stopped", severity="error", timeout=10)
            return
        self.host.exit(0, return_code=0)

    async def unmount(self, quitting: bool) -> None:
        await super().unmount(quitting)
        self.config.attached.close()
