"""What an ICMP sample, header and summary carry, typed: the probe writes them,
the pane and the report read them.

Contract:
- ``IcmpInterval.to_sample`` is the only place that lays an ICMP interval out
  as a ``Sample`` (metric keys in ``values``; ``mode``, ``rtt_hist_us``,
  ``errors``, ``error_routers`` in ``extra``), and ``IcmpInterval.from_sample``
  the only place that reads one back.
- ``IcmpParams`` is the probe's header ``params`` (its settings plus the
  resolved target and socket mode); ``IcmpSummary`` is its summary (the
  ``--json`` document without ``probe``/``reason``/``error``).
- Every layout is probetop 0.1's, key for key and in the same order, so old
  recordings replay and the JSON stays the same. Readers are tolerant:
  missing or malformed fields read as None (or empty), never raise.
- ``METRICS`` declares every metric name an ICMP sample may hold.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.sample import Sample
from probetop.probes.icmp.settings import IcmpSettings

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
        return cls(*(_number(d.get(k)) for k in RTT_KEYS))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> RttStats:
        """Read the ``rtt_*_us`` metrics of a sample's values."""
        return cls(*(_number(values.get(f"rtt_{k}_us")) for k in RTT_KEYS))


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
            requests_per_s=_number(values.get(REQUESTS_PER_S)),
            replies_per_s=_number(values.get(REPLIES_PER_S)),
            pps=_number(values.get(PPS)),
            loss_pct=_number(values.get(LOSS_PCT)),
            lost=_count(values.get(LOST)),
            duplicates=_count(values.get(DUPLICATES)),
            reordered=_count(values.get(REORDERED)),
            late=_count(values.get(LATE)),
            icmp_errors=_count(values.get(ICMP_ERRORS)),
            send_errors=_count(values.get(SEND_ERRORS)),
            missed=_count(values.get(MISSED)),
            in_flight=_count(values.get(IN_FLIGHT)),
            rtt=RttStats.from_values(values),
            mode=mode if isinstance(mode, str) else None,
            rtt_hist=_buckets(extra.get("rtt_hist_us")),
            errors=_error_counts(extra.get("errors")),
            error_routers=_error_routers(extra.get("error_routers")),
            jitter_avg_us=_number(values.get(JITTER_AVG_US)),
            jitter_max_us=_number(values.get(JITTER_MAX_US)),
            outage_s=_number(values.get(OUTAGE_S)),
            rate_limit=_text(extra.get("rate_limit")),
        )

    @classmethod
    def from_sample(cls, sample: Sample) -> IcmpInterval:
        """Read an ICMP sample back (live or from a recording)."""
        return cls.from_values(sample.values, sample.extra)


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One line of the summary's ``intervals``: when it ended (seconds since
    the start) and its figures."""

    t_s: float
    interval: IcmpInterval

    def to_dict(self) -> dict[str, Any]:
        return {"t_s": self.t_s, **self.interval.values()}

    @classmethod
    def from_dict(cls, row: Any) -> IntervalRow | None:
        if not isinstance(row, Mapping):
            return None
        return cls(_number(row.get("t_s")) or 0.0, IcmpInterval.from_values(row))


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """Where the requests go, as ``prepare`` found it."""

    address: str
    interface: str | None  # the interface that routes to it (the pane's NIC)
    source_address: str | None
    path_mtu: int | None


@dataclass(frozen=True, slots=True)
class IcmpParams:
    """An ICMP probe's header ``params``: its settings, the socket mode, the
    resolved target (None before ``prepare``) and, for the demo's idle pane,
    why it does not run."""

    settings: IcmpSettings
    mode: str | None = None
    target: ResolvedTarget | None = None
    idle_reason: str | None = None

    @property
    def mode_label(self) -> str:
        """``raw socket``, ``datagram socket (unprivileged)``."""
        return SOCKET_LABELS.get(str(self.mode), str(self.mode))

    def to_params(self) -> dict[str, Any]:
        d = dataclasses.asdict(self.settings)
        d["mode"] = self.mode
        if self.target is not None:
            d["address"] = self.target.address
            d["interface"] = self.target.interface
            d["source_address"] = self.target.source_address
            d["path_mtu"] = self.target.path_mtu
        if self.idle_reason:
            d["idle_reason"] = self.idle_reason
        return d

    @classmethod
    def from_params(cls, params: Any) -> IcmpParams:
        """Read a header's params back. Unknown or malformed fields take the
        settings' defaults; never raises, never validates."""
        p: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(IcmpSettings):
            if f.name in p and _fits(p[f.name], _SETTING_TYPES[f.name]):
                kwargs[f.name] = p[f.name]
        kwargs["host"] = kwargs.get("host", "?")
        address = p.get("address")
        target = None
        if isinstance(address, str):
            target = ResolvedTarget(
                address,
                _text(p.get("interface")),
                _text(p.get("source_address")),
                _int(p.get("path_mtu")),
            )
        return cls(
            IcmpSettings(**kwargs),
            _text(p.get("mode")),
            target,
            _text(p.get("idle_reason")),
        )


