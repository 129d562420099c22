"""What an ICMP sample carries, typed: the probe writes it, the pane and the
report read it. The header's ``params`` and the summary are ``summary``.

Contract:
- ``IcmpInterval.to_sample`` is the only place that lays an ICMP interval out
  as a ``Sample`` (metric keys in ``values``; ``mode``, ``rtt_hist_us``,
  ``errors``, ``error_routers``, ``rate_limit``, ``ttl`` in ``extra``), and
  ``IcmpInterval.from_sample``
  the only place that reads one back.
- Every layout is probetop 0.1's, key for key and in the same order, so old
  recordings replay and the JSON stays the same. Readers are tolerant:
  missing or malformed fields read as None (or empty), never raise.
- ``METRICS`` declares every metric name an ICMP sample may hold.
- ``read_error_counts`` / ``read_error_routers`` read an error table back
  (``ErrorCounts`` / ``ErrorRouters``; anything malformed: empty), for the
  samples here and the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.readback import as_count, as_number, as_text
from probetop.probes.core.sample import Sample

KIND = "icmp"

PPS = "pps"
REPLIES_PER_S = "replies_per_s"
REQUESTS_PER_S = "requests_per_s"
LOSS_PCT = "loss_pct"
LOST = "lost"
DUPLICATES = "duplicates"
REORDERED = "reordered"
LATE = "late"
ICMP_ERRORS = "icmp_errors"
SEND_ERRORS = "send_errors"
IN_FLIGHT = "in_flight"
MISSED = "missed"
JITTER_AVG_US = "jitter_avg_us"
JITTER_MAX_US = "jitter_max_us"
OUTAGE_S = "outage_s"
RTT_KEYS = ("min", "avg", "max", "mdev", "p50", "p90", "p99")
RTT_MIN_US, RTT_AVG_US, RTT_MAX_US, RTT_MDEV_US, RTT_P50_US, RTT_P90_US, RTT_P99_US = (
    f"rtt_{k}_us" for k in RTT_KEYS
)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(PPS, "pkt/s", "packets through the target: 2 x replies/s", True),
    MetricSpec(REPLIES_PER_S, "/s", "echo replies received per second (unique)", True),
    MetricSpec(REQUESTS_PER_S, "/s", "echo requests sent per second"),
    MetricSpec(
        LOSS_PCT, "%", "lost / (lost + received) over requests resolved in the interval", True
    ),
    MetricSpec(LOST, "", "requests unanswered for longer than the grace period"),
    MetricSpec(DUPLICATES, "", "extra replies to a request already answered"),
    MetricSpec(REORDERED, "", "replies that arrived after a reply to a later request"),
    MetricSpec(LATE, "", "replies that arrived after their request was counted lost"),
    MetricSpec(ICMP_ERRORS, "", "ICMP errors about our requests (unreachable, time exceeded)"),
    MetricSpec(SEND_ERRORS, "", "local send/receive errors (errno), e.g. EMSGSIZE"),
    MetricSpec(IN_FLIGHT, "", "requests sent and not yet resolved at the interval's end"),
    MetricSpec(MISSED, "", "--rate: sends skipped because the sender was stalled > 100 ms"),
    MetricSpec(RTT_MIN_US, "µs", "smallest round-trip time"),
    MetricSpec(RTT_AVG_US, "µs", "mean round-trip time", True),
    MetricSpec(RTT_MAX_US, "µs", "largest round-trip time"),
    MetricSpec(RTT_MDEV_US, "µs", "ping's mdev: sqrt(mean(rtt²) - mean(rtt)²)"),
    MetricSpec(RTT_P50_US, "µs", "median round-trip time (histogram bucket, < 3.2 % wide)"),
    MetricSpec(RTT_P90_US, "µs", "90th percentile round-trip time"),
    MetricSpec(RTT_P99_US, "µs", "99th percentile round-trip time"),
    MetricSpec(JITTER_AVG_US, "µs", "mean |rtt - previous rtt| over consecutive replies"),
    MetricSpec(JITTER_MAX_US, "µs", "largest |rtt - previous rtt| over consecutive replies"),
    MetricSpec(OUTAGE_S, "s", "fping's outage time: lost requests x the time between requests"),
)

SOCKET_LABELS = {"raw": "raw socket", "datagram": "datagram socket (unprivileged)"}

ErrorCounts = Mapping[str, int]  # error name ("time exceeded", "send EMSGSIZE") -> count
ErrorRouters = Mapping[str, Mapping[str, int]]  # error name -> reporting router -> count


# Shared, read-only empty tables for the lean interval rows (no dict per row).
_NO_ERRORS: ErrorCounts = MappingProxyType({})
_NO_ROUTERS: ErrorRouters = MappingProxyType({})


def read_error_counts(value: Any) -> dict[str, int]:
    """An ``ErrorCounts`` read back: entries whose count is not a number are
    dropped; anything but a mapping is empty."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): n for k, v in value.items() if (n := as_count(v)) is not None}


