"""One live session: the probes, the hub that runs them and the recorder.

The dashboard and the headless runner both run probes through this object,
so they share one lifecycle:

1. ``await start()``: add every probe to a new Hub (``prepare`` runs there),
   subscribe the caller's feed, start the recording (before any probe
   starts, so it misses nothing), start the probes. A dashboard does it in
   two steps: ``open()`` (probes added and announced, the feed) before its
   first frame, ``await begin()`` (recording, probes started) after it.
2. While running: ``add_probe_line`` (a command line typed into the
   dashboard, parsed by the CLI's own parser), ``stop_probe``,
   ``start_recording`` / ``stop_recording``, ``time_up`` (``--time`` passed:
   stop the probes, close the recording with reason ``time``).
3. ``await shutdown(reason)``: stop every probe (their workers are joined),
   close the recording with its footer and ``reason``. Safe to call twice;
   after it the session is finished.

Recording errors: a write error mid-run (disk full, EIO) stops only the
recording; its message goes to ``notify`` (severity "error") and to
``recording_failures``, which the host turns into a non-zero exit status
(``RECORDING_INCOMPLETE_EXIT``). ``--record`` that cannot start at all is
raised (``strict``) or notified and counted there too.

History (``keep_history=True``, the dashboard): when nothing records the
session from its start (no ``--record``), an in-memory compressed recording
of it is kept (``Recorder.in_memory``), so that ``keep_recording(path)`` can
turn it into a recording file holding every record since the start: what a
foreground dashboard needs to detach into a background session without
losing a sample. It costs what ``--record`` costs, without disk I/O, and
stops quietly past ``MEMORY_CAP_BYTES`` (about 70 hours of the demo).

Memory: while the session runs, a ``HeapTrimmer`` hands the C heap's free
pages back to the kernel once a minute (tui/run/heaptrim.py): without it the
resident size of a run of hours crept up while what it held was flat; and
from its start malloc keeps at most two arenas (``limit_arenas``), so
threads that come and go do not spread the heap over up to 8 per core.

Signals: ``install_signal_handlers(on_signal)`` routes SIGINT, SIGTERM and
SIGHUP to the host (which decides what to do: the app quits, the runner ends
its loop); ``remove_signal_handlers`` restores the process's handling.

Nothing here imports Textual: this is the CLI layer. What the host must
show (a probe that did not start, a recording saved) is passed to
``notify(message, title, severity)``; ``on_change()`` says the status line
may have changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from probetop.probes.core import stopsignals
from probetop.probes.core.base import ConfirmationRequired, Probe, ProbeError
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.record import RecordingError
from probetop.tui.cli.parser import CommandLineError, deadline_s, parse_command_line
from probetop.tui.run.heaptrim import HeapTrimmer, limit_arenas

if TYPE_CHECKING:  # the writer (codec, host facts) loads when a recording starts
    from probetop.probes.record import FooterFields, Recorder
    from probetop.tui.metrics.live import MetricsExporter

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
BEGIN_WAIT_S = 10.0
"""How long ``shutdown`` waits for a ``begin`` under way (its recording
opening: host facts, the file's first write) before it closes the rest."""
_hangup_ignored = False


def ignore_hangup() -> None:
    """A detached session (``tui.sessions.daemon``) has no terminal to lose:
    from now on SIGHUP is ignored instead of stopping the probes."""
    global _hangup_ignored
    _hangup_ignored = True
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stopsignals.forget(signal.SIGHUP)  # one caught during start-up is void too


HandledSignals = list[tuple[signal.Signals, Any]]
"""What ``add_stop_signal_handlers`` took over: each signal and the handler
it had before (``remove_stop_signal_handlers`` puts it back)."""


def _noted(on_signal: Callable[[str], None], sig: int) -> Callable[[str], None]:
    """``on_signal``, counting each signal for the waiter (``stopsignals.note``)."""

    def handler(name: str) -> None:
        stopsignals.note(sig)
        on_signal(name)

    return handler


def add_stop_signal_handlers(on_signal: Callable[[str], None]) -> HandledSignals:
    """SIGINT, SIGTERM and SIGHUP (not once ``ignore_hangup``) call
    ``on_signal(name)`` in the running event loop; the signals now handled.
    Every dashboard needs them, not only a live one: without, a signal
    raises KeyboardInterrupt wherever the main thread is, and Textual's exit
    can then block writing to a hung-up terminal (a replay left running)."""
    loop = asyncio.get_running_loop()
    handled: HandledSignals = []
    for sig in SIGNALS:
        if sig == signal.SIGHUP and _hangup_ignored:
            continue
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            previous = signal.getsignal(sig)
            loop.add_signal_handler(sig, _noted(on_signal, sig), sig.name)
            handled.append((sig, previous))
    _quiet_when_full(loop)
    return handled


def _quiet_when_full(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio's signal wake-up socket, told not to warn when it is full. A
    flood of ``kill`` filled it, and Python printed a traceback for each
    signal that found it full (on the terminal, into a session's log); the
    wake-ups already queued carry the signal to the loop. Only the message
    goes: a signal whose byte did not fit is lost to asyncio with or without
    it (asyncio reads the signal from the byte: CPython gh-74224), which
    takes a socket full of other wake-ups at that moment. asyncio's own
    call (``add_signal_handler``) sets the warning again: call this after."""
    csock = getattr(loop, "_csock", None)  # asyncio's Unix selector loop
    if csock is None:
        return
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(csock.fileno(), warn_on_full_buffer=False)


def remove_stop_signal_handlers(handled: HandledSignals) -> None:
    """Leave the process's signal handling as it was before ``add_stop_signal_handlers``.

    asyncio's ``remove_signal_handler`` leaves SIGINT at Python's default
    (KeyboardInterrupt) and SIGTERM/SIGHUP at SIG_DFL (death), not at what
    they were: a signal between the run's end and its report (a Ctrl-C
    pressed twice) then lost the report, or killed the process with no exit
    status of its own. The handler each had before is put back in one
    swap, so there is no moment at SIG_DFL in between (a second signal 2 ms
    after the first once landed in that moment and killed the process):
    asyncio is told to forget the signal without touching its disposition
    where it allows that."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    for sig, previous in reversed(handled):
        swapped = False
        if previous is not None:  # None: set outside Python, cannot be restored from here
            with contextlib.suppress(OSError, RuntimeError, ValueError, TypeError):
                signal.signal(sig, previous)
                swapped = True
        if loop is None or (swapped and _forget_in_loop(loop, sig)):
            continue
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)  # resets it: SIGINT raises, the others SIG_DFL
        if swapped:
            with contextlib.suppress(OSError, RuntimeError, ValueError, TypeError):
                signal.signal(sig, previous)
    handled.clear()


def _forget_in_loop(loop: asyncio.AbstractEventLoop, sig: int) -> bool:
    """Drop ``sig`` from the loop's handlers without resetting the signal's
    disposition, as ``remove_signal_handler`` would (it sets SIG_DFL); False
    where the loop keeps them elsewhere (the caller then removes it the
    public way and puts the handler back after)."""
    handlers = getattr(loop, "_signal_handlers", None)  # asyncio's Unix loop
    if not isinstance(handlers, dict):
        return False
    handlers.pop(sig, None)
    if not handlers:  # as remove_signal_handler does once none is left
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)
    return True


