"""Memory probe metrics: sysbench memory's operations, operations/s, bytes,
bytes/s, the latency percentile, threads, and what the probe runs.

Contract: ``MemTracker`` reads samples only through ``MemInterval``.
Bytes are base units (operations x block size); sysbench's MiB/s is
``probetop_mem_bytes_per_second / 1048576``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.tracker import SummaryCounter, Tracker, by_metric, label_text
from probetop.probes.mem.records import KIND, MemInterval

_LABELS = ("probe",)

MEM_OPS = metric_def(
    "probetop_mem_operations",
    "counter",
    "",
    "sysbench memory operations completed (one operation: one --memory-block-size block)",
    _LABELS,
)
MEM_OPS_RATE = metric_def(
    "probetop_mem_operations_per_second",
    "gauge",
    "",
    "operations per second over the latest interval (sysbench's 'per second')",
    _LABELS,
)
MEM_BYTES = metric_def(
    "probetop_mem_transferred_bytes",
    "counter",
    "bytes",
    "bytes transferred: operations x block size (0 with --memory-oper none)",
    _LABELS,
)
MEM_BYTES_RATE = metric_def(
    "probetop_mem_bytes_per_second",
    "gauge",
    "",
    "bytes per second over the latest interval (sysbench's MiB/sec x 1048576)",
    _LABELS,
)
MEM_LATENCY_PCT = metric_def(
    "probetop_mem_operation_latency_quantile_seconds",
    "summary",
    "seconds",
    "the --percentile of the latest interval's operation times, as sysbench reports it; "
    "count and sum: every operation timed over the run",
    _LABELS,
)
MEM_THREADS = metric_def("probetop_mem_threads", "gauge", "", "worker threads running", _LABELS)
MEM_RATE = metric_def(
    "probetop_mem_rate_target",
    "gauge",
    "",
    "--rate: the target mean operation arrival rate per second (absent: unlimited)",
    _LABELS,
)
MEM_QUEUE = metric_def(
    "probetop_mem_queue_length",
    "gauge",
    "",
    "--rate: operations arrived and waiting for a free thread at the latest interval's end "
    "(sysbench's queue length)",
    _LABELS,
)
MEM_CONCURRENCY = metric_def(
    "probetop_mem_concurrency",
    "gauge",
    "",
    "--rate: threads inside an operation at the latest interval's end (sysbench's concurrency)",
    _LABELS,
)
MEM_INFO = metric_def(
    "probetop_mem",
    "info",
    "",
    "what the memory probe runs: threads, block size, operation, access mode, scope",
    (*_LABELS, "threads", "block_size", "oper", "access_mode", "scope"),
)


class MemTracker(Tracker):
    KIND = KIND
    COMMAND = "mem"
    DEFS = (
        MEM_OPS,
        MEM_OPS_RATE,
        MEM_BYTES,
        MEM_BYTES_RATE,
        MEM_LATENCY_PCT,
        MEM_THREADS,
        MEM_RATE,
        MEM_QUEUE,
        MEM_CONCURRENCY,
        MEM_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.ops = 0
        self.bytes = 0
        self.rate: float | None = None
        self.byte_rate: float | None = None
        self.threads: int | None = None
        self.percentile = SummaryCounter()
        self.timed = False  # a sample gave the percentile
        self.params: dict[str, str] = {}
        self.target: int | None = None  # --rate, with the queue and concurrency
        self.queue: int | None = None
        self.concurrency: int | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = info.get("params")
        params = params if isinstance(params, Mapping) else {}
        self.params = {
            k: label_text(params.get(k)) for k in ("block_size", "oper", "access_mode", "scope")
        }

    def observe(self, sample: Sample) -> None:
        iv = MemInterval.from_sample(sample)
        ops = sum(max(0, n) for n in iv.per_thread_ops)
        self.ops += ops
        moves = self.params.get("oper") != "none"
        self.bytes += ops * iv.block_size if moves else 0
        if iv.ops is not None:
            self.rate = iv.ops
            self.byte_rate = iv.ops * iv.block_size if moves else 0.0
        self.threads = iv.threads
        self.percentile.add(ops, None if iv.lat_avg_ms is None else iv.lat_avg_ms / 1e3)
        if iv.lat_pct_ms is not None:
            self.percentile.latest([(iv.percentile / 100.0, iv.lat_pct_ms / 1e3)])
            self.timed = True
        if iv.rate is not None:
            self.target = iv.rate
            if iv.queue_length is not None:
                self.queue = iv.queue_length
            if iv.concurrency is not None:
                self.concurrency = iv.concurrency

    def points(self) -> list[Point]:
        labels = (self.probe_id,)
        out = [Point(MEM_OPS, labels, float(self.ops)), Point(MEM_BYTES, labels, float(self.bytes))]
        if self.rate is not None:
            out.append(Point(MEM_OPS_RATE, labels, self.rate))
        if self.byte_rate is not None:
            out.append(Point(MEM_BYTES_RATE, labels, self.byte_rate))
        if self.timed:
            out.append(Point(MEM_LATENCY_PCT, labels, self.percentile.snapshot()))
        if self.target is not None:
            out.append(Point(MEM_RATE, labels, float(self.target)))
            if self.queue is not None:
                out.append(Point(MEM_QUEUE, labels, float(self.queue)))
            if self.concurrency is not None:
                out.append(Point(MEM_CONCURRENCY, labels, float(self.concurrency)))
        if self.threads is not None:
            out.append(Point(MEM_THREADS, labels, float(self.threads)))
            out.append(Point(MEM_INFO, labels, {"threads": str(self.threads), **self.params}))
        return by_metric(out, self.DEFS)


TRACKER = MemTracker
