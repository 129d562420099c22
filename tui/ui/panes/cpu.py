"""Pane for the ``cpu`` probe (sysbench cpu): events/s, latency, fairness, cores.

- events/s per interval and the latency percentile per interval, as one-colour
  sparklines (per-interval figures, as sysbench's ``--report-interval`` lines);
- fairness bars: events each worker thread completed in the last interval;
- beside them (under them when the pane is too narrow for both side by
  side: ``side_by_side``), every core's busy % from the passive
  ``system.cpu`` probe (``observe``), so a core busy with something else
  shows at a glance;
- with ``--sweep``, events/s per thread count as a bar chart with scaling
  efficiency against 1 thread;
- ``e`` toggles what one event is.

A pane the layout squeezes (80x24: the passive panes take the rest) draws
short forms (``fit_rows``) rather than losing its bottom rows: the headline
without its "(e: ...)" hint (the key bar says it), the two columns as one
line of fields under it ("per thread (interval) t0 765  busy cpu0 100%
cpu1 100%"), after a "finished:" line. Cut from the bottom, the
columns' heading was all that showed at 80x24, without a number.

The pane stores in ``add_sample``/``observe`` and draws in ``render_frame``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from probetop.probes.core.passive import CoreLoad
from probetop.probes.core.sample import Sample
from probetop.probes.cpu import (
    EPS,
    EVENT_EXPLAINED,
    LAT_AVG_MS,
    LAT_PCT_MS,
    PYTHON_ENGINE_LABEL,
    QUEUE_LENGTH,
    RATE,
    THREADS,
    CpuInterval,
)
from probetop.tui.ui.widgets.bars import value_bar
from probetop.tui.ui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import PaneHelp, ProbePane
from probetop.tui.ui.widgets.sparkrow import value_label
from probetop.tui.ui.widgets.textblock import TextBlock, counts_text, wrapped_rows
from probetop.tui.ui.widgets.units import fmt_with_unit
from rich.cells import cell_len, set_cell_size
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

BAR_WIDTH = 16
GAP = 2  # cells between the fairness and the cores columns


def side_by_side(left: list[str], right: list[str], width: int) -> list[str]:
    """``right`` beside ``left`` (``GAP`` cells after its widest line) when
    both fit in ``width`` cells (0: unknown, assume they do), else under it:
    a column cut at the pane's edge lost its heading and its numbers."""
    left_cells = max((cell_len(line) for line in left), default=0)
    right_cells = max((cell_len(line) for line in right), default=0)
    if width and left_cells + GAP + right_cells > width:
        return [*left, *right]
    rows = max(len(left), len(right))
    left = left + [""] * (rows - len(left))
    right = right + [""] * (rows - len(right))
    pad = left_cells + GAP
    return [f"{set_cell_size(a, pad)}{b}".rstrip() for a, b in zip(left, right, strict=True)]


def text_bar(value: float, top: float, width: int = BAR_WIDTH) -> str:
    """A one-colour bar of ``value`` out of ``top``, in eighths of a cell."""
    return value_bar(value, top, width)