class Notify(Protocol):
    def __call__(self, message: str, *, title: str = "", severity: str = "information") -> None:
        """Tell the user something (a notification in the dashboard)."""


def _ignore(message: str, *, title: str = "", severity: str = "information") -> None:
    """The headless default: errors are raised or reported, nothing to show."""


def terminal_hung_up(fd: int = 1) -> bool:
    """True when the terminal on ``fd`` is gone (POLLHUP/POLLERR), as after an
    SSH drop; False for a ``kill -HUP`` while the terminal still exists."""
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError):
        return False
    return any(mask & (select.POLLHUP | select.POLLERR) for _fd, mask in events)


def detach_from_dead_terminal() -> None:
    """After a hangup (SSH dropped) point stdout/stderr at /dev/null.

    Restoring the terminal on exit writes to it; to a hung-up pty that write
    blocks forever, so the process would never exit. The terminal is gone
    anyway: let those writes succeed into nothing.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)


class LiveSession:
    """Probes, hub and recorder of one live run. See the module docstring."""

    def __init__(
        self,
        probes: Iterable[Probe],
        *,
        record: Path | None = None,
        command: list[str] | None = None,
        notify: Notify = _ignore,
        on_change: Callable[[], None] | None = None,
        footer_fields: FooterFields | None = None,
        metrics: MetricsExporter | None = None,
        keep_history: bool = False,
    ) -> None:
        self.probes = list(probes)
        self.keep_history = keep_history
        self.history: Recorder | None = None  # see "History" above
        self.footer_fields = footer_fields  # extra footer fields (--assert outcomes)
        # --metrics / --textfile (opened by tui.run.launch): fed from the hub.
        self.metrics = metrics
        self._metrics_task: asyncio.Task[None] | None = None
        self.record_path = record
        self.command = list(command or ["probetop"])
        self.notify = notify
        self.on_change = on_change or (lambda: None)
        self.hub = Hub()
        self.hub.on_freeze = lambda message: self.notify(
            message, title="paused", severity="warning"
        )
        # Free C heap pages back to the kernel once a minute, in at most two
        # malloc arenas (tui/run/heaptrim.py).
        limit_arenas()
        self.heap_trimmer = HeapTrimmer()
        self.recorder: Recorder | None = None
        self.probes_stopped = False
        self.finished = False
        self._end_reason: str | None = None  # shutdown's reason
        self._begun = False  # begin() ran
        self._closing: asyncio.Future[None] | None = None  # shutdown() under way or done
        self.probes_began = False  # begin() started the probes (a run, not only a view)
        # Set when begin() has finished (history, recording and probes
        # started) or the session ended: what a key pressed during start-up
        # (d) must wait for, not read as missing.
        self._ready = asyncio.Event()
        self._signals: HandledSignals = []
        self._deadline_tasks: set[asyncio.Task[None]] = set()  # added probes' --time
        # Recordings that could not be completed (write error mid-run): the
        # host shows them and exits with RECORDING_INCOMPLETE_EXIT.
        self.recording_failures: list[str] = []
        # The command's own probes that could not start (``open``, not
        # strict: a target another run took since the check): a headless
        # run exits with their error's status, and so does the host.
        self.not_started: dict[str, ProbeError] = {}

    # -- lifecycle -------------------------------------------------------
    async def start(self, *, lossless: bool = False, strict: bool = False) -> Subscription:
        """Add the probes, subscribe a feed, start recording, start the probes
        (``open`` then ``begin``).

        ``strict``: a probe that cannot start raises its ProbeError and a
        recording that cannot start raises RecordingError (headless: exit 2);
        otherwise both are notified and the rest goes on (the dashboard).
        """
        feed = self.open(lossless=lossless, strict=strict)
        await self.begin(strict=strict)
        return feed

    def open(self, *, lossless: bool = False, strict: bool = False) -> Subscription:
        """Add the probes (``prepare``: each is announced) and subscribe a
        feed; nothing runs yet. A dashboard draws its first frame from the
        announcements, then calls ``begin``: a probe's first reading and the
        recording's header (host facts) cost the first frame nothing."""
        for probe in self.probes:
            try:
                self.hub.add(probe)
            except ProbeError as exc:
                if strict:
                    raise
                if not getattr(probe, "background", False):
                    self.not_started[probe.id] = exc  # the host's exit status says it
                self.notify(str(exc), title=f"{probe.id} not started", severity="error")
        return self.hub.subscribe(lossless=lossless)

    async def begin(self, *, strict: bool = False) -> None:
        """Start the metrics, the recording (before any probe starts, so it
        misses nothing: the probes already announced go into its header),
        then the probes. Does nothing once the session is finished (quit
        before it began)."""
        if self.finished or self._begun:
            return
        self._begun = True
        try:
            await self._begin(strict=strict)
        finally:
            self._ready.set()

    async def _begin(self, *, strict: bool) -> None:
        if self.metrics is not None:
            self._metrics_task = self.metrics.attach(self.hub)
            if self.metrics.url:
                self.notify(f"serving metrics on {self.metrics.url}", title="--metrics")
        if self.keep_history and self.record_path is None:
            await self._start_history()
        if self.record_path is not None:
            if strict:
                self.recorder = await self._open_recorder(self.record_path)
            elif not await self.start_recording(self.record_path):
                # --record asked for it: the exit status says it is missing.
                self.recording_failures.append(f"recording to {self.record_path} did not start")
        # Not after a quit while the recording opened, nor after --time
        # passed before the probes started (a start-up slower than --time:
        # they were started after time_up had stopped none, and ran on).
        if not self.finished and not self.probes_stopped:
            self.hub.start()
            self.probes_began = True
            self.heap_trimmer.start()

    async def ready(self, timeout_s: float) -> bool:
        """Wait until ``begin`` has finished or the session ended; False if
        that took longer than ``timeout_s``."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    @property
    def started(self) -> bool:
        """``begin`` has started the probes (and the recording before them).
        Until then no probe has run, so none has ended either."""
        return self._begun and self._ready.is_set() and not self.finished

    @property
    def failed(self) -> bool:
        """A probe ended with an error."""
        return bool(self.hub.errors)

    def running(self) -> list[str]:
        return self.hub.running()

    async def time_up(self) -> bool:
        """``--time`` passed: stop the probes (not the host), close the
        recording with reason ``time``. False if they had stopped already."""
        if self.probes_stopped or self.finished:
            return False
        self.probes_stopped = True  # first: a begin() under way starts none now
        await self.hub.stop()
        if self.recorder is not None:
            await self.stop_recording("time")
        self.on_change()
        return True

    @property
    def end_reason(self) -> str | None:
        """The reason shutdown closed the run with; None before it ran."""
        return self._end_reason

    async def shutdown(self, reason: str = "completed") -> None:
        """Stop every probe and close the recording with ``reason``.
        Idempotent: a second call returns once the first one's work is
        done (was: at once, so its caller could exit with the recording
        still unclosed)."""
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        try:
            await self._shutdown(reason)
        finally:
            self._closing.set_result(None)

    async def _shutdown(self, reason: str) -> None:
        if self._begun and not self._ready.is_set():
            # begin() is opening the recording (its header may be written):
            # let it finish, so that recording is closed here with its
            # footer, not left to a begin() the app's exit cancels.
            await self.ready(BEGIN_WAIT_S)
        if not self._begun and self.record_path is not None:
            # Ended before begin() (a stop signal while the view came up):
            # the recording asked for is still made, its header and its
            # footer with the reason, so --record always leaves a whole file.
            self._begun = True  # begin() now does nothing
            try:
                self.recorder = await self._open_recorder(self.record_path)
            except (RecordingError, OSError) as exc:
                self.recording_failures.append(f"recording to {self.record_path}: {exc}")
        self.finished = True
        self._end_reason = reason
        self._ready.set()
        self.heap_trimmer.stop()
        await self.hub.stop()
        self.probes_stopped = True
        for recorder in (self.recorder, self.history):
            if recorder is not None:
                await recorder.close(reason)  # an unmoved history just frees its memory
        self.recorder = self.history = None
        await self._close_metrics()

    async def _close_metrics(self) -> None:
        """The last intervals into the metrics, the textfile's final write,
        the endpoint closed."""
        task, self._metrics_task = self._metrics_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.metrics is not None:
            await self.metrics.close()

    # -- probes ----------------------------------------------------------
    def add_probes(self, probes: Iterable[Probe]) -> None:
        """Add prepared probes to a running session and start them (the demo's,
        joining after the first frame); one that cannot start is notified."""
        if self.finished or self.probes_stopped:
            return
        for probe in probes:
            try:
                self.hub.add(probe, prepared=True)
            except ProbeError as exc:
                self.notify(str(exc), title=f"{probe.id} not started", severity="error")
        # Only once begin() has started the hub: while its recording opens
        # (_begun, not yet _ready), starting the hub here would start every
        # probe before the recording listens, and lose their first records.
        if self._ready.is_set():  # else begin() starts them, after the recording
            self.hub.start()  # idempotent: starts only the new ones

    def add_probe_line(self, line: str | None) -> bool:
        """Parse a probe command line, build its probes, add and start them.

        False (and a notification) on a parse error, a probe that cannot
        start, or a probe that would destroy data without the confirmation."""
        if not line or self.finished:
            return False
        try:
            module, plan = parse_command_line(line)
            probes = module.build_probes(plan)
            for probe in probes:
                self.hub.add(probe)
        except ConfirmationRequired as exc:
            self.notify(
                f"{exc}\nAdd --yes-destroy-data={exc.target} to the line to go on.",
                title="not started: it would destroy data",
                severity="error",
            )
            return False
        except CommandLineError as exc:
            self.notify(str(exc), title="cannot add probe", severity="error")
            return False
        except ProbeError as exc:
            self.notify(str(exc), title="probe not started", severity="error")
            return False
        if self.probes_stopped:
            self.probes_stopped = False
            self.on_change()
        if self._ready.is_set():  # else begin() starts them (add_probes)
            self.hub.start()  # idempotent: starts only the new ones
        # --time as on the command line: the probes that do not end themselves
        # (icmp, http) are stopped by their command's deadline, here as there.
        deadline = deadline_s(plan, module)
        if deadline is not None:
            ids = [probe.id for probe in probes]
            asyncio.get_running_loop().call_later(deadline, self._time_up, ids, deadline)
        return True

    def _time_up(self, ids: list[str], after_s: float) -> None:
        """Stop probes added with --time once it has passed (a task kept until done)."""

        async def stop() -> None:
            running = [probe_id for probe_id in ids if probe_id in self.hub.running()]
            for probe_id in running:  # the others ended themselves (cpu, --count)
                await self.hub.stop_probe(probe_id)
            if running:
                self.notify(f"{', '.join(running)} stopped after {after_s:g} s (--time)")

        task = asyncio.get_running_loop().create_task(stop())
        self._deadline_tasks.add(task)
        task.add_done_callback(self._deadline_tasks.discard)

    async def stop_probe(self, probe_id: str) -> None:
        """Cancel one probe; its pane keeps the data."""
        await self.hub.stop_probe(probe_id)
        self.notify(f"stopped {probe_id}")

    # -- recording -------------------------------------------------------
    async def _start_history(self) -> None:
        def lost(message: str) -> None:  # not the user's recording: no exit status
            self.history = None

        from probetop.probes.record import Recorder

        try:
            history = Recorder.in_memory(
                self.hub, self.command, on_error=lost, footer_fields=self.footer_fields
            )
            await history.start()
        except (OSError, RecordingError):
            return  # no memfd here: detaching will say the history is missing
        self.history = history

    def history_missing(self) -> str | None:
        """Why ``keep_recording`` could not give a recording of every record
        since the start, or None when it can."""
        if self.history is not None:
            return None
        if self.record_path is not None and self.recorder is not None:
            return None if self.recorder.failure is None else self.recorder.failure
        return "no history was kept (no memory file here, or it passed its cap)"

    async def keep_recording(self, path: Path) -> Path:
        """A recording file holding this session from its start, written on
        until the end: the in-memory history moved to ``path``, or (with
        ``--record``) the recording already being made. RecordingError."""
        history, self.history = self.history, None
        if history is not None:
            try:
                await history.move_to(path)
            except RecordingError:
                self.history = history
                raise
            if self.recorder is None:
                self.recorder = history
            else:  # the user's own recording goes on beside it; both get footers
                self.history = history
            self.on_change()
            return path
        if self.recorder is not None and self.recorder.failure is None:
            return self.recorder.path
        raise RecordingError("nothing records this session: it cannot be detached")

    async def _open_recorder(self, path: Path) -> Recorder:
        def failed(message: str) -> None:
            self._recording_failed(recorder, message)

        from probetop.probes.record import Recorder

        recorder = Recorder(
            path, self.hub, self.command, on_error=failed, footer_fields=self.footer_fields
        )
        await recorder.start()
        return recorder

    def _recording_failed(self, recorder: Recorder, message: str) -> None:
        """A write error stopped ``recorder`` (it closed its file): the probes
        go on; tell the user now, and the host at exit."""
        self.recording_failures.append(message)
        if self.recorder is recorder:
            self.recorder = None
        self.notify(message, title="recording stopped", severity="error")
        self.on_change()

    async def start_recording(self, path: Path) -> bool:
        """Record from now on; False (notified) if the file cannot be written."""
        if self.recorder is not None or self.finished:
            return False
        # Shielded: a quit during start-up can cancel begin() here after the
        # header is written; the recording is then closed whole, not left
        # without its footer.
        opening = asyncio.ensure_future(self._open_recorder(path))
        try:
            recorder = await asyncio.shield(opening)
        except (RecordingError, OSError) as exc:
            self.notify(str(exc), title="recording not started", severity="error")
            return False
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await (await opening).close(self._end_reason or "aborted")
            raise
        if self.finished:  # the session ended while it opened: closed whole at once
            await recorder.close(self._end_reason or "aborted")
            return True
        self.recorder = recorder
        self.on_change()
        return True

    async def stop_recording(self, reason: str) -> None:
        """Close the recording (footer with ``reason``), if one is open."""
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            await recorder.close(reason)
            if recorder.failure is None:
                self.notify(f"recording saved: {recorder.path}")
        self.on_change()

    # -- signals ---------------------------------------------------------
    def install_signal_handlers(self, on_signal: Callable[[str], None]) -> None:
        """SIGINT, SIGTERM and SIGHUP call ``on_signal(name)`` in the event loop."""
        self._signals += add_stop_signal_handlers(on_signal)

    def remove_signal_handlers(self) -> None:
        """Leave the process's signal handling as it was."""
        remove_stop_signal_handlers(self._signals)
