"""Pane for the ``icmp`` probe: the probe's pps against the kernel's, loss, RTT.

Rows: sparklines of pps through the target, loss %, and the kernel's packet
counter of the interface that routes to the target (from the passive
``system.net`` probe, via ``observe``: on ``lo`` each echo exchange is two
packets each way, so its tx pkt/s should track the probe's pps). Below: the
socket mode and pacing, counters (lost, duplicates, reordered, late, in
flight, errors with the reporting router), RTT min/avg/max/mdev and
p50/p90/p99, and the last interval's RTT distribution as one bar row.
When ICMP is not allowed (the demo without privileges) the pane says why.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample
from probetop.tui.widgets.generic_pane import SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.sparkline import bar_rows
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult

NIC_KEEP = 600
DIST_WIDTH = 32


def rtt_distribution(buckets: list[list[float]], width: int = DIST_WIDTH) -> str:
    """``lo µs ▁▃█▂ hi µs`` from [[low_us, high_us, count], ...] (one cell per bucket)."""
    if not buckets:
        return "rtt distribution: -"
    shown = buckets[:width]
    bars = bar_rows([b[2] for b in shown], len(shown), 1, None)[0]
    return (
        f"rtt distribution {fmt_value(shown[0][0], 'us')} µs {bars} "
        f"{fmt_value(shown[-1][1], 'us')} µs"
    )


class IcmpPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = dict(info.get("params", {}) or {})
        self.params = params
        self.interface: str | None = params.get("interface")
        self.idle_reason: str | None = params.get("idle_reason")
        self.nic_rx: deque[float | None] = deque(maxlen=NIC_KEEP)
        self.nic_tx: deque[float | None] = deque(maxlen=NIC_KEEP)
        self.nic_chart: deque[tuple[float, float]] = deque(maxlen=NIC_KEEP)
        self.nic_seen = False
        self.extra: Mapping[str, Any] = {}
        self.pps_row = SparkRow("pps")
        self.loss_row = SparkRow("loss_pct", max_value=100.0)
        self.nic_row = SparkRow("nic")
        self.table = TextBlock([self._waiting()])

    def _waiting(self) -> str:
        if self.idle_reason:
            return f"idle: {self.idle_reason}"
        return "waiting for the first interval..."

    def compose(self) -> ComposeResult:
        yield self.pps_row
        yield self.loss_row
        yield self.nic_row
        yield self.table

    # -- storing ------------------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        self.extra = sample.extra or {}

    def observe(self, sample: Sample) -> None:
        if self.interface is None or not sample.probe.startswith("system.net"):
            return
        rx = sample.values.get(f"rx_pps@{self.interface}")
        tx = sample.values.get(f"tx_pps@{self.interface}")
        if rx is None and tx is None:
            return
        self.nic_seen = True
        self.nic_rx.append(rx)
        self.nic_tx.append(tx)
        if tx is not None:
            self.nic_chart.append((sample.t_ns / 1e9, tx))

    # -- drawing ------------------------------------------------------------
    def _latest(self, key: str) -> float | None:
        hist = self.history.get(key)
        return None if hist is None else hist.latest

    def header_line(self) -> str:
        p = self.params
        if p.get("flood"):
            pace = "flood" + (f", preload {p['preload']}" if p.get("preload", 1) > 1 else "")
        elif p.get("rate"):
            pace = f"{p['rate']:g} req/s"
        else:
            pace = f"every {p.get('period_s') or 1.0:g} s"
        streams = p.get("streams", 1)
        mode = {"raw": "raw socket", "datagram": "datagram socket (unprivileged)"}.get(
            str(p.get("mode")), str(p.get("mode"))
        )
        return (
            f"{mode} · {pace}{f' × {streams} streams' if streams > 1 else ''} · "
            f"{p.get('address') or p.get('host')} via {self.interface or '?'} · "
            f"{p.get('size', 56)} B payload"
        )

    def table_lines(self) -> list[str]:
        if self.idle_reason:
            return [f"idle: {self.idle_reason}"]
        v = self._latest
        lines = [self.header_line()]
        lines.append(
            f"req/s {fmt_value(v('requests_per_s'), '/s')}  rep/s "
            f"{fmt_value(v('replies_per_s'), '/s')}  pps {fmt_value(v('pps'), 'pkt/s')}"
            f"  loss {fmt_value(v('loss_pct'), '%')} %"
        )
        lines.append(
            f"lost {fmt_value(v('lost'))}  dup {fmt_value(v('duplicates'))}  "
            f"reordered {fmt_value(v('reordered'))}  late {fmt_value(v('late'))}  "
            f"in flight {fmt_value(v('in_flight'))}"
        )
        lines.append(
            "rtt µs min/avg/max/mdev "
            + "/".join(fmt_value(v(f"rtt_{k}_us"), "us") for k in ("min", "avg", "max", "mdev"))
            + "  p50/p90/p99 "
            + "/".join(fmt_value(v(f"rtt_{k}_us"), "us") for k in ("p50", "p90", "p99"))
        )
        lines.append(rtt_distribution(list(self.extra.get("rtt_hist_us", []))))
        errors = dict(self.extra.get("errors", {}) or {})
        routers = dict(self.extra.get("error_routers", {}) or {})
        if errors:
            parts = []
            for name, n in errors.items():
                where = routers.get(name)
                parts.append(f"{name} {n}" + (f" from {', '.join(sorted(where))}" if where else ""))
            lines.append("errors: " + "; ".join(parts))
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        for row, key, unit, title in (
            (self.pps_row, "pps", "pkt/s", "probe pps"),
            (self.loss_row, "loss_pct", "%", "loss %"),
        ):
            hist = self.history.get(key)
            if hist is None:
                continue
            row.label.set_lines([f"{title:<12} {fmt_value(hist.latest, unit, 7)}"])
            row.spark.set_values(hist.recent(max(row.spark.size.width, 1)))
        if self.nic_seen:
            latest = self.nic_tx[-1] if self.nic_tx else None
            name = f"kernel {self.interface} tx"
            self.nic_row.label.set_lines([f"{name[:16]:<16} {fmt_value(latest, 'pkt/s', 7)}"])
            self.nic_row.spark.set_values(
                list(self.nic_tx)[-max(self.nic_row.spark.size.width, 1) :]
            )
        elif self.interface is None:
            self.nic_row.label.set_lines(["kernel: interface ?"])
        self.table.set_lines(self.table_lines())

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {
            "probe pps": self.series("pps"),
            "replies/s": self.series("replies_per_s"),
            "loss %": self.series("loss_pct"),
            "rtt p99 µs": self.series("rtt_p99_us"),
        }
        if self.nic_chart:
            out[f"kernel {self.interface} tx pkt/s"] = list(self.nic_chart)
        return out
