"""A run split in two: the process the shell waits for, and the run itself.

The kernel does not let a process end while one of its threads is in an
uninterruptible wait: a ``pread``/``pwrite`` on a device that stopped
answering (psync), kernel AIO in flight (libaio: ``exit_aio`` waits for it).
Neither SIGKILL nor the end of ``main`` gives the shell its prompt back
then. fio is held the same way: a Ctrl-C does not end it until the device
answers. So a run whose threads may block in the kernel (a disk family's
I/O; a live dashboard, for its ``d`` key) is split before any thread
starts:

- ``split(dashboard)`` forks once (nothing happens when the process already
  runs a thread: ``None, why``). The PARENT, the process the shell started,
  becomes the WAITER: it runs no probe; SIGINT, SIGTERM and SIGHUP sent to it
  are passed on to the run (not a Ctrl-C typed at the terminal: the kernel
  sends it to the whole foreground process group, the run got it itself,
  and a second one would mean something else to it); with ``dashboard``, SIGTSTP too
  (tui/sessions/jobcontrol.py). The CHILD returns ``(pipe, None)`` and
  runs as before, with ``PR_SET_PDEATHSIG``: SIGTERM for a dashboard (a
  killed waiter stops it cleanly, the terminal restored), SIGKILL for a
  headless run (``kill -9`` of the process the user started ends the run
  as it did before the split: no report, no release).
- The run's last words (``hardexit.last_words``, right before
  ``os._exit``): its stdout and stderr are flushed, then its fds 0-2 are
  pointed at /dev/null (a process the kernel holds keeps its fds open:
  ``$(probetop ...)`` would wait for the pipe's end), then the exit status
  and what the kernel holds (``core.kernelholds``) go to the waiter.
- The waiter then exits with the run's own status once it has ended. When
  the kernel holds it (held threads named, or not ended within
  ``EXIT_GRACE_S``), the waiter exits at once with the status the run gave,
  saying on stderr which PID it leaves to the kernel: the report, the
  recording's footer and the status are already final; the process ends
  when its I/O completes or fails (the device answers or is removed).
- Anything else the run writes to the pipe is a message the waiter prints
  before it exits 0 (a dashboard detached into a session: foreground.py);
  a run that ends without last words (a traceback) is waited for and its
  status passed on, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from typing import NoReturn

from probetop.probes.core import kernelholds
from probetop.tui.run import hardexit
from probetop.tui.sessions import jobcontrol

_PR_SET_PDEATHSIG = 1
_SI_KERNEL = 0x80  # siginfo's si_code of a signal the kernel sent (a tty's ^C, hangup)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_GRACE_S = 5.0
"""How long the waiter gives a run that said its last words and named
nothing held to end (an exit takes milliseconds)."""
HELD_GRACE_S = 0.2
"""The same, when the run named threads the kernel holds."""
_STATUS = b"\0"  # a status message starts and ends with this byte; a detach message never does


def set_parent_death_signal(sig: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)


def split(dashboard: bool) -> tuple[int | None, str | None]:
    """Fork the waiter (module docstring). In the child: (the pipe to the
    waiter, None). When the split cannot be made: (None, why); nothing forked."""
    if threading.active_count() != 1:
        return None, "the process already runs threads (--metrics?), so it cannot split"
    pipe_r, pipe_w = os.pipe()  # not inherited across exec (PEP 446)
    sys.stdout.flush()
    sys.stderr.flush()
    waiter = os.getpid()
    if dashboard:
        jobcontrol.share_before_fork()  # Ctrl-Z: the "view suspended" flag both see
    # Blocked from before the fork: one sent meanwhile waits for the waiter's
    # forwarding (a handler still installed would have ended the waiter, and
    # the run with it, with no report); the child takes its own mask back.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        child = os.fork()
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(pipe_r)
        os.close(pipe_w)
        return None, f"fork failed: {exc.strerror}"
    if child != 0:
        os.close(pipe_w)
        _wait(child, pipe_r, dashboard)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(pipe_r)
    # A killed waiter: a dashboard stops cleanly (it owns the terminal); a
    # headless run dies as the process the user killed would have (kill -9).
    death = signal.SIGTERM if dashboard else signal.SIGKILL
    set_parent_death_signal(death)
    if os.getppid() != waiter:  # the waiter died before the line above
        os._exit(128 + death)
    hardexit.last_words(lambda code: _tell_waiter(pipe_w, code))
    return pipe_w, None


def _tell_waiter(pipe_w: int, code: int) -> None:
    """The run's last words (module docstring)."""
    held = kernelholds.held()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    text = "".join(f"{line}\n" for line in [str(code), *held])
    os.write(pipe_w, _STATUS + text.encode() + _STATUS)


def _forward_signals(child: int) -> None:
    """Pass the stop signals sent to the waiter on to the run; not a Ctrl-C
    typed at the terminal (the kernel sends it to the whole foreground
    process group: the run got it already). A hangup is passed on: the
    kernel sends it to the session's leader alone."""
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)

    def forward() -> None:
        while True:
            info = signal.sigwaitinfo(FORWARDED)
            if info.si_code == _SI_KERNEL and info.si_signo == signal.SIGINT:
                continue  # typed at the terminal: sent to the whole process group
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, info.si_signo)

    threading.Thread(target=forward, name="forward-signals", daemon=True).start()


def _wait(child: int, pipe_r: int, dashboard: bool) -> NoReturn:
    """The waiter: pass stop signals on, then exit as the run says."""
    _forward_signals(child)
    if dashboard:
        jobcontrol.waiter_handles_stop(child)  # Ctrl-Z: the dashboard restores the terminal first
    message = b""
    while True:
        try:
            data = os.read(pipe_r, 65536)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if not data:
            break
        message += data
        if len(message) > 1 and message.startswith(_STATUS) and message.endswith(_STATUS):
            lines = message[1:-1].decode("utf-8", "replace").splitlines()
            _collect(child, int(lines[0]), lines[1:])
    if message:  # the child detached: its session goes on without us
        with contextlib.suppress(OSError):
            os.write(1, message)
        os._exit(0)
    while True:
        try:
            _pid, status = os.waitpid(child, 0)
            break
        except InterruptedError:  # pragma: no cover
            continue
        except ChildProcessError:
            os._exit(1)
    _exit_as(status)


def _exit_as(status: int) -> NoReturn:
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def _collect(child: int, code: int, held: list[str]) -> NoReturn:
    """The run said its last words: its own status once it ended, else
    ``code`` at once with the PID left to the kernel."""
    deadline = time.monotonic() + (HELD_GRACE_S if held else EXIT_GRACE_S)
    while True:
        with contextlib.suppress(InterruptedError):
            try:
                pid, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                os._exit(code)
            if pid:
                _exit_as(status)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    why = "; ".join(held) or f"it did not end {EXIT_GRACE_S:g} s after its report"
    with contextlib.suppress(OSError):
        os.write(
            2,
            f"probetop: process {child} is left to the kernel ({why}): it ends when its "
            "I/O completes or fails (the device answers or is removed)\n".encode(),
        )
    os._exit(code)
