"""A terminal driver whose input thread sleeps until there is something to read.

Textual's ``LinuxDriver`` waits for keys with a 0.1 s ``select`` timeout: ten
wake-ups a second for the life of the dashboard, which mostly receives no
key at all (measured: about half of an idle dashboard's wake-ups). Here the
input thread blocks until a key arrives, until the key parser's own
timeout is due (a lone ESC is told from an escape sequence after a short
wait), or until the driver stops: the driver's exit event also writes a
byte to a wake-up pipe the thread watches.

Contract: behaves as ``LinuxDriver`` (keys, mouse, paste, resize); only the
input loop differs, the size comes from the terminal itself, never from
$COLUMNS/$LINES, the view is drawn on the terminal the dashboard was
started on (stdout's, where Textual draws on stderr: ``_view_stream``), and
job control differs (below). ``quiet_driver_class(cls)``
gives this driver where Textual would use ``LinuxDriver`` itself, else
``cls`` unchanged.

Job control (``tui/sessions/jobcontrol.py``). Textual answers SIGTSTP by stopping the
whole process: the probes and the recording stopped with the view, and its
resume re-registered a closed wake-up pipe (a traceback). Here SIGTSTP (and
the Ctrl-Z key) suspends only the VIEW: application mode ends (the terminal
is restored, input stops, every later write is dropped) and the job is
stopped (the waiter; or this process when there is none). SIGCONT resumes
the view with a full redraw if the terminal's foreground is ours again
(``fg``, or a SIGCONT where no shell took it); after ``bg`` the view stays
suspended and the job is stopped again, without a write or a ``tcsetattr``
from the background (no SIGTTOU, no SIGTTIN). A dashboard that ends while
suspended leaves the terminal alone (the shell owns it) and continues the
waiter so it can exit; once closed, the driver ignores SIGTSTP (the process
is printing its report and exiting: no view to suspend or start again).
The two signals are handled on the event loop, in the order they came; the
signal handler only queues them (``_on_job_signal`` says why). SIGTTOU and
SIGTTIN in the foreground (a ``kill``: the kernel sends them only to the
background) are a Ctrl-Z; in the background they stop the process, as
their default action and Textual's handler do.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import sys
import threading
from codecs import getincrementaldecoder
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from probetop.probes.core import stopsignals
from probetop.tui.sessions import jobcontrol
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

if TYPE_CHECKING:
    from textual.app import App

FALLBACK_POLL_S = 0.1  # if the parser's deadline cannot be read: Textual's own poll
_MISSING = object()


def _view_stream(textual_file: Any) -> Any:
    """Where the view is drawn. Textual draws on stderr, but a dashboard runs
    when stdin and stdout are the terminal (``tui/cli/plan.py``): with
    stderr elsewhere (``2>err.log``, ``2>/dev/null``: hiding warnings, a
    habit over SSH) the whole view went into that file, the terminal stayed
    blank and the run waited for a q typed blind. Then the view is drawn on
    stdout's terminal (a stream of our own on a copy of the descriptor,
    never closed: a write after close would fail), and stderr keeps only
    probetop's own messages, as with vim or htop. Stderr on that same
    terminal: Textual's stream, as before."""
    try:
        same = (
            textual_file is not None
            and os.isatty(textual_file.fileno())
            and os.path.samestat(os.fstat(textual_file.fileno()), os.fstat(1))
        )
        if same or not os.isatty(1):
            return textual_file
        return open(os.dup(1), "w", encoding="utf-8", errors="replace")
    except (OSError, ValueError, AttributeError):
        return textual_file


class _WakingEvent(threading.Event):
    """An Event whose ``set`` also wakes a thread blocked in select()."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self.wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):  # full pipe: a wake-up is pending anyway
            os.write(self.wake_fd, b"\0")


def _parser_timeout(parser: XTermParser) -> float | None:
    """Seconds until the parser's pending timeout (None: nothing pending)."""
    deadline = getattr(parser, "_timeout_time", _MISSING)
    if deadline is None:
        return None
    if not isinstance(deadline, (int, float)):  # a Textual without it: poll as it does
        return FALLBACK_POLL_S
    return max(0.0, deadline - get_time())


