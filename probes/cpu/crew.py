"""Starting, waiting for and stopping one CPU phase's worker threads.

Contract: ``Crew.start`` starts one worker per job in batches (the event loop
keeps turning while 1000s start) and returns once all wait at the gate (at
most ``ARRIVE_WAIT_S``); ``wait`` and ``stop`` poll the workers' done flags
with deadlines and never block the event loop; ``stop`` returns how many
workers are not done and, if any are still running, keeps their memory alive
for the life of the process.

Background (SCHED_IDLE) native workers whose shared state is in an ``Arena``
run in a worker process of their own session (``os.setsid``), so in a
scheduling group of their own: the kernel's autogroups (one per session)
and cgroups share CPU time between groups first and rank SCHED_IDLE threads
only inside their group, so busy workers in this process's group kept the
event loop waiting on the run queue for seconds beside any other busy
process (docs/cpu.md). The worker process starts the threads, joins them and
exits; it never returns to Python after its threads start and dies with this
process's thread that forked it (``PR_SET_PDEATHSIG``); ``stop`` kills it
if a worker has not ended in time.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import select
import signal
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import ProbeError
from probetop.probes.core.machine import WORKER_STACK_BYTES, thread_stack
from probetop.probes.core.sysbench.counters import STAT_DONE, STOPPED_FLAG
from probetop.probes.cpu.engine import (
    Arena,
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

    def __init__(
        self, engine: Engine, gate: Gate, stats: np.ndarray, arena: Arena | None = None
    ) -> None:
        """``arena``: the shared memory that holds ``gate``, the jobs' shared
        run and ``stats`` (and their histograms); with it, background native
        workers run in a worker process of their own session."""
        self.engine = engine
        self.gate = gate  # workers wait at it until all are started
        self.stats = stats
        self.arena = arena
        self.jobs: list[ThreadJob] = []  # what the workers use: shared state, counters
        # workers that have ended (native: atomic add)
        self.exited = arena.cell(ctypes.c_int64) if arena is not None else ctypes.c_int64(0)
        self.pid = 0  # the worker process (0: the workers are threads of this one)
        self._pidfd = -1  # readable once the worker process has ended (never reaped here)
        self.start_error = arena.cell(ctypes.c_int64) if arena is not None else None
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
        if spawn is not None and background and self.arena is not None:
            await self._start_process(jobs)
            return
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

    async def _start_process(self, jobs: list[ThreadJob]) -> None:
        """Fork the worker process (it starts every worker, see ``_worker_process``)
        and wait, polling, until all wait at the gate; raise ProbeError if it
        could not start one."""
        assert self.start_error is not None
        parent = os.getpid()
        with warnings.catch_warnings():
            # Python 3.12+ warns that forking a threaded process may deadlock
            # the child: this child takes no lock another thread could hold
            # (see _worker_process).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the worker process (never returns)
            self._worker_process(jobs, parent)
        self.pid = pid
        _reap_ended_worker_processes()
        _unreaped.append(pid)
        try:
            self._pidfd = os.pidfd_open(pid)
        except OSError:  # pragma: no cover - a kernel before 5.3: /proc tells instead
            self._pidfd = -1
        # The worker process starts them all while this loop turns: the
        # allowance covers the starts too, ARRIVE_WAIT_S per 1000 threads.
        deadline = time.monotonic() + ARRIVE_WAIT_S * max(1, len(jobs) // 1000)
        while self.gate.arrived < len(jobs) and time.monotonic() < deadline:
            failed = int(self.start_error.value)
            if not failed and self._process_ended():  # died before its workers arrived
                jobs[0].shared.request_stop()
                self.gate.open()
                self.stats[:, STAT_DONE] = STOPPED_FLAG
                raise ProbeError(
                    "the CPU worker process ended before its threads started "
                    f"({self._end_status()})"
                )
            if failed:
                jobs[0].shared.request_stop()
                self.gate.open()
                started = failed >> 16
                self.stats[started:, STAT_DONE] = STOPPED_FLAG  # never started
                self.started = started
                raise ProbeError(
                    f"could not start CPU thread {started + 1} of {len(jobs)} "
                    f"({os.strerror(failed & 0xFFFF)}); "
                    "a thread or memory limit was reached while starting"
                )
            await asyncio.sleep(DONE_POLL_S)
        self.started = len(jobs)

    def _worker_process(self, jobs: list[ThreadJob], parent: int) -> None:
        """The forked worker process: a session of its own (so a scheduling
        group of its own), the workers started, joined, then ``_exit``. It
        only calls what is bound already (no import, no lock another thread
        of the parent could have held), and keeps no descriptor of the
        parent's (a terminal, a socket, a recording)."""
        code = 0
        try:
            gc.disable()  # no finalizer of the parent's objects runs here
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent ended before the prctl
                os._exit(0)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.closerange(3, _MAX_FD)
            spawn = self.engine.spawn  # type: ignore[attr-defined]
            tids = []
            for i, job in enumerate(jobs):
                try:
                    tid = spawn(job, self.exited, idle=True, stacks=self.stacks, index=i)
                except OSError as exc:
                    assert self.start_error is not None
                    self.start_error.value = (i << 16) | ((exc.errno or 11) & 0xFFFF)
                    job.shared.request_stop()
                    break
                tids.append(tid)
            for tid in tids:
                self.engine.join(tid)  # type: ignore[attr-defined]
        except BaseException:  # the worker process never returns to the caller
            code = 70
        os._exit(code)

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
        if self.arena is not None and (self.pid or self.background):
            return await self._stop_process()
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

    async def _stop_process(self) -> int:
        """After ``wait``: let the worker process end (bounded), else kill it
        (its workers compute nothing more either way; the counters are in the
        arena, which this process keeps); return how many workers were not
        done. Never reaps it (see ``_reap_ended_worker_processes``)."""
        deadline = time.monotonic() + THREAD_EXIT_WAIT_S
        while self.pid and not self._process_ended() and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        not_done = int((self.stats[:, STAT_DONE] == 0).sum())
        if self.pid and not self._process_ended():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - reaped meanwhile
                pass
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        return not_done

    def _process_ended(self) -> bool:
        """The worker process has ended (it may be a zombie: not reaped)."""
        if self._pidfd >= 0:
            return bool(select.select([self._pidfd], [], [], 0)[0])
        try:  # pragma: no cover - no pidfd
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
        except OSError:  # pragma: no cover
            return True

    def _end_status(self) -> str:
        """How the ended worker process ended, read without reaping it."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except (OSError, AttributeError):  # pragma: no cover
            return "ended"
        if info is None:  # pragma: no cover - not ended after all
            return "ended"
        if info.si_code == os.CLD_EXITED:
            return f"exit status {info.si_status}"
        return f"killed by {signal.Signals(info.si_status).name}"


_exit_lock = threading.Lock()


# Worker processes not reaped yet. Reaping one while its threads still end
# invalidates their /proc entries and waits on the ones a SCHED_IDLE thread
# is itself removing: measured, wait4 held the event loop 1-5 s in
# shrink_dcache_parent, and a reaper thread held mid-reap kept this
# process's own exit waiting up to 16 s (a stop past its 2 s). So a worker
# process is reaped only when the next one starts, long after its threads
# are gone, or by init once this process has exited.
_unreaped: list[int] = []


def _reap_ended_worker_processes() -> None:
    """Reap the worker processes of earlier runs that have ended (WNOHANG:
    never waits)."""
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else
            done = pid
        if done:
            _unreaped.remove(pid)


_PR_SET_PDEATHSIG = 1
_MAX_FD = 1 << 20
_prctl = ctypes.CDLL(None).prctl
