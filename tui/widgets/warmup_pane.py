"""Pane for the ``warmup`` probe, and the typed confirmation for a write pass.

The pane: a progress bar (bytes done / total and %), MB/s and IOPS of the
last interval (with sparklines) beside the kernel's figures for the same disk
(passive ``system.disk`` counters, ``observe``), ETA and elapsed time, a map
of the done regions of the range (one cell per 1/64th: full, partly done, not
yet), and the plateau state (fio's criterion; when it was reached, after how
many bytes, and when performance left it).

``ask_destroy_confirmation`` runs a small screen before the dashboard opens:
the user must type the target's name exactly; anything else cancels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample, split_key
from probetop.tui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult

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
