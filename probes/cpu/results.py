"""What one CPU phase produced: the counters of its threads and sysbench's report.

Contract: ``Snapshot`` is every thread's counters at one moment (numpy
vectors; ``Snapshot.take`` reads the live blocks in the engine's release
order, so counts are never ahead of the sums and histogram); ``PhaseResult``
is one run at one thread count and ``as_dict`` renders sysbench's final
report as a JSON-safe dict; ``sweep_rows`` is the thread sweep's table. No
threads, no event loop: pure bookkeeping over what the engine counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probetop.probes.core.stats import population_stddev
from probetop.probes.cpu.engine import (
    HIST_SIZE,
    STAT_EVENTS,
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
)
from probetop.probes.cpu.hist import percentile_ms, to_sparse

if TYPE_CHECKING:
    import numpy as np


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
