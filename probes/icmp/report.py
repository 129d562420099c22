"""The ``probetop icmp`` report: ping-style text, or one JSON document.

Contract:
- ``format_report(summary, error=...)`` is the headless text: ping's
  ``--- HOST statistics ---`` block (requests, replies, duplicates,
  reordered, lost with loss %, late), replies/s and packets/s, RTT
  min/avg/max/mdev and p50/p90/p99 in µs, ICMP errors with the routers that
  sent them, and the equivalent reference command.
- ``json_document(probe_id, summary, ...)`` is the ``--json`` output: the
  summary as the probe wrote it, between ``probe`` and ``reason``/``error``.
- ``exit_code(summary, error)`` follows ping: 0 when replies came back (also
  after Ctrl-C), 1 when requests went unanswered or the probe failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.icmp.summary import IcmpSummary


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_report(summary: Mapping[str, Any], *, error: str | None = None) -> str:
    """ping-style text of an ICMP summary (see the module docstring)."""
    s = IcmpSummary.from_summary(summary)
    lines = [
        f"--- {s.target} ({s.address}) probetop icmp statistics: {s.mode} socket, {s.pacing} ---"
    ]
    if error:
        lines.append(f"error: {error}")
    t = s.totals
    if t is not None:
        loss = "-" if t.loss_pct is None else f"{t.loss_pct:.3f}"
        took = f"time {t.duration_s:.2f} s"
        if t.drain_s is not None:
            took += f" sending (+{t.drain_s:.2f} s waiting for replies, grace {t.grace_s:g} s)"
        lines.append(
            f"{t.sent} requests sent, {t.received} replies received, "
            f"{t.duplicates} duplicates, {t.reordered} reordered, {t.lost} lost"
            f" ({loss}% loss), {t.late} late, {took}"
        )
        if t.in_flight_at_end:
            lines.append(
                f"{t.in_flight_at_end} requests still in flight at the end"
                " (not counted lost; loss % covers requests up to the oldest of them)"
            )
        if t.replies_per_second is not None:
            lines.append(
                f"{t.replies_per_second:,.0f} replies/s, "
                f"{t.pps or 0.0:,.0f} packets/s through the target"
            )
        r = t.rtt
        lines.append(
            f"rtt min/avg/max/mdev = {_us(r.min_us)}/{_us(r.avg_us)}/"
            f"{_us(r.max_us)}/{_us(r.mdev_us)} µs, p50/p90/p99 = "
            f"{_us(r.p50_us)}/{_us(r.p90_us)}/{_us(r.p99_us)} µs"
        )
        if t.jitter_avg_us is not None or t.outage_s is not None:
            outage = "-" if t.outage_s is None else f"{t.outage_s:.3f}"
            lines.append(
                f"jitter avg/max = {_us(t.jitter_avg_us)}/{_us(t.jitter_max_us)} µs, "
                f"outage {outage} s"
            )
        if t.rate_limit:
            lines.append(f"note: {t.rate_limit}")
        for row in t.per_stream or ():
            rloss = "-" if row.loss_pct is None else f"{row.loss_pct:.3f}"
            rps = "-" if row.replies_per_second is None else f"{row.replies_per_second:,.0f}"
            lines.append(
                f"stream {row.stream}: {row.sent} sent, {row.received} received, "
                f"{row.lost} lost ({rloss}% loss), {rps} replies/s, "
                f"rtt avg {_us(row.rtt_avg_us)} µs, jitter avg {_us(row.jitter_avg_us)} µs"
            )
        for name, n in t.errors.items():
            routers = t.error_routers.get(name)
            where = f" from {', '.join(sorted(routers))}" if routers else ""
            lines.append(f"error: {name}: {n}{where}")
    per_stream = t.per_stream if t is not None else None
    if per_stream:
        lines.append(f"equivalent: {len(per_stream)} commands run together:")
        lines.extend(f"  {row.reference_command} &" for row in per_stream)
        lines.append("  wait")
    else:
        lines.append(f"equivalent: {s.reference_command}")
    return "\n".join(lines) + "\n"


def json_document(
    probe_id: str, summary: Mapping[str, Any], *, reason: str | None, error: str | None
) -> dict[str, Any]:
    """The ``--json`` document: ``probe``, the summary's fields, ``reason``, ``error``."""
    return {"probe": probe_id, **summary, "reason": reason, "error": error}


def exit_code(summary: Mapping[str, Any], error: str | None) -> int:
    """1 on a probe error or when requests were sent and none was answered; else 0."""
    if error:
        return 1
    t = IcmpSummary.from_summary(summary).totals
    return 1 if t is not None and t.sent and not t.received else 0