@dataclass(frozen=True, slots=True)
class StreamTotals:
    """One stream's share of a run (``--streams N``): its echo id, counts and
    rates over the sending time, and the equivalent command for it alone."""

    stream: int
    sent: int
    received: int
    lost: int
    loss_pct: float | None
    replies_per_second: float | None
    rtt_avg_us: float | None
    jitter_avg_us: float | None
    reference_command: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "sent": self.sent,
            "received": self.received,
            "lost": self.lost,
            "loss_pct": self.loss_pct,
            "replies_per_second": self.replies_per_second,
            "rtt_avg_us": self.rtt_avg_us,
            "jitter_avg_us": self.jitter_avg_us,
            "reference_command": self.reference_command,
        }

    @classmethod
    def from_dict(cls, d: Any) -> StreamTotals | None:
        if not isinstance(d, Mapping):
            return None
        return cls(
            stream=_count(d.get("stream")) or 0,
            sent=_count(d.get("sent")) or 0,
            received=_count(d.get("received")) or 0,
            lost=_count(d.get("lost")) or 0,
            loss_pct=_number(d.get("loss_pct")),
            replies_per_second=_number(d.get("replies_per_second")),
            rtt_avg_us=_number(d.get("rtt_avg_us")),
            jitter_avg_us=_number(d.get("jitter_avg_us")),
            reference_command=_text(d.get("reference_command")),
        )


@dataclass(frozen=True, slots=True)
class IcmpTotals:
    """The whole run's counts and figures (what a run that started adds to
    the summary)."""

    sent: int
    received: int
    duplicates: int
    reordered: int
    lost: int
    late: int
    lost_early_by_wrap: int
    pacing_missed: int
    in_flight_at_end: int
    loss_pct: float | None
    replies_per_second: float | None
    requests_per_second: float | None
    pps: float | None
    rtt: RttStats
    errors: ErrorCounts
    error_routers: ErrorRouters
    duration_s: float
    grace_s: float
    streams: int
    intervals: tuple[IntervalRow, ...]
    stopped_by: str
    # Since 0.2 (None in older summaries): jitter, outage, the time spent
    # waiting for the last replies after sending stopped (``duration_s`` is
    # the sending time since then), the rate-limit hint, per-stream figures.
    jitter_avg_us: float | None = None
    jitter_max_us: float | None = None
    outage_s: float | None = None
    drain_s: float | None = None
    rate_limit: str | None = None
    per_stream: tuple[StreamTotals, ...] | None = None


