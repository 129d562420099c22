"""Pane for the ``http`` probe: one row per URL.

Each row: the URL label, the latest request's phases as a stacked bar (one
character per phase kind, so the row stays one colour and cheap to redraw
over SSH), text sparklines of TTFB and total, the latest TTFB, p50/p90/p99
of TTFB over the last ``WINDOW`` requests the statistics cover (2xx/3xx
unless ``--include-errors``), jitter (mean, ms), outage time (s), and the
errors: ``!!`` with the error share when it passes 1 %, then counts by kind.
Above the rows, full-width sparklines of the interval's median TTFB and
total: one URL's own, or with several URLs the slowest URL's of that
interval (named in the label; ``HttpInterval.slowest``, as ``--assert
http.p95`` takes the worst URL's), never a median pooled over URLs, which
is a time no URL took. Below them, the run's requests by status class,
warm-up requests discarded and skipped turns.

Memory stays bounded with 100 URLs: only the URL-wide series go into the
base class's history; per URL the pane keeps short windows.

Samples are read through the family's typed records (``HttpInterval``,
``HttpParams``), never by metric or extra key.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample
from probetop.probes.core.stats import percentile
from probetop.probes.http import (
    CLASS_LABELS,
    ERROR_MARKER_SHARE,
    PHASES,
    STATUS_CLASSES,
    TOTAL_MS,
    TTFB_MS,
    HttpInterval,
    HttpParams,
    StatusClass,
    UrlRun,
)
from probetop.tui.ui.widgets.bars import column_rows
from probetop.tui.ui.widgets.generic_pane import SparkRow
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.textblock import TextBlock, wrapped_rows
from textual.app import ComposeResult

# One glyph per phase: tells phases apart without a colour per cell.
GLYPHS = {"dns": "·", "tcp": "▒", "tls": "▓", "server": "█", "transfer": "░"}
WINDOW = 600  # requests per URL kept for percentiles and sparklines
CHART_URLS = 8  # URLs drawn in the maximised chart
LABEL_W, BAR_W, SPARK_W = 24, 16, 12
_CLASS_NAMES = {c.value: label for c, label in CLASS_LABELS.items()}
_SUCCESS = StatusClass.SUCCESS.value


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
        self.run: UrlRun | None = None
        self.dirty = False

    def marker(self) -> str:
        """``!!12.5%`` when this URL's errors pass ERROR_MARKER_SHARE, else ''."""
        if self.run is None:
            return ""
        total = sum(self.run.classes.values())
        errors = total - self.run.classes.get(_SUCCESS, 0)
        if not total or errors / total <= ERROR_MARKER_SHARE:
            return ""
        return f"!!{100 * errors / total:.1f}% "

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
        params = HttpParams.from_mapping(info.get("params"))
        self.order: list[str] = [lb for lb in params.labels if lb]
        self.connection = params.connection
        self.rows: dict[str, UrlRow] = {lb: UrlRow(lb) for lb in self.order}
        self.ttfb_row = SparkRow(TTFB_MS, "TTFB ms")
        self.total_row = SparkRow(TOTAL_MS, "total ms")
        self.table = TextBlock(["waiting for the first response..."], header_rows=1)
        self.include_errors = params.include_errors
        self.legend = TextBlock([self._legend()], wrap=True)
        self.status = TextBlock([""], wrap=True)
        # The URL behind each headline median, as of the latest interval with one.
        self.slowest: dict[str, str] = {}

    def _legend(self) -> str:
        glyphs = "  ".join(f"{GLYPHS[p]} {p}" for p in PHASES)
        covers = "every response" if self.include_errors else "2xx/3xx only"
        return (
            f"phases: {glyphs}   connections: {self.connection}   times in ms, libcurl's "
            f"clocks  percentiles over {covers}"  # two spaces: a narrow pane wraps there
        )

    def status_line(self, short: bool = False) -> str:
        """The run's requests by status class, discarded and skipped, all URLs
        ('' when the samples carry no run figures: an older recording);
        ``short``: the classes only."""
        runs = [row.run for row in self.rows.values() if row.run is not None]
        if not runs:
            return ""  # a recording made before status classes: nothing to count
        counts = {c.value: sum(r.classes.get(c.value, 0) for r in runs) for c in STATUS_CLASSES}
        text = "  ".join(f"{_CLASS_NAMES[c.value]} {counts[c.value]}" for c in STATUS_CLASSES)
        total = sum(counts.values())
        errors = total - counts[_SUCCESS]
        if total and errors / total > ERROR_MARKER_SHARE:
            text = f"!! errors {100 * errors / total:.1f} %   " + text
        if short:
            return text
        discarded = sum(r.discarded for r in runs)
        skipped = sum(r.skipped for r in runs)
        return f"{text}   discarded (warm-up) {discarded}   skipped turns {skipped}"

    def compose(self) -> ComposeResult:
        yield self.ttfb_row
        yield self.total_row
        yield self.table
        yield self.status
        yield self.legend

    # -- storing ------------------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        interval = HttpInterval.from_sample(sample)
        # Only the URL-wide series go to the base history (bounded memory).
        self.history.add_values(sample.t_ns / 1e9, interval.url_wide())
        for metric in (TTFB_MS, TOTAL_MS):
            found = interval.slowest(metric)
            if found is not None:
                self.slowest[metric] = found.label
        self.last_sample = sample
        self.samples_seen += 1
        t_s = sample.t_ns / 1e9
        for url in interval.urls:
            row = self.rows.get(url.label)
            if row is None:
                row = self.rows[url.label] = UrlRow(url.label)
                self.order.append(url.label)
            row.phases = dict(url.phases_ms)
            row.dirty = True
            if url.http_code is not None:
                row.code = url.http_code or None
            # Every request of the interval (the latest alone is in row.phases).
            row.ttfb.extend(url.every_ttfb_ms)
            row.chart.extend((t_s, v) for v in url.every_ttfb_ms if v is not None)
            row.total.extend(url.every_total_ms)
        for label, kinds in interval.error_counts.items():
            if label in self.rows:
                self.rows[label].errors = dict(kinds)
        for label, run in interval.run.items():
            if label in self.rows:
                self.rows[label].run = run

    # -- drawing ------------------------------------------------------------
    def table_lines(self) -> list[str]:
        head = (
            f"{'URL':<{LABEL_W}} {'latest phases':<{BAR_W}} {'TTFB, ms':<{SPARK_W}} "
            f"{'total, ms':<{SPARK_W}} {'TTFB ms':>8} {'p50 ms':>8} {'p90 ms':>8} "
            f"{'p99 ms':>8} {'jit ms':>7} {'out s':>6} HTTP errors"
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
            errors = row.marker() + errors
            cells = " ".join(fmt_value(v, "ms", 8) for v in (latest, p50, p90, p99))
            run = row.run
            cells += " " + fmt_value(run.jitter_mean_ms if run else None, "ms", 7)
            cells += " " + fmt_value(run.outage_s if run else None, "s", 6)
            lines.append(
                f"{fit_label(label):<{LABEL_W}} {stacked_bar(row.phases, scale, BAR_W)} "
                f"{column_rows(list(row.ttfb), SPARK_W, 1, None)[0]} "
                f"{column_rows(list(row.total), SPARK_W, 1, None)[0]} "
                f"{cells} {row.code or '-':>4} {errors}"
            )
        return lines

    def several(self) -> bool:
        """True when the pane has more than one URL: the headline then names one."""
        return len(self.rows) > 1

    def headline_title(self, metric: str) -> str:
        """``TTFB median`` with one URL; with several ``TTFB, slowest`` (the
        sparkline label has 28 cells: the URL is named in ``headline_note``)."""
        name = "TTFB" if metric == TTFB_MS else "total"
        return f"{name}, slowest" if self.several() else f"{name} median"

    def headline_note(self) -> str:
        """Which URL the headline medians are ('' with one URL or none yet),
        its label cut to 36 cells at the front, so the line fits a pane."""
        if not self.several() or not self.slowest:
            return ""
        ttfb, total = self.slowest.get(TTFB_MS), self.slowest.get(TOTAL_MS)
        if ttfb is not None and total is not None and ttfb != total:
            return f"headline: TTFB of {fit_label(ttfb, 36)}, total of {fit_label(total, 36)}"
        return f"headline: slowest URL {fit_label(ttfb or total or '', 36)}"

    def headline_text(self) -> str:
        """The compact list's line: the headline medians and, with several
        URLs, the slowest URL they belong to (once when it is the same)."""
        shown = [(m, n, self.latest(m)) for m, n in ((TTFB_MS, "TTFB"), (TOTAL_MS, "total"))]
        shown = [(m, n, v) for m, n, v in shown if v is not None]
        if not shown:
            return self.waiting_text() if not self.samples_seen else "-"
        labels = {self.slowest[m] for m, _n, _v in shown if m in self.slowest}
        parts = []
        for metric, name, value in shown:
            part = f"{name} {fmt_value(value, 'ms')} ms"
            if self.several() and len(labels) > 1 and metric in self.slowest:
                part += f" (slowest {fit_label(self.slowest[metric], 12)})"
            parts.append(part)
        if self.several() and len(labels) == 1:
            parts.append(f"slowest {fit_label(labels.pop(), 12)}")
        return "  ".join(parts)

    def render_frame(self) -> None:
        super().render_frame()
        for spark_row, key in ((self.ttfb_row, TTFB_MS), (self.total_row, TOTAL_MS)):
            hist = self.history.get(key)
            if hist is None:
                continue
            spark_row.set(
                f"{self.headline_title(key):<14} {fmt_value(hist.latest, 'ms', 7)} ms",
                hist.recent(max(spark_row.spark.size.width, 1)),
            )
        if self.rows and self.samples_seen:
            self.table.set_lines(self.table_lines(), header_rows=1)
            note = self.headline_note()
            self.legend.set_lines([note, self._legend()] if note else [self._legend()])
            self.fit_rows()

    _status_first = False

    def fit_rows(self) -> None:
        """Squeezed (80x24: two rows under the sparklines) with errors
        marked, the status line comes first, classes only: cut from the
        bottom, "!! errors 50.0 %" never showed, and a URL that only failed
        was cut with it. A table left with only its heading is left out."""
        line = self.status_line()
        room = self.content_room()
        width = self.status.line_width if self.status.is_mounted else 0
        need = 2 + len(self.table.rows) + wrapped_rows([line], width) + len(self.legend.rows)
        first = bool(room) and room < need and line.startswith("!!")
        self.status.set_lines([self.status_line(short=True) if first else line])
        if first != self._status_first:
            self._status_first = first
            if first:
                self.move_child(self.status, before=self.table)
            else:
                self.move_child(self.status, after=self.table)
        self.squeezed_rows = wrapped_rows([line], width) - len(self.status.rows)
        self.hide_lone_headings()

    def on_resize(self) -> None:
        super().on_resize()
        if self.rows and self.samples_seen:
            self.fit_rows()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        series = {f"TTFB {label} (ms)": list(self.rows[label].chart) for label in self.order}
        out = dict(list(series.items())[:CHART_URLS])
        name = "TTFB median, slowest URL (ms)" if self.several() else "TTFB median (ms)"
        out[name] = self.series(TTFB_MS)
        return out
