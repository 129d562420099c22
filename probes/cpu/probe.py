"""The CPU events/s probe: sysbench ``cpu`` (1.0.20) measured the way sysbench does.

Contract:
- One event is sysbench's trial-division pass over 3..max_prime-1 (see
  ``cpu_engine``). ``threads`` worker threads run events back to back until
  ``time_s`` passes or ``events`` events are done (0 = no limit, as sysbench).
- ``prepare()`` validates the parameters (UsageProbeError) and compiles the
  engine and runs one event, so JIT time is never inside the measured run.
- ``run()`` emits one Sample per interval: per-interval (not cumulative)
  events/s, the latency percentile of the events completed in the interval,
  mean latency and per-thread events. It returns when the run ends (at the
  latest ``END_GRACE_S`` after ``time_s``, even inside an event that would
  take hours), and on cancellation sets the stop flag and returns once every
  worker has stopped, waiting at most ``STOP_WAIT_S`` (SCHED_IDLE workers:
  ``BACKGROUND_STOP_WAIT_S``, the rest are left to end, ``workers_lingering``);
  it never blocks the event loop (see ``_Crew``).
- The parameters are checked against what the machine and the event loop
  can hold in ``CpuSettings.validate`` (threads per CPU, memory and the
  kernel's limits, the interval floor): LimitProbeError, exit 2.
- ``summary()`` is sysbench's final report as a JSON-safe dict (plus the
  histogram, intervals and, with ``sweep``, one row per thread count).
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Emit, ProbeError, UsageProbeError
from probetop.probes.core.limits import (
    WORKER_STACK_BYTES,
    background_priority,
    oversubscribed,
    thread_stack,
)
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.stats import population_stddev
from probetop.probes.cpu.engine import (
    HIST_SIZE,
    INT64_MAX,
    STAT_CPU_NS,
    STAT_DONE,
    STAT_END_NS,
    STAT_EVENTS,
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
    STAT_PRIMES,
    STAT_SLOTS,
    STOPPED_DEADLINE,
    STOPPED_EVENTS,
    STOPPED_FLAG,
    Engine,
    EngineUnavailable,
    Gate,
    SharedRun,
    Stacks,
    ThreadJob,
    best_engine,
    keep_forever,
    load_engine,
)
from probetop.probes.cpu.hist import percentile_ms, to_sparse
from probetop.probes.cpu.records import METRICS, PYTHON_ENGINE_LABEL, CpuInterval
from probetop.probes.cpu.report import SCHED_IDLE_NOTE
from probetop.probes.cpu.settings import (
    CpuSettings,
    check_python_threads,
    logical_cpus,
    sweep_thread_counts,
)

__all__ = [
    "CpuProbe",
    "PhaseResult",
    "Snapshot",
    "ThreadSnapshot",
    "logical_cpus",
    "sweep_thread_counts",
]

if TYPE_CHECKING:
    import numpy as np

# Threads started per turn of the event loop: starting 1000s of threads in one
# go would hold the loop (each start waits for the new thread to run).
START_BATCH = 64
# How long stopping waits for the workers to leave the native loop (they see
# the stop flag within ~30 ms even at --max-prime 2**31; docs/cpu.md).
STOP_WAIT_S = 1.0
BACKGROUND_STOP_WAIT_S = 0.2  # the same for SCHED_IDLE workers (see _run_phase)
END_GRACE_S = 0.25  # how far past --time a phase may run before it is stopped
DONE_POLL_S = 0.01  # how often a waiting sampler looks at the threads' done flags
WATCH_AHEAD_NS = 50_000_000  # ... from this long before the --time deadline
THREAD_EXIT_WAIT_S = 0.2  # then how long it lets finished threads vanish
ARRIVE_WAIT_S = 5.0  # at most this long for started threads to reach the gate


@dataclass
class ThreadSnapshot:
    """One thread's counters (the per-thread form: tests and small runs)."""

    events: int
    lat_sum_ns: int
    lat_min_ns: int
    lat_max_ns: int
    hist: list[int]


