"""Replay and attached views: what the dashboard shows when its records come
from a recording instead of running probes.

Contract:
- ``Playback(host, player, replayed=SESSION | attached=ATTACHED)`` drives one
  ``ReplayPlayer`` (``tui/ui/replay_clock.py``: the records' clock, speed,
  seeking) for the dashboard (``host``, the app: it routes records to panes,
  rebuilds them, draws the status line). It owns no timer: the mode
  controller (``tui/ui/modes/replay.py``, ``attach.py``) calls
  ``replay_frame`` / ``attached_frame`` every ``REPLAY_FRAME_S``.
- Replay (``start_replay``, at a speed): records play by their time stamps; a recording
  still being read (a ``SessionLoader``) grows the player a step at a time
  (``read_rest``) and seeking waits until it is all in.
- Attached (``start_attached``, a detached session's recording followed
  live): a long history shows its newest minutes first (``preview``), then
  loads a slice per frame and the panes are rebuilt from the start once it
  is all in. Pausing or seeking back leaves live; reaching the end (or
  ``end``) returns to it.
- ``status_parts()`` says where the view stands, as (rank, text) for the
  app's status line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from probetop.probes.core.iothread import IoThread
from probetop.probes.core.sample import Record
from probetop.probes.record import RecordingError
from probetop.tui.ui.replay_clock import ReplayPlayer, speed_label

if TYPE_CHECKING:  # the reader loads with the recording (tui/commands/replay.py)
    from probetop.probes.record import Session, SessionLoader
    from probetop.tui.sessions.attach import AttachedSession

REPLAY_FRAME_S = 0.25
HISTORY_SLICE = 2 << 20  # bytes of a long history an attached view reads per frame
READ_STEP_BYTES = 1 << 20  # bytes of a replayed recording read between two screen updates
RECORDING_NOTE_S = 10.0  # how long a problem with the recording stays on screen


def fmt_clock(seconds: float) -> str:
    """mm:ss, or h:mm:ss from an hour on."""
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class PlaybackHost(Protocol):
    """What ``Playback`` needs from the dashboard."""

    def route(self, records: Iterable[Record], render: bool = True) -> None: ...
    def render_dirty(self) -> None: ...
    async def rebuild_panes(self, records: list[Record]) -> None: ...
    def refresh_status(self) -> None: ...
    def say(
        self,
        message: str,
        *,
        title: str = "",
        severity: str = "information",
        timeout: float | None = None,
    ) -> None: ...
    def fail(self, error: RecordingError) -> None: ...


class Playback:
    """See the module docstring."""

    def __init__(
        self,
        host: PlaybackHost,
        player: ReplayPlayer,
        *,
        replayed: Session | None = None,
        attached: AttachedSession | None = None,
    ) -> None:
        self.host = host
        self.player = player
        self.replayed = replayed  # the recording a replay plays
        self.attached_session = attached  # the session an attached view follows
        self.live = True  # attached: showing the newest records as they come
        self.loading_history = False  # attached: a long history is still being read

    @property
    def attached(self) -> bool:
        return self.attached_session is not None

    # -- replay --------------------------------------------------------
    def start_replay(
        self, session: Session, loader: SessionLoader | None, speed: float = 1.0
    ) -> bool:
        """Set the replay going at ``speed``; True if ``read_rest(loader)``
        must run next (the recording is still being read: the mode runs it
        after the first frame)."""
        self.player.set_speed(speed)
        pending = loader is not None and not loader.done
        if pending:
            self.player.loading = True
        else:
            self.replay_loaded(session)
        self.player.start_clock(time.monotonic())
        return pending

    async def read_rest(self, loader: SessionLoader) -> None:
        """Read the recording a step at a time, yielding to the screen between
        steps; the player gets each step's records. A bad line ends the app
        (``host.fail``: exit 2, ``tui/commands/replay.py`` prints its message)."""
        lines = loader.session.lines
        have = len(lines)
        # Each step reads in a daemon thread: a recording on a hung disk
        # leaves the dashboard running (and never keeps the process alive).
        reading = IoThread("probetop-replay-read")
        try:
            while not loader.done:
                try:
                    await reading.run(loader.step, READ_STEP_BYTES)
                except RecordingError as exc:
                    self.host.fail(exc)
                    return
                self.player.grow(lines[have:])
                have = len(lines)
        finally:
            reading.stop()
        self.replay_loaded(loader.session)

    def replay_loaded(self, session: Session) -> None:
        self.player.loaded(session.duration_s)
        for warning in session.warnings:
            self.host.say(warning, title="recording", severity="warning", timeout=RECORDING_NOTE_S)
        self.host.refresh_status()

    def replay_frame(self) -> None:
        records = self.player.tick(time.monotonic())
        if records:
            self.host.route(records)
        if not self.player.paused or records:
            self.host.refresh_status()

    # -- attached to a detached session -------------------------------
    async def start_attached(self) -> None:
        attached = self.attached_session
        assert attached is not None
        try:
            preview = attached.preview()
        except RecordingError:
            preview = []  # said by the first poll
        self.loading_history = bool(preview)
        if preview:
            self.host.route([record for _t, record in preview])
        await self.attached_frame()

    async def attached_frame(self) -> None:
        attached, player = self.attached_session, self.player
        if attached is None:
            return
        try:
            player.extend(attached.poll(HISTORY_SLICE if self.loading_history else None))
        except RecordingError as exc:
            self.host.say(str(exc), title="recording", severity="error", timeout=RECORDING_NOTE_S)
            self.loading_history = False
        if self.loading_history:
            if not attached.caught_up:
                self.host.render_dirty()  # preview panes mounted since the last frame
                self.host.refresh_status()
                return
            self.loading_history = False  # all in: the panes from the session's start
            await self.host.rebuild_panes(player.follow())
            self.host.refresh_status()
            return
        if not self.live and not player.paused and player.at_end:
            self.live = True  # played up to the newest record
        records = player.follow() if self.live else player.tick(time.monotonic())
        if records:
            self.host.route(records)
        self.host.refresh_status()

    # -- keys ----------------------------------------------------------
    def play_pause(self) -> None:
        if self.live and self.attached:
            self.live = False  # pausing an attached view holds it where it is
            self.player.paused = False
        self.player.toggle_pause()
        self.player.start_clock(time.monotonic())
        self.host.refresh_status()

    def set_speed(self, speed: float) -> None:
        """0 means as fast as the display keeps up ("max")."""
        self.player.set_speed(math.inf if float(speed) <= 0 else float(speed))
        self.host.refresh_status()

    def cycle_speed(self) -> None:
        self.player.cycle_speed()
        self.host.refresh_status()

    async def seek(self, t: float) -> None:
        """Show the view at ``t`` s from the start (clamped by the player);
        backwards rebuilds the panes from the start."""
        if self.loading_history:
            self.host.say("the session's history is still loading")
            return
        if self.player.loading:  # a replay's recording is still being read
            self.host.say("still reading the recording: seeking works once it is read")
            return
        rebuild, records = self.player.seek(t)
        if self.attached:
            self.live = self.player.position_s >= self.player.duration_s
            self.player.start_clock(time.monotonic())
        if rebuild:
            await self.host.rebuild_panes(records)
        else:
            self.host.route(records)
        self.host.refresh_status()

    # -- status --------------------------------------------------------
    def status_parts(self) -> list[tuple[int, str] | tuple[int, str, str]]:
        """(rank, text) for the status line (see ``tui.ui.app.fit_status``)."""
        player, attached = self.player, self.attached_session
        end = fmt_clock(player.duration_s)
        if attached is not None:
            state = attached.state
            text = f"attached {attached.name} ({state})"
            if state.startswith("reconnecting"):
                # The link is down: the line says so first, never "live". The
                # ssh error made this part too long at 100 columns, so it was
                # dropped whole and the line said "live 00:23" alone.
                short = f"attached {attached.name} ({state.partition(': ')[0]})"
                return [(7, text, short), (5, f"link down, shown up to {end}")]
            parts: list[tuple[int, str] | tuple[int, str, str]] = [(4, text)]
            if self.loading_history:
                parts.append((5, f"newest records shown; reading the history: {end}"))
            elif self.live:
                parts.append((5, f"live {end}  d: detach"))
            else:
                state = "paused" if player.paused else "playing"
                parts.append((5, f"{state} {fmt_clock(player.position_s)} / {end}  end: live"))
            return parts
        if self.replayed is None:
            return []
        state = "paused" if player.paused else "ended" if player.at_end else "playing"
        if player.loading:
            end = "reading..."
        return [
            (3, f"replay {self.replayed.path.name}"),
            (5, f"{state} {speed_label(player.speed)}  {fmt_clock(player.position_s)} / {end}"),
        ]
