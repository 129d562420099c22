"""What a memory sample carries, typed: the probe writes it, the pane, the
metrics and the recording read it.

Contract:
- ``MemInterval.to_sample`` is the only place that lays an interval out as a
  ``Sample`` (metric keys in ``values``, the rest in ``extra``);
  ``MemInterval.from_sample`` the only place that reads one back (missing or
  malformed fields read as unknown, never raise).
- ``METRICS`` declares every metric name a memory sample may hold; a sample
  carries ``thread_ops@tN`` for the first ``MAX_THREAD_METRICS`` threads and
  ``extra["per_thread_ops"]`` lists every thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.readback import as_count, as_number
from probetop.probes.core.sample import Sample, metric_key

KIND = "mem"

OPS = "ops"
MIBS = "mibs"
LAT_PCT_MS = "lat_pct_ms"
LAT_AVG_MS = "lat_avg_ms"
THREADS = "threads"
THREAD_OPS = "thread_ops"
RATE = "rate"
QUEUE_LENGTH = "queue_length"
CONCURRENCY = "concurrency"

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(OPS, "ops/s", "operations (blocks) completed in the interval per second", True),
    MetricSpec(MIBS, "MiB/s", "operations x block size in the interval, MiB per second", True),
    MetricSpec(
        LAT_PCT_MS,
        "ms",
        "latency percentile of the interval's operations (a sysbench histogram bucket value)",
    ),
    MetricSpec(LAT_AVG_MS, "ms", "mean latency of the interval's operations"),
    MetricSpec(THREADS, "", "worker threads running"),
    MetricSpec(THREAD_OPS, "ops", "operations this thread completed in the interval"),
    MetricSpec(RATE, "ops/s", "--rate: the target mean arrival rate (absent: unlimited)"),
    MetricSpec(
        QUEUE_LENGTH,
        "ops",
        "--rate: operations arrived and waiting for a thread at the interval's end "
        "(sysbench's queue length)",
    ),
    MetricSpec(
        CONCURRENCY,
        "threads",
        "--rate: threads inside an operation at the interval's end (sysbench's concurrency)",
    ),
)

MAX_THREAD_METRICS = 64

OPERATION_EXPLAINED = (
    "one operation = one block of --memory-block-size bytes, 8-byte word by word: "
    "seq walks the words in order, rnd visits as many uniformly random words; write "
    "stores each word, read loads it, none only loops. MiB/s = operations x block size."
)


@dataclass(frozen=True, slots=True)
class MemInterval:
    """One interval of a memory run. ``final`` marks the run's last interval,
    which carries the run's summary (sysbench's final report, JSON-safe)."""

    KIND: ClassVar[str] = KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = METRICS

    ops: float | None
    mibs: float | None
    lat_pct_ms: float | None
    lat_avg_ms: float | None
    threads: int
    per_thread_ops: tuple[int, ...]
    percentile: float
    block_size: int
    total_ops: int
    final: bool = False
    summary: Mapping[str, Any] | None = None
    rate: int | None = None  # --rate's target (None: unlimited)
    queue_length: int | None = None  # --rate: sysbench's queue length
    concurrency: int | None = None  # --rate: sysbench's concurrency

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {
            OPS: self.ops,
            MIBS: self.mibs,
            LAT_PCT_MS: self.lat_pct_ms,
            LAT_AVG_MS: self.lat_avg_ms,
            THREADS: float(self.threads),
        }
        if self.rate is not None:
            values[RATE] = float(self.rate)
            values[QUEUE_LENGTH] = None if self.queue_length is None else float(self.queue_length)
            values[CONCURRENCY] = None if self.concurrency is None else float(self.concurrency)
        for i, n in enumerate(self.per_thread_ops[:MAX_THREAD_METRICS]):
            values[metric_key(THREAD_OPS, f"t{i}")] = float(n)
        extra: dict[str, Any] = {
            "per_thread_ops": list(self.per_thread_ops),
            "percentile": self.percentile,
            "block_size": self.block_size,
            "total_ops": self.total_ops,
        }
        if self.final:
            extra["final"] = True
        if self.summary is not None:
            extra["summary"] = dict(self.summary)
        return Sample(probe_id, t_ns, interval_s, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> MemInterval:
        values, extra = sample.values, sample.extra or {}
        per_thread = extra.get("per_thread_ops")
        if not isinstance(per_thread, list):
            per_thread = []
        summary = extra.get("summary")
        return cls(
            ops=as_number(values.get(OPS)),
            mibs=as_number(values.get(MIBS)),
            lat_pct_ms=as_number(values.get(LAT_PCT_MS)),
            lat_avg_ms=as_number(values.get(LAT_AVG_MS)),
            threads=(as_count(values.get(THREADS)) or 0),
            per_thread_ops=tuple((as_count(n) or 0) for n in per_thread),
            percentile=as_number(extra.get("percentile")) or 95.0,
            block_size=(as_count(extra.get("block_size")) or 0),
            total_ops=(as_count(extra.get("total_ops")) or 0),
            final=bool(extra.get("final", False)),
            summary=summary if isinstance(summary, Mapping) else None,
            rate=as_count(values.get(RATE)),
            queue_length=as_count(values.get(QUEUE_LENGTH)),
            concurrency=as_count(values.get(CONCURRENCY)),
        )
