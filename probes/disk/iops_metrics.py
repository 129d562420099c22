"""IOPS probe metrics per target and direction: fio's I/Os, bytes, rates,
completion-latency histogram and percentiles, errors, ramp, options.

Contract: ``IopsTracker`` reads samples only through ``IopsInterval``
and params through ``IopsParams``; I/Os in ``--ramp`` are counted but
kept out of the latency histogram, whose counts are exact
(``iops_slot``).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.tracker import (
    BucketCounter,
    SummaryCounter,
    Tracker,
    by_metric,
    events_in,
)
from probetop.probes.disk.records import (
    DIRECTIONS,
    IOPS_KIND,
    IopsInterval,
    IopsParams,
    clat_bucket_range_ns,
)

IOPS_BUCKETS_NS: tuple[int, ...] = tuple(
    sorted([(1 << n) - 1 for n in range(9, 34)] + [(3 << (n - 1)) - 1 for n in range(9, 33)])
)
"""Disk completion latencies: 2**n and 1.5 * 2**n ns, 512 ns to 8.6 s (49
bounds, two per power of two), each minus 1 ns: fio's histogram counts whole
ns, and every 2**n and 1.5 * 2**n (n >= 7) is an edge of its buckets, so
``le = edge - 1 ns`` is the largest latency the bucket below the edge holds
and every native bucket lies wholly under one bound: exact counts."""
IOPS_BUCKETS_S: tuple[float, ...] = tuple(ns / 1e9 for ns in IOPS_BUCKETS_NS)


def iops_slot(index: int) -> int:
    """The Prometheus bucket (index into ``IOPS_BUCKETS_S``; its length:
    +Inf) holding the fio-layout native bucket ``index``: the first bound
    at or above the largest whole-ns latency the bucket holds."""
    high = clat_bucket_range_ns(index)[1]
    return bisect.bisect_left(IOPS_BUCKETS_NS, high - 1)


_IOPS_LABELS = ("probe", "target", "direction")

IOPS_IOS = metric_def(
    "probetop_iops_ios", "counter", "", "I/Os completed (fio's total_ios)", _IOPS_LABELS
)
IOPS_BYTES = metric_def(
    "probetop_iops_bytes", "counter", "bytes", "bytes transferred", _IOPS_LABELS
)
IOPS_RATE = metric_def(
    "probetop_iops_ios_per_second",
    "gauge",
    "",
    "I/Os per second over the latest interval (fio's iops)",
    _IOPS_LABELS,
)
IOPS_BW = metric_def(
    "probetop_iops_bytes_per_second",
    "gauge",
    "",
    "bytes per second over the latest interval (fio's bw)",
    _IOPS_LABELS,
)
IOPS_CLAT = metric_def(
    "probetop_iops_completion_latency_seconds",
    "histogram",
    "seconds",
    "completion latency (fio's clat) over the run outside --ramp, from the probe's "
    "fio-layout histogram (bounds: 2**n and 1.5*2**n ns minus 1 ns)",
    _IOPS_LABELS,
)
IOPS_CLAT_PCT = metric_def(
    "probetop_iops_completion_latency_quantile_seconds",
    "summary",
    "seconds",
    "fio's completion-latency percentiles (1 ... 99.99) of the latest interval "
    "(quantile: 0.99 for the 99th); count and sum: every I/O timed over the run outside --ramp",
    _IOPS_LABELS,
)
IOPS_ERRORS = metric_def(
    "probetop_iops_errors", "counter", "", "failed or short I/Os", ("probe", "target")
)
IOPS_RAMP = metric_def(
    "probetop_iops_ramp",
    "gauge",
    "",
    "1 while in --ramp (not counted in the latency histogram), else 0",
    ("probe", "target"),
)
IOPS_INFO = metric_def(
    "probetop_iops",
    "info",
    "",
    "what the IOPS probe runs (fio's options)",
    ("probe", "target", "rw", "bs", "iodepth", "jobs", "engine"),
)


class _Direction:
    def __init__(self) -> None:
        self.ios = 0
        self.bytes = 0
        self.rate: float | None = None
        self.bw: float | None = None
        self.percentiles = SummaryCounter()
        # None until a sample carries its histogram (older recordings do not)
        self.latency: BucketCounter | None = None


class IopsTracker(Tracker):
    KIND = IOPS_KIND
    COMMAND = "iops"
    DEFS = (
        IOPS_IOS,
        IOPS_BYTES,
        IOPS_RATE,
        IOPS_BW,
        IOPS_CLAT,
        IOPS_CLAT_PCT,
        IOPS_ERRORS,
        IOPS_RAMP,
        IOPS_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.directions: dict[str, _Direction] = {}
        self.errors = 0
        self.ramp: bool | None = None
        self.params: IopsParams | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        self.params = IopsParams.from_info(info)

    def observe(self, sample: Sample) -> None:
        iv = IopsInterval.from_sample(sample)
        seconds = sample.interval_s
        for name in DIRECTIONS:
            rates = iv.direction(name)
            if rates is None:
                continue
            state = self.directions.setdefault(name, _Direction())
            ios = events_in(rates.iops, seconds)
            state.ios += ios
            state.bytes += events_in(rates.bps, seconds)
            state.rate, state.bw = rates.iops, rates.bps
            if rates.clat_hist is not None:
                if state.latency is None:
                    state.latency = BucketCounter(IOPS_BUCKETS_S)
                if not iv.ramp:
                    in_hist = 0
                    for index, n in rates.clat_hist:
                        state.latency.add_to(iops_slot(index), n, 0.0)
                        in_hist += n
                    if rates.clat_mean_us is not None:
                        state.latency.sum += rates.clat_mean_us / 1e6 * in_hist
            if not iv.ramp:  # as the histogram: its count when the sample has one
                timed = sum(n for _, n in rates.clat_hist) if rates.clat_hist else ios
                mean_us = rates.clat_mean_us
                state.percentiles.add(timed, None if mean_us is None else mean_us / 1e6)
            if rates.clat_us:
                state.percentiles.latest(
                    (float(p) / 100.0, us / 1e6) for p, us in rates.clat_us.items()
                )
        self.errors += events_in(iv.errors_per_s, seconds)
        self.ramp = iv.ramp

    def points(self) -> list[Point]:
        target = self.params.target if self.params else ""
        base = (self.probe_id, target)
        out: list[Point] = []
        for name, d in self.directions.items():
            labels = (*base, name)
            out.append(Point(IOPS_IOS, labels, float(d.ios)))
            out.append(Point(IOPS_BYTES, labels, float(d.bytes)))
            if d.rate is not None:
                out.append(Point(IOPS_RATE, labels, d.rate))
            if d.bw is not None:
                out.append(Point(IOPS_BW, labels, d.bw))
            if d.latency is not None:
                out.append(Point(IOPS_CLAT, labels, d.latency.snapshot()))
            if d.percentiles.quantiles:
                out.append(Point(IOPS_CLAT_PCT, labels, d.percentiles.snapshot()))
        out.append(Point(IOPS_ERRORS, base, float(self.errors)))
        if self.ramp is not None:
            out.append(Point(IOPS_RAMP, base, 1.0 if self.ramp else 0.0))
        if self.params is not None:
            p = self.params
            out.append(
                Point(
                    IOPS_INFO,
                    base,
                    {
                        "rw": p.rw,
                        "bs": str(p.bs),
                        "iodepth": str(p.iodepth),
                        "jobs": str(p.jobs),
                        "engine": p.engine,
                    },
                )
            )
        return by_metric(out, self.DEFS)


IOPS_TRACKER = IopsTracker
