"""Pane for the ``iops`` probe: the probe's view beside the kernel's, and latency.

- sparklines: IOPS per direction and p99 completion latency, per interval;
- "probe vs kernel": this interval's IOPS and bytes/s as the probe counted
  them beside the passive ``system.disk`` counters of the disk holding the
  target (``observe``), so a page cache hit (buffered I/O) or other I/O to the
  same disk shows as a gap;
- the latency distribution of the last interval at fio's percentiles, with a
  log-scaled bar per percentile.

Also here: the pane for the ``warmup`` probe (progress, ETA, done map, plateau).
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


PROGRESS_WIDTH = 40


def progress_bar(fraction: float, width: int = PROGRESS_WIDTH) -> str:
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return "[" + bar.ljust(width, "·") + "]"


def map_line(cells: list[float]) -> str:
    """One character per region: █ done, ▒ partly done, · not yet."""
    return "".join("█" if c >= 0.999 else "▒" if c > 0 else "·" for c in cells)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class WarmupPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = info.get("params", {}) or {}
        self.border_title = (
            f"warmup  {params.get('target', self.probe_id)}  {params.get('pass', '')} pass  "
            f"bs={params.get('bs')} jobs={params.get('jobs')} iodepth={params.get('iodepth')}"
        )
        self.bw_row = SparkRow("bw_Bps")
        self.iops_row = SparkRow("iops")
        self.progress = TextBlock(["compiling the native I/O loop..."])
        self.map_block = TextBlock([""])  # [""]: TextBlock repaints [] -> 1 line only on resize
        self.plateau_block = TextBlock([""])
        self.extra: dict[str, Any] = {}
        self.device: str | None = params.get("backing_device")
        self.kernel: dict[str, float | None] = {}

    def compose(self) -> ComposeResult:
        yield self.progress
        yield self.bw_row
        yield self.iops_row
        yield self.map_block
        yield self.plateau_block

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        self.extra = dict(sample.extra or {})

    def observe(self, sample: Sample) -> None:
        if sample.probe != "system.disk" or not self.device:
            return
        for key, value in sample.values.items():
            name, entity = split_key(key)
            if entity == self.device:
                self.kernel[name] = value

    def kernel_text(self) -> str:
        """The kernel's view of the same disk, to read beside the probe's rates."""
        if not self.device or not self.kernel:
            return ""
        direction = "write" if "write" in str(self.extra.get("pass", "")) else "read"
        bps = self.kernel.get(f"{direction}_Bps")
        iops = self.kernel.get(f"{direction}_iops")
        return f"  kernel {self.device}: {fmt_value(bps, 'B/s')}B/s {fmt_value(iops, 'IO/s')} IO/s"

    def progress_lines(self) -> list[str]:
        done = self.latest("done_bytes") or 0.0
        total = self.latest("total_bytes") or 0.0
        pct = self.latest("progress_pct")
        head = f"{self.extra.get('pass', '')} pass"
        if pct is None:  # time-based pattern: no end
            return [f"{head}: {fmt_value(done, 'B')}B written, elapsed "
                    f"{fmt_duration(self.latest('elapsed_s'))}"]  # fmt: skip
        return [
            f"{progress_bar(pct / 100.0)} {pct:5.1f} %  "
            f"{fmt_value(done, 'B')}B / {fmt_value(total, 'B')}B",
            f"{head}  ETA {fmt_duration(self.latest('eta_s'))}  elapsed "
            f"{fmt_duration(self.latest('elapsed_s'))}" + self.kernel_text(),
        ]

    def plateau_lines(self) -> list[str]:
        plateau = self.extra.get("plateau") or {}
        if not plateau:
            return [""]
        state = plateau.get("state", "?")
        line = f"plateau {plateau.get('criterion')} over {plateau.get('window_s', 0):g} s: {state}"
        if plateau.get("reached_at_s") is not None:
            line += (
                f"; reached at {plateau['reached_at_s']:.0f} s after "
                f"{fmt_value(plateau.get('reached_at_bytes'), 'B')}B"
            )
        if plateau.get("left_at_s") is not None:
            line += f"; LEFT at {plateau['left_at_s']:.0f} s"
        return [line]

    def render_frame(self) -> None:
        super().render_frame()
        if not self.samples_seen:
            return
        for row in (self.bw_row, self.iops_row):
            hist = self.history.get(row.key)
            if hist is None:
                continue
            row.label.set_lines([f"{row.key:<18}{fmt_value(hist.latest, self.unit(row.key), 9)}"])
            row.spark.set_values(hist.recent(SPARK_POINTS))
        self.progress.set_lines(self.progress_lines())
        cells = self.extra.get("map")
        self.map_block.set_lines(["done map " + map_line(cells)] if cells else [""])
        self.plateau_block.set_lines(self.plateau_lines())
