"""Job control for the dashboard: Ctrl-Z, ``fg`` and ``bg`` as in vim or less,
with the probes measuring on while the view is suspended.

A live dashboard usually runs as two processes (``tui.sessions.foreground``):
the WAITER, the process the shell started and waits for, and its child, the
DASHBOARD, which runs the probes. The shell treats the job as stopped when
its own child, the waiter, stops; so a suspend stops only the waiter and the
dashboard process runs on, its probes and recording included, with the
terminal handed back.

- ``share_before_fork()`` (the splitter, before its fork) makes flags
  shared by both processes: 1 while the view is suspended; 1 once a stop
  came during start-up, before the view's driver was up, that only one
  process took (``catch_early_tstp()``, installed before the fork: one
  typed at any moment of the split is kept; ``take_early_tstp()`` reads and
  clears it); and two counts: stops the start-up handler took, and those of
  them the waiter answered by stopping as the job (a Ctrl-Z reaches both).
  A stop taken and not answered (``kill -TSTP`` of the dashboard's PID)
  suspends the view once it is up. Counts, not a flag the waiter cleared
  once continued: under load the dashboard's Python handler ran after
  ``fg`` (its main thread waiting for the interpreter lock), set the flag
  again, and the view, once up, suspended itself and stopped the job a
  second time: "Stopped" right after ``fg``, the view never back (1 run in
  15 beside two busy loops).
- ``waiter_tstp(child, from_run, got_it)`` (the waiter, for each SIGTSTP
  with its sender): one Ctrl-Z is one suspend. During start-up (until the
  view's driver takes SIGTSTP: ``driver_takes_tstp()``) the waiter stops as
  the job at once, as one process would, and ``fg`` continues the whole
  process group, the dashboard's own children included. The tty's copy is not passed
  on (the dashboard got its own); a ``kill -TSTP`` on the waiter is, while
  the view is up, so the terminal is restored before the shell takes it
  back; sent by the dashboard (the view is suspended, flag 1) the waiter
  stops itself as a job (the shell says "Stopped"). Continued with the view
  still suspended, it passes the SIGCONT on: a ``kill -CONT`` from outside
  reaches only the waiter.
- ``set_waiter(pid)`` (the dashboard, after the fork) names the waiter.
- ``stop_job()`` (the dashboard, after restoring the terminal): sets the
  flag and stops the waiter, and the job's starters (make of ``make demo``:
  the processes between the shell and the job in its process group). With
  no waiter (a replay, an attached view, a run that could not split) the
  dashboard process itself stops, as vim does; its caller records that
  pause first.
- ``continue_job()``: clears the flag and continues the waiter (on resume,
  and when the dashboard ends while suspended, so the waiter can collect its
  exit status).
- ``in_foreground(fd)``: the terminal on ``fd`` is ours to draw on (its
  foreground process group is ours, or it is not our controlling terminal:
  no job control applies then). After ``bg`` it is not: the view stays
  suspended and the job is stopped again, as vim's "Stopped (tty output)".
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import signal
import sys
import threading

from probetop.probes.core import stopsignals

_flag: mmap.mmap | None = None
_waiter: int | None = None
MAX_STARTERS = 16  # processes between the shell and the job, at most (a bound on the walk)


_SUSPENDED = 0  # the shared page's bytes: the view is suspended
_EARLY_TSTP = 1  # a stop during start-up that one process alone took, kept for the view
_DRIVER_UP = 2  # the view's driver handles SIGTSTP from now on (``driver_takes_tstp``)
_TAKEN = 3  # stops the start-up handler took (``_note_early_tstp``), mod 256
_ANSWERED = 4  # of those, the ones the waiter answered by stopping as the job, mod 256


def share_before_fork() -> None:
    """Create the shared flags (call before the fork)."""
    global _flag
    if _flag is None:
        _flag = mmap.mmap(-1, 5)  # MAP_SHARED | MAP_ANONYMOUS: one page both see


def set_waiter(pid: int) -> None:
    """The dashboard's side: ``pid`` is the waiter the shell knows."""
    global _waiter
    _waiter = pid


