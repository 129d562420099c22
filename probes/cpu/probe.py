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
  ``BACKGROUND_STOP_WAIT_S``, then their worker process is killed, or with
  ``--rate`` the rest are left to end; ``workers_lingering`` counts them);
  it never blocks the event loop (see ``Crew``).
- The parameters are checked against what the machine and the event loop
  can hold in ``CpuSettings.validate`` (threads per CPU, memory and the
  kernel's limits, the interval floor): LimitProbeError, exit 2.
- ``summary()`` is sysbench's final report as a JSON-safe dict (plus the
  histogram, intervals and, with ``sweep``, one row per thread count).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, UsageProbeError
from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.core.machine import background_priority, oversubscribed
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.sysbench.counters import (
    INT64_MAX,
    STAT_CPU_NS,
    STAT_DONE,
    STAT_END_NS,
    STAT_LAT_MIN,
    STAT_SLOTS,
    STAT_TEST,
    STOPPED_DEADLINE,
    STOPPED_FLAG,
    STOPPED_LIMIT,
    Interval,
    Snapshot,
    ThreadSnapshot,
    is_sliver,
    new_counters,
    next_tick,
)
from probetop.probes.core.sysbench.hist import HIST_SIZE
from probetop.probes.core.sysbench.rate import QUEUE_FULL_MESSAGE, RateSchedule
from probetop.probes.cpu.crew import Crew
from probetop.probes.cpu.engine import (
    Arena,
    Engine,
    EngineUnavailable,
    Gate,
    SharedRun,
    ThreadJob,
    best_engine,
    load_engine,
)
from probetop.probes.cpu.records import METRICS, PYTHON_ENGINE_LABEL, CpuInterval
from probetop.probes.cpu.report import SCHED_IDLE_NOTE, prints_at_time
from probetop.probes.cpu.results import PhaseResult, sweep_rows
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

