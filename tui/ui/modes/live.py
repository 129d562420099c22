"""Live mode: run probes and show them (``LiveView``).

Contract:
- The ``LiveSession`` (``tui/run/livesession.py``, shared with the headless
  runner) runs the probes, the recording, ``--time`` and the stop signals;
  this controller drains its LOSSY feed once per frame (``frame_seconds``),
  never per record, and hands the records to the shell's ``route``.
- Its keys: a (add a probe from a command line), r (start / stop
  recording), d (detach into a background session, when the process was
  split for it: ``tui.sessions.foreground``).
- ``joining`` probes are made in a daemon thread after the first frame.
- A probe's first sample is drawn when it comes, not at the next frame: the
  feed tells the mode of each record it queues (``Subscription.on_put``),
  and a first sample of a probe with none drawn yet has a frame drawn at
  the loop's next turn (one for all that arrive together). The first number
  then shows as soon as it is measured, not up to a frame (1 s) later;
  nothing looks at the feed on a timer, and afterwards the frame rate is
  fixed as before.
- Suspended where the whole process stops (no waiter), each running probe's
  recording gets a "paused" and a "resumed" status: a gap with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from probetop.probes.core import stopsignals
from probetop.probes.core.base import ProbeError
from probetop.probes.core.hub import Hub
from probetop.probes.core.options import user_path
from probetop.probes.core.sample import Announce, Record, Sample, Status, now_ns
from probetop.probes.record import RecordingError
from probetop.tui.run.livesession import LiveSession
from probetop.tui.run.viewconfig import JoinOutcome, LiveView
from probetop.tui.sessions.foreground import detach_session
from probetop.tui.sessions.jobcontrol import waiter_pid
from probetop.tui.sessions.registry import SessionError
from probetop.tui.ui.modes.base import Mode, ModeHost
from probetop.tui.ui.screens.prompt import add_probe_prompt, record_prompt
from textual.app import SystemCommand
from textual.binding import Binding

if TYPE_CHECKING:
    from probetop.probes.record import Recorder

# Priority: a dialog's key must open it when the key arrives, not when it
# has bubbled back from the focused pane: by then the rest of a burst
# ("r/tmp/x.jsonl<Enter>" typed by tmux) had gone to the pane and was lost,
# and the Enter recorded to the default path. The shell's check_action lets
# them fall through while a dialog is open.
LIVE_BINDINGS = [
    Binding("a", "add_probe", "Add probe", priority=True),
    Binding("r", "toggle_record", "Record", priority=True),
]


def frame_seconds(interval_s: float) -> float:
    """Frame period: the sampling interval, kept within 0.2..1 s.

    Redrawing faster than data arrives only costs CPU and terminal bytes.
    """
    return max(0.2, min(1.0, interval_s))


class LiveMode(Mode):
    """See the module docstring."""

    ACTIONS: ClassVar[frozenset[str]] = frozenset({"add_probe", "toggle_record", "detach"})

    def __init__(self, host: ModeHost, config: LiveView) -> None:
        super().__init__(host)
        self.config = config
        self._detaching = False
        self._stopped_at_ns: int | None = None  # when Ctrl-Z / SIGTSTP stopped the job
        self._unsampled: set[str] = set()  # probes announced, no sample drawn yet
        self._first_frame_due = False  # a frame asked for a first sample, not drawn yet
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def hub(self) -> Hub | None:
        return self.session.hub if self.session is not None else None

    @property
    def recorder(self) -> Recorder | None:
        return self.session.recorder if self.session is not None else None

    async def start(self) -> None:
        config, host = self.config, self.host
        detach = config.detach
        self.session = session = LiveSession(
            list(config.probes),
            record=config.record,
            command=list(config.display.command) or ["probetop"],
            notify=host.say,
            on_change=host.refresh_status,
            footer_fields=config.footer_fields,
            metrics=config.metrics,
            # d detaches this dashboard: every record since the start is kept.
            keep_history=detach is not None and detach.link is not None,
        )
        # Probes announced now (their panes make the first frame), started
        # once it is drawn: neither a probe's first reading nor the
        # recording's header (host facts) holds the first frame back.
        self.feed = session.open()
        self._loop = asyncio.get_running_loop()
        self.feed.on_put = self._queued
        session.install_signal_handlers(host.stop_signalled)
        if (early := stopsignals.pending()) is not None:  # sent during start-up
            host.stop_signalled(early)
        host.set_interval(frame_seconds(config.display.interval_s), self.frame)
        if config.duration_s is not None:
            host.set_timer(config.duration_s, self._time_up)
        host.begin_first_panes()
        self.frame()  # announces: create the panes now, not a frame later
        await host.end_first_panes()
        host.call_after_refresh(self._begin)

    def _begin(self) -> None:
        """After the first frame: the recording and the probes start, then
        the probes that join later are made (``joining``)."""
        if self.session is None:
            return
        self.host.run_worker(self.session.begin(), exclusive=False)
        if self.config.joining is not None:
            self._join_later(self.config.joining)

    def frame(self) -> None:
        """Route what the feed holds (once per frame)."""
        if self.feed is None or self.host.screens_gone():
            return
        records = self.feed.drain()
        self._note_first_samples(records)
        self.host.route(records)
        if self.feed.dropped:
            self.host.refresh_status()

    def _note_first_samples(self, records: list[Record]) -> None:
        """Keep the set of probes with no sample drawn yet (module docstring)."""
        self._first_frame_due = False
        for record in records:
            if isinstance(record, Announce):
                self._unsampled.add(record.probe)
            elif isinstance(record, Sample) or (
                isinstance(record, Status) and record.level == "stopped"
            ):
                self._unsampled.discard(record.probe)

    def _queued(self, record: Record) -> None:
        """The feed queued ``record`` (on the loop): a probe's first sample
        has a frame drawn at the loop's next turn, not at the next frame."""
        if (
            not self._first_frame_due
            and self._unsampled
            and isinstance(record, Sample)
            and record.probe in self._unsampled
            and self._loop is not None
        ):
            self._first_frame_due = True
            # threadsafe: a hub is used from its loop, but a stray put from
            # another thread must not raise into the probe that published
            self._loop.call_soon_threadsafe(self._first_frame)

    def _first_frame(self) -> None:
        if self._first_frame_due:
            self.frame()

    def _join_later(self, joining: Callable[[Callable[[JoinOutcome], None]], None]) -> None:
        """Run ``joining`` (LiveView) in a daemon thread and add each group of
        probes it delivers as it comes. Not the loop's executor: a JIT
        warm-up cannot be interrupted, and asyncio.run would wait for it at
        exit."""
        loop = asyncio.get_running_loop()

        def deliver(outcome: JoinOutcome) -> None:
            if isinstance(outcome, ProbeError):
                self.host.say(str(outcome), title="probes not started", severity="error")
                return
            probes, notes = outcome
            for note in notes:
                self.host.say(note, title="skipped")
            if self.session is not None and probes:
                self.session.add_probes(probes)
                self.frame()  # their panes now, not a frame later

        def send(outcome: JoinOutcome) -> None:  # from any thread
            with contextlib.suppress(RuntimeError):  # the loop closed: we quit meanwhile
                loop.call_soon_threadsafe(deliver, outcome)

        def work() -> None:
            try:
                joining(send)
            except ProbeError as exc:
                send(exc)

        threading.Thread(target=work, name="probes-joining", daemon=True).start()

    async def _time_up(self) -> None:
        if self.session is not None and await self.session.time_up():
            self.frame()
            self.host.notify(f"probes stopped after {self.config.duration_s:g} s (--time)")

    # -- recording -----------------------------------------------------
    async def start_recording(self, path: Path) -> bool:
        return self.session is not None and await self.session.start_recording(path)

    async def stop_recording(self, reason: str) -> None:
        if self.session is not None:
            await self.session.stop_recording(reason)

    def toggle_record(self) -> None:
        """r: stop the recording, or ask where to start one."""
        if self.session is None:
            return
        if self.recorder is not None:
            self.host.run_worker(self.stop_recording("stopped by user"))
            return

        async def answered(path: str | None) -> None:
            if path:
                await self.start_recording(user_path(path))

        self.host.push_screen(record_prompt(), answered)

    # -- add / stop probes -----------------------------------------------
    def add_probe(self) -> None:
        """a: ask for a command line and add its probes."""
        if self.session is None:
            return
        self.host.push_screen(add_probe_prompt(), self.add_probe_line)

    def add_probe_line(self, line: str | None) -> bool:
        """Parse a command line, build its probes and add them. False on any error."""
        if self.session is None:
            return False
        self.host.show_added_panes()  # what the user just added takes the focus
        if not self.session.add_probe_line(line):
            return False
        self.frame()
        return True

    async def stop_probe(self, probe_id: str) -> None:
        if self.session is not None:
            await self.session.stop_probe(probe_id)

    # -- detach, quit --------------------------------------------------
    async def detach(self) -> None:
        """Turn this run into a background session (tui.sessions.foreground)
        and give the terminal back; the probes never stop."""
        host = self.host
        if self.session is None or host.shutting_down or self._detaching:
            return
        offer = self.config.detach
        link = offer.link if offer is not None else None
        if offer is None or link is None:
            why = (offer.why_not if offer is not None else None) or "not available here"
            host.notify(f"cannot detach: {why}", title="detach", severity="warning")
            return
        self._detaching = True  # a second d while this one awaits does nothing
        try:
            self.detached = await detach_session(
                self.session,
                link,
                command=list(self.config.display.command) or ["probetop"],
                command_name=offer.command_name,
                name=offer.name,
            )
        except (SessionError, RecordingError) as exc:
            self._detaching = False
            host.notify(str(exc), title="not detached", severity="error", timeout=10)
            return
        if self.feed is not None:  # nobody draws any more
            self.session.hub.unsubscribe(self.feed)
            self.feed = None
        host.exit(0, return_code=0)

    async def quit(self) -> bool:
        return self._detaching  # d is turning this run into a session: it must not stop now

    async def shutdown(self, reason: str) -> bool:
        if self.session is None:
            return False
        await self.session.shutdown(reason)
        return self.session.failed

    async def unmount(self, quitting: bool) -> None:
        # Never leave probe threads running or a recording without its footer.
        if self.session is not None and self.detached is None:
            await self.session.shutdown(_unmount_reason(quitting))
            self.session.remove_signal_handlers()
        await super().unmount(quitting)

    # -- job control ---------------------------------------------------
    def job_stopping(self, whole_process: bool) -> None:
        """When this process itself stops, its probes stop measuring; say
        so in the recording rather than leave a silent gap."""
        self._stopped_at_ns = now_ns()
        if whole_process and self.hub is not None:
            if self.hub.freezes is not None:  # this pause is said below, not twice
                self.hub.freezes.excuse(self._stopped_at_ns)
            for probe_id in self.hub.running():
                message = "paused: the dashboard was suspended (Ctrl-Z / SIGTSTP)"
                self.hub.publish(Status(probe_id, self._stopped_at_ns, "warning", message))

    def view_resumed(self) -> None:
        stopped_at, self._stopped_at_ns = self._stopped_at_ns, None
        if stopped_at is not None and self.hub is not None and waiter_pid() is None:
            away_s = (now_ns() - stopped_at) / 1e9
            for probe_id in self.hub.running():
                message = f"resumed after {away_s:.1f} s suspended"
                self.hub.publish(Status(probe_id, now_ns(), "info", message))

    # -- status, palette -----------------------------------------------
    def status_parts(self) -> list[tuple[int, str] | tuple[int, str, str]]:
        session = self.session
        if session is None:
            return []
        parts: list[tuple[int, str] | tuple[int, str, str]] = [
            (5, "probes stopped" if session.probes_stopped else "live")
        ]
        if self.recorder is not None:
            path = self.recorder.path
            parts.append((4, f"REC {path}", f"REC {path.name}"))
        if session.recording_failures:
            parts.append((6, "RECORDING FAILED: write error (see notification)"))
        if self.feed is not None and self.feed.dropped:
            parts.append((3, f"{self.feed.dropped} records dropped by a slow display"))
        return parts

    def commands(self) -> Iterable[SystemCommand]:
        session = self.session
        if session is None:
            return
        yield SystemCommand(
            "Add a probe",
            "Type a probetop command line, e.g. cpu --threads 1",
            self.add_probe,
        )
        for pid in session.running():
            yield SystemCommand(
                f"Stop probe {pid}",
                "Cancel it; its pane keeps the data",
                lambda pid=pid: self.host.run_worker(self.stop_probe(pid)),
            )
        recording = session.recorder is not None
        yield SystemCommand(
            "Stop recording" if recording else "Start recording",
            "Close the recording (footer written)"
            if recording
            else "Record this session to a JSON Lines file",
            self.toggle_record,
        )


def _unmount_reason(quitting: bool) -> str:
    """The footer's reason when the view goes without a shutdown of its own:
    "completed" (q), "aborted" (an error), or the stop signal that ended it
    from start-up: one that came after the session was opened and before its
    handlers were in (``kill %1`` after a Ctrl-Z during start-up, under load)
    ended the app through the start-up handler, and the run exits 128 + N as
    interrupted by it; its footer said "aborted"."""
    if quitting:
        return "completed"
    early = stopsignals.pending()
    return f"interrupted ({early})" if early is not None else "aborted"
