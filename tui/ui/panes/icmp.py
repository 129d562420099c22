"""Pane for the ``icmp`` probe: the probe's pps against the kernel's, loss, RTT.

Rows: sparklines of packets/s through the target (pps), loss %, and the
kernel's packet counter of the interface that routes to the target (the
passive ``system.net`` probe, read through ``NicCounters`` in ``observe``: on
``lo`` each echo exchange is two packets each way, so its tx pps should track
the probe's pps). Below: the socket mode and pacing, rates, counters (lost,
duplicates, reordered, late, in flight), RTT min/avg/max/mdev and
p50/p90/p99 (in µs, or ms once the median RTT reaches a millisecond), jitter
and outage time, the last interval's RTT distribution as one bar row, a
warning naming the sysctls when the target rate-limits its replies, and
errors with the reporting router. When ICMP is not allowed (the demo without privileges)
the pane says why.

Samples are read through the family's typed records (``IcmpInterval``,
``IcmpParams``); the pane stores in ``add_sample``/``observe`` and draws in
``render_frame``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from probetop.probes.core.passive import NicCounters
from probetop.probes.core.sample import Sample
from probetop.probes.icmp import (
    LOSS_PCT,
    PPS,
    REPLIES_PER_S,
    RTT_P99_US,
    IcmpInterval,
    IcmpParams,
    RttBucket,
    RttStats,
)
from probetop.tui.ui.widgets.bars import column_rows
from probetop.tui.ui.widgets.generic_pane import SparkRow
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.textblock import TextBlock, wrapped_rows
from textual.app import ComposeResult

NIC_KEEP = 600
DIST_WIDTH = 32
ROW_TITLE = 15  # spark row label: title, value, unit in SparkRow's 28 columns
MS_FROM_US = 1000.0  # RTTs switch to ms once the median reaches 1 ms


def fmt_rtt(us: float | None) -> str:
    """One RTT with its unit: ``3.64 µs``, ``12.5 ms``."""
    if us is None:
        return "-"
    if us >= MS_FROM_US:
        return f"{fmt_value(us / 1000.0, 'ms')} ms"
    return f"{fmt_value(us, 'us')} µs"


def rtt_unit(typical_us: float | None) -> tuple[float, str]:
    """(divisor, label) for a group of RTTs: ms once ``typical_us`` is 1 ms or more."""
    if typical_us is not None and typical_us >= MS_FROM_US:
        return 1000.0, "ms"
    return 1.0, "µs"


def rtt_line(rtt: RttStats) -> str:
    """``RTT µs min/avg/max/mdev 3.69/22.4/82.2/21.8  p50/p90/p99 8.58/55.8/82.2``."""
    scale, unit = rtt_unit(rtt.p50_us)
    key = "ms" if unit == "ms" else "us"

    def cells(values: Sequence[float | None]) -> str:
        return "/".join(fmt_value(None if v is None else v / scale, key) for v in values)

    return (
        f"RTT {unit} min/avg/max/mdev "
        f"{cells((rtt.min_us, rtt.avg_us, rtt.max_us, rtt.mdev_us))}"
        f"  p50/p90/p99 {cells((rtt.p50_us, rtt.p90_us, rtt.p99_us))}"
    )


def rtt_distribution(buckets: Sequence[RttBucket], width: int = DIST_WIDTH) -> str:
    """``rtt distribution 3.58 µs ▁▃█▂ 98.3 µs``: one cell per bucket, up to ``width``."""
    if not buckets:
        return "rtt distribution: -"
    shown = list(buckets[:width])
    bars = column_rows([b.count for b in shown], len(shown), 1, None)[0]
    return f"rtt distribution {fmt_rtt(shown[0].low_us)} {bars} {fmt_rtt(shown[-1].high_us)}"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


class IcmpPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.params = IcmpParams.from_params(info.get("params"))
        target = self.params.target
        self.interface: str | None = target.interface if target is not None else None
        self.idle_reason: str | None = self.params.idle_reason
        self.nic_tx: deque[float | None] = deque(maxlen=NIC_KEEP)
        self.nic_chart: deque[tuple[float, float]] = deque(maxlen=NIC_KEEP)
        self.nic_seen = False
        self._last: IcmpInterval | None = None  # parsed from last_sample when drawn
        self.pps_row = SparkRow(PPS, "probe pps")
        self.loss_row = SparkRow(LOSS_PCT, "loss %", max_value=100.0)
        self.nic_row = SparkRow("nic", "kernel tx pps")
        self.table = TextBlock([self._waiting()], wrap=True)

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
        self._last = None  # parsed when drawn: a seek feeds thousands of samples at once

    @property
    def last(self) -> IcmpInterval | None:
        """The latest interval, parsed once from ``last_sample``."""
        if self._last is None and self.last_sample is not None:
            self._last = IcmpInterval.from_sample(self.last_sample)
        return self._last

    def observe(self, sample: Sample) -> None:
        if self.interface is None:
            return
        nic = NicCounters.all_from_sample(sample).get(self.interface)
        if nic is None or (nic.rx_pps is None and nic.tx_pps is None):
            return
        self.nic_seen = True
        self.nic_tx.append(nic.tx_pps)
        if nic.tx_pps is not None:
            self.nic_chart.append((sample.t_ns / 1e9, nic.tx_pps))

    # -- drawing ------------------------------------------------------------
    def header_line(self) -> str:
        p = self.params
        s = p.settings
        if s.adaptive:
            pace = "adaptive (ping -A)"
        elif s.paced_by_replies:
            pace = "flood" + (f", preload {s.preload}" if s.preload > 1 else "")
        elif s.rate:
            pace = f"{s.rate:g} req/s"
        else:
            pace = f"every {s.period_s or 1.0:g} s"
        streams = f" × {s.streams} streams" if s.streams > 1 else ""
        address = p.target.address if p.target is not None else s.host
        return (
            f"{p.mode_label} · {pace}{streams} · {address} via {self.interface or '?'} · "
            f"{s.size} B payload · grace {s.grace_s:g} s"
        )

    def table_lines(self) -> list[str]:
        if self.idle_reason:
            return [f"idle: {self.idle_reason}"]
        lines = [self.header_line()]
        i = self.last
        if i is None:
            return [*lines, "waiting for the first interval..."]
        lines.append(
            f"requests {fmt_value(i.requests_per_s, '/s')}/s  "
            f"replies {fmt_value(i.replies_per_s, '/s')}/s  "
            f"{fmt_value(i.pps, 'pkt/s')} pps  loss {fmt_value(i.loss_pct, '%')} %"
        )
        lines.append(
            f"lost {_count(i.lost)}  duplicates {_count(i.duplicates)}  "
            f"reordered {_count(i.reordered)}  late {_count(i.late)}  "
            f"in flight {_count(i.in_flight)}"
        )
        lines.append(rtt_line(i.rtt))
        if i.jitter_avg_us is not None or i.outage_s is not None:
            lines.append(
                f"jitter avg/max {fmt_rtt(i.jitter_avg_us)}/{fmt_rtt(i.jitter_max_us)}  "
                f"outage {fmt_value(i.outage_s, 's')} s"
            )
        lines.append(rtt_distribution(i.rtt_hist or ()))
        if i.rate_limit:
            lines.append(f"⚠ {i.rate_limit}")
        if i.errors:
            parts = []
            for name, n in i.errors.items():
                where = i.error_routers.get(name)
                parts.append(f"{name} {n}" + (f" from {', '.join(sorted(where))}" if where else ""))
            lines.append("errors: " + "; ".join(parts))
        return lines

    def _spark_label(self, title: str, value: float | None, unit: str, key_unit: str) -> str:
        return f"{title[:ROW_TITLE]:<{ROW_TITLE}} {fmt_value(value, key_unit, 7)} {unit}"

    def render_frame(self) -> None:
        super().render_frame()
        for row, key, title, unit, key_unit in (
            (self.pps_row, PPS, "probe", "pps", "pkt/s"),
            (self.loss_row, LOSS_PCT, "loss", "%", "%"),
        ):
            hist = self.metric(key)
            if hist is None:
                continue
            label = self._spark_label(title, hist.latest, unit, key_unit)
            row.set(label, hist.recent(max(row.spark.size.width, 1)))
        if self.nic_seen:
            latest = self.nic_tx[-1] if self.nic_tx else None
            title = f"kernel {self.interface} tx"
            self.nic_row.set(
                self._spark_label(title, latest, "pps", "pkt/s"),
                list(self.nic_tx)[-max(self.nic_row.spark.size.width, 1) :],
            )
        elif self.interface is None:
            self.nic_row.label.set_lines(["kernel: interface ?"])
        self.table.set_lines(self.fit_rows(self.table_lines()))

    def fit_rows(self, lines: list[str]) -> list[str]:
        """In a pane the layout squeezes (``icmp`` at 80x24 has room for one
        line under the sparklines), the RTT line first: cut from the bottom,
        the pane showed the socket mode and no RTT at all."""
        rtt = next((n for n, line in enumerate(lines) if line.startswith("RTT ")), None)
        room = self.content_room() - 3  # the three sparkline rows come first
        width = self.table.line_width if self.table.is_mounted else 0
        if rtt is None or not self.content_room() or room >= wrapped_rows(lines, width):
            return lines
        return [lines[rtt], *lines[:rtt], *lines[rtt + 1 :]]

    def on_resize(self) -> None:
        super().on_resize()
        if self.samples_seen:
            self.table.set_lines(self.fit_rows(self.table_lines()))

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        """Every series names its unit. They share one axis (the maximised
        screen draws one chart): pps and replies/s next to loss % and RTT."""
        rtt = self.series(RTT_P99_US)
        median = sorted(v for _t, v in rtt)[len(rtt) // 2] if rtt else None
        scale, unit = rtt_unit(median)
        out = {
            "probe pps": self.series(PPS),
            "replies/s": self.series(REPLIES_PER_S),
            "loss %": self.series(LOSS_PCT),
            f"RTT p99 {unit}": [(t, v / scale) for t, v in rtt],
        }
        if self.nic_chart:
            out[f"kernel {self.interface} tx pps"] = list(self.nic_chart)
        return out
