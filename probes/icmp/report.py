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

from probetop.probes.icmp.records import IcmpSummary


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
        lines.append(
            f"{t.sent} requests sent, {t.received} replies received, "
            f"{t.duplicates} duplicates, {t.reordered} reordered, {t.lost} lost"
            f" ({loss}% loss), {t.late} late, time {t.duration_s:.2f} s"
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
        for name, n in t.errors.items():
            routers = t.error_routers.get(name)
            where = f" from {', '.join(sorted(routers))}" if routers else ""
            lines.append(f"error: {name}: {n}{where}")
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
