"""``--assert`` on a CPU run, and how ``compare`` reads its samples.

Contract: ``CpuFigures`` is the summary's figures, typed (a value the
summary lacks is None); ``CHECKS`` (``core.checks.Checks``) declares each
assertable figure as a function of it. The latency figures are statistics
of the events counted: none counted, they read None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Checks, assertable, dig, number
from probetop.probes.cpu.records import KIND, THREAD_EVENTS, THREADS

LATENCY_STATS = ("min", "avg", "max", "p50", "p95", "p99")


@dataclass(frozen=True, slots=True)
class CpuFigures:
    """A CPU summary's figures (sysbench's final report), typed."""

    events_per_second: float | None
    total_events: float | None
    latency_ms: Mapping[str, float | None]  # LATENCY_STATS
    events_stddev: float | None
    threads: float | None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> CpuFigures:
        return cls(
            events_per_second=number(s.get("events_per_second")),
            total_events=number(s.get("total_events")),
            latency_ms={k: number(dig(s, "latency_ms", k)) for k in LATENCY_STATS},
            events_stddev=number(dig(s, "fairness", "events_stddev")),
            threads=number(s.get("threads")),
        )


def _events(s: CpuFigures) -> float | None:
    return s.total_events


CHECKS: Checks[CpuFigures] = Checks(
    kind=KIND,
    summary=CpuFigures.from_summary,
    assertables=(
        assertable(
            "cpu.events_per_second",
            "/s",
            lambda s: s.events_per_second,
            "events per second (sysbench)",
            basis=_events,
        ),
        assertable("cpu.total_events", "", _events, "events completed"),
        *(
            assertable(
                f"cpu.latency.{stat}",
                "ms",
                lambda s, stat=stat: s.latency_ms[stat],
                f"event latency {stat}",
                basis=_events,
            )
            for stat in LATENCY_STATS
        ),
        assertable(
            "cpu.fairness.events_stddev",
            "",
            lambda s: s.events_stddev,
            "fairness.events_stddev",
            count=lambda s: s.threads,  # a spread over threads: one thread has none
        ),
    ),
    neutral=frozenset({THREADS, THREAD_EVENTS}),
)