@dataclass(frozen=True, slots=True)
class IcmpSummary:
    """An ICMP probe's summary. ``totals`` is None when nothing ran (the
    demo's idle probe, or a probe stopped before it started)."""

    target: str | None
    address: str | None
    mode: str | None
    pacing: str | None
    reference_command: str | None
    idle_reason: str | None = None
    totals: IcmpTotals | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "target": self.target,
            "address": self.address,
            "mode": self.mode,
            "pacing": self.pacing,
            "reference_command": self.reference_command,
        }
        if self.idle_reason:
            d["idle_reason"] = self.idle_reason
        t = self.totals
        if t is None:
            return d
        d.update(
            {
                "sent": t.sent,
                "received": t.received,
                "duplicates": t.duplicates,
                "reordered": t.reordered,
                "lost": t.lost,
                "late": t.late,
                "lost_early_by_wrap": t.lost_early_by_wrap,
                "pacing_missed": t.pacing_missed,
                "in_flight_at_end": t.in_flight_at_end,
                "loss_pct": t.loss_pct,
                "replies_per_second": t.replies_per_second,
                "requests_per_second": t.requests_per_second,
                "pps": t.pps,
                "rtt_us": t.rtt.to_dict(),
            }
        )
        if t.jitter_avg_us is not None or t.jitter_max_us is not None:
            d["jitter_us"] = {"avg": t.jitter_avg_us, "max": t.jitter_max_us}
        if t.outage_s is not None:
            d["outage_s"] = t.outage_s
        d["errors"] = dict(t.errors)
        d["error_routers"] = {k: dict(v) for k, v in t.error_routers.items()}
        if t.rate_limit is not None:
            d["rate_limit"] = t.rate_limit
        d["duration_s"] = t.duration_s
        if t.drain_s is not None:
            d["drain_s"] = t.drain_s
        d["grace_s"] = t.grace_s
        d["streams"] = t.streams
        if t.per_stream is not None:
            d["per_stream"] = [row.to_dict() for row in t.per_stream]
        d["intervals"] = [row.to_dict() for row in t.intervals]
        d["stopped_by"] = t.stopped_by
        return d

    @classmethod
    def from_summary(cls, s: Any) -> IcmpSummary:
        """Read a summary back (live, from a recording's footer, or the JSON
        document). Never raises."""
        s = s if isinstance(s, Mapping) else {}
        totals = None
        if "sent" in s:
            rows = s.get("intervals")
            jitter = s.get("jitter_us")
            jitter = jitter if isinstance(jitter, Mapping) else {}
            per_stream = s.get("per_stream")
            totals = IcmpTotals(
                sent=_count(s.get("sent")) or 0,
                received=_count(s.get("received")) or 0,
                duplicates=_count(s.get("duplicates")) or 0,
                reordered=_count(s.get("reordered")) or 0,
                lost=_count(s.get("lost")) or 0,
                late=_count(s.get("late")) or 0,
                lost_early_by_wrap=_count(s.get("lost_early_by_wrap")) or 0,
                pacing_missed=_count(s.get("pacing_missed")) or 0,
                in_flight_at_end=_count(s.get("in_flight_at_end")) or 0,
                loss_pct=_number(s.get("loss_pct")),
                replies_per_second=_number(s.get("replies_per_second")),
                requests_per_second=_number(s.get("requests_per_second")),
                pps=_number(s.get("pps")),
                rtt=RttStats.from_dict(s.get("rtt_us")),
                errors=_error_counts(s.get("errors")),
                error_routers=_error_routers(s.get("error_routers")),
                duration_s=_number(s.get("duration_s")) or 0.0,
                grace_s=_number(s.get("grace_s")) or 0.0,
                streams=_count(s.get("streams")) or 0,
                intervals=tuple(
                    row
                    for row in map(IntervalRow.from_dict, rows if isinstance(rows, list) else [])
                    if row is not None
                ),
                stopped_by=_text(s.get("stopped_by")) or "",
                jitter_avg_us=_number(jitter.get("avg")),
                jitter_max_us=_number(jitter.get("max")),
                outage_s=_number(s.get("outage_s")),
                drain_s=_number(s.get("drain_s")),
                rate_limit=_text(s.get("rate_limit")),
                per_stream=None
                if not isinstance(per_stream, list)
                else tuple(
                    row for row in map(StreamTotals.from_dict, per_stream) if row is not None
                ),
            )
        return cls(
            target=_text(s.get("target")),
            address=_text(s.get("address")),
            mode=_text(s.get("mode")),
            pacing=_text(s.get("pacing")),
            reference_command=_text(s.get("reference_command")),
            idle_reason=_text(s.get("idle_reason")),
            totals=totals,
        )


# -- tolerant readers ----------------------------------------------------------

_SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "host": (str,),
    "flood": (bool,),
    "rate": (int, float, type(None)),
    "period_s": (int, float, type(None)),
    "size": (int,),
    "streams": (int,),
    "count": (int, type(None)),
    "ttl": (int, type(None)),
    "family": (int, type(None)),
    "source": (str, type(None)),
    "broadcast": (bool,),
    "preload": (int,),
    "grace_s": (int, float),
    "socket_mode": (str,),
    "interval_s": (int, float),
}


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None or not math.isfinite(number) else int(number)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _buckets(value: Any) -> tuple[RttBucket, ...] | None:
    if not isinstance(value, list):
        return None
    out = []
    for b in value:
        if isinstance(b, (list, tuple)) and len(b) == 3:
            low, high, n = (_number(x) for x in b)
            if low is not None and high is not None and n is not None:
                out.append(RttBucket(low, high, n))
    return tuple(out)


def _error_counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): n for k, v in value.items() if (n := _count(v)) is not None}


def _error_routers(value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): _error_counts(v) for k, v in value.items() if isinstance(v, Mapping)}
