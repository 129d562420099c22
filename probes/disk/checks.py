"""``--assert`` on an IOPS or warm-up run, and how ``compare`` reads their
samples.

Contract: ``IopsFigures`` and ``WarmupFigures`` are the summaries' figures,
typed (a value the summary lacks is None); ``IOPS_CHECKS`` and
``WARMUP_CHECKS`` (``core.checks.Checks``) declare each assertable figure as
a function of them. An IOPS direction's latencies are statistics of its
I/Os: a direction that did none reads None (fio reports 0 for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.checks import Assertable, Checks, assertable, dig, number, scaled
from probetop.probes.disk.records import IOPS_KIND
from probetop.probes.disk.warmup.records import (
    DONE_BYTES,
    ELAPSED_S,
    ETA_S,
    PROGRESS_PCT,
    TOTAL_BYTES,
    WARMUP_KIND,
    Plateau,
)

# fio's JSON has all three, whatever the job did (trim: none of probetop's jobs)
FIO_DIRECTIONS = ("read", "write", "trim")
# (assert name, fio's latency, its statistic)
LATENCIES = (
    ("slat.mean", "slat", "mean"),
    ("clat.mean", "clat", "mean"),
    ("clat.max", "clat", "max"),
    ("lat.mean", "lat", "mean"),
    ("lat.max", "lat", "max"),
)
# assert name -> fio's key in clat_ns.percentile
PERCENTILES = {
    "p50": "50.000000",
    "p90": "90.000000",
    "p95": "95.000000",
    "p99": "99.000000",
    "p99.9": "99.900000",
}
_NS_TO_US = 1e-3


@dataclass(frozen=True, slots=True)
class DirectionFigures:
    """One direction of an IOPS summary (fio's read, write or trim), typed;
    latencies in ns, as fio's JSON has them."""

    iops: float | None
    bw_bytes: float | None
    total_ios: float | None
    errors: float | None
    latency_ns: Mapping[str, float | None]  # LATENCIES' names
    clat_percentile_ns: Mapping[str, float | None]  # PERCENTILES' names

    @classmethod
    def from_summary(cls, d: Any) -> DirectionFigures:
        return cls(
            iops=number(dig(d, "iops")),
            bw_bytes=number(dig(d, "bw_bytes")),
            total_ios=number(dig(d, "total_ios")),
            errors=number(dig(d, "errors")),
            latency_ns={name: number(dig(d, f"{part}_ns", stat)) for name, part, stat in LATENCIES},
            clat_percentile_ns={
                name: number(dig(d, "clat_ns", "percentile", key))
                for name, key in PERCENTILES.items()
            },
        )


@dataclass(frozen=True, slots=True)
class IopsFigures:
    """An IOPS summary's figures per direction (``FIO_DIRECTIONS``), typed."""

    directions: Mapping[str, DirectionFigures]

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> IopsFigures:
        return cls({d: DirectionFigures.from_summary(s.get(d)) for d in FIO_DIRECTIONS})


def _direction_checks(d: str) -> list[Assertable[IopsFigures]]:
    def ios(s: IopsFigures) -> float | None:
        return s.directions[d].total_ios

    return [
        assertable(f"iops.{d}.iops", "/s", lambda s: s.directions[d].iops, f"{d} IOPS (fio)"),
        assertable(f"iops.{d}.bw", "B/s", lambda s: s.directions[d].bw_bytes, f"{d} bandwidth"),
        assertable(f"iops.{d}.total_ios", "", ios, f"{d}.total_ios"),
        assertable(f"iops.{d}.errors", "", lambda s: s.directions[d].errors, f"{d}.errors"),
        *(
            assertable(
                f"iops.{d}.{name}",
                "us",
                lambda s, name=name: scaled(s.directions[d].latency_ns[name], _NS_TO_US),
                f"{d}.{part}_ns.{stat}",
                basis=ios,
            )
            for name, part, stat in LATENCIES
        ),
        *(
            assertable(
                f"iops.{d}.clat.{name}",
                "us",
                lambda s, name=name: scaled(s.directions[d].clat_percentile_ns[name], _NS_TO_US),
                f"{d}.clat_ns.percentile.{key}",
                basis=ios,
            )
            for name, key in PERCENTILES.items()
        ),
    ]


IOPS_CHECKS: Checks[IopsFigures] = Checks(
    kind=IOPS_KIND,
    summary=IopsFigures.from_summary,
    assertables=tuple(a for d in FIO_DIRECTIONS for a in _direction_checks(d)),
    target_params=("target", "backing_device"),
)


@dataclass(frozen=True, slots=True)
class WarmupFigures:
    """A warm-up summary's whole-run figures, typed (``WarmupSummary`` is
    the whole document; it reads a missing figure as 0, these as None)."""

    bw_bytes: float | None
    iops: float | None
    bytes: float | None
    seconds: float | None
    complete: float | None  # 1 or 0
    plateau: Plateau | None

    @classmethod
    def from_summary(cls, s: Mapping[str, Any]) -> WarmupFigures:
        plateau = s.get("plateau")
        return cls(
            bw_bytes=number(s.get("bw_bytes")),
            iops=number(s.get("iops")),
            bytes=number(s.get("bytes")),
            seconds=number(s.get("seconds")),
            complete=number(s.get("complete")),
            plateau=Plateau.from_dict(plateau) if isinstance(plateau, Mapping) else None,
        )


WARMUP_CHECKS: Checks[WarmupFigures] = Checks(
    kind=WARMUP_KIND,
    summary=WarmupFigures.from_summary,
    assertables=(
        assertable("warmup.bw", "B/s", lambda s: s.bw_bytes, "bandwidth over the run"),
        assertable("warmup.iops", "/s", lambda s: s.iops, "IOPS over the run"),
        assertable("warmup.bytes", "B", lambda s: s.bytes, "bytes transferred"),
        assertable("warmup.seconds", "s", lambda s: s.seconds, "seconds of I/O"),
        assertable(
            "warmup.complete", "", lambda s: s.complete, "1 when the pass covered the range"
        ),
        assertable(
            "warmup.plateau.reached_at_s",
            "s",
            lambda s: s.plateau.reached_at_s if s.plateau is not None else None,
            "when fio's steady-state criterion was first met",
        ),
    ),
    neutral=frozenset({PROGRESS_PCT, DONE_BYTES, TOTAL_BYTES, ETA_S, ELAPSED_S}),
    target_params=("target", "checkpoint", "backing_device"),
)