@dataclass
class Snapshot:
    """Every thread's counters at one moment, vectorised: one entry per thread
    and the histogram merged over threads. Taking one is a few numpy copies
    and one sum over a threads x 1024 block (~2 ms at 5000 threads), so no
    interval's bookkeeping holds the event loop for long."""

    events: np.ndarray  # int64 per thread
    lat_sum_ns: np.ndarray
    lat_min_ns: np.ndarray
    lat_max_ns: np.ndarray
    hist: np.ndarray  # int64 x HIST_SIZE, summed over threads

    @classmethod
    def take(cls, stats: np.ndarray, hist: np.ndarray) -> Snapshot:
        """Read the live blocks (threads x STAT_SLOTS, threads x HIST_SIZE)."""
        # The engine stores the event count last (release order), so reading
        # it first gives counts never ahead of the sums and histogram after it.
        events = stats[:, STAT_EVENTS].copy()
        return cls(
            events=events,
            lat_sum_ns=stats[:, STAT_LAT_SUM].copy(),
            lat_min_ns=stats[:, STAT_LAT_MIN].copy(),
            lat_max_ns=stats[:, STAT_LAT_MAX].copy(),
            hist=hist.sum(axis=0),
        )

    @classmethod
    def of_threads(cls, threads: Sequence[ThreadSnapshot]) -> Snapshot:
        import numpy as np

        merged = np.zeros(HIST_SIZE, np.int64)
        for t in threads:
            merged += np.asarray(t.hist, np.int64)
        return cls(
            events=np.array([t.events for t in threads], np.int64),
            lat_sum_ns=np.array([t.lat_sum_ns for t in threads], np.int64),
            lat_min_ns=np.array([t.lat_min_ns for t in threads], np.int64),
            lat_max_ns=np.array([t.lat_max_ns for t in threads], np.int64),
            hist=merged,
        )

    @property
    def total_events(self) -> int:
        return int(self.events.sum())


@dataclass
class PhaseResult:
    """One run at one thread count: what sysbench's final report is made of.

    The probe keeps the latest ``snapshot``; ``per_thread`` is the same in
    per-thread form (used when no snapshot is set: tests, hand-built results).
    """

    threads: int
    start_ns: int = 0
    total_time_s: float = 0.0
    per_thread: list[ThreadSnapshot] = field(default_factory=list)
    stopped_by: str = "running"
    primes: int | None = None
    cpu_ns: list[int] = field(default_factory=list)
    snapshot: Snapshot | None = None

    def counters(self) -> Snapshot:
        return self.snapshot if self.snapshot is not None else Snapshot.of_threads(self.per_thread)

    @property
    def total_events(self) -> int:
        return self.counters().total_events

    @property
    def events_per_second(self) -> float:
        return self.total_events / self.total_time_s if self.total_time_s > 0 else 0.0

    def histogram(self) -> list[int]:
        return [int(c) for c in self.counters().hist.tolist()]

    def as_dict(self, percentile: float) -> dict[str, Any]:
        snap = self.counters()
        events = snap.total_events
        lat_sum_ms = int(snap.lat_sum_ns.sum()) / 1e6
        ran = snap.events > 0
        mins = snap.lat_min_ns[ran]
        maxs = snap.lat_max_ns[ran]
        hist = [int(c) for c in snap.hist.tolist()]
        per_thread_events = [float(e) for e in snap.events.tolist()]
        per_thread_time = [ns / 1e9 for ns in snap.lat_sum_ns.tolist()]
        n = max(1, self.threads)
        latency: dict[str, float | None] = {
            "min": int(mins.min()) / 1e6 if mins.size else None,
            "avg": lat_sum_ms / events if events else None,
            "max": int(maxs.max()) / 1e6 if maxs.size else None,
            "p50": percentile_ms(hist, 50),
            "p95": percentile_ms(hist, 95),
            "p99": percentile_ms(hist, 99),
            "sum": lat_sum_ms,
        }
        latency[percentile_key(percentile)] = percentile_ms(hist, percentile)
        return {
            "threads": self.threads,
            "events_per_second": self.events_per_second,
            "total_events": events,
            "total_time": self.total_time_s,
            "latency_ms": latency,
            "fairness": {
                "events_avg": events / n,
                "events_stddev": population_stddev(per_thread_events),
                # sysbench: execution time avg = latency sum / threads
                "time_avg": lat_sum_ms / 1e3 / n,
                "time_stddev": population_stddev(per_thread_time),
            },
            "per_thread": [
                {
                    "events": int(ev),
                    "time_s": t_s,
                    # CPU time the thread got: below time_s when the OS gave the
                    # core to something else (steal, other load)
                    "cpu_time_s": self.cpu_ns[i] / 1e9 if i < len(self.cpu_ns) else None,
                }
                for i, (ev, t_s) in enumerate(zip(per_thread_events, per_thread_time, strict=True))
            ],
            "histogram": to_sparse(hist),
            "stopped_by": self.stopped_by,
            "primes": self.primes,
        }


def percentile_key(pct: float) -> str:
    """Key of a percentile in ``latency_ms``: 95 -> "p95", 99.9 -> "p99.9"."""
    return f"p{pct:g}"


