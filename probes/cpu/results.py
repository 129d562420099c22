"""What one CPU phase produced: its threads' counters and sysbench's report.

Contract: ``PhaseResult`` is one run at one thread count and ``as_dict``
renders sysbench's final report as a JSON-safe dict (the shared sections
from ``probes.core.sysbench.counters`` plus cpu's own fields); ``sweep_rows``
is the thread sweep's table. No threads, no event loop: pure bookkeeping
over what the engine counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.sysbench.counters import (
    Snapshot,
    ThreadSnapshot,
    fairness,
    latency_ms,
    per_thread,
)
from probetop.probes.core.sysbench.hist import percentile_ms, to_sparse


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
        return self.counters().histogram()

    def as_dict(self, percentile: float) -> dict[str, Any]:
        snap = self.counters()
        return {
            "threads": self.threads,
            "events_per_second": self.events_per_second,
            "total_events": snap.total_events,
            "total_time": self.total_time_s,
            "latency_ms": latency_ms(snap, percentile),
            "fairness": fairness(snap, self.threads),
            "per_thread": per_thread(snap, self.cpu_ns),
            "histogram": to_sparse(snap.histogram()),
            "stopped_by": self.stopped_by,
            "primes": self.primes,
        }


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
