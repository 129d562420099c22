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
  are passed on to the run, with SIGTSTP for a dashboard
  (tui/sessions/jobcontrol.py); its main loop reads them, each with its
  sender, from a signalfd (``_signal_fd`` says why). One user action is one handling: a signal
  the run got itself is not passed on -- typed at the terminal (the kernel
  sends a Ctrl-C or Ctrl-Z to the whole foreground process group), or sent
  to the whole process group (``kill -- -PGID``, ``timeout``), which the run
  notes in a counter both processes see (``stopsignals.receipts``; the
  waiter looks for ``DEDUP_S``). The CHILD returns ``(pipe, None)`` and
  runs as before, with ``PR_SET_PDEATHSIG``: SIGTERM for a dashboard (a
  killed waiter stops it cleanly, the terminal restored), SIGKILL for a
  headless run (``kill -9`` of the process the user started ends the run
  as it did before the split: no report, no release).
- The run's last words (``hardexit.last_words``, right before
  ``os._exit``): its stdout and stderr are flushed, then its fds 0-2 are
  pointed at /dev/null (a process the kernel holds keeps its fds open:
  ``$(probetop ...)`` would wait for the pipe's end), then the exit status
  and what the kernel holds (``core.kernelholds``) go to the waiter.
- A headless run never holds the caller's pipes: where stdout or stderr is
  a pipe or a socket (``$(...)``, ``| tee``), the run writes to a pipe of
  its own that the waiter copies to it (``_Relay``; one for both when they
  are the same pipe, so ``2>&1`` keeps its order). A run killed while the
  kernel holds it has no last words and keeps its fds open until the
  kernel lets go; the waiter copies what it wrote, then exits, and the
  caller's pipe reaches its end. A broken pipe (``| head``) is passed back:
  the run's next write fails as it would have. A terminal or a file is
  given to the run as is (no end to wait for; a dashboard's terminal).
- The waiter ends as the run does: its exit status, or death by the same
  signal when the run died of one (SIGKILL, a crash: the shell says
  "Killed", ``$?`` and WIFSIGNALED are a plain process's; no core file of
  the waiter). A run that handled a stop signal exits 128+N itself, as fio
  does (docs/reliability.md says why). ``waitpid`` cannot tell it while a
  thread of the run is in an uninterruptible wait (D), so the waiter also
  looks at the run in /proc (``kernelholds.process_state``: every
  ``POLL_S``, every ``POLL_ENDING_S`` once it is ending) and leaves it to
  the kernel, saying on stderr which PID and which threads, when:
  - it said its last words naming held threads (``HELD_GRACE_S``), or
    naming none but with a thread in D for ``EXIT_GRACE_S`` since (time
    held, not wall time): exit with the status it gave; the report, the
    recording's footer and the status are final;
  - it ended without last words (its main thread gone: a traceback,
    ``kill -9`` of its PID) or a fatal signal is pending, with a thread in
    D for ``HELD_GRACE_S``: end as it did (its wait status, from /proc);
  - it was asked to stop and its MAIN thread has been in D for
    ``STOP_GRACE_S`` since (a read, close() or fsync() on the hung device:
    it can act on no signal): exit 128+N, saying there is no report.
  The process ends when its I/O completes or fails (the device answers or
  is removed).
- Anything else the run writes to the pipe is a message the waiter prints
  before it exits 0 (a dashboard detached into a session: foreground.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import resource
import select
import signal
import stat
import struct
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from typing import NoReturn

from probetop.probes.core import kernelholds, stopsignals
from probetop.tui.run import hardexit
from probetop.tui.sessions import jobcontrol

_PR_SET_PDEATHSIG = 1
_SI_KERNEL = 0x80  # siginfo's si_code of a signal the kernel sent (a tty's ^C, hangup)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_GRACE_S = 5.0
"""How long a run that said its last words and named nothing held may have
a thread in an uninterruptible wait (D) before the waiter leaves it to the
kernel: time the kernel holds it, unbroken, not wall time (on a loaded
machine an exit may wait for a CPU much longer; a slow device draining
its queue at exit takes seconds)."""
HELD_GRACE_S = 0.2
"""The same, when the run named threads the kernel holds, or ended (its
main thread gone, or killed) without last words: only the kernel keeps it."""
STOP_GRACE_S = 2.0
"""How long a run asked to stop may have its MAIN thread in D (a close() or
fsync() on the hung device) before the waiter exits 128+N without it."""
POLL_S = 0.5
"""How often the waiter looks at a run that has said nothing (/proc): a run
that dies without last words while the kernel holds a thread of it."""
DEDUP_S = 0.25
"""How long the waiter, sent a signal, looks whether the run noted one too
(``stopsignals.receipts``) before it passes its copy on: the run notes it in
its main thread, which on a loaded machine may wait that long for a CPU; a
stop sent to the waiter alone reaches the run that much later."""
POLL_ENDING_S = 0.02
"""The same once the run is ending (last words, a stop signal, a thread in D)."""
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
    held = FORWARDED + ((signal.SIGTSTP,) if dashboard else ())
    try:
        sig_r = _signal_fd(held)  # the waiter's; made here, where a failure can still say so
    except (OSError, AttributeError) as exc:
        return None, f"no signalfd for the waiter: {exc}"
    relays = [] if dashboard else _relayed_outputs()
    pipe_r, pipe_w = os.pipe()  # not inherited across exec (PEP 446)
    drop_r, drop_w = os.pipe()  # the waiter's word to a run whose main thread is held
    sys.stdout.flush()
    sys.stderr.flush()
    waiter = os.getpid()
    stopsignals.share_receipts()  # which signals the run got itself
    if dashboard:
        jobcontrol.share_before_fork()  # Ctrl-Z: the "view suspended" flag both see
        # Before the fork, not in the child after it: a Ctrl-Z in between
        # stopped the child alone (SIGTSTP's default action), the waiter took
        # its own copy for the child's, and the job never stopped.
        jobcontrol.catch_early_tstp()
    # Blocked from before the fork: one sent meanwhile waits for the waiter's
    # forwarding (a handler still installed would have ended the waiter, and
    # the run with it, with no report); the child takes its own mask back.
    # SIGTSTP too, for a dashboard: one sent to the child before it first ran
    # (under load, tens of milliseconds) is delivered as it returns from the
    # fork, and the handler's call Python then owed was dropped by its
    # after-fork clean-up in the child (the stop lost); blocked, it waits
    # for the mask below. One the process took blocked before the fork is
    # the waiter's alone (pending signals are not inherited): it notes it.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        child = os.fork()
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (pipe_r, pipe_w, drop_r, drop_w, sig_r):
            os.close(fd)
        for relay in relays:
            relay.discard()
        return None, f"fork failed: {exc.strerror}"
    if child != 0:
        if dashboard:
            jobcontrol.note_tstp_pending_at_fork()
        os.close(pipe_w)
        os.close(drop_r)
        for relay in relays:
            relay.start()
        _wait(child, pipe_r, drop_w, sig_r, held)
    for relay in relays:
        relay.hand_to_run()
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(sig_r)
    os.close(pipe_r)
    os.close(drop_w)
    if dashboard:
        os.close(drop_r)  # its output is the terminal: nothing waits for its end
    else:
        _drop_output_when_told(drop_r)
    # A killed waiter: a dashboard stops cleanly (it owns the terminal); a
    # headless run dies as the process the user killed would have (kill -9).
    death = signal.SIGTERM if dashboard else signal.SIGKILL
    set_parent_death_signal(death)
    if os.getppid() != waiter:  # the waiter died before the line above
        os._exit(128 + death)
    hardexit.last_words(lambda code: _tell_waiter(pipe_w, code))
    return pipe_w, None


_relays: list[_Relay] = []  # the waiter's copies of the run's output (module docstring)


def _relayed_outputs() -> list[_Relay]:
    """A ``_Relay`` per distinct pipe or socket among fds 1 and 2."""
    out: list[_Relay] = []
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
            continue
        same = [r for r in out if r.ident == (st.st_dev, st.st_ino)]
        if same:
            same[0].fds.append(fd)
        else:
            out.append(_Relay(fd, (st.st_dev, st.st_ino)))
    return out


class _Relay:
    """The run's end of one output: a pipe the run writes to (``fds``: 1, 2
    or both point at it in the run), which a thread of the waiter copies to
    the caller's ``fds[0]``. ``finish()``: once it has copied everything the
    run wrote, at its exit or left to the kernel."""

    def __init__(self, fd: int, ident: tuple[int, int]) -> None:
        self.fds = [fd]
        self.ident = ident
        self.r, self.w = os.pipe()
        self._lock = threading.Lock()  # held while a read's bytes are being written
        self._ended = False  # end of file, or the caller's pipe broke

    def discard(self) -> None:
        for fd in (self.r, self.w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def hand_to_run(self) -> None:
        """In the run: its fds write to the relay's pipe."""
        for fd in self.fds:
            os.dup2(self.w, fd)
        self.discard()

    def start(self) -> None:
        """In the waiter: copy on a thread."""
        os.close(self.w)
        os.set_blocking(self.r, False)
        _relays.append(self)
        threading.Thread(target=self._copy, name="waiter-relay", daemon=True).start()

    def _copy(self) -> None:
        out = self.fds[0]
        while True:
            with contextlib.suppress(InterruptedError):
                select.select([self.r], [], [])
            with self._lock:
                try:
                    data = os.read(self.r, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._ended = True
                    return
                try:
                    _write_all(out, data)
                except OSError:  # the caller's pipe broke: the run's next write fails
                    self._ended = True
                    os.close(self.r)
                    return

    def finish(self) -> None:
        """Wait until every byte the run wrote so far is copied (the pipe is
        empty and no copy is under way), or its end."""
        while True:
            with self._lock:
                if self._ended or _unread(self.r) == 0:
                    return
            time.sleep(0.005)


def _unread(fd: int) -> int:
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0])
    except OSError:
        return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # the caller made its pipe non-blocking
            select.select([], [fd], [])


def _finish_relays() -> None:
    """Before the waiter exits: everything the run wrote reaches the caller."""
    for relay in _relays:
        relay.finish()


def _drop_output_when_told(drop_r: int) -> None:
    """A thread of the run waits for the waiter's word that it leaves the run
    to the kernel without last words (its main thread held: it wrote no
    report): then the run's fds 0-2 go to /dev/null, as last words do, so a
    ``$(probetop ...)`` reaches the pipe's end. The waiter's normal exit
    (end of file) ends the thread."""

    def wait() -> None:
        with contextlib.suppress(OSError):
            if os.read(drop_r, 1):
                _to_devnull()

    threading.Thread(target=wait, name="probetop-drop-output", daemon=True).start()


def _to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)


def _tell_waiter(pipe_w: int, code: int) -> None:
    """The run's last words (module docstring)."""
    if jobcontrol.view_suspended():
        # Ending with the job stopped (a stop signal that reached the run
        # before its view's own handlers, while suspended from start-up):
        # the stopped waiter could not collect the status, and the job
        # stayed "Stopped" until `fg`.
        jobcontrol.continue_job()
    held = kernelholds.held()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    _to_devnull()
    text = "".join(f"{line}\n" for line in [str(code), *held])
    os.write(pipe_w, _STATUS + text.encode() + _STATUS)


@dataclass
class _Ending:
    """What the waiter knows of the run's end so far."""

    said: tuple[int, list[str]] | None = None  # last words: (status, held lines)
    said_at: float = 0.0
    stop: int | None = None  # the first stop signal the run got (forwarded or typed)
    stop_at: float = 0.0
    noted: dict[int, int] = field(default_factory=dict)  # receipts accounted for, per signal
    unexplained: dict[int, float] = field(default_factory=dict)  # receipts beyond noted: since
    dead: bool = False  # its main thread is gone, or a fatal signal came, with no exit yet
    held_since: float | None = None  # since when some thread of it is in D, unbroken
    main_held_since: float | None = None  # the same for its main thread


_SFD_NONBLOCK = os.O_NONBLOCK  # signalfd's flags are open()'s
_SFD_CLOEXEC = os.O_CLOEXEC
_SIGINFO = struct.Struct("IiiI")  # signalfd_siginfo: ssi_signo, ssi_errno, ssi_code, ssi_pid
_SIGINFO_SIZE = 128  # each record read from a signalfd


def _signal_fd(signals: tuple[int, ...]) -> int:
    """A signalfd (non-blocking) that reads ``signals``, each with its sender,
    in the order the kernel queued them; they must be blocked in every
    thread. The waiter's main loop reads it itself. A thread that took them
    (``sigwaitinfo``) and handed them on through a pipe could hold one it
    had taken while the main thread stopped the job, and hand it over only
    after the SIGCONT (it needs the GIL to write it): a request to stop
    that the stop had answered then stopped the job again after ``fg``.
    Read here, a signal is the kernel's until read, so the kernel discards
    the stop requests pending at a SIGCONT, as for any process."""
    libc = ctypes.CDLL(None, use_errno=True)
    mask = ctypes.create_string_buffer(128)  # a glibc sigset_t
    libc.sigemptyset(mask)
    for sig in signals:
        libc.sigaddset(mask, int(sig))
    fd = int(libc.signalfd(-1, mask, _SFD_NONBLOCK | _SFD_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def _wait(child: int, pipe_r: int, drop_w: int, sig_r: int, signals: tuple[int, ...]) -> NoReturn:
    """The waiter (module docstring): pass stop signals on (``signals``,
    blocked, read from the signalfd ``sig_r``), watch the run, exit (or
    die) as it does."""
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    os.set_blocking(pipe_r, False)
    ending = _Ending()
    message = b""
    while True:
        busy = ending.said is not None or ending.stop is not None or ending.dead
        with contextlib.suppress(InterruptedError):
            ready, _, _ = select.select([pipe_r, sig_r], [], [], POLL_ENDING_S if busy else POLL_S)
            if sig_r in ready:
                records = _records(sig_r)
                while records:
                    if _on_signal(child, ending, *records.pop(0)):
                        # Continued after a stop: as the kernel discards the stop
                        # signals pending at a SIGCONT, so are those read before it.
                        records = [r for r in records if r[0] != signal.SIGTSTP]
            if pipe_r in ready:
                with contextlib.suppress(BlockingIOError):
                    data = os.read(pipe_r, 65536)
                    if not data:
                        break
                    message += data
                if len(message) > 1 and message.startswith(_STATUS) and message.endswith(_STATUS):
                    lines = message[1:-1].decode("utf-8", "replace").splitlines()
                    ending.said, ending.said_at = (int(lines[0]), lines[1:]), time.monotonic()
                    message = b""
        _look(child, ending, drop_w)
        _account(ending, signals)
    if message:  # the child detached: its session goes on without us
        _finish_relays()
        with contextlib.suppress(OSError):
            os.write(1, message)
        os._exit(0)
    while True:  # every thread of it has ended (its pipe closed): collect it
        try:
            _pid, status = os.waitpid(child, 0)
            break
        except InterruptedError:  # pragma: no cover
            continue
        except ChildProcessError:
            _finish_relays()
            os._exit(ending.said[0] if ending.said is not None else 1)
    _end_as(status)


def _records(sig_r: int) -> list[tuple[int, int, int]]:
    """The signals queued on the signalfd so far (signo, si_code, si_pid), in order."""
    try:
        data = os.read(sig_r, _SIGINFO_SIZE * 64)
    except BlockingIOError:
        return []
    out = []
    for at in range(0, len(data) - _SIGINFO_SIZE + 1, _SIGINFO_SIZE):
        signo, _errno, code, pid = _SIGINFO.unpack_from(data, at)
        out.append((signo, code, pid))
    return out


def _on_signal(
    child: int,
    ending: _Ending,
    signo: int,
    code: int,
    sender: int,
) -> bool:
    """One signal sent to the waiter; True if it stopped the waiter as a job
    (it has been continued since). A SIGINT typed at the terminal (the
    kernel sends it to the whole foreground process group: the run got it
    itself) is not passed on, nor a Ctrl-Z (the dashboard got its own and
    asks the waiter to stop once the terminal is restored); the others are
    (a hangup: the kernel sends it to the session's leader alone)."""
    by_tty = code == _SI_KERNEL
    _account(ending, (signo,))  # what the run noted long enough ago is its own
    if signo != signal.SIGTSTP and ending.stop is None:
        ending.stop, ending.stop_at = signo, time.monotonic()
    from_run = sender == child  # its own request: Ctrl-Z once the view is away
    got_it = from_run or (by_tty and signo != signal.SIGHUP) or _got_it_too(ending, signo)
    if not from_run:
        ending.noted[signo] = ending.noted.get(signo, 0) + 1  # its copy or ours, once noted
    if signo == signal.SIGTSTP:
        return jobcontrol.waiter_tstp(child, from_run=from_run, got_it=got_it)
    if not got_it:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signo)
    return False


def _got_it_too(ending: _Ending, signo: int) -> bool:
    """True if the run noted a ``signo`` the waiter has not accounted for,
    within ``DEDUP_S``: it got its own copy (the signal went to the whole
    process group), so passing ours on would make one action two. Under
    load the run may note it later: then it gets two, as before."""
    deadline = time.monotonic() + DEDUP_S
    while stopsignals.receipts(signo) <= ending.noted.get(signo, 0):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _account(ending: _Ending, signals: tuple[int, ...]) -> None:
    """Signals the run noted that no signal to the waiter explains (a ``kill``
    of the run's own PID) are accounted for once ``DEDUP_S`` has passed
    since the waiter first saw them without a copy of its own: a later
    signal sent to the waiter alone is then passed on, never taken for a
    copy the run got. Not at once: the waiter's copy of a signal sent to the
    whole group may still be on its way (queued, not yet read from the
    signalfd) when the run has noted its own; accounted for at once, that
    copy was passed on as a second stop. A signal at the waiter and one the
    run noted within ``DEDUP_S`` of each other are one action, whichever
    came first."""
    now = time.monotonic()
    for sig in signals:
        seen = stopsignals.receipts(sig)
        if seen <= ending.noted.get(sig, 0):
            ending.unexplained.pop(sig, None)
            continue
        if now - ending.unexplained.setdefault(sig, now) >= DEDUP_S:
            ending.noted[sig] = seen
            del ending.unexplained[sig]


def _look(child: int, ending: _Ending, drop_w: int) -> None:
    """Collect the run if it ended; leave it to the kernel when it holds it
    (module docstring: the four cases); else return and wait on."""
    try:
        pid, status = os.waitpid(child, os.WNOHANG)
    except ChildProcessError:
        _finish_relays()
        os._exit(ending.said[0] if ending.said is not None else 1)
    if pid:
        _end_as(status)
    now = time.monotonic()
    quiet = ending.said is None and ending.stop is None and not ending.dead
    if quiet and kernelholds.main_state(child) not in ("Z", "X", "D"):
        return  # its main thread lives and runs: one read of /proc every POLL_S
    state = kernelholds.process_state(child)
    ending.dead = state.ended or state.dying
    ending.held_since = (ending.held_since or now) if state.stuck else None
    ending.main_held_since = (ending.main_held_since or now) if state.main_stuck else None
    held_s = now - ending.held_since if ending.held_since is not None else -1.0
    if ending.said is not None:
        code, named = ending.said
        if now - ending.said_at < HELD_GRACE_S:
            return  # an exit takes milliseconds: whatever holds it, give it those
        if named:
            _leave(child, "; ".join(named), code=code)
        if (
            ending.held_since is not None
            and now - max(ending.held_since, ending.said_at) >= EXIT_GRACE_S
        ):
            why = f"{', '.join(state.stuck)} for {EXIT_GRACE_S:g} s after its report"
            _leave(child, why, code=code)
        return
    if ending.dead and held_s >= HELD_GRACE_S:
        status = state.status if state.status is not None else signal.SIGKILL
        how = _how_ended(status)
        _leave(child, f"{', '.join(state.stuck)}; it {how} without its report", status=status)
    if ending.stop is None or ending.main_held_since is None:
        return
    if now - max(ending.main_held_since, ending.stop_at) >= STOP_GRACE_S:
        name = signal.Signals(ending.stop).name
        why = (
            f"{', '.join(state.stuck)}; its main thread could not act on {name} for "
            f"{STOP_GRACE_S:g} s, so it wrote no report"
        )
        _drop_output(child, drop_w)
        _leave(child, why, code=128 + ending.stop)


def _drop_output(child: int, drop_w: int) -> None:
    """Tell the run to point its fds 0-2 at /dev/null (``_drop_output_when_told``)
    and wait for it briefly: it dies with the waiter (PDEATHSIG), and with
    its output on our caller's pipe a ``$(probetop ...)`` would not return."""
    with contextlib.suppress(OSError):
        os.write(drop_w, b"!")
    deadline = time.monotonic() + HELD_GRACE_S
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{child}/fd/1") == os.devnull:
                return
        except OSError:
            return
        time.sleep(0.005)


def _how_ended(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited {code}"


def _leave(child: int, why: str, *, code: int | None = None, status: int | None = None) -> NoReturn:
    """Say which process is left to the kernel, then exit with ``code`` or
    end as the wait ``status`` says."""
    _finish_relays()  # what the run wrote comes before this line
    with contextlib.suppress(OSError):
        os.write(
            2,
            f"probetop: process {child} is left to the kernel ({why}): it ends when its "
            "I/O completes or fails (the device answers or is removed)\n".encode(),
        )
    if status is not None:
        _end_as(status)
    os._exit(code if code is not None else 1)


def _end_as(status: int) -> NoReturn:
    """End as the run did: its exit status, or death by the same signal (the
    shell then says "Killed", and ``$?`` and WIFSIGNALED are what a plain
    process gives), without a core file of the waiter."""
    _finish_relays()
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    die_of(-code)


def die_of(sig: int) -> NoReturn:
    """Die of ``sig`` as its default action does (docs/reliability.md: a
    process killed by a signal)."""
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the core would be the waiter's
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        signal.signal(sig, signal.SIG_DFL)  # not SIGKILL/SIGSTOP: those have no other
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    # To this thread, the only one it is unblocked in (a signal to the
    # process stays queued on the waiter's signalfd instead).
    signal.pthread_kill(threading.get_ident(), sig)
    os._exit(128 + sig)  # a signal whose default is to be ignored
