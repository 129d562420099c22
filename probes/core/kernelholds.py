"""Threads of this process the kernel holds, and the PID the user knows.

A thread blocked in an uninterruptible kernel wait (a ``pread`` on a device
that stopped answering, kernel AIO in flight: the kernel waits for it when
the process exits) keeps the whole process from ending, signals included,
until the I/O completes or fails. A run that gives up on such a thread
says so here, so whatever ends the process can tell the shell's side not to
wait for it (``tui.sessions.foreground``: the run is then a child of the
process the shell started, which exits with the run's status and leaves the
held child to the kernel).

Contract:
- ``hold(what, still)``: a run abandoned threads the kernel holds; ``what``
  says which (one line), ``still()`` whether they still live.
- ``held()``: the lines of the holds still alive, in order.
- ``bounded(call, what, within_s)``: run ``call`` (a close() or fsync() a
  hung device can hold: the kernel writes back what was written first) on
  a daemon thread and wait ``within_s`` at most (or ``within_s`` without a
  change of ``progress()``). True if it returned; else
  it is noted as a hold (``what``) and the caller goes on: its main thread
  is never the one the kernel keeps, so the run still reports and ends.
- ``main_state(pid)``: its main thread's state letter, in one read.
- ``process_state(pid)``: what /proc says of another process's threads
  (``ProcessState``); ``MainHeld(grace_s).check(pid)``, polled: its main
  thread's wait ("thread N in WCHAN") once that thread has been seen in an
  uninterruptible wait at every look for ``grace_s``, else None.
- ``held_now(pid, look_s)``: for a process seen from outside (``ls``): its
  threads in an uninterruptible wait at two looks ``look_s`` apart, with
  no context switch between (one wait all along: ordinary I/O, even a
  psync worker on a slow disk in D nearly always, switches per I/O), each as
  "thread N in WCHAN" and the file it waits on where /proc tells it
  ("on /dev/loop3"); None when none stayed there.
- ``set_shown_pid(pid)`` / ``shown_pid()``: the PID to name to the user (lock
  files' "in use by probetop PID N"): the process the shell started, which
  is this one unless a split made this process its child.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

_holds: list[tuple[str, Callable[[], bool]]] = []
_lock = threading.Lock()
_shown_pid: int | None = None


def hold(what: str, still: Callable[[], bool]) -> None:
    """Note threads the kernel holds (see the module docstring)."""
    with _lock:
        _holds.append((what, still))


def held() -> list[str]:
    """What is still held (a still() that fails counts as held)."""
    with _lock:
        holds = list(_holds)
    out = []
    for what, still in holds:
        try:
            alive = still()
        except Exception:  # asked on the way out: assume the worst
            alive = True
        if alive:
            out.append(what)
    return out


def bounded(
    call: Callable[[], object],
    what: str,
    within_s: float,
    progress: Callable[[], object] | None = None,
) -> bool:
    """``call()`` on a thread, waited for ``within_s`` (module docstring);
    with ``progress`` (a reading that changes while the call gets somewhere:
    a device's count of sectors written), ``within_s`` without a change."""
    done = threading.Event()

    def run() -> None:
        try:
            call()
        finally:
            done.set()

    thread = threading.Thread(target=run, name="probetop-bounded", daemon=True)
    thread.start()
    last = progress() if progress is not None else None
    deadline = time.monotonic() + within_s
    while not done.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
        now = time.monotonic()
        if progress is not None and (reading := progress()) != last:
            last, deadline = reading, now + within_s
        if now >= deadline:
            hold(what, thread.is_alive)
            return False
    return True


def set_shown_pid(pid: int | None) -> None:
    global _shown_pid
    _shown_pid = pid


def shown_pid() -> int:
    return _shown_pid if _shown_pid is not None else os.getpid()


_SIGKILL_BIT = 1 << (9 - 1)  # SigPnd's bit of SIGKILL: set in every thread of a dying group


@dataclass(frozen=True, slots=True)
class ProcessState:
    """What /proc says of another process (``process_state``).

    - ``ended``: its main thread has exited (the group leader is a zombie)
      while other threads live on, or the whole group was reaped already.
    - ``status``: the wait status ``ended`` carries (as ``waitpid`` gives
      it; the leader's own ``exit_code`` field), else None.
    - ``dying``: a fatal signal was delivered (the kernel marks it with a
      pending SIGKILL in every thread); it ends once no thread is held.
    - ``stuck``: its threads in an uninterruptible wait (D), each as
      "thread TID in WCHAN"; the main thread first when it is one of them.
    - ``main_stuck``: the main thread is among ``stuck``.
    """

    ended: bool = False
    status: int | None = None
    dying: bool = False
    stuck: tuple[str, ...] = ()
    main_stuck: bool = False


def _stat_fields(path: str) -> list[str] | None:
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        return None
    # fields after the name, which may hold spaces and ")": state is [0]
    return text.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


def _wchan(pid: int, tid: int) -> str:
    try:
        with open(f"/proc/{pid}/task/{tid}/wchan") as f:
            name = f.read().strip()
    except OSError:
        name = ""
    return name if name and name != "0" else "the kernel"


def _fatal_pending(pid: int, tid: int) -> bool:
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                pending = line.startswith(("SigPnd:", "ShdPnd:"))
                if pending and int(line.split()[1], 16) & _SIGKILL_BIT:
                    return True
    except (OSError, ValueError, IndexError):
        pass
    return False


def main_state(pid: int) -> str:
    """The state letter of ``pid``'s main thread ("R", "S", "D", "Z"...), ""
    when it is gone: one read, for a caller that looks often."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    return fields[0] if fields else ""


def process_state(pid: int) -> ProcessState:
    """Read ``pid``'s threads from /proc (see ``ProcessState``); a process
    that is gone altogether reads as ``ended`` with no status."""
    leader = _stat_fields(f"/proc/{pid}/stat")
    if leader is None or not leader:
        return ProcessState(ended=True)
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        tids = [pid]
    stuck: list[str] = []
    main_stuck = False
    dying = False
    for tid in tids:
        fields = leader if tid == pid else _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        if not fields:
            continue
        if fields[0] == "D":
            main_stuck = main_stuck or tid == pid
            stuck.append(f"thread {tid} in {_wchan(pid, tid)}")
            dying = dying or _fatal_pending(pid, tid)
    if leader[0] in ("Z", "X"):
        status = None
        with contextlib.suppress(IndexError, ValueError):
            status = int(leader[49])  # field 52, exit_code: the status waitpid will give
        return ProcessState(ended=True, status=status, dying=True, stuck=tuple(stuck))
    return ProcessState(dying=dying, stuck=tuple(stuck), main_stuck=main_stuck)


class MainHeld:
    """Polled: has ``pid``'s main thread been in D at every look for ``grace_s``?"""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._since: float | None = None

    def check(self, pid: int) -> str | None:
        """The held threads ("thread N in WCHAN, ...") once it has, else None."""
        state = process_state(pid)
        if not state.main_stuck:
            self._since = None
            return None
        now = time.monotonic()
        self._since = self._since if self._since is not None else now
        return ", ".join(state.stuck) if now - self._since >= self.grace_s else None


# Syscalls whose first argument is the fd they wait on: read, write, close,
# pread64, pwrite64, readv, writev, preadv, pwritev, fsync, fdatasync.
_FD_SYSCALLS = {
    "x86_64": {0, 1, 3, 17, 18, 19, 20, 74, 75, 295, 296},
    "aarch64": {57, 63, 64, 65, 66, 67, 68, 69, 70, 82, 83},
}


def _waits_on(pid: int, tid: int) -> str:
    """The " on PATH" of the fd ``tid``'s syscall names, when /proc tells it."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            fields = f.read().split()
        nr, fd = int(fields[0]), int(fields[1], 16)
        if nr not in _FD_SYSCALLS.get(os.uname().machine, set()):
            return ""
        return f" on {os.readlink(f'/proc/{pid}/fd/{fd}')}"
    except (OSError, ValueError, IndexError):
        return ""


def _switches(pid: int, tid: int) -> int:
    """The thread's context switches (voluntary and not): a thread that
    waits on one I/O all along makes none; one doing I/O after I/O (psync on
    a slow disk: in D nearly always) makes one per I/O at least."""
    total = 0
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return -1
    return total


def _stuck_tids(pid: int) -> dict[int, int]:
    """Its threads in D, with their context switches."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return {}
    out = {}
    for tid in tids:
        fields = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        if fields and fields[0] == "D":
            out[tid] = _switches(pid, tid)
    return out


def held_now(pid: int, look_s: float = 0.3) -> str | None:
    """See the module docstring: in D at both looks with no context switch
    between them (one wait all along, not I/O after I/O)."""
    first = _stuck_tids(pid)
    if not first:
        return None
    time.sleep(look_s)
    second = _stuck_tids(pid)
    still = sorted(t for t, n in first.items() if n >= 0 and second.get(t) == n)
    if not still:
        return None
    return ", ".join(f"thread {t} in {_wchan(pid, t)}{_waits_on(pid, t)}" for t in still)
