"""An ICMP probe's header ``params`` and its summary, typed.

Contract: ``IcmpParams`` is the probe's header ``params`` (its settings plus
the resolved target and socket mode); ``IcmpSummary`` is its summary (the
``--json`` document without ``probe``/``reason``/``error``), with
``IcmpTotals`` and a ``StreamTotals`` per stream. Every layout is probetop
0.1's, key for key and in the same order, so old recordings replay and the
JSON stays the same. Readers are tolerant: missing or malformed fields read
as None (or empty), never raise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.readback import as_count, as_int, as_number, as_text, fits
from probetop.probes.icmp.records import (
    SOCKET_LABELS,
    ErrorCounts,
    ErrorRouters,
    IntervalRow,
    RttStats,
    read_error_counts,
    read_error_routers,
)
from probetop.probes.icmp.settings import IcmpSettings

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
    "quiet": (bool,),
    "timestamps": (bool,),
    "deadline_s": (int, float, type(None)),
    "adaptive": (bool,),
    "pmtudisc": (str, type(None)),
    "outstanding": (bool,),
    "audible": (bool,),
    "tos": (int, type(None)),
    "mark": (int, type(None)),
    "pattern": (str, type(None)),
    "sndbuf": (int, type(None)),
}


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
        # since 0.3 (quiet, timestamps) and 0.6 (outstanding, audible), only when set
        for output_only in ("quiet", "timestamps", "outstanding", "audible"):
            if not d[output_only]:
                del d[output_only]
        if d["deadline_s"] is None:  # since 0.4, only with -w/--time
            del d["deadline_s"]
        if not d["adaptive"]:  # since 0.5, only with -A
            del d["adaptive"]
        if d["pmtudisc"] is None:  # since 0.6, only with -M
            del d["pmtudisc"]
        for given in ("tos", "mark", "pattern", "sndbuf"):  # since 0.7, only when given
            if d[given] is None:
                del d[given]
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
            if f.name in p and fits(p[f.name], _SETTING_TYPES[f.name]):
                kwargs[f.name] = p[f.name]
        kwargs["host"] = kwargs.get("host", "?")
        address = p.get("address")
        target = None
        if isinstance(address, str):
            target = ResolvedTarget(
                address,
                as_text(p.get("interface")),
                as_text(p.get("source_address")),
                as_int(p.get("path_mtu")),
            )
        return cls(
            IcmpSettings(**kwargs),
            as_text(p.get("mode")),
            target,
            as_text(p.get("idle_reason")),
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
            stream=as_count(d.get("stream")) or 0,
            sent=as_count(d.get("sent")) or 0,
            received=as_count(d.get("received")) or 0,
            lost=as_count(d.get("lost")) or 0,
            loss_pct=as_number(d.get("loss_pct")),
            replies_per_second=as_number(d.get("replies_per_second")),
            rtt_avg_us=as_number(d.get("rtt_avg_us")),
            jitter_avg_us=as_number(d.get("jitter_avg_us")),
            reference_command=as_text(d.get("reference_command")),
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
    # How many older rows ``intervals`` no longer holds (a run keeps its newest).
    intervals_dropped: int = 0
    # From the first request sent to the last (ping's ``time``; None in
    # summaries written before it, or when nothing was sent).
    requests_span_s: float | None = None
    # ping's tail of its rtt line (iputils finish(); None in older summaries
    # or before a reply): ``pipe`` the most requests out when a reply came,
    # ``ipg_us`` the mean gap between requests (whole us), ``rtt_ewma_us``
    # the RTT's moving average (ping's integer one, /8).
    pipe: int | None = None
    ipg_us: int | None = None
    rtt_ewma_us: float | None = None


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
        if t.requests_span_s is not None:
            d["requests_span_s"] = t.requests_span_s
        for key in ("pipe", "ipg_us", "rtt_ewma_us"):
            if getattr(t, key) is not None:
                d[key] = getattr(t, key)
        d["grace_s"] = t.grace_s
        d["streams"] = t.streams
        if t.per_stream is not None:
            d["per_stream"] = [row.to_dict() for row in t.per_stream]
        d["intervals"] = [row.to_dict() for row in t.intervals]
        if t.intervals_dropped:
            d["intervals_dropped"] = t.intervals_dropped
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
                sent=as_count(s.get("sent")) or 0,
                received=as_count(s.get("received")) or 0,
                duplicates=as_count(s.get("duplicates")) or 0,
                reordered=as_count(s.get("reordered")) or 0,
                lost=as_count(s.get("lost")) or 0,
                late=as_count(s.get("late")) or 0,
                lost_early_by_wrap=as_count(s.get("lost_early_by_wrap")) or 0,
                pacing_missed=as_count(s.get("pacing_missed")) or 0,
                in_flight_at_end=as_count(s.get("in_flight_at_end")) or 0,
                loss_pct=as_number(s.get("loss_pct")),
                replies_per_second=as_number(s.get("replies_per_second")),
                requests_per_second=as_number(s.get("requests_per_second")),
                pps=as_number(s.get("pps")),
                rtt=RttStats.from_dict(s.get("rtt_us")),
                errors=read_error_counts(s.get("errors")),
                error_routers=read_error_routers(s.get("error_routers")),
                duration_s=as_number(s.get("duration_s")) or 0.0,
                grace_s=as_number(s.get("grace_s")) or 0.0,
                streams=as_count(s.get("streams")) or 0,
                intervals=tuple(
                    row
                    for row in map(IntervalRow.from_dict, rows if isinstance(rows, list) else [])
                    if row is not None
                ),
                stopped_by=as_text(s.get("stopped_by")) or "",
                jitter_avg_us=as_number(jitter.get("avg")),
                jitter_max_us=as_number(jitter.get("max")),
                outage_s=as_number(s.get("outage_s")),
                drain_s=as_number(s.get("drain_s")),
                rate_limit=as_text(s.get("rate_limit")),
                per_stream=None
                if not isinstance(per_stream, list)
                else tuple(
                    row for row in map(StreamTotals.from_dict, per_stream) if row is not None
                ),
                intervals_dropped=as_count(s.get("intervals_dropped")) or 0,
                requests_span_s=as_number(s.get("requests_span_s")),
                pipe=as_count(s.get("pipe")),
                ipg_us=as_count(s.get("ipg_us")),
                rtt_ewma_us=as_number(s.get("rtt_ewma_us")),
            )
        return cls(
            target=as_text(s.get("target")),
            address=as_text(s.get("address")),
            mode=as_text(s.get("mode")),
            pacing=as_text(s.get("pacing")),
            reference_command=as_text(s.get("reference_command")),
            idle_reason=as_text(s.get("idle_reason")),
            totals=totals,
        )