def waiter_pid() -> int | None:
    return _waiter


def view_suspended() -> bool:
    return _flag is not None and _flag[_SUSPENDED] == 1


def _set_flag(value: int) -> None:
    if _flag is not None:
        _flag[_SUSPENDED] = value


def waiter_tstp(child: int, *, from_run: bool, got_it: bool) -> bool:
    """The waiter's SIGTSTP (taken with its sender, in its main thread): one
    Ctrl-Z is one suspend. Typed at the terminal, the dashboard got its own
    copy (the kernel sends it to the whole foreground process group) and
    asks once it has restored the terminal: nothing to pass on (nor one it
    got as well from a signal to the process group). Sent by the
    dashboard (the view is suspended), or from outside while the view is
    away: stop as a job (True once continued). From outside while the view is up (``kill -TSTP``
    on the waiter): to the dashboard, which restores the terminal first;
    not when it got its own (``got_it``: the tty's, or a ``kill -TSTP --
    -PGID``)."""
    if not from_run and not view_suspended() and _flag is not None and _flag[_DRIVER_UP] == 0:
        # Start-up: no view to restore, so the job stops at once, as one
        # process would. Left to the dashboard until its view was up, a
        # Ctrl-Z also stopped what the dashboard was waiting for in the
        # job's process group (``ldconfig`` run by ``ctypes.util.find_library``
        # as the cpu probe was made; a ``subprocess`` child between its vfork
        # and exec): SIGTSTP's default action there, the dashboard blocked
        # on it for good, and the job never stopped.
        _stop_self()
        _flag[_EARLY_TSTP] = 0  # continued: a stop kept for the view is answered too
        if got_it:  # the dashboard took this one too (by now, or its handler runs later)
            _flag[_ANSWERED] = (_flag[_ANSWERED] + 1) % 256
        return True
    if not from_run and not view_suspended():
        if not got_it:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTSTP)
        return False
    _stop_self()
    if view_suspended():
        # Continued while the view is away. By ``fg`` the dashboard got
        # the shell's SIGCONT too; by a ``kill -CONT`` from outside it got
        # none, and the shell now counts the job running, so its ``fg``
        # would send none either: tell the dashboard, which takes the
        # view back when the terminal is ours, else stops the job again.
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGCONT)
    return True


