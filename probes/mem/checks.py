"""``--assert`` on a memory run, and how ``compare`` reads its samples.

Contract: ``MemFigures`` is the summary's figures, typed (a value the
summary lacks is None); ``CHECKS`` (``core.checks.Checks``) declares each
assertable figure as a function of it. Rates and latencies are statistics
of the operations counted: none counted, they read None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Checks, assertable, dig, number
from probetop.probes.mem.records import KIND, THREAD_OPS, THREADS

LATENCY_STATS = ("min", "avg", "max", "p95")


@dataclass(frozen=True, slots=True)
class MemFigures:
    """A memory summary's figures (sysbench memory's final report), typed."""

    ops_per_second: float | None
    mib_per_second: float | None
    total_events: float | None
    latency_ms: Mapping[str, float | None]  # LATENCY_STATS
    events_stddev: float | None
    threads: float | None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> MemFigures:
        return cls(
            ops_per_second=number(s.get("ops_per_second")),
            mib_per_second=number(s.get("mib_per_second")),
            total_events=number(s.get("total_events")),
            latency_ms={k: number(dig(s, "latency_ms", k)) for k in LATENCY_STATS},
            events_stddev=number(dig(s, "fairness", "events_stddev")),
            threads=number(s.get("threads")),
        )


def _ops(s: MemFigures) -> float | None:
    return s.total_events


CHECKS: Checks[MemFigures] = Checks(
    kind=KIND,
    summary=MemFigures.from_summary,
    assertables=(
        assertable(
            "mem.ops_per_second",
            "/s",
            lambda s: s.ops_per_second,
            "operations per second (sysbench)",
            basis=_ops,
        ),
        assertable(
            "mem.mib_per_second",
            "MiB/s",
            lambda s: s.mib_per_second,
            "MiB per second (sysbench)",
            basis=_ops,
        ),
        assertable("mem.total_events", "", _ops, "operations completed"),
        *(
            assertable(
                f"mem.latency.{stat}",
                "ms",
                lambda s, stat=stat: s.latency_ms[stat],
                f"operation latency {stat}",
                basis=_ops,
            )
            for stat in LATENCY_STATS
        ),
        assertable(
            "mem.fairness.events_stddev",
            "",
            lambda s: s.events_stddev,
            "fairness.events_stddev",
            count=lambda s: s.threads,  # a spread over threads: one thread has none
        ),
    ),
    neutral=frozenset({THREADS, THREAD_OPS}),
)