class CpuBenchPane(ProbePane):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "explain", "What is one event?"),
    ]

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = info.get("params", {}) or {}
        self.percentile = float(params.get("percentile", 95) or 95)
        self.eps_row = SparkRow(EPS, "events/s")
        self.lat_row = SparkRow(LAT_PCT_MS, f"latency p{self.percentile:g}")
        self.headline = TextBlock(["starting: compiling the event and warming up..."], wrap=True)
        self.columns = TextBlock([""])
        self.sweep_block = TextBlock([], classes="-sweep")
        self.explain_block = TextBlock([], wrap=True)
        self.show_explain = False
        self.per_thread: list[int] = []
        self.core_busy: dict[str, float | None] = {}
        self.sweep: dict[int, dict[str, Any]] = {}
        self.sweep_live: dict[int, float] = {}
        self.total_events = 0
        self.engine: str | None = None
        self.final: dict[str, Any] | None = None

    def on_mount(self) -> None:
        # Empty blocks would still take a row each: hide them until used.
        self.sweep_block.display = False
        self.explain_block.display = False

    def compose(self) -> ComposeResult:
        # First: what `e` asked for shows even in a pane the layout squeezes
        # (rows cut from the bottom); under the headline it was cut whenever the
        # headline wrapped at 80x24.
        yield self.explain_block
        yield self.eps_row
        yield self.lat_row
        yield self.headline
        yield self.columns
        yield self.sweep_block

    # -- storing ---------------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        interval = CpuInterval.from_sample(sample)
        self.per_thread = list(interval.per_thread_events)
        self.total_events = interval.total_events or self.total_events
        self.engine = interval.engine or self.engine
        if interval.phase is not None and interval.eps is not None:
            self.sweep_live[interval.threads] = interval.eps
        summary = interval.phase_summary
        if summary:
            self.final = dict(summary)
            if interval.phase is not None:
                self.sweep[int(summary["threads"])] = dict(summary)

    def observe(self, sample: Sample) -> None:
        load = CoreLoad.from_sample(sample)
        if load is not None:
            self.core_busy.update(load.cores)

    def action_explain(self) -> None:
        self.show_explain = not self.show_explain
        self.explain_block.set_lines(self.explain_lines() if self.show_explain else [])
        self.explain_block.display = self.show_explain

    # -- drawing ---------------------------------------------------------
    def explain_lines(self) -> list[str]:
        width = max(40, self.size.width - 2)
        words, lines, line = EVENT_EXPLAINED.split(), [], ""
        for word in words:
            if len(line) + len(word) + 1 > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines.append(line)
        return lines

    def fairness_lines(self) -> list[str]:
        top = max(self.per_thread, default=0)
        lines = ["events per thread (interval)"]
        for i, n in enumerate(self.per_thread[:16]):
            lines.append(f"t{i:<3} {text_bar(n, top)} {n:>6}")
        if len(self.per_thread) > 16:
            lines.append(f"... {len(self.per_thread) - 16} more threads")
        return lines

    def core_lines(self) -> list[str]:
        lines = ["busy % (all processes)"]
        for core in sorted(self.core_busy, key=lambda c: (len(c), c))[:16]:
            busy = self.core_busy[core]
            lines.append(f"{core:<5} {text_bar(busy or 0.0, 100.0, 12)} {fmt_value(busy, '%', 5)}%")
        if len(lines) == 1:
            lines.append("(no system.cpu probe)")
        return lines

    def sweep_lines(self) -> list[str]:
        rates = {t: float(s["events_per_second"]) for t, s in self.sweep.items()}
        for t, eps in self.sweep_live.items():
            rates.setdefault(t, eps)  # the running step: its latest interval
        if not rates:
            return []
        base = rates.get(1)
        top = max(rates.values()) or 1.0
        # The bar takes what the figures leave of the row ("  8 thr " bar
        # " 12.3k  95%  (running)"): at 30 cells a 56-cell pane lost the rest.
        room = self.sweep_block.line_width if self.sweep_block.is_mounted else 0
        bar = max(6, min(30, room - 33)) if room else 30
        lines = ["thread sweep: events/s (efficiency vs 1 thread)"]
        for t in sorted(rates):
            eff = f"{100 * rates[t] / (t * base):4.0f}%" if base else "    -"
            running = "" if t in self.sweep else "  (running)"
            lines.append(
                f"{t:>3} thr {text_bar(rates[t], top, bar)} {fmt_value(rates[t], '', 7)} "
                f"{eff}{running}"
            )
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        eps = self.metric(EPS)
        lat = self.metric(LAT_PCT_MS)
        if eps is not None:
            label = value_label("events/s", eps.latest, "")
            self.eps_row.set(label, eps.recent(SPARK_POINTS))
        if lat is not None:
            label = value_label(f"latency p{self.percentile:g}", lat.latest, "ms")
            self.lat_row.set(label, lat.recent(SPARK_POINTS))
        self.fit_rows()
        sweep = self.sweep_lines()
        self.sweep_block.set_lines(sweep)
        if self.sweep_block.display != bool(sweep):  # a layout pass only when it changes
            self.sweep_block.display = bool(sweep)

    def fit_rows(self) -> None:
        """The headline and the columns in full when the rows the layout
        gave the pane hold them, else their short forms (module docstring)."""
        width = self.columns.line_width if self.columns.is_mounted else 0
        head = self.headline_lines()
        columns = side_by_side(self.fairness_lines(), self.core_lines(), width)
        full = wrapped_rows(head, width) + len(columns)
        room = self.content_room() - 2  # the events/s and latency rows come first
        if self.explain_block.display:
            room -= len(self.explain_block.rows)
        squeezed = bool(self.content_room()) and room < full and bool(self.columns_line())
        if squeezed:  # the columns as one line of fields under the headline
            # after the headline's lines: a "finished:" line comes first
            head = [*self.headline_lines(hint=False), self.columns_line()]
            columns = []
        self.squeezed_rows = full - wrapped_rows(head, width) - len(columns)
        self.headline.set_lines(head)
        if columns:
            self.columns.set_lines(columns)
        if self.columns.display == squeezed:  # a layout pass only when it changes
            self.columns.display = not squeezed

    def columns_line(self) -> str:
        """The two columns as fields of one line (``fit_rows``)."""
        parts = [counts_text("per thread (interval) ", self.per_thread)] if self.per_thread else []
        cores = sorted(self.core_busy, key=lambda c: (len(c), c))
        if len(cores) <= 8:
            parts += [f"{c} {fmt_value(self.core_busy[c], '%')}%" for c in cores]
        else:
            busy = [b for b in self.core_busy.values() if b is not None]
            if busy:
                parts.append(f"{len(cores)} cores busy min {min(busy):.0f}% max {max(busy):.0f}%")
        if cores and len(cores) <= 8:
            parts[-len(cores)] = "busy " + parts[-len(cores)]
        return "  ".join(parts)

    def on_resize(self) -> None:
        super().on_resize()
        if self.samples_seen:  # side by side or stacked, short forms, bar lengths
            self.fit_rows()
            self.sweep_block.set_lines(self.sweep_lines())

    def headline_lines(self, hint: bool = True) -> list[str]:
        params = self.info.get("params", {}) or {}
        parts = [
            f"max-prime {params.get('max_prime', '?')}",
            f"threads {int(self.latest(THREADS) or params.get('threads') or 0)}",
            f"events {self.total_events:,}",
            f"avg lat {fmt_with_unit(self.latest(LAT_AVG_MS), 'ms')}",  # "0.41 µs", not "0.00 ms"
            f"engine {self.engine or params.get('engine', '?')}",
        ]
        if params.get("rate"):
            # --rate: the target and sysbench's queue (events due, no thread free)
            queue = self.latest(QUEUE_LENGTH)
            parts.insert(2, f"rate {int(self.latest(RATE) or params['rate']):,}/s target")
            parts.insert(3, f"queue {'-' if queue is None else f'{int(queue):,}'}")
        lines = ["  ".join(parts) + ("   (e: what is one event?)" if hint else "")]
        if self.final is not None:
            f = self.final
            lines.append(
                # Fields parted by two spaces: a narrow pane wraps between them.
                f"finished: {f['events_per_second']:.2f} events/s  {f['total_events']:,} events "
                f"in {f['total_time']:.2f} s ({f['threads']} "
                f"thread{'' if f['threads'] == 1 else 's'})  stopped by {f['stopped_by']}"
            )
        if self.engine == "python":
            lines.insert(0, f"WARNING: {PYTHON_ENGINE_LABEL}")
        return lines

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        series = {
            "events/s": self.series(EPS),
            f"lat p{self.percentile:g} ms": self.series(LAT_PCT_MS),
        }
        if self.sweep:
            series["sweep events/s by threads"] = [
                (float(t), float(s["events_per_second"])) for t, s in sorted(self.sweep.items())
            ]
        return series

    def label(self, key: str) -> str:
        """``latency p95`` for the latency percentile (which one is run's
        ``--percentile``): "latency percentile" said neither."""
        if key == LAT_PCT_MS:
            return f"latency p{self.percentile:g}"
        return super().label(key)

    def help_text(self) -> PaneHelp:
        base = super().help_text()
        return PaneHelp(base.title, (*base.rows, ("one event", EVENT_EXPLAINED)))
