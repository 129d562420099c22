"""The CPU events/s probe: sysbench ``cpu`` (1.0.20) measured the way sysbench does.

Contract:
- One event is sysbench's trial-division pass over 3..max_prime-1 (see
  ``cpu_engine``). ``threads`` worker threads run events back to back until
  ``time_s`` passes or ``events`` events are done (0 = no limit, as sysbench).
- ``prepare()`` validates the parameters (UsageProbeError) and compiles the
  engine and runs one event, so JIT time is never inside the measured run.
- ``run()`` emits one Sample per interval: per-interval (not cumulative)
  events/s, the latency percentile of the events completed in the interval,
  mean latency and per-thread events. It returns when the run ends, and on
  cancellation stops and joins every worker before returning.
- ``summary()`` is sysbench's final report as a JSON-safe dict (plus the
  histogram, intervals and, with ``sweep``, one row per thread count).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.base import Emit, UsageProbeError
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.stats import population_stddev
from probetop.probes.cpu.engine import (
    HIST_SIZE,
    STAT_EVENTS,
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
    STAT_PRIMES,
    STOPPED_DEADLINE,
    STOPPED_EVENTS,
    Engine,
    EngineUnavailable,
    SharedRun,
    ThreadJob,
    best_engine,
    load_engine,
)
from probetop.probes.cpu.hist import percentile_ms, subtract, to_sparse
from probetop.probes.cpu.records import METRICS, PYTHON_ENGINE_LABEL, CpuInterval
from probetop.probes.cpu.settings import CpuSettings


def logical_cpus() -> int:
    """CPUs this process may run on (what sysbench users call nproc)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sweep_thread_counts(ncpu: int | None = None) -> list[int]:
    """The cloud benchmarkers' sweep: 1 .. 2 x logical CPUs."""
    return list(range(1, 2 * (ncpu or logical_cpus()) + 1))


@dataclass
class ThreadSnapshot:
    events: int
    lat_sum_ns: int
    lat_min_ns: int
    lat_max_ns: int
    hist: list[int]


def _snapshot(job: ThreadJob) -> ThreadSnapshot:
    # The engine stores the event count last (release order), so reading it
    # first gives a count never ahead of the sums and histogram read after it.
    events = int(job.stats[STAT_EVENTS])
    return ThreadSnapshot(
        events=events,
        lat_sum_ns=int(job.stats[STAT_LAT_SUM]),
        lat_min_ns=int(job.stats[STAT_LAT_MIN]),
        lat_max_ns=int(job.stats[STAT_LAT_MAX]),
        hist=list(job.hist),
    )


