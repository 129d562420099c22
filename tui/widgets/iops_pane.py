"""Pane for the ``iops`` probe: the probe's view beside the kernel's, and latency.

- sparklines: IOPS per direction and p99 completion latency, per interval;
- "probe vs kernel": this interval's IOPS and bytes/s as the probe counted
  them beside the passive ``system.disk`` counters of the disk holding the
  target (``observe``), so a page cache hit (buffered I/O) or other I/O to the
  same disk shows as a gap;
- the latency distribution of the last interval at fio's percentiles, with a
  log-scaled bar per percentile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample, split_key
from probetop.tui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult

SHOWN_PERCENTILES = ("1.000000", "50.000000", "90.000000", "99.000000", "99.900000", "99.990000")
BAR = 24


def log_bar(value: float, low: float, high: float, width: int = BAR) -> str:
    """A bar whose length is ``value`` on a log scale between low and high."""
    if value <= 0 or high <= low or low <= 0:
        return ""
    frac = (math.log10(max(value, low)) - math.log10(low)) / (math.log10(high) - math.log10(low))
    return "█" * max(1, round(min(1.0, frac) * width))


class IopsPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = info.get("params", {}) or {}
        self.device: str | None = params.get("backing_device")
        rw = str(params.get("rw", "randread"))
        self.directions = [
            d
            for d in ("read", "write")
            if not (d == "read" and rw in ("write", "randwrite"))
            and not (d == "write" and rw in ("read", "randread"))
        ]
        self.spark_rows = [SparkRow(f"{d}_iops") for d in self.directions]
        self.spark_rows += [SparkRow(f"{d}_clat_p99_us") for d in self.directions]
        self.compare = TextBlock(["compiling the native I/O loop..."], header_rows=1)
        self.latency = TextBlock([""], header_rows=1)  # not []: see warmup_pane
        self.kernel: dict[str, float | None] = {}
        self.clat: dict[str, dict[str, float]] = {}
        desc = (
            f"{params.get('rw')} bs={params.get('bs')} jobs={params.get('jobs')} "
            f"iodepth={params.get('iodepth')} {'direct' if params.get('direct') else 'buffered'}"
        )
        self.border_title = f"iops  {params.get('target', self.probe_id)}  {desc}"

    def compose(self) -> ComposeResult:
        yield from self.spark_rows
        yield self.compare
        yield self.latency

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        clat = (sample.extra or {}).get("clat_us") or {}
        self.clat = {d: dict(v) for d, v in clat.items()}

    def observe(self, sample: Sample) -> None:
        if sample.probe != "system.disk" or not self.device:
            return
        for key, value in sample.values.items():
            name, entity = split_key(key)
            if entity == self.device:
                self.kernel[name] = value

    def compare_lines(self) -> list[str]:
        dev = self.device or "no block device (tmpfs/NFS?)"
        lines = [f"{'this interval':<16} {'probe':>10} {'kernel ' + dev[:14]:>22}"]
        for d in self.directions:
            for metric, unit, label in ((f"{d}_iops", "IO/s", "IOPS"), (f"{d}_Bps", "B/s", "B/s")):
                ours = fmt_value(self.latest(metric), unit, 10)
                theirs = fmt_value(self.kernel.get(metric), unit, 22) if self.device else ""
                lines.append(f"{d + ' ' + label:<16} {ours} {theirs}")
            lat = self.kernel.get(f"{d}_lat_ms")
            mean = self.latest(f"{d}_clat_mean_us")
            kernel_us = lat * 1000 if lat is not None else None
            theirs = f"{fmt_value(kernel_us, 'us', 19)} µs" if self.device else ""
            lines.append(f"{d + ' mean lat':<16} {fmt_value(mean, 'us', 7)} µs {theirs}")
        return lines

    def latency_lines(self) -> list[str]:
        values = [v for d in self.clat.values() for v in d.values() if v]
        if not values:
            return [""]
        low, high = min(values), max(values)
        low, high = low / 1.5, high * 1.1
        lines = ["completion latency (µs), last interval, log scale"]
        for d in self.directions:
            pct = self.clat.get(d, {})
            for key in SHOWN_PERCENTILES:
                v = pct.get(key)
                if v is None:
                    continue
                label = f"{d} p{float(key):g}"
                lines.append(f"{label:<14} {fmt_value(v, 'us', 8)} {log_bar(v, low, high)}")
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        for row in self.spark_rows:
            hist = self.history.get(row.key)
            if hist is None:
                continue
            row.label.set_lines([f"{row.key:<18}{fmt_value(hist.latest, self.unit(row.key), 9)}"])
            row.spark.set_values(hist.recent(SPARK_POINTS))
        if self.samples_seen:
            self.compare.set_lines(self.compare_lines())
            self.latency.set_lines(self.latency_lines())
