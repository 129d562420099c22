"""Histogram bounds per probe family and the counter that fills them.

Contract: each family's bounds are fixed (Prometheus ``le`` values, in
seconds; the native-unit tuples they come from sit beside them), chosen so
that every bucket of the probe's own histogram falls wholly under one bound:
the counts are exact, never interpolated. ``cpu_slot`` / ``iops_slot`` map a
native bucket index to its Prometheus bucket; ``BucketCounter`` accumulates
cumulative counts over fixed bounds.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from probetop.probes import cpu, disk
from probetop.tui.metrics.model import Histogram

HTTP_BUCKETS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""HTTP request times: 100 µs (a loopback request) to a minute."""

ICMP_BUCKETS_NS: tuple[int, ...] = tuple(1 << k for k in range(12, 36))
"""ICMP round trips: powers of two nanoseconds, 4.096 µs (loopback) to 34 s.
The probe's own histogram (``IcmpInterval.rtt_hist``) has four buckets per
power of two of nanoseconds, so every one of its buckets falls wholly under
one of these bounds: the counts are exact, not interpolated."""
ICMP_BUCKETS_S: tuple[float, ...] = tuple(ns / 1e9 for ns in ICMP_BUCKETS_NS)

CPU_BOUND_BUCKETS: tuple[int, ...] = tuple(range(0, 897, 16))
"""CPU event times: the upper edges of every 16th of sysbench's 1024 log
buckets (127.9 per decade), from bucket 0 (edge 1.009 µs) to bucket 896
(10.25 s): 57 bounds, 8 per decade (each 1.334 times the one before). A
sample's native bucket ``i`` lies wholly under the first bound whose bucket
is >= ``i``: the counts are exact, not interpolated."""
CPU_BUCKETS_S: tuple[float, ...] = tuple(cpu.bucket_upper_ms(i) / 1e3 for i in CPU_BOUND_BUCKETS)

IOPS_BUCKETS_NS: tuple[int, ...] = tuple(
    sorted([(1 << n) - 1 for n in range(9, 34)] + [(3 << (n - 1)) - 1 for n in range(9, 33)])
)
"""Disk completion latencies: 2**n and 1.5 * 2**n ns, 512 ns to 8.6 s (49
bounds, two per power of two), each minus 1 ns: fio's histogram counts whole
ns, and every 2**n and 1.5 * 2**n (n >= 7) is an edge of its buckets, so
``le = edge - 1 ns`` is the largest latency the bucket below the edge holds
and every native bucket lies wholly under one bound: exact counts."""
IOPS_BUCKETS_S: tuple[float, ...] = tuple(ns / 1e9 for ns in IOPS_BUCKETS_NS)


def cpu_slot(index: int) -> int:
    """The Prometheus bucket (index into ``CPU_BUCKETS_S``; its length: +Inf)
    holding sysbench's native bucket ``index``."""
    return bisect.bisect_left(CPU_BOUND_BUCKETS, index)


def iops_slot(index: int) -> int:
    """The Prometheus bucket (index into ``IOPS_BUCKETS_S``; its length:
    +Inf) holding the fio-layout native bucket ``index``: the first bound
    at or above the largest whole-ns latency the bucket holds."""
    high = disk.clat_bucket_range_ns(index)[1]
    return bisect.bisect_left(IOPS_BUCKETS_NS, high - 1)


class BucketCounter:
    """Cumulative histogram counts over fixed upper bounds (Prometheus ``le``)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound
        self.total = 0
        self.sum = 0.0

    def slot(self, value: float) -> int:
        """The first bucket whose bound is >= value (Prometheus: value <= le)."""
        return bisect.bisect_left(self.bounds, value)

    def add(self, value: float) -> None:
        self.add_to(self.slot(value), 1, value)

    def add_to(self, slot: int, n: int, total: float) -> None:
        self.counts[slot] += n
        self.total += n
        self.sum += total

    def snapshot(self) -> Histogram:
        cumulative = []
        running = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            running += n
            cumulative.append((bound, running))
        return Histogram(tuple(cumulative), self.total, self.sum)