# How long stopping waits for the workers to leave the native loop (they see
# the stop flag within ~30 ms even at --max-prime 2**31; docs/cpu.md).
STOP_WAIT_S = 1.0
BACKGROUND_STOP_WAIT_S = 0.2  # the same for SCHED_IDLE workers (see _run_phase)
END_GRACE_S = 0.25  # how far past --time a phase may run before it is stopped
WATCH_AHEAD_NS = 50_000_000  # ... from this long before the --time deadline


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
        self.rate = s.rate  # --rate: 0 back to back, else Poisson arrivals at this mean
        self.interval_s = s.interval_s
        self.percentile = s.percentile
        self.sweep = s.sweep
        self.engine_kind = s.engine
        self.sweep_counts = list(s.sweep_counts) if s.sweep_counts else None
        self.engine: Engine | None = None
        self.engine_note: str | None = None
        self.phases: list[PhaseResult] = []
        self.intervals = IntervalLog()  # bounded: a run of any length
        self._current: PhaseResult | None = None
        self.worker_errors: list[str] = []
        self.background_workers = False  # a phase ran its workers SCHED_IDLE
        self.workers_lingering = 0  # SCHED_IDLE workers not yet ended when a phase ended
        self.queue_full = False  # --rate: an arrival found sysbench's queue full

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
        if self.rate and getattr(self.engine, "rate_queue_address", None) is None:
            raise UsageProbeError(
                f"--rate needs the native engine, which did not load ({self.engine_note})"
            )

    def params(self) -> Mapping[str, Any]:
        return {
            "threads": self.threads,
            "time_s": self.time_s,
            "events": self.events,
            "max_prime": self.max_prime,
            "interval_s": self.interval_s,
            "percentile": self.percentile,
            "rate": self.rate,
            "sweep": self.sweep_plan() if self.sweep else None,
            "engine": self.engine.name if self.engine else self.engine_kind,
        }

    def reference_command(self) -> str | None:
        threads = f"1..{max(self.sweep_plan())} (one run each)" if self.sweep else self.threads
        return (
            f"sysbench cpu --threads={threads} --time={self.time_s:g} --events={self.events} "
            f"--cpu-max-prime={self.max_prime} --percentile={self.percentile:g}"
            + (f" --rate={self.rate}" if self.rate else "")
            + " run"
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

        schedule = None
        if self.rate:
            # --rate: each phase's own arrivals, from the run's seed (rate.py)
            schedule = RateSchedule(self.rate, self.settings.rand_seed)
            schedule.bind(getattr(self.engine, "rate_queue_address"))  # noqa: B009
        background = oversubscribed(threads)
        arena = None
        if background and schedule is None and hasattr(self.engine, "spawn"):
            # SCHED_IDLE native workers run in a worker process of their own
            # session (Crew): what it and this process share lives in an arena.
            # (--rate's queue is in the JIT module's memory: those stay here.)
            arena = Arena(Arena.bytes_for(threads, STAT_SLOTS + HIST_SIZE))
            shared = SharedRun.in_arena(
                arena, max_prime=self.max_prime, max_events=self.events, schedule=schedule
            )
            assert shared.gate is not None
            gate = shared.gate
            stats = arena.int64_block(threads, STAT_SLOTS)
            stats[:, STAT_LAT_MIN] = INT64_MAX
            hist = arena.int64_block(threads, HIST_SIZE)
        else:
            gate = Gate()
            shared = SharedRun(
                max_prime=self.max_prime, max_events=self.events, gate=gate, schedule=schedule
            )
            # Every thread's counters in two blocks (one row per thread), so an
            # interval reads them with a few numpy copies, not threads x 1024
            # Python operations.
            stats = new_counters(threads)
            hist = np.zeros((threads, HIST_SIZE), np.int64)
        jobs = [ThreadJob(shared, stats=stats[i], hist=hist[i]) for i in range(threads)]
        phase = PhaseResult(threads=threads)
        self._current = phase
        assert self.engine is not None
        crew = Crew(self.engine, gate, stats, arena)
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
                tick, next_ns = next_tick(tick, prev_t, start, interval_ns)
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
                # sysbench reads the queue as it prints the line, before the counters
                queue = schedule.queue_length() if schedule is not None else None
                if queue is not None and queue < 0:
                    shared.request_stop()  # sysbench's fatal "event queue is full"
                    break
                cur = Snapshot.take(stats, hist)
                if crew.all_done():
                    # They ended meanwhile (a tick on the --time deadline):
                    # the final interval covers it and carries the phase's
                    # summary; emitted here, it left the final one empty, and
                    # an empty interval is not emitted (the summary was lost).
                    break
                self._emit_interval(
                    emit, phase, phase_index, prev, cur, prev_t, now, True, schedule, queue
                )
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
                phase.primes = int(stats[0, STAT_TEST]) if final.events[0] else None
                if schedule is not None and schedule.full:
                    phase.stopped_by = "queue_full"
                    if not self.queue_full:
                        self.queue_full = True
                        self.worker_errors.append(f"FATAL: {QUEUE_FULL_MESSAGE}")
                elif cancelled:
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
                    self._emit_interval(
                        emit,
                        phase,
                        phase_index,
                        prev,
                        final,
                        prev_t,
                        t_end,
                        False,
                        schedule,
                        None if schedule is None else max(0, schedule.queue_length(end)),
                    )
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
        schedule: RateSchedule | None = None,
        queue: int | None = None,
    ) -> None:
        seconds = (t1 - t0) / 1e9
        if seconds <= 0:
            return
        delta = Interval.between(prev, cur)
        events = delta.events
        eps = events / seconds
        pct = delta.percentile_ms(self.percentile)
        sliver = is_sliver(full, seconds, self.interval_s)
        row: dict[str, Any] = {
            "t": round((t1 - phase.start_ns) / 1e9, 6),
            "interval_s": round(seconds, 6),
            "full": full,
            "threads": phase.threads,
            "eps": eps,
            "lat_pct_ms": pct,
            "events": events,
        }
        if prints_at_time(
            full=full,
            sliver=sliver,
            stopped_by=phase.stopped_by,
            time_s=self.time_s,
            interval_s=self.interval_s,
        ):
            # The last interval ends at --time, on the reporting grid: sysbench
            # prints it as the run's last [ Ns ] line (5 lines at --time 5).
            row["at_time"] = True
        if phase_index is not None:
            row["phase"] = phase_index
        concurrency = None
        if schedule is not None:
            # sysbench's second line at --rate: the queue and the workers in an event
            concurrency = schedule.concurrency
            if queue is None:
                queue = max(0, schedule.queue_length())
            row["queue_length"] = queue
            row["concurrency"] = concurrency
        self.intervals.append(row)
        record = CpuInterval(
            eps=None if sliver else eps,
            lat_pct_ms=None if sliver else pct,
            lat_avg_ms=None if sliver else delta.lat_avg_ms,
            threads=phase.threads,
            per_thread_events=tuple(delta.per_thread),
            percentile=self.percentile,
            full=full,
            total_events=cur.total_events,
            engine=self.engine.name if self.engine else None,
            phase=phase_index,
            phase_summary=None if full else phase.as_dict(self.percentile),
            lat_hist=tuple((i, n) for i, n in enumerate(delta.hist) if n),
            lat_sum_ms=delta.lat_sum_ns / 1e6,
            rate=self.rate or None,
            queue_length=queue if schedule is not None else None,
            concurrency=concurrency,
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
            **({"rate": self.rate} if self.rate else {}),
            **({"queue_full": True} if self.queue_full else {}),
            **({"rand_seed": self.settings.rand_seed} if self.settings.rand_seed else {}),
            "event_limit": self.events,
            **last.as_dict(self.percentile),
            "intervals": self.intervals.rows(),
            **({"intervals_dropped": self.intervals.dropped} if self.intervals.dropped else {}),
            "sweep": sweep_rows(phases, self.percentile) if self.sweep else None,
            "worker_errors": list(self.worker_errors),
            "workers_sched_idle": self.background_workers,
            "workers_lingering": self.workers_lingering,
        }
        return doc


def _stopped_by(codes: list[int]) -> str:
    """Why a phase ended, from its threads' STAT_DONE codes."""
    if any(c == STOPPED_LIMIT for c in codes):
        return "events"
    if any(c == STOPPED_DEADLINE for c in codes):
        return "time"
    return "stop"
