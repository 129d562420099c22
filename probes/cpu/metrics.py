"""CPU probe metrics: sysbench's events, events/s, event-latency histogram
and percentile, threads, and what the probe runs.

Contract: ``CpuTracker`` reads samples only through ``cpu.CpuInterval``;
the latency histogram appears once a sample carries one (older recordings
do not), with exact counts (``cpu_slot``): ``CPU_BUCKETS_S`` are edges of
sysbench's own log buckets.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.sysbench.hist import bucket_upper_ms
from probetop.probes.core.tracker import (
    BucketCounter,
    SummaryCounter,
    Tracker,
    by_metric,
    label_text,
)
from probetop.probes.cpu.records import KIND, CpuInterval

CPU_BOUND_BUCKETS: tuple[int, ...] = tuple(range(0, 897, 16))
"""CPU event times: the upper edges of every 16th of sysbench's 1024 log
buckets (127.9 per decade), from bucket 0 (edge 1.009 µs) to bucket 896
(10.25 s): 57 bounds, 8 per decade (each 1.334 times the one before). A
sample's native bucket ``i`` lies wholly under the first bound whose bucket
is >= ``i``: the counts are exact, not interpolated."""
CPU_BUCKETS_S: tuple[float, ...] = tuple(bucket_upper_ms(i) / 1e3 for i in CPU_BOUND_BUCKETS)


def cpu_slot(index: int) -> int:
    """The Prometheus bucket (index into ``CPU_BUCKETS_S``; its length: +Inf)
    holding sysbench's native bucket ``index``."""
    return bisect.bisect_left(CPU_BOUND_BUCKETS, index)


_CPU_LABELS = ("probe",)

CPU_EVENTS = metric_def(
    "probetop_cpu_events",
    "counter",
    "",
    "sysbench cpu events completed (one event: the prime test up to --max-prime)",
    _CPU_LABELS,
)
CPU_EPS = metric_def(
    "probetop_cpu_events_per_second",
    "gauge",
    "",
    "events per second over the latest interval (sysbench's events/s)",
    _CPU_LABELS,
)
CPU_LATENCY = metric_def(
    "probetop_cpu_event_latency_seconds",
    "histogram",
    "seconds",
    "time per event over the run, from sysbench's own latency histogram (bounds: "
    "edges of its log buckets, 8 per decade)",
    _CPU_LABELS,
)
CPU_LATENCY_PCT = metric_def(
    "probetop_cpu_event_latency_quantile_seconds",
    "summary",
    "seconds",
    "the --percentile of the latest interval's event times, as sysbench reports it "
    "(quantile: 0.95 for the 95th); count and sum: every event timed over the run",
    _CPU_LABELS,
)
CPU_THREADS = metric_def("probetop_cpu_threads", "gauge", "", "worker threads running", _CPU_LABELS)
CPU_RATE = metric_def(
    "probetop_cpu_rate_target",
    "gauge",
    "",
    "--rate: the target mean event arrival rate per second (absent: unlimited)",
    _CPU_LABELS,
)
CPU_QUEUE = metric_def(
    "probetop_cpu_queue_length",
    "gauge",
    "",
    "--rate: events arrived and waiting for a free thread at the latest interval's end "
    "(sysbench's queue length)",
    _CPU_LABELS,
)
CPU_CONCURRENCY = metric_def(
    "probetop_cpu_concurrency",
    "gauge",
    "",
    "--rate: threads inside an event at the latest interval's end (sysbench's concurrency)",
    _CPU_LABELS,
)
CPU_INFO = metric_def(
    "probetop_cpu",
    "info",
    "",
    "what the CPU probe runs: engine, threads, max prime",
    (*_CPU_LABELS, "engine", "threads", "max_prime"),
)


class CpuTracker(Tracker):
    KIND = KIND
    COMMAND = "cpu"
    DEFS = (
        CPU_EVENTS,
        CPU_EPS,
        CPU_LATENCY,
        CPU_LATENCY_PCT,
        CPU_THREADS,
        CPU_RATE,
        CPU_QUEUE,
        CPU_CONCURRENCY,
        CPU_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.events = 0
        self.eps: float | None = None
        self.threads: int | None = None
        self.percentile = SummaryCounter()
        self.timed = False  # a sample gave the percentile
        # None until a sample carries its histogram (older recordings do not)
        self.latency: BucketCounter | None = None
        self.engine = ""
        self.max_prime = ""
        self.rate: int | None = None  # --rate, with the queue and concurrency
        self.queue: int | None = None
        self.concurrency: int | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = info.get("params")
        params = params if isinstance(params, Mapping) else {}
        self.max_prime = label_text(params.get("max_prime"))

    def observe(self, sample: Sample) -> None:
        iv = CpuInterval.from_sample(sample)
        events = sum(max(0, n) for n in iv.per_thread_events)
        self.events += events
        if iv.eps is not None:
            self.eps = iv.eps
        self.threads = iv.threads
        if iv.lat_hist is not None:
            if self.latency is None:
                self.latency = BucketCounter(CPU_BUCKETS_S)
            in_hist = 0
            for index, n in iv.lat_hist:
                self.latency.add_to(cpu_slot(index), n, 0.0)
                in_hist += n
            if iv.lat_sum_ms is not None:
                self.latency.sum += iv.lat_sum_ms / 1e3
            elif iv.lat_avg_ms is not None:
                self.latency.sum += iv.lat_avg_ms / 1e3 * in_hist
        if iv.lat_sum_ms is not None and events:
            self.percentile.add(events, iv.lat_sum_ms / 1e3 / events)
        elif iv.lat_avg_ms is not None:
            self.percentile.add(events, iv.lat_avg_ms / 1e3)
        if iv.lat_pct_ms is not None:
            self.percentile.latest([(iv.percentile / 100.0, iv.lat_pct_ms / 1e3)])
            self.timed = True
        if iv.engine:
            self.engine = iv.engine
        if iv.rate is not None:
            self.rate = iv.rate
            if iv.queue_length is not None:
                self.queue = iv.queue_length
            if iv.concurrency is not None:
                self.concurrency = iv.concurrency

    def points(self) -> list[Point]:
        labels = (self.probe_id,)
        out = [Point(CPU_EVENTS, labels, float(self.events))]
        if self.eps is not None:
            out.append(Point(CPU_EPS, labels, self.eps))
        if self.latency is not None:
            out.append(Point(CPU_LATENCY, labels, self.latency.snapshot()))
        if self.timed:
            out.append(Point(CPU_LATENCY_PCT, labels, self.percentile.snapshot()))
        if self.rate is not None:
            out.append(Point(CPU_RATE, labels, float(self.rate)))
            if self.queue is not None:
                out.append(Point(CPU_QUEUE, labels, float(self.queue)))
            if self.concurrency is not None:
                out.append(Point(CPU_CONCURRENCY, labels, float(self.concurrency)))
        if self.threads is not None:
            out.append(Point(CPU_THREADS, labels, float(self.threads)))
            out.append(
                Point(
                    CPU_INFO,
                    labels,
                    {
                        "engine": self.engine,
                        "threads": str(self.threads),
                        "max_prime": self.max_prime,
                    },
                )
            )
        return by_metric(out, self.DEFS)


TRACKER = CpuTracker
