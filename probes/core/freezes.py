"""Notice when this whole process was frozen: a SIGSTOP (which no program can
catch), a cgroup freezer, a debugger's stop, a paused virtual machine.

While frozen no probe measures; without a note the recording has a silent
gap, and the interval around it spans time in which nothing ran. A process
cannot see the stop begin, but it can see a sleep end late: a daemon thread
sleeps ``TICK_S`` at a time and, when it wakes later than its sleep plus
what it spent waiting for a CPU, the rest of the delay is time in which the
thread could not run at all. Load alone never makes that: a starved thread
is runnable, and the kernel counts its wait in ``/proc/thread-self/schedstat``
(run_delay); a stopped one is not, and the kernel counts nothing.

Contract:
- ``FreezeWatch(on_freeze, alive)``: ``start()`` starts the thread (once);
  ``close()`` ends it, and so does ``alive()`` turning False (checked each
  tick: its owner was dropped without a close). ``on_freeze(seconds, ended_ns)`` is called from that
  thread for each freeze of at least ``MIN_FREEZE_S``: ``seconds`` is its
  estimated length (what the sleep overran beyond the CPU wait, plus half a
  tick: the freeze may have begun anywhere in the sleep), ``ended_ns`` when
  the thread saw it end (``now_ns``'s clock).
- ``excuse(t_ns)``: a stop this process makes itself at ``t_ns`` (the
  dashboard's Ctrl-Z without a waiter, which records its own pause): the
  next freeze, if it began within ``EXCUSE_S`` of it, is not reported.
- Without schedstat (a kernel without CONFIG_SCHED_INFO) a late sleep
  cannot be told from a loaded machine: nothing is reported, never a guess.
- Cost: one wake-up per ``TICK_S`` and one ~3 µs read of a /proc file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from probetop.probes.core.sample import now_ns

TICK_S = 0.5
MIN_FREEZE_S = 0.5  # shorter stops are within the probes' interval noise
EXCUSE_S = 2.0
SCHEDSTAT = "/proc/thread-self/schedstat"


def _run_delay_ns(fd: int) -> int | None:
    """This thread's CPU time plus its time waiting on a run queue (ns)."""
    try:
        fields = os.pread(fd, 128, 0).split()
        return int(fields[0]) + int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


class FreezeWatch:
    """See the module docstring."""

    def __init__(
        self, on_freeze: Callable[[float, int], None], alive: Callable[[], bool] = lambda: True
    ) -> None:
        self.on_freeze = on_freeze
        self.alive = alive
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._excused_at_ns: int | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._watch, name="probetop-freezes", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """End the thread; it is gone when this returns (it wakes at once)."""
        self._closed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)

    def excuse(self, t_ns: int) -> None:
        self._excused_at_ns = t_ns

    def _watch(self) -> None:
        try:
            fd = os.open(SCHEDSTAT, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return  # see the contract: no schedstat, no reports
        try:
            self._loop(fd)
        finally:
            os.close(fd)

    def _loop(self, fd: int) -> None:
        tick_ns = int(TICK_S * 1e9)
        before, ran = now_ns(), _run_delay_ns(fd)
        while not self._closed.wait(TICK_S):
            if not self.alive():
                return
            after, ran_after = now_ns(), _run_delay_ns(fd)
            if ran is None or ran_after is None:
                return
            unexplained_ns = (after - before) - tick_ns - (ran_after - ran)
            before, ran = after, ran_after
            if unexplained_ns < MIN_FREEZE_S * 1e9:
                continue
            seconds = unexplained_ns / 1e9 + TICK_S / 2
            if not self._excused(after - int(seconds * 1e9)):
                self.on_freeze(seconds, after)

    def _excused(self, began_ns: int) -> bool:
        excused_at, self._excused_at_ns = self._excused_at_ns, None
        return excused_at is not None and abs(began_ns - excused_at) <= EXCUSE_S * 1e9
