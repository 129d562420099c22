"""Starting, waiting for and stopping one CPU phase's worker threads.

Contract: ``Crew.start`` starts one worker per job in batches (the event loop
keeps turning while 1000s start) and returns once all wait at the gate (at
most ``ARRIVE_WAIT_S``); ``wait`` and ``stop`` poll the workers' done flags
with deadlines and never block the event loop; ``stop`` returns how many
workers are not done and, if any are still running, keeps their memory alive
for the life of the process.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import ProbeError
from probetop.probes.core.machine import WORKER_STACK_BYTES, thread_stack
from probetop.probes.core.sysbench.counters import STAT_DONE, STOPPED_FLAG
from probetop.probes.cpu.engine import (
    Engine,
    Gate,
    Stacks,
    ThreadJob,
    keep_forever,
)

if TYPE_CHECKING:
    import numpy as np

# Threads started per turn of the event loop: starting 1000s of threads in one
# go would hold the loop (each start waits for the new thread to run).
START_BATCH = 64
DONE_POLL_S = 0.01  # how often a waiting sampler looks at the threads' done flags
THREAD_EXIT_WAIT_S = 0.2  # then how long it lets finished threads vanish
ARRIVE_WAIT_S = 5.0  # at most this long for started threads to reach the gate


class Crew:
    """One phase's workers, started in batches (the loop keeps turning while
    1000s start), waiting at the gate until all are there.

    With the native engine each worker is a native thread that never enters
    Python (``NativeEngine.spawn``): 1000s of them never queue for the GIL,
    so they cannot stall this loop, not even while they end. The Python
    engine's workers are Python threads (at most 2 per CPU: check_python_threads).
    A worker is done when its STAT_DONE slot is set; gone when it counted
    itself in ``exited``. Every wait here polls those, with a deadline."""

    def __init__(self, engine: Engine, gate: Gate, stats: np.ndarray) -> None:
        self.engine = engine
        self.gate = gate  # workers wait at it until all are started
        self.stats = stats
        self.jobs: list[ThreadJob] = []  # what the workers use: shared state, counters
        self.exited = ctypes.c_int64(0)  # workers that have ended (native: atomic add)
        self.started = 0
        self.stacks: Stacks | None = None
        self.tids: list[int] = []  # native workers not reaped yet
        self.background = False  # workers run SCHED_IDLE
        self.python_threads: list[threading.Thread] = []

    async def start(self, target: Any, jobs: list[ThreadJob], background: bool = False) -> None:
        """Start one worker per job; raise ProbeError if the OS refuses one."""
        spawn = getattr(self.engine, "spawn", None)
        self.background = background
        self.jobs = jobs
        if spawn is not None:
            self.stacks = Stacks(len(jobs), WORKER_STACK_BYTES)
        for first in range(0, len(jobs), START_BATCH):
            for i, job in enumerate(jobs[first : first + START_BATCH], first):
                try:
                    if spawn is not None:
                        assert self.stacks is not None
                        tid = spawn(job, self.exited, idle=background, stacks=self.stacks, index=i)
                        self.tids.append(tid)
                    else:
                        with thread_stack():
                            thread = threading.Thread(
                                target=target,
                                args=(job, background, self._python_exited),
                                name=f"probetop-cpu-{i}",
                                daemon=True,
                            )
                            thread.start()
                        self.python_threads.append(thread)
                except (OSError, RuntimeError) as exc:  # EAGAIN / "can't start new thread"
                    job.shared.request_stop()
                    self.stats[i:, STAT_DONE] = STOPPED_FLAG  # never started
                    raise ProbeError(
                        f"could not start CPU thread {i + 1} of {len(jobs)} ({exc}); "
                        "a thread or memory limit was reached while starting"
                    ) from exc
                self.started += 1
            await asyncio.sleep(0)
        # Open only when every worker waits at the gate: one still starting
        # when the others compute would wait a scheduler turn behind them.
        deadline = time.monotonic() + ARRIVE_WAIT_S
        while self.gate.arrived < self.started and time.monotonic() < deadline:
            await asyncio.sleep(DONE_POLL_S)

    def _reap(self) -> None:
        """Free the native workers that have ended (the event loop's thread
        does it, so an ending worker takes no lock: see engine._PThreads)."""
        reap = getattr(self.engine, "reap", None)
        if reap is not None and self.tids:
            self.tids = [tid for tid in self.tids if not reap(tid)]

    def _python_exited(self) -> None:
        with _exit_lock:
            self.exited.value += 1

    def all_done(self) -> bool:
        return bool((self.stats[:, STAT_DONE] != 0).all())

    async def wait(self, timeout: float, watch_after: float = 0.0) -> None:
        """Until every worker is done or ``timeout``; yields even when 0.
        The done flags are polled (every ``DONE_POLL_S``) only after
        ``watch_after`` seconds: before that the workers cannot be done (no
        --time deadline, no --events limit near), so the event loop sleeps."""
        deadline = time.monotonic() + timeout
        if watch_after > 0:
            await asyncio.sleep(max(0.0, min(timeout, watch_after)))
        while True:
            left = deadline - time.monotonic()
            await asyncio.sleep(min(DONE_POLL_S, max(0.0, left)))
            if left <= 0 or self.all_done():
                return

    async def stop(self, timeout: float) -> int:
        """After the stop flag: open the gate (workers still waiting leave at
        once), wait (bounded) until every worker is done, then (bounded) until
        every worker has ended; return how many are not done."""
        self.gate.open()
        self.stats[self.started :, STAT_DONE] = STOPPED_FLAG  # cancelled while starting
        await self.wait(timeout)
        deadline = time.monotonic() + THREAD_EXIT_WAIT_S
        while time.monotonic() < deadline:
            self._reap()
            if not self.tids and self.exited.value >= self.started:
                break
            await asyncio.sleep(0.002)
        for thread in self.python_threads:  # leave Python too (microseconds)
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.tids or self.exited.value < self.started:
            # Its workers still use its memory (counters, gate, stop flag):
            # never free it, not even at interpreter exit (a freed page would
            # crash the process under a thread that is about to end).
            keep_forever(self)
        return int((self.stats[:, STAT_DONE] == 0).sum())


_exit_lock = threading.Lock()