def read_error_routers(value: Any) -> dict[str, dict[str, int]]:
    """An ``ErrorRouters`` read back, each router table as ``read_error_counts``."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): read_error_counts(v) for k, v in value.items() if isinstance(v, Mapping)}


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class RttStats:
    """Round-trip times in µs: min/avg/max/mdev (exact; mdev as ping's) and
    p50/p90/p99 (histogram buckets). None when nothing was received."""

    min_us: float | None = None
    avg_us: float | None = None
    max_us: float | None = None
    mdev_us: float | None = None
    p50_us: float | None = None
    p90_us: float | None = None
    p99_us: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        """``{"min": ..., "p99": ...}``: the summary's ``rtt_us``."""
        return dict(zip(RTT_KEYS, self.as_tuple(), strict=True))

    def as_tuple(self) -> tuple[float | None, ...]:
        return (
            self.min_us,
            self.avg_us,
            self.max_us,
            self.mdev_us,
            self.p50_us,
            self.p90_us,
            self.p99_us,
        )

    @classmethod
    def from_dict(cls, d: Any) -> RttStats:
        """Read ``{"min": ..., ...}`` back (anything else: all None)."""
        if not isinstance(d, Mapping):
            return cls()
        return cls(*(as_number(d.get(k)) for k in RTT_KEYS))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> RttStats:
        """Read the ``rtt_*_us`` metrics of a sample's values."""
        return cls(*(as_number(values.get(f"rtt_{k}_us")) for k in RTT_KEYS))


@dataclass(frozen=True, slots=True)
class RttBucket:
    """One bar of an interval's RTT distribution: replies with RTT in [low, high) µs."""

    low_us: float
    high_us: float
    count: float


@dataclass(frozen=True, slots=True)
class IcmpInterval:
    """One interval of an ICMP run, merged over streams.

    Counts are requests resolved (or replies seen) in the interval; rates are
    per second of the interval. ``rtt_hist`` is None when no reply came back.
    ``errors`` counts ICMP errors by type and local errors as ``send ERRNO`` /
    ``receive ERRNO``; ``error_routers`` names who sent each ICMP error.
    """

    KIND: ClassVar[str] = KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = METRICS

    requests_per_s: float | None
    replies_per_s: float | None
    pps: float | None
    loss_pct: float | None
    lost: int | None
    duplicates: int | None
    reordered: int | None
    late: int | None
    icmp_errors: int | None
    send_errors: int | None
    missed: int | None
    in_flight: int | None
    rtt: RttStats
    mode: str | None = None
    rtt_hist: tuple[RttBucket, ...] | None = None
    errors: ErrorCounts = field(default_factory=dict)
    error_routers: ErrorRouters = field(default_factory=dict)
    # Since 0.2 (absent from older recordings, then None): jitter as trippy and
    # smokeping show it, fping's outage time, and the rate-limit hint.
    jitter_avg_us: float | None = None
    jitter_max_us: float | None = None
    outage_s: float | None = None
    rate_limit: str | None = None
    # Since 0.3: the last echo reply's IP TTL / hop limit (smokeping_response_ttl).
    ttl: int | None = None

    def values(self) -> dict[str, float | None]:
        """The metric values, in probetop 0.1's order (counts as floats)."""
        out: dict[str, float | None] = {
            REQUESTS_PER_S: self.requests_per_s,
            REPLIES_PER_S: self.replies_per_s,
            PPS: self.pps,
            LOSS_PCT: self.loss_pct,
            LOST: _float(self.lost),
            DUPLICATES: _float(self.duplicates),
            REORDERED: _float(self.reordered),
            LATE: _float(self.late),
            ICMP_ERRORS: _float(self.icmp_errors),
            SEND_ERRORS: _float(self.send_errors),
            MISSED: _float(self.missed),
            IN_FLIGHT: _float(self.in_flight),
        }
        for key, value in zip(RTT_KEYS, self.rtt.as_tuple(), strict=True):
            out[f"rtt_{key}_us"] = value
        # Newer metrics only when known: an old recording lays out as it was.
        for key, value in (
            (JITTER_AVG_US, self.jitter_avg_us),
            (JITTER_MAX_US, self.jitter_max_us),
            (OUTAGE_S, self.outage_s),
        ):
            if value is not None:
                out[key] = value
        return out

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        extra: dict[str, Any] = {"mode": self.mode}
        if self.rtt_hist is not None:
            extra["rtt_hist_us"] = [[b.low_us, b.high_us, b.count] for b in self.rtt_hist]
        if self.errors:
            extra["errors"] = dict(self.errors)
        if self.error_routers:
            extra["error_routers"] = {k: dict(v) for k, v in self.error_routers.items()}
        if self.rate_limit:
            extra["rate_limit"] = self.rate_limit
        if self.ttl is not None:
            extra["ttl"] = self.ttl
        return Sample(probe_id, t_ns, interval_s, self.values(), extra)

    @classmethod
    def from_values(
        cls, values: Mapping[str, Any], extra: Mapping[str, Any] | None = None
    ) -> IcmpInterval:
        """Read metric values (a sample's, or a summary's interval row) and
        optionally a sample's extra. Never raises."""
        extra = extra if isinstance(extra, Mapping) else {}
        mode = extra.get("mode")
        return cls(
            requests_per_s=as_number(values.get(REQUESTS_PER_S)),
            replies_per_s=as_number(values.get(REPLIES_PER_S)),
            pps=as_number(values.get(PPS)),
            loss_pct=as_number(values.get(LOSS_PCT)),
            lost=as_count(values.get(LOST)),
            duplicates=as_count(values.get(DUPLICATES)),
            reordered=as_count(values.get(REORDERED)),
            late=as_count(values.get(LATE)),
            icmp_errors=as_count(values.get(ICMP_ERRORS)),
            send_errors=as_count(values.get(SEND_ERRORS)),
            missed=as_count(values.get(MISSED)),
            in_flight=as_count(values.get(IN_FLIGHT)),
            rtt=RttStats.from_values(values),
            mode=mode if isinstance(mode, str) else None,
            rtt_hist=_buckets(extra.get("rtt_hist_us")),
            errors=read_error_counts(extra.get("errors")),
            error_routers=read_error_routers(extra.get("error_routers")),
            jitter_avg_us=as_number(values.get(JITTER_AVG_US)),
            jitter_max_us=as_number(values.get(JITTER_MAX_US)),
            outage_s=as_number(values.get(OUTAGE_S)),
            rate_limit=as_text(extra.get("rate_limit")),
            ttl=as_count(extra.get("ttl")),
        )

    @classmethod
    def from_sample(cls, sample: Sample) -> IcmpInterval:
        """Read an ICMP sample back (live or from a recording)."""
        return cls.from_values(sample.values, sample.extra)


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One line of the summary's ``intervals``: when it ended (seconds since
    the start) and its figures.

    Holds only what ``to_dict`` writes (the metric values, percentiles
    included): the interval's RTT histogram, error tables and rate-limit
    hint are let go when the row is made, so a kept row has a fixed size
    whatever the RTT spread. A run keeps 600 rows, and their histograms grew
    wider as a loaded machine widened the spread (issue 29's soak)."""

    t_s: float
    interval: IcmpInterval

    def __post_init__(self) -> None:
        iv = self.interval
        if iv.rtt_hist is not None or iv.errors or iv.error_routers or iv.rate_limit is not None:
            lean = replace(
                iv, rtt_hist=None, errors=_NO_ERRORS, error_routers=_NO_ROUTERS, rate_limit=None
            )
            object.__setattr__(self, "interval", lean)  # frozen: set once, here

    def to_dict(self) -> dict[str, Any]:
        return {"t_s": self.t_s, **self.interval.values()}

    @classmethod
    def from_dict(cls, row: Any) -> IntervalRow | None:
        if not isinstance(row, Mapping):
            return None
        return cls(as_number(row.get("t_s")) or 0.0, IcmpInterval.from_values(row))


def _buckets(value: Any) -> tuple[RttBucket, ...] | None:
    if not isinstance(value, list):
        return None
    out = []
    for b in value:
        if isinstance(b, (list, tuple)) and len(b) == 3:
            low, high, n = (as_number(x) for x in b)
            if low is not None and high is not None and n is not None:
                out.append(RttBucket(low, high, n))
    return tuple(out)