class CpuProbe:
    """sysbench cpu as a probe. See the module docstring for the contract."""

    kind = "cpu"
    metrics = METRICS

    def __init__(self, settings: CpuSettings | None = None, *, probe_id: str = "cpu") -> None:
        self.settings = settings or CpuSettings()
        self.id = probe_id
        s = self.settings
        # Read often in the measuring code; the settings object stays the record.
        self.threads = s.threads
        self.time_s = s.time_s
        self.events = s.events
        self.max_prime = s.max_prime
        self.interval_s = s.interval_s
        self.percentile = s.percentile
        self.sweep = s.sweep
        self.engine_kind = s.engine
        self.sweep_counts = list(s.sweep_counts) if s.sweep_counts else None
        self.engine: Engine | None = None
        self.engine_note: str | None = None
        self.phases: list[PhaseResult] = []
        self.intervals: list[dict[str, Any]] = []
        self._current: PhaseResult | None = None
        self.worker_errors: list[str] = []
        self.background_workers = False  # a phase ran its workers SCHED_IDLE
        self.workers_lingering = 0  # SCHED_IDLE workers not yet ended when a phase ended

    # -- setup -----------------------------------------------------------
    def validate(self) -> None:
        """Raise UsageProbeError for parameters sysbench would refuse."""
        self.settings.validate()

    def prepare(self) -> None:
        self.validate()
        if self.engine is None:
            if self.engine_kind == "auto":
                self.engine, self.engine_note = best_engine()
            else:
                try:
                    self.engine = load_engine(self.engine_kind)
                except EngineUnavailable as exc:
                    raise UsageProbeError(str(exc)) from exc
            # Compile-and-warm: the first call pages the code in; never timed.
            self.engine.prime_event(min(self.max_prime, 1000))
        if not self.engine.comparable:  # the Python engine, chosen or fallen back to
            check_python_threads(self.settings.max_threads())

    def params(self) -> Mapping[str, Any]:
        return {
            "threads": self.threads,
            "time_s": self.time_s,
            "events": self.events,
            "max_prime": self.max_prime,
            "interval_s": self.interval_s,
            "percentile": self.percentile,
            "sweep": self.sweep_plan() if self.sweep else None,
            "engine": self.engine.name if self.engine else self.engine_kind,
        }

    def reference_command(self) -> str | None:
        threads = f"1..{max(self.sweep_plan())} (one run each)" if self.sweep else self.threads
        return (
            f"sysbench cpu --threads={threads} --time={self.time_s:g} --events={self.events} "
            f"--cpu-max-prime={self.max_prime} --percentile={self.percentile:g} run"
        )

    def sweep_plan(self) -> list[int]:
        return list(self.sweep_counts or sweep_thread_counts())

    @property
    def label(self) -> str | None:
        """The warning every output carries when the figure is not sysbench's."""
        if self.engine is not None and not self.engine.comparable:
            return PYTHON_ENGINE_LABEL
        return None

    # -- measuring -------------------------------------------------------
    async def run(self, emit: Emit) -> None:
        if self.engine is None:
            self.prepare()
        if self.label:
            emit(Status(self.id, now_ns(), "warning", f"{self.label} ({self.engine_note})"))
        plan = self.sweep_plan() if self.sweep else [self.threads]
        for index, threads in enumerate(plan):
            phase = await self._run_phase(threads, index if self.sweep else None, emit)
            if phase.stopped_by == "stop":
                break

    def _work(self, job: ThreadJob, background: bool, exited: Any) -> None:
        """A Python worker thread's body (the Python engine). The engine writes
        the thread's counters and, when it leaves, its STAT_END_NS /
        STAT_CPU_NS / STAT_DONE slots, which is all the sampler reads."""
        assert self.engine is not None
        if background:
            background_priority()
        try:
            self.engine.run_events(job)
        except Exception as exc:  # a worker bug must end the run, not hang it
            self.worker_errors.append(f"{type(exc).__name__}: {exc}")
            job.shared.request_stop()
            job.stats[STAT_END_NS] = now_ns()
            job.stats[STAT_DONE] = STOPPED_FLAG
        finally:
            exited()

    async def _run_phase(self, threads: int, phase_index: int | None, emit: Emit) -> PhaseResult:
        import numpy as np

        gate = Gate()
        shared = SharedRun(max_prime=self.max_prime, max_events=self.events, gate=gate)
        # Every thread's counters in two blocks (one row per thread), so an
        # interval reads them with a few numpy copies, not threads x 1024
        # Python operations.
        stats = np.zeros((threads, STAT_SLOTS), np.int64)
        stats[:, STAT_LAT_MIN] = INT64_MAX
        hist = np.zeros((threads, HIST_SIZE), np.int64)
        jobs = [ThreadJob(shared, stats=stats[i], hist=hist[i]) for i in range(threads)]
        phase = PhaseResult(threads=threads)
        self._current = phase
        assert self.engine is not None
        crew = _Crew(self.engine, gate, stats)
        start = phase.start_ns = now_ns()
        prev = Snapshot.take(stats, hist)  # all zero: taken before any worker starts
        phase.snapshot = prev
        prev_t = start
        tick = 0
        interval_ns = int(self.interval_s * 1e9)
        cancelled = overran = False
        try:
            # Every thread is created first and waits at the gate; the run (and
            # its clock) starts when all exist, as in sysbench. Starting threads
            # while others already compute would take a scheduler period each.
            background = oversubscribed(threads)
            if background and not self.background_workers:
                self.background_workers = True
                emit(Status(self.id, now_ns(), "info", SCHED_IDLE_NOTE))
            await crew.start(self._work, jobs, background)
            start = prev_t = phase.start_ns = now_ns()
            deadline_ns = start + int(self.time_s * 1e9) if self.time_s > 0 else 0
            if deadline_ns:
                shared.set_deadline(deadline_ns)
            gate.open()
            # --time is kept even when a thread cannot see it: the engine
            # checks the deadline between events, so one --max-prime 2**31
            # event (hours), or SCHED_IDLE threads waiting their turn, would
            # run on. Past the deadline + END_GRACE_S the run is stopped.
            hard_end = start + int((self.time_s + END_GRACE_S) * 1e9) if self.time_s > 0 else 0
            while not crew.all_done():
                # The next tick after the last sample: when the loop was
                # stalled past several ticks, the late sample covered them all
                # (a longer interval, a right rate), never a burst of empty
                # ones, nor a sliver: a grid point less than half an interval
                # after the last sample is skipped.
                tick = max(tick + 1, (prev_t - start + interval_ns // 2) // interval_ns + 1)
                next_ns = start + tick * interval_ns
                if hard_end and hard_end < next_ns:
                    next_ns = hard_end
                t = now_ns()
                # Workers end by themselves only at the --time deadline or
                # with --events: watch their done flags near the deadline
                # (or always with --events); else sleep to the tick (a
                # 10 ms poll was most of the demo's event-loop CPU).
                watch_from = (
                    0 if self.events else (deadline_ns - WATCH_AHEAD_NS if deadline_ns else next_ns)
                )
                await crew.wait(max(0.0, (next_ns - t) / 1e9), max(0.0, (watch_from - t) / 1e9))
                if crew.all_done():
                    break
                now = now_ns()
                if hard_end and now >= hard_end:
                    shared.request_stop()
                    overran = True
                    break
                if deadline_ns and now >= deadline_ns:
                    continue  # the workers are ending: the final interval covers it
                cur = Snapshot.take(stats, hist)
                if crew.all_done():
                    # They ended meanwhile (a tick on the --time deadline):
                    # the final interval covers it and carries the phase's
                    # summary; emitted here, it left the final one empty, and
                    # an empty interval is not emitted (the summary was lost).
                    break
                self._emit_interval(emit, phase, phase_index, prev, cur, prev_t, now, True)
                prev, prev_t = cur, now
                phase.snapshot = cur
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            stop_ns = now_ns()
            shared.request_stop()
            try:
                # SCHED_IDLE workers see the stop flag only when a CPU is free
                # for them; one that has not yet is not computing either (any
                # other thread comes first), so it is left to end on its own.
                wait_s = BACKGROUND_STOP_WAIT_S if crew.background else STOP_WAIT_S
                running = await crew.stop(wait_s)
                if running and crew.background:
                    self.workers_lingering += running
                elif running:
                    self.worker_errors.append(
                        f"{running} worker threads did not stop within {wait_s:g} s"
                    )
            finally:
                # The run ended when its last thread left (the engine's own
                # clock, so a late wake-up of this loop does not lengthen it).
                # A thread left behind (SCHED_IDLE, not yet scheduled) has not
                # counted anything since: the run ended when it was stopped.
                ends = stats[:, STAT_END_NS]
                end = int(ends.max()) if crew.all_done() and ends.max() > start else stop_ns
                final = Snapshot.take(stats, hist)
                phase.snapshot = final
                phase.total_time_s = max(0, end - start) / 1e9
                phase.cpu_ns = [int(ns) for ns in stats[:, STAT_CPU_NS].tolist()]
                phase.primes = int(stats[0, STAT_PRIMES]) if final.events[0] else None
                if cancelled:
                    phase.stopped_by = "stop"
                elif overran:
                    phase.stopped_by = "time"
                else:
                    phase.stopped_by = _stopped_by([int(c) for c in stats[:, STAT_DONE].tolist()])
                if final.total_events > prev.total_events or not cancelled:
                    # Never empty: the final interval carries the phase's
                    # summary (a last thread that ended just before the last
                    # tick leaves nothing after it: a 1 µs sliver then).
                    t_end = max(end, prev_t + 1_000)
                    self._emit_interval(emit, phase, phase_index, prev, final, prev_t, t_end, False)
                self.phases.append(phase)
                self._current = None
        return phase

    def _emit_interval(
        self,
        emit: Emit,
        phase: PhaseResult,
        phase_index: int | None,
        prev: Snapshot,
        cur: Snapshot,
        t0: int,
        t1: int,
        full: bool,
    ) -> None:
        import numpy as np

        seconds = (t1 - t0) / 1e9
        if seconds <= 0:
            return
        delta = cur.events - prev.events
        per_thread = delta.tolist()
        events = int(delta.sum())
        lat_ns = int((cur.lat_sum_ns - prev.lat_sum_ns).sum())
        # Each thread's buckets only grow, so the merged difference is >= 0;
        # the clamp guards a bucket read a moment before its event count.
        hist = np.maximum(cur.hist - prev.hist, 0).tolist()
        eps = events / seconds
        pct = percentile_ms(hist, self.percentile)
        # A last partial interval of a few ms (the run ended just after a
        # tick) would put a meaningless rate in the sparkline and its min/max:
        # its events still count (extra, summary), its rates are left out.
        sliver = not full and seconds < 0.5 * self.interval_s
        row: dict[str, Any] = {
            "t": round((t1 - phase.start_ns) / 1e9, 6),
            "interval_s": round(seconds, 6),
            "full": full,
            "threads": phase.threads,
            "eps": eps,
            "lat_pct_ms": pct,
            "events": events,
        }
        if phase_index is not None:
            row["phase"] = phase_index
        self.intervals.append(row)
        record = CpuInterval(
            eps=None if sliver else eps,
            lat_pct_ms=None if sliver else pct,
            lat_avg_ms=lat_ns / events / 1e6 if events and not sliver else None,
            threads=phase.threads,
            per_thread_events=tuple(per_thread),
            percentile=self.percentile,
            full=full,
            total_events=cur.total_events,
            engine=self.engine.name if self.engine else None,
            phase=phase_index,
            phase_summary=None if full else phase.as_dict(self.percentile),
            lat_hist=tuple((i, n) for i, n in enumerate(hist) if n),
            lat_sum_ms=lat_ns / 1e6,
        )
        emit(record.to_sample(self.id, t1, seconds))

    # -- results ---------------------------------------------------------
    def summary(self) -> Mapping[str, Any]:
        phases = list(self.phases)
        if self._current is not None:
            phases.append(self._current)
        last = phases[-1] if phases else PhaseResult(threads=self.threads)
        doc: dict[str, Any] = {
            "engine": self.engine.name if self.engine else self.engine_kind,
            "comparable_with_sysbench": bool(self.engine and self.engine.comparable),
            "label": self.label,
            "engine_note": self.engine_note,
            "max_prime": self.max_prime,
            "percentile": self.percentile,
            "time_limit_s": self.time_s,
            "event_limit": self.events,
            **last.as_dict(self.percentile),
            "intervals": list(self.intervals),
            "sweep": sweep_rows(phases, self.percentile) if self.sweep else None,
            "worker_errors": list(self.worker_errors),
            "workers_sched_idle": self.background_workers,
            "workers_lingering": self.workers_lingering,
        }
        return doc


class _Crew:
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


def _stopped_by(codes: list[int]) -> str:
    if any(c == STOPPED_EVENTS for c in codes):
        return "events"
    if any(c == STOPPED_DEADLINE for c in codes):
        return "time"
    return "stop"


def sweep_rows(phases: list[PhaseResult], percentile: float) -> list[dict[str, Any]]:
    """events/s per thread count, with speedup and scaling efficiency vs 1 thread."""
    base = next((p.events_per_second for p in phases if p.threads == 1), None)
    rows = []
    for p in phases:
        eps = p.events_per_second
        speedup = eps / base if base else None
        rows.append(
            {
                "threads": p.threads,
                "events_per_second": eps,
                "total_events": p.total_events,
                "total_time": p.total_time_s,
                "latency_pct_ms": percentile_ms(p.histogram(), percentile),
                "speedup": speedup,
                "efficiency": speedup / p.threads if speedup is not None else None,
                "stopped_by": p.stopped_by,
            }
        )
    return rows