RESTOP_AFTER_S = 0.1  # _on_sigcont: a stop signal that came with the SIGCONT is handled first


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` with a blocking input thread; see the module docstring."""

    def __init__(self, app: App[Any], **kwargs: Any) -> None:
        # Set before Textual's __init__, which installs the SIGTSTP and
        # SIGCONT handlers (``_sigtstp_application``: ours, below): one may
        # run as soon as it is in.
        self.view_suspended = False
        jobcontrol.driver_takes_tstp()
        super().__init__(app, **kwargs)
        self._file = _view_stream(self._file)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.exit_event = _WakingEvent(self._wake_w)
        # Between suspend and resume: nothing is written (the writer thread
        # is stopped; its bounded queue would block the event loop).
        # Told before the job stops (the app records a pause when the whole
        # process is about to stop) and after the view is back.
        self.on_suspend: Callable[[bool], None] | None = None
        self.on_resume: Callable[[], None] | None = None
        self.on_refused: Callable[[], None] | None = None  # no shell could resume us
        # True once a stop signal (SIGTERM, SIGINT, SIGHUP) is ending the run:
        # a SIGCONT from the background then does not stop the job again.
        self.ending: Callable[[], bool] | None = None
        self._take_tty_signals()

    def _take_tty_signals(self) -> None:
        """SIGTTOU and SIGTTIN (Textual's start_application_mode leaves them
        at SIG_DFL: called again after it)."""
        signal.signal(signal.SIGTTOU, self._on_tty_signal)
        signal.signal(signal.SIGTTIN, self._on_tty_signal)

    def _on_tty_signal(self, _signum: int, _frame: FrameType | None) -> None:
        """SIGTTOU / SIGTTIN. The kernel sends them to a background process
        group that touches its terminal: stop, as their default action
        does (and Textual's handler). In the foreground one can only come
        from a ``kill -TTOU``/``-TTIN``: its default action stopped this
        process alone, the waiter (the job the shell knows) ran on, so the
        shell never said "Stopped", the terminal stayed in application mode
        and no key, ``fg`` or Ctrl-C reached the view. There it is a
        request to stop the job, as vim's: a Ctrl-Z."""
        if jobcontrol.in_foreground(self.fileno):
            with contextlib.suppress(RuntimeError):  # the loop closed: the process is exiting
                self._loop.call_soon_threadsafe(self._job_signal, signal.SIGTSTP)
            return
        os.kill(os.getpid(), signal.SIGSTOP)

    # -- job control (module docstring) ---------------------------------
    def _on_job_signal(self, signum: int, _frame: FrameType | None) -> None:
        """The handler of SIGTSTP and SIGCONT: hand the signal to the event
        loop, in order. A Python handler runs between any two bytecodes of
        the main thread: in the middle of Textual's message queues and
        compositor, of a queue.Queue holding its lock, or of this driver's
        own resume when the second SIGCONT of an ``fg`` comes (the shell's,
        then the waiter's). Work done there could start the view twice, or
        put a message in a Textual queue between its getter's emptiness
        check and its wait, a wake-up lost."""
        stopsignals.note(signum)  # the waiter passes on no copy of one we got ourselves
        with contextlib.suppress(RuntimeError):  # the loop closed: the process is exiting
            self._loop.call_soon_threadsafe(self._job_signal, signum)

    # Textual's LinuxDriver.__init__ installs these two as the SIGTSTP and
    # SIGCONT handlers. Its own stop the whole process (SIGSTOP), not the
    # job: replaced only after its __init__, a Ctrl-Z in between (the view
    # starting) stopped the dashboard alone and the job never stopped.
    _sigtstp_application = _on_job_signal
    _sigcont_application = _on_job_signal

    def _job_signal(self, signum: int) -> None:
        if signum == signal.SIGTSTP:
            self._on_sigtstp()
        else:
            self._on_sigcont()

    def _on_sigtstp(self) -> None:
        if not self.view_suspended and not jobcontrol.shell_can_resume():
            if self.on_refused is not None:  # as the kernel ignores it there
                self.on_refused()
            return
        if not self.view_suspended:
            self.suspend_application_mode()
            self._must_signal_resume = True
        if self.on_suspend is not None:
            self.on_suspend(jobcontrol.waiter_pid() is None)
        jobcontrol.stop_job()

    def _on_sigcont(self) -> None:
        if not self.view_suspended:
            return  # a bare SIGSTOP/SIGCONT: the view never left
        if not jobcontrol.in_foreground(self.fileno):
            # `bg`: stopped again, the view stays away. A terminal that hung
            # up (the shell continues its stopped jobs to deliver SIGHUP) is
            # no foreground either: the hangup ends the run. `kill %1` is a
            # SIGTERM then a SIGCONT (bash continues a stopped job it
            # signals): stopped again at once, a suspended replay or attached
            # view (no waiter: the process itself stops) never acted on the
            # SIGTERM, and stayed stopped until `fg`. So look again once the
            # loop has run the stop signal's callback (it came first).
            self._loop.call_later(RESTOP_AFTER_S, self._stop_again)
            return
        self.resume_application_mode()
        if not self.view_suspended:
            jobcontrol.continue_job()
            if self.on_resume is not None:
                self.on_resume()

    def _stop_again(self) -> None:
        """``_on_sigcont`` in the background: stop the job again unless the
        view came back meanwhile or a stop signal is ending the run."""
        if not self.view_suspended or (self.ending is not None and self.ending()):
            return
        if stopsignals.pending() is not None:  # before the view's handlers: it ends the run
            return
        if not jobcontrol.in_foreground(self.fileno):
            jobcontrol.stop_job()

    def suspend_application_mode(self) -> None:
        """Restore the terminal and stop writing; the wake-up pipe stays
        open for the next input thread (Textual's closed it here)."""
        if self.view_suspended:
            return
        if self._writer_thread is not None:
            self.stop_application_mode()
            self._writer_thread.stop()
            self._writer_thread = None
        self.view_suspended = True

    def resume_application_mode(self) -> None:
        self.start_application_mode()

    def start_application_mode(self) -> None:
        """Application mode, only on a terminal whose foreground is ours
        (started with ``&``: suspended until ``fg``)."""
        # Taken first: stopped from the background below, the job has done
        # what an early stop asked; kept, it stopped the job again at `fg`.
        early_tstp = jobcontrol.take_early_tstp()
        if not jobcontrol.in_foreground(self.fileno):
            self.view_suspended = True
            jobcontrol.stop_job()
            return
        if early_tstp and jobcontrol.shell_can_resume():
            # A Ctrl-Z during start-up: the job stops before the view is
            # drawn or a key is read. Started first and suspended a moment
            # later, its input thread read what was typed after the Ctrl-Z
            # (`kill %1`, `bg`): the shell never got it, and the dashboard
            # took its letters for keys. `fg` starts the view (_on_sigcont).
            self.view_suspended = True
            jobcontrol.stop_job()
            return
        self.view_suspended = False
        super().start_application_mode()
        self._take_tty_signals()
        if self._writer_thread is None:  # Textual saw a SIGTTOU: put in the background
            self.view_suspended = True
            jobcontrol.stop_job()
        elif early_tstp:  # no shell could resume it: refused, with the notice
            self._loop.call_soon(self._job_signal, signal.SIGTSTP)

    def stop_application_mode(self) -> None:
        if self.view_suspended:
            return  # restored already, and the terminal may be the shell's now
        super().stop_application_mode()

    def disable_input(self) -> None:
        if self.view_suspended:
            return  # input stopped at the suspend; its tcflush from the background: SIGTTOU
        super().disable_input()

    def write(self, data: str) -> None:
        writer = self._writer_thread
        if self.view_suspended or writer is None or not writer.is_alive():
            # A dead writer thread (its terminal gone: EIO) never empties its
            # bounded queue: a write would block the event loop for good.
            return
        super().write(data)

    def _get_terminal_size(self) -> tuple[int, int]:
        """The terminal's own size (TIOCGWINSZ). Textual asks ``shutil``,
        which takes $COLUMNS/$LINES first: with those in the environment (a
        shell or script that exports them) every resize was ignored and the
        dashboard stayed at that size."""
        for stream in (self._file, sys.__stdin__):
            if stream is None:
                continue
            try:
                columns, lines = os.get_terminal_size(stream.fileno())
            except (AttributeError, ValueError, OSError):
                continue
            if columns > 0 and lines > 0:
                return columns, lines
        return super()._get_terminal_size()

    def run_input_thread(self) -> None:
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.SelectSelector()  # as Textual: works on every tty
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self.exit_event.is_set():
                ready = selector.select(_parser_timeout(parser))
                if not self._handle(ready, selector, parser, decode, final=False):
                    break
            selector.unregister(self._wake_r)
            if self.fileno in selector.get_map():  # keys typed just before the stop
                self._handle(selector.select(0), selector, parser, decode, final=True)
        finally:
            selector.close()
            with contextlib.suppress(EOFError, ParseError):
                for _event in parser.feed(""):
                    pass

    def _handle(
        self,
        ready: list[tuple[selectors.SelectorKey, int]],
        selector: selectors.BaseSelector,
        parser: XTermParser,
        decode: Any,
        final: bool,
    ) -> bool:
        """Feed what is readable to the parser; False once stdin has ended."""
        for key, _mask in ready:
            if key.fd == self._wake_r:
                with contextlib.suppress(OSError):
                    while os.read(self._wake_r, 512):
                        pass
                continue
            data = os.read(self.fileno, 4096)
            if not data:  # end of input (a pipe): nothing more will come
                selector.unregister(self.fileno)
                return False
            for event in parser.feed(decode(data, final=final)):
                self.process_message(event)
        for event in parser.tick():
            self.process_message(event)
        return True

    def close(self) -> None:
        if self._writer_thread is not None:
            self._writer_thread.stop()
            self._writer_thread = None
        if self.view_suspended:
            jobcontrol.continue_job()  # ended while suspended: the waiter collects us
        # No view left to suspend or redraw: a Ctrl-Z while the report prints
        # is ignored (the process is about to exit) rather than starting
        # application mode again on SIGCONT.
        signal.signal(signal.SIGTSTP, signal.SIG_IGN)
        signal.signal(signal.SIGCONT, signal.SIG_DFL)
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)  # a report written from the background
        signal.signal(signal.SIGTTIN, signal.SIG_DFL)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def quiet_driver_class(cls: type[Driver]) -> type[Driver]:
    """``QuietLinuxDriver`` in place of ``LinuxDriver`` itself; others unchanged."""
    return QuietLinuxDriver if cls is LinuxDriver else cls
