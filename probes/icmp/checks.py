"""``--assert`` on an ICMP run, and how ``compare`` reads its samples.

Contract: ``IcmpFigures`` is the summary's figures, typed (a value the
summary lacks is None; ``IcmpSummary`` is the whole document, and reads a
missing count as 0); ``CHECKS`` (``core.checks.Checks``) declares each
assertable figure as a function of it. Round-trip times are statistics of
the replies received: none received, they read None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Checks, assertable, dig, number
from probetop.probes.icmp.records import IN_FLIGHT, KIND

RTT_STATS = ("min", "avg", "max", "mdev", "p50", "p90", "p99")
COUNTS = ("sent", "received", "lost", "duplicates", "reordered", "late")


@dataclass(frozen=True, slots=True)
class IcmpFigures:
    """An ICMP summary's figures (ping's statistics and probetop's), typed."""

    loss_pct: float | None
    rtt_us: Mapping[str, float | None]  # RTT_STATS
    counts: Mapping[str, float | None]  # COUNTS
    replies_per_second: float | None
    pps: float | None
    jitter_avg_us: float | None
    jitter_max_us: float | None
    outage_s: float | None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> IcmpFigures:
        return cls(
            loss_pct=number(s.get("loss_pct")),
            rtt_us={k: number(dig(s, "rtt_us", k)) for k in RTT_STATS},
            counts={k: number(s.get(k)) for k in COUNTS},
            replies_per_second=number(s.get("replies_per_second")),
            pps=number(s.get("pps")),
            jitter_avg_us=number(dig(s, "jitter_us", "avg")),
            jitter_max_us=number(dig(s, "jitter_us", "max")),
            outage_s=number(s.get("outage_s")),
        )


def _received(s: IcmpFigures) -> float | None:
    return s.counts["received"]


def _answered_or_lost(s: IcmpFigures) -> float | None:
    received, lost = s.counts["received"], s.counts["lost"]
    return None if received is None or lost is None else received + lost


CHECKS: Checks[IcmpFigures] = Checks(
    kind=KIND,
    summary=IcmpFigures.from_summary,
    assertables=(
        assertable(
            "icmp.loss",
            "%",
            lambda s: s.loss_pct,
            "lost / (lost + received)",
            count=_answered_or_lost,
            share=True,
        ),
        *(
            assertable(
                f"icmp.rtt.{stat}",
                "us",
                lambda s, stat=stat: s.rtt_us[stat],
                f"round-trip time {stat}",
                basis=_received,
            )
            for stat in RTT_STATS
        ),
        *(assertable(f"icmp.{k}", "", lambda s, k=k: s.counts[k], k) for k in COUNTS),
        assertable(
            "icmp.replies_per_second", "/s", lambda s: s.replies_per_second, "replies_per_second"
        ),
        assertable("icmp.pps", "/s", lambda s: s.pps, "packets through the target per second"),
        assertable("icmp.jitter", "us", lambda s: s.jitter_avg_us, "mean |rtt - previous rtt|"),
        assertable(
            "icmp.jitter.max", "us", lambda s: s.jitter_max_us, "largest |rtt - previous rtt|"
        ),
        assertable(
            "icmp.outage", "s", lambda s: s.outage_s, "lost requests x the time between requests"
        ),
    ),
    neutral=frozenset({IN_FLIGHT}),
    target_params=("host",),
)