def _stop_self() -> None:
    """Stop this process as SIGTSTP's default action does ("Stopped"); in an
    orphaned process group (no shell to hand the terminal to) the kernel
    discards it and this returns at once. One stop answers every stop
    request pending when it is made: the SIGTSTP is sent to this thread
    while SIGTSTP is blocked, then unblocked here only, so the kernel
    delivers one of those pending (this one, or a request that came
    meanwhile: either stops the process) and discards the rest at the
    SIGCONT. Unblocked first and then sent, a request pending at the unblock
    stopped the process there, and this thread's own SIGTSTP, sent once
    continued, stopped it a second time after ``fg``."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTSTP])
    handler = signal.signal(signal.SIGTSTP, signal.SIG_DFL)
    try:
        signal.pthread_kill(threading.get_ident(), signal.SIGTSTP)  # pending: blocked
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTSTP])  # returns after SIGCONT
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGTSTP, handler)


def stop_job() -> None:
    """The view is suspended and the terminal restored: stop the job. With a
    waiter this process runs on; without one it stops here until SIGCONT.
    The job's starters (``_starters``: ``make demo``'s make) stop too, so
    the shell, which waits for them, says "Stopped"."""
    _set_flag(1)
    job = _waiter if _waiter is not None else os.getpid()
    starters = _starters(job)
    if _waiter is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(_waiter, signal.SIGTSTP)
    for pid in starters:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTSTP)
    if _waiter is None:
        _stop_self()


def continue_job() -> None:
    """The view is back (or the dashboard ends): the waiter and the job's
    starters run again (``fg`` continued them already; a SIGCONT sent to
    the dashboard alone did not)."""
    _set_flag(0)
    job = _waiter if _waiter is not None else os.getpid()
    for pid in [*([_waiter] if _waiter is not None else []), *_starters(job)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


_early_tstp = False  # without a shared page (no split): this process's own


def catch_early_tstp() -> None:
    """From before the split's fork on (the splitter calls it after
    ``share_before_fork``): a stop (the Ctrl-Z key, or ``kill -TSTP``)
    before the view's driver takes SIGTSTP over (start-up: imports, probes
    starting, a JIT compile) is noted for the driver to act on once the
    view is up, whichever process took it. Before, SIGTSTP's default action
    stopped the dashboard process alone: the waiter, the process the shell
    knows, ran on, so the shell never said "Stopped", the terminal stayed the
    dashboard's, and no key, fg or Ctrl-C reached it. Installed after the
    fork, in the child, it left that window open from the fork until the
    child ran (under load: tens of milliseconds), and a Ctrl-Z typed then
    was lost (about 2 runs in 25 at load 10-15). The splitter also blocks
    SIGTSTP across the fork (``note_tstp_pending_at_fork``).

    The note is in the page both processes share: a stop the process took
    before the fork, whose Python handler runs only after it (Python clears
    the child's pending handlers at a fork: the waiter runs it), or the
    waiter took in the moment before it blocks SIGTSTP (a ``kill -TSTP`` of
    the job's PID), reaches the dashboard all the same."""
    signal.signal(signal.SIGTSTP, _note_early_tstp)


def _note_early_tstp(signum: int, _frame: object) -> None:
    global _early_tstp
    stopsignals.note(signum)  # the waiter passes on no copy of one the dashboard got
    if _flag is not None:
        _flag[_TAKEN] = (_flag[_TAKEN] + 1) % 256
    else:
        _early_tstp = True


def _keep_early_tstp() -> None:
    global _early_tstp
    if _flag is not None:
        _flag[_EARLY_TSTP] = 1
    else:
        _early_tstp = True


def note_tstp_pending_at_fork() -> None:
    """The waiter, right after the split's fork, SIGTSTP still blocked (the
    splitter blocks it before the fork, so that the child cannot take one
    before Python's after-fork clean-up drops its handler's call): a stop
    the process took between that block and the fork is pending here alone
    (a child inherits no pending signal), so it is kept for the dashboard.
    One sent to the whole process group after the fork is pending in both:
    the same one stop."""
    if signal.sigtimedwait([signal.SIGTSTP], 0) is not None:
        _keep_early_tstp()


def driver_takes_tstp() -> None:
    """The dashboard, as its view's driver puts its SIGTSTP handler in: from
    now on a stop is the driver's (it restores the terminal, then stops the
    job); before, the waiter stops as the job at once (``waiter_tstp``)."""
    if _flag is not None:
        _flag[_DRIVER_UP] = 1


def take_early_tstp() -> bool:
    """True once if a stop came before the view's driver took SIGTSTP that
    the waiter did not answer (module docstring)."""
    global _early_tstp
    taken = _early_tstp
    _early_tstp = False
    if _flag is not None:
        taken = taken or _flag[_EARLY_TSTP] == 1
        _flag[_EARLY_TSTP] = 0
        # More taken than answered: unanswered. Fewer: the handler of a stop
        # the waiter answered has not run yet; it evens the counts when it does.
        unanswered = (_flag[_TAKEN] - _flag[_ANSWERED]) % 256
        if 0 < unanswered < 128:
            taken = True
            _flag[_ANSWERED] = _flag[_TAKEN]
    return taken


def _parent_of(pid: int) -> int | None:
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read()  # noqa: SIM115 - one read
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()  # the name may hold spaces and ")"
    return int(fields[1]) if len(fields) > 1 else None


def _starters(job: int) -> list[int]:
    """The processes between the shell and ``job`` (the waiter, or this
    process) in ``job``'s process group: its ancestors up to the first of
    another group (``make demo``: make; ``sh -c 'probetop ...; ...'``: sh).
    The shell waits for the first of them, so the job is stopped, for the
    shell, when they are."""
    out: list[int] = []
    try:
        group, session = os.getpgid(job), os.getsid(job)
        pid = _parent_of(job)
        while pid is not None and pid > 1 and len(out) < MAX_STARTERS:
            if os.getpgid(pid) != group or os.getsid(pid) != session:
                break
            out.append(pid)
            pid = _parent_of(pid)
    except OSError:
        pass
    return out


def shell_can_resume() -> bool:
    """True when a stopped job could be resumed by a shell: the job's first
    process (the waiter, or this one, or the first of its starters: ``make``
    of ``make demo``) has a parent in the same session but another process
    group. Otherwise (the dashboard is a tmux pane's own command, run by
    ``setsid`` or ``script -c``) the process group is orphaned: the kernel
    ignores its SIGTSTP and a suspended view would leave a blank terminal no
    ``fg`` can bring back."""
    job = _waiter if _waiter is not None else os.getpid()
    first = ([job, *_starters(job)])[-1]
    parent = _parent_of(first)
    if parent is None or parent <= 1:
        return False
    try:
        return os.getsid(parent) == os.getsid(0) and os.getpgid(parent) != os.getpgid(job)
    except OSError:
        return False


def _ctty_of(pid: int | str) -> int | None:
    """The controlling terminal's device number of ``pid`` (0: none), or None."""
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read()  # noqa: SIM115 - one read
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()
    return int(fields[4]) if len(fields) > 4 else None


_not_ours: bool | None = None


def terminal_not_ours(fd: int = 0) -> bool:
    """True when the terminal on ``fd`` is not this process's controlling
    terminal and nothing in that terminal's session waits for this process
    (``setsid probetop ...`` without ``-w``: setsid forks, its parent
    exits, and the shell reads the keyboard again). A dashboard there would
    share every key with the shell's prompt, and no q, Ctrl-C or ``fg``
    could be sure to reach it, so the run is headless, as without a
    terminal; said once on stderr. ``setsid -w`` (setsid, in the
    terminal's session, waits), ``script`` and a tmux pane's own command
    (a terminal of their own), and a terminal no session has (a pty a
    program opened for this process alone) keep the dashboard."""
    global _not_ours
    if _not_ours is None:  # once, before any fork: a waiter's child has the waiter for parent
        _not_ours = _terminal_not_ours(fd)
    return _not_ours


def _terminal_not_ours(fd: int) -> bool:
    mine = _ctty_of("self")
    if mine is None or mine != 0:
        return False  # a controlling terminal (the usual case), or no /proc
    try:
        terminal = os.fstat(fd).st_rdev
    except OSError:
        return False
    parent = _ctty_of(os.getppid())
    if parent is not None and parent != 0 and _same_device(parent, terminal):
        return False  # the parent (setsid -w) is in the terminal's session, waiting
    if not _controlled_by_some_session(terminal):
        return False  # no shell has it either (a pty a program opened for us): ours alone
    with contextlib.suppress(OSError):
        print(
            "probetop: note: running headless: the terminal is not this process's own and "
            "nothing there waits for it (setsid without -w?); a dashboard would share "
            "its keys with the shell",
            file=sys.stderr,
        )
    return True


def _controlled_by_some_session(terminal: int) -> bool:
    """Some process has ``terminal`` as its controlling terminal (a shell
    reading it). One look through /proc: only for a run with no terminal
    of its own on a terminal's stdin, which is rare."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True
    for pid in pids:
        tty = _ctty_of(pid)
        if tty and _same_device(tty, terminal):
            return True
    return False


def _same_device(a: int, b: int) -> bool:
    return os.major(a) == os.major(b) and os.minor(a) == os.minor(b)


def in_foreground(fd: int) -> bool:
    """True when the terminal on ``fd`` is ours to draw on (module docstring)."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError as exc:
        # ENOTTY: a terminal that is not our controlling one (setsid): no job
        # control applies. Anything else (EIO: it hung up): not ours to draw.
        return exc.errno == errno.ENOTTY