@dataclass
class PhaseResult:
    """One run at one thread count: what sysbench's final report is made of."""

    threads: int
    start_ns: int = 0
    total_time_s: float = 0.0
    per_thread: list[ThreadSnapshot] = field(default_factory=list)
    stopped_by: str = "running"
    primes: int | None = None
    cpu_ns: list[int] = field(default_factory=list)

    @property
    def total_events(self) -> int:
        return sum(t.events for t in self.per_thread)

    @property
    def events_per_second(self) -> float:
        return self.total_events / self.total_time_s if self.total_time_s > 0 else 0.0

    def histogram(self) -> list[int]:
        merged = [0] * HIST_SIZE
        for snap in self.per_thread:
            for i, c in enumerate(snap.hist):
                if c:
                    merged[i] += c
        return merged

    def as_dict(self, percentile: float) -> dict[str, Any]:
        events = self.total_events
        lat_sum_ms = sum(t.lat_sum_ns for t in self.per_thread) / 1e6
        mins = [t.lat_min_ns for t in self.per_thread if t.events]
        maxs = [t.lat_max_ns for t in self.per_thread if t.events]
        hist = self.histogram()
        per_thread_events = [float(t.events) for t in self.per_thread]
        per_thread_time = [t.lat_sum_ns / 1e9 for t in self.per_thread]
        n = max(1, self.threads)
        latency: dict[str, float | None] = {
            "min": min(mins) / 1e6 if mins else None,
            "avg": lat_sum_ms / events if events else None,
            "max": max(maxs) / 1e6 if maxs else None,
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
                    "events": t.events,
                    "time_s": t.lat_sum_ns / 1e9,
                    # CPU time the thread got: below time_s when the OS gave the
                    # core to something else (steal, other load)
                    "cpu_time_s": self.cpu_ns[i] / 1e9 if i < len(self.cpu_ns) else None,
                }
                for i, t in enumerate(self.per_thread)
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

    def _work(self, job: ThreadJob, finished: Any) -> None:
        assert self.engine is not None
        cpu0 = time.thread_time_ns()
        try:
            job.stopped_by = self.engine.run_events(job)
        except Exception as exc:  # a worker bug must end the run, not hang it
            self.worker_errors.append(f"{type(exc).__name__}: {exc}")
            job.shared.request_stop()
        finally:
            job.cpu_ns = time.thread_time_ns() - cpu0
            finished()

    async def _run_phase(self, threads: int, phase_index: int | None, emit: Emit) -> PhaseResult:
        loop = asyncio.get_running_loop()
        shared = SharedRun(max_prime=self.max_prime, max_events=self.events)
        jobs = [ThreadJob(shared) for _ in range(threads)]
        phase = PhaseResult(threads=threads)
        self._current = phase
        all_done = asyncio.Event()
        remaining = [threads]

        def one_finished() -> None:
            def on_loop() -> None:
                remaining[0] -= 1
                if remaining[0] == 0:
                    all_done.set()

            try:
                loop.call_soon_threadsafe(on_loop)
            except RuntimeError:  # loop closed: nobody is waiting any more
                pass

        workers = [
            threading.Thread(
                target=self._work,
                args=(job, one_finished),
                name=f"probetop-cpu-{i}",
                daemon=True,
            )
            for i, job in enumerate(jobs)
        ]
        start = phase.start_ns = now_ns()
        if self.time_s > 0:
            shared.deadline_ns = start + int(self.time_s * 1e9)
        prev = [_snapshot(j) for j in jobs]  # all zero: taken before any worker starts
        for worker in workers:
            worker.start()
        prev_t = start
        tick = 0
        interval_ns = int(self.interval_s * 1e9)
        cancelled = False
        try:
            while not all_done.is_set():
                # The next tick after the last sample: when the loop was
                # stalled past several ticks, the late sample covered them all
                # (a longer interval, a right rate), never a burst of empty ones.
                tick = max(tick + 1, (prev_t - start) // interval_ns + 1)
                wait_s = (start + tick * interval_ns - now_ns()) / 1e9
                if wait_s > 0:
                    try:
                        await asyncio.wait_for(all_done.wait(), timeout=wait_s)
                    except asyncio.TimeoutError:
                        pass
                if all_done.is_set():
                    break
                now = now_ns()
                cur = [_snapshot(j) for j in jobs]
                self._emit_interval(emit, phase, phase_index, prev, cur, prev_t, now, True)
                prev, prev_t = cur, now
                phase.per_thread = cur
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            shared.request_stop()
            for worker in workers:
                worker.join()
            end = now_ns()
            final = [_snapshot(j) for j in jobs]
            phase.per_thread = final
            phase.total_time_s = (end - start) / 1e9
            phase.cpu_ns = [j.cpu_ns for j in jobs]
            phase.primes = int(jobs[0].stats[STAT_PRIMES]) if final[0].events else None
            phase.stopped_by = "stop" if cancelled else _stopped_by([j.stopped_by for j in jobs])
            if sum(s.events for s in final) > sum(s.events for s in prev) or not cancelled:
                self._emit_interval(emit, phase, phase_index, prev, final, prev_t, end, False)
            self.phases.append(phase)
            self._current = None
        return phase

    def _emit_interval(
        self,
        emit: Emit,
        phase: PhaseResult,
        phase_index: int | None,
        prev: list[ThreadSnapshot],
        cur: list[ThreadSnapshot],
        t0: int,
        t1: int,
        full: bool,
    ) -> None:
        seconds = (t1 - t0) / 1e9
        if seconds <= 0:
            return
        per_thread = [c.events - p.events for c, p in zip(cur, prev, strict=True)]
        events = sum(per_thread)
        lat_ns = sum(c.lat_sum_ns - p.lat_sum_ns for c, p in zip(cur, prev, strict=True))
        hist = [0] * HIST_SIZE
        for c, p in zip(cur, prev, strict=True):
            for i, v in enumerate(subtract(c.hist, p.hist)):
                if v:
                    hist[i] += v
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
            total_events=sum(c.events for c in cur),
            engine=self.engine.name if self.engine else None,
            phase=phase_index,
            phase_summary=None if full else phase.as_dict(self.percentile),
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
        }
        return doc


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
