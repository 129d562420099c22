"""What a CPU sample carries, typed: the probe writes it, the pane and the
report read it.

Contract:
- ``CpuInterval.to_sample`` is the only place that lays a CPU interval out as
  a ``Sample`` (metric keys in ``values``, the rest in ``extra``), and
  ``CpuInterval.from_sample`` the only place that reads one back; both keep
  the recording format of probetop 0.1 (old recordings replay).
- ``METRICS`` declares every metric name a CPU sample may hold. A sample
  carries ``thread_events@tN`` for the first ``MAX_THREAD_METRICS`` threads;
  ``extra["per_thread_events"]`` always lists every thread.
- ``extra["lat_hist"]`` (optional: absent in recordings made before it)
  holds the interval's events in sysbench's latency histogram as runs of
  buckets (``probes.core.buckets``); ``extra["lat_sum_ms"]`` the
  interval's summed event latency.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.buckets import decode_runs, encode_runs
from probetop.probes.core.readback import as_count, as_number
from probetop.probes.core.sample import Sample, metric_key, split_key

KIND = "cpu"

EPS = "eps"
LAT_PCT_MS = "lat_pct_ms"
LAT_AVG_MS = "lat_avg_ms"
THREADS = "threads"
THREAD_EVENTS = "thread_events"
RATE = "rate"
QUEUE_LENGTH = "queue_length"
CONCURRENCY = "concurrency"

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(EPS, "events/s", "events completed in the interval per second", True),
    MetricSpec(
        LAT_PCT_MS,
        "ms",
        "latency percentile (the --percentile) of events completed in the interval, "
        "a sysbench histogram bucket value",
        True,
    ),
    MetricSpec(LAT_AVG_MS, "ms", "mean latency of events completed in the interval"),
    MetricSpec(THREADS, "", "worker threads running"),
    MetricSpec(THREAD_EVENTS, "events", "events this thread completed in the interval"),
    MetricSpec(RATE, "events/s", "--rate: the target mean arrival rate (absent: unlimited)"),
    MetricSpec(
        QUEUE_LENGTH,
        "events",
        "--rate: events arrived and waiting for a thread at the interval's end "
        "(sysbench's queue length)",
    ),
    MetricSpec(
        CONCURRENCY,
        "threads",
        "--rate: threads inside an event at the interval's end (sysbench's concurrency)",
    ),
)

# Per-thread metric keys (thread_events@tN) a sample carries at most: with
# 1000s of threads, one key each would make every sample, the recording's
# line and every consumer's per-key bookkeeping O(threads).
MAX_THREAD_METRICS = 64

PYTHON_ENGINE_LABEL = "python engine: not comparable with sysbench"

EVENT_EXPLAINED = (
    "one event = for every c in 3..max_prime-1: t = sqrt(c); try l = 2, 3, ... while "
    "l <= t and stop at the first l dividing c (64-bit unsigned divide); c is prime when "
    "no l divides it. The prime count is thrown away; events/s is the score."
)


@dataclass(frozen=True, slots=True)
class CpuInterval:
    """One interval of a CPU run.

    Rates are None in a last sliver of an interval (too short to mean
    anything); ``per_thread_events`` still counts it. ``phase`` is the sweep
    step (None outside a sweep); ``phase_summary`` (sysbench's final report
    of that step, a JSON-safe dict) comes with the step's last interval.
    """

    KIND: ClassVar[str] = KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = METRICS

    eps: float | None
    lat_pct_ms: float | None
    lat_avg_ms: float | None
    threads: int
    per_thread_events: tuple[int, ...]
    percentile: float
    full: bool
    total_events: int
    engine: str | None
    phase: int | None = None
    phase_summary: Mapping[str, Any] | None = None
    lat_hist: tuple[tuple[int, int], ...] | None = None
    lat_sum_ms: float | None = None
    rate: int | None = None  # --rate's target (None: unlimited)
    queue_length: int | None = None  # --rate: sysbench's queue length
    concurrency: int | None = None  # --rate: sysbench's concurrency

    @property
    def final(self) -> bool:
        """The last interval of a run (or of a sweep step)."""
        return not self.full

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {
            EPS: self.eps,
            LAT_PCT_MS: self.lat_pct_ms,
            LAT_AVG_MS: self.lat_avg_ms,
            THREADS: float(self.threads),
        }
        if self.rate is not None:
            values[RATE] = float(self.rate)
            values[QUEUE_LENGTH] = None if self.queue_length is None else float(self.queue_length)
            values[CONCURRENCY] = None if self.concurrency is None else float(self.concurrency)
        # One metric per thread for the first MAX_THREAD_METRICS threads (the
        # generic views' per-entity stats); every thread is in the extra list.
        for i, n in enumerate(self.per_thread_events[:MAX_THREAD_METRICS]):
            values[metric_key(THREAD_EVENTS, f"t{i}")] = float(n)
        extra: dict[str, Any] = {
            "per_thread_events": list(self.per_thread_events),
            "percentile": self.percentile,
            "full": self.full,
            "total_events": self.total_events,
            "engine": self.engine,
        }
        if self.phase is not None:
            extra["phase"] = self.phase
        if not self.full:
            extra["final"] = True
        if self.phase_summary is not None:
            extra["phase_summary"] = dict(self.phase_summary)
        if self.lat_hist is not None:
            extra["lat_hist"] = encode_runs(self.lat_hist)
            extra["lat_sum_ms"] = self.lat_sum_ms
        return Sample(probe_id, t_ns, interval_s, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> CpuInterval:
        """Read a CPU sample back (live or from a recording). Missing or
        malformed fields read as "unknown", never raise."""
        values, extra = sample.values, sample.extra or {}
        per_thread = extra.get("per_thread_events")
        if not isinstance(per_thread, list):
            per_thread = [
                value or 0
                for key, value in sorted(values.items())
                if split_key(key)[0] == THREAD_EVENTS
            ]
        phase = extra.get("phase")
        summary = extra.get("phase_summary")
        return cls(
            eps=as_number(values.get(EPS)),
            lat_pct_ms=as_number(values.get(LAT_PCT_MS)),
            lat_avg_ms=as_number(values.get(LAT_AVG_MS)),
            threads=(as_count(values.get(THREADS)) or 0),
            per_thread_events=tuple((as_count(n) or 0) for n in per_thread),
            percentile=as_number(extra.get("percentile")) or 95.0,
            full=bool(extra.get("full", True)),
            total_events=(as_count(extra.get("total_events")) or 0),
            engine=extra.get("engine") if isinstance(extra.get("engine"), str) else None,
            phase=phase if isinstance(phase, int) else None,
            phase_summary=summary if isinstance(summary, Mapping) else None,
            lat_hist=decode_runs(extra.get("lat_hist")),
            lat_sum_ms=as_number(extra.get("lat_sum_ms")),
            rate=as_count(values.get(RATE)),
            queue_length=as_count(values.get(QUEUE_LENGTH)),
            concurrency=as_count(values.get(CONCURRENCY)),
        )
