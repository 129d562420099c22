"""CPU pane for ``system.cpu``: all-core busy % sparkline, load averages,
per-core busy % (with a one-colour bar) and MHz.

Busy % = share of the interval a core was not idle or waiting for I/O, from
/proc/stat deltas, as ``top``/``mpstat`` compute it; load averages are the
kernel's (runnable + uninterruptible tasks), as ``uptime`` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import metric_key, split_key
from probetop.tui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult

BAR_WIDTH = 10
CORE_CELL = 34  # "cpu12 [##########]  99.9%  3500 MHz" + gap


def core_bar(busy: float | None, width: int = BAR_WIDTH) -> str:
    """A fixed-width text bar of busy %, in eighths, one colour."""
    if busy is None:
        return " " * width
    eighths = round(max(0.0, min(100.0, busy)) / 100.0 * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return bar.ljust(width)


class CpuPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.busy_row = SparkRow("busy_pct", max_value=100.0)
        self.summary = TextBlock(["waiting for the first sample..."])
        self.cores = TextBlock([""])

    def compose(self) -> ComposeResult:
        yield self.busy_row
        yield self.summary
        yield self.cores

    def core_names(self) -> list[str]:
        names = [split_key(k)[1] for k in self.history.keys if k.startswith("core_busy_pct@")]
        return sorted((n for n in names if n), key=lambda n: (len(n), n))

    def core_lines(self, width: int) -> list[str]:
        cells = []
        for core in self.core_names():
            busy = self.latest(metric_key("core_busy_pct", core))
            mhz = self.latest(metric_key("core_mhz", core))
            mhz_text = f"{mhz:5.0f} MHz" if mhz is not None else ""
            cells.append(f"{core:<5} {core_bar(busy)} {fmt_value(busy, '%', 5)}% {mhz_text}")
        per_line = max(1, (width + 2) // CORE_CELL)
        lines = []
        for i in range(0, len(cells), per_line):
            lines.append("  ".join(c.ljust(CORE_CELL - 2) for c in cells[i : i + per_line]))
        return lines or [""]

    def render_frame(self) -> None:
        super().render_frame()
        busy = self.metric("busy_pct")
        if busy is None:
            return
        label = f"{'all cores':<13} {fmt_value(busy.latest, '%', 6)} %"
        self.busy_row.label.set_lines([label])
        self.busy_row.spark.set_values(busy.recent(SPARK_POINTS))
        s = busy.stats
        loads = " ".join(fmt_value(self.latest(k), "", 5) for k in ("load1", "load5", "load15"))
        stats = " ".join(
            f"{name} {fmt_value(v, '%')}"
            for name, v in (("min", s.min), ("max", s.max), ("mean", s.mean), ("p99*", busy.p99))
        )
        self.summary.set_lines([f"load avg {loads}    busy % {stats}"])
        self.cores.set_lines(self.core_lines(self.content_region.width or 80))

    def on_resize(self) -> None:
        if self.history.keys:
            self.render_frame()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {"busy_pct": self.series("busy_pct")}
        for core in self.core_names()[:8]:
            key = metric_key("core_busy_pct", core)
            out[key] = self.series(key)
        return out
