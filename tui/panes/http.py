"""Pane for the ``http`` probe: one row per URL.

Each row: the URL label, the latest request's phases as a stacked bar (one
character per phase kind, so the row stays one colour and cheap to redraw
over SSH), text sparklines of TTFB and total, the latest TTFB, p50/p90/p99
of TTFB over the last ``WINDOW`` requests, and error counts by kind. Above
the rows, full-width sparklines of the median TTFB and total over all URLs.

Memory stays bounded with 100 URLs: only the two aggregate series go into
the base class's history; per URL the pane keeps short windows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample, split_key
from probetop.probes.core.stats import percentile
from probetop.tui.widgets.generic_pane import SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.sparkline import bar_rows
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult

PHASES = ("dns", "tcp", "tls", "server", "transfer")
# One glyph per phase: tells phases apart without a colour per cell.
GLYPHS = {"dns": "·", "tcp": "▒", "tls": "▓", "server": "█", "transfer": "░"}
WINDOW = 600  # requests per URL kept for percentiles and sparklines
CHART_URLS = 8  # URLs drawn in the maximised chart
LABEL_W, BAR_W, SPARK_W = 24, 16, 12


def stacked_bar(phases_ms: Mapping[str, float | None], scale_ms: float, width: int) -> str:
    """The phases laid end to end, ``width`` cells for ``scale_ms``; a phase
    that happened but is under half a cell still gets one cell."""
    if scale_ms <= 0:
        return " " * width
    out = ""
    for phase in PHASES:
        value = phases_ms.get(phase)
        if not value or value <= 0:
            continue
        cells = max(1, round(value / scale_ms * width))
        out += GLYPHS[phase] * cells
    return out[:width].ljust(width)


def fit_label(label: str, width: int = LABEL_W) -> str:
    """Cut long labels at the front: the path and query tell URLs apart, not the host."""
    return label if len(label) <= width else "…" + label[-(width - 1) :]


class UrlRow:
    """What the pane keeps for one URL."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.phases: dict[str, float | None] = {}
        self.ttfb: deque[float | None] = deque(maxlen=WINDOW)
        self.total: deque[float | None] = deque(maxlen=WINDOW)
        self.chart: deque[tuple[float, float]] = deque(maxlen=WINDOW)
        self.code: int | None = None
        self.errors: dict[str, int] = {}
        self.percentiles: tuple[float | None, float | None, float | None] = (None, None, None)
        self.dirty = False

    def update_percentiles(self) -> None:
        ordered = sorted(v for v in self.ttfb if v is not None)
        self.percentiles = (
            percentile(ordered, 50.0),
            percentile(ordered, 90.0),
            percentile(ordered, 99.0),
        )


class HttpPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = info.get("params", {}) or {}
        self.order: list[str] = [str(lb) for lb in params.get("labels", []) if lb]
        self.connection = str(params.get("connection", "fresh"))
        self.rows: dict[str, UrlRow] = {lb: UrlRow(lb) for lb in self.order}
        self.ttfb_row = SparkRow("ttfb_ms")
        self.total_row = SparkRow("total_ms")
        self.table = TextBlock(["waiting for the first response..."], header_rows=1)
        self.legend = TextBlock([self._legend()])

    def _legend(self) -> str:
        glyphs = "  ".join(f"{GLYPHS[p]} {p}" for p in PHASES)
        return f"phases: {glyphs}   connections: {self.connection}   ms, libcurl's clocks"

    def compose(self) -> ComposeResult:
        yield self.ttfb_row
        yield self.total_row
        yield self.table
        yield self.legend

    # -- storing ------------------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        # Only the URL-wide series go to the base history (bounded memory).
        plain = {k: v for k, v in sample.values.items() if split_key(k)[1] is None}
        self.history.add_values(sample.t_ns / 1e9, plain)
        self.last_sample = sample
        self.samples_seen += 1
        t_s = sample.t_ns / 1e9
        seen: set[str] = set()
        for key, value in sample.values.items():
            name, label = split_key(key)
            if label is None:
                continue
            row = self.rows.get(label)
            if row is None:
                row = self.rows[label] = UrlRow(label)
                self.order.append(label)
            if label not in seen:
                seen.add(label)
                row.phases = {}
                row.dirty = True
            if name.endswith("_ms") and name[:-3] in PHASES:
                row.phases[name[:-3]] = value
            elif name == "http_code":
                row.code = int(value) if value else None
        extra = sample.extra or {}
        # Every request of the interval is in extra (values hold only the latest).
        every_ttfb = extra.get("ttfb_ms") or {
            lb: [sample.values.get(f"ttfb_ms@{lb}")] for lb in seen
        }
        every_total = extra.get("total_ms") or {
            lb: [sample.values.get(f"total_ms@{lb}")] for lb in seen
        }
        for label, ttfbs in every_ttfb.items():
            row = self.rows.get(label)
            if row is None:
                continue
            row.ttfb.extend(ttfbs)
            row.chart.extend((t_s, v) for v in ttfbs if v is not None)
            row.total.extend(every_total.get(label, []))
        errors = extra.get("errors", {})
        for label, kinds in errors.items():
            if label in self.rows:
                self.rows[label].errors = {str(k): int(v) for k, v in kinds.items()}

    # -- drawing ------------------------------------------------------------
    def table_lines(self) -> list[str]:
        head = (
            f"{'url':<{LABEL_W}} {'latest phases':<{BAR_W}} {'ttfb':<{SPARK_W}} "
            f"{'total':<{SPARK_W}} {'ttfb':>8} {'p50':>8} {'p90':>8} {'p99':>8} code errors"
        )
        lines = [head]
        scale = max(
            (sum(v for v in row.phases.values() if v) for row in self.rows.values() if row.phases),
            default=0.0,
        )
        for label in self.order:
            row = self.rows[label]
            if row.dirty:
                row.update_percentiles()
                row.dirty = False
            latest = row.ttfb[-1] if row.ttfb else None
            p50, p90, p99 = row.percentiles
            errors = " ".join(f"{k} {n}" for k, n in sorted(row.errors.items())) or "-"
            cells = " ".join(fmt_value(v, "ms", 8) for v in (latest, p50, p90, p99))
            lines.append(
                f"{fit_label(label):<{LABEL_W}} {stacked_bar(row.phases, scale, BAR_W)} "
                f"{bar_rows(list(row.ttfb), SPARK_W, 1, None)[0]} "
                f"{bar_rows(list(row.total), SPARK_W, 1, None)[0]} "
                f"{cells} {row.code or '-':>4} {errors}"
            )
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        for spark_row, key, title in (
            (self.ttfb_row, "ttfb_ms", "TTFB p50 all"),
            (self.total_row, "total_ms", "total p50 all"),
        ):
            hist = self.history.get(key)
            if hist is None:
                continue
            spark_row.label.set_lines([f"{title:<14} {fmt_value(hist.latest, 'ms', 7)} ms"])
            spark_row.spark.set_values(hist.recent(max(spark_row.spark.size.width, 1)))
        if self.rows and self.samples_seen:
            self.table.set_lines(self.table_lines(), header_rows=1)

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        series = {f"ttfb {label}": list(self.rows[label].chart) for label in self.order}
        out = dict(list(series.items())[:CHART_URLS])
        out["ttfb p50 (all URLs)"] = self.series("ttfb_ms")
        return out
