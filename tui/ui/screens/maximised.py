"""One pane maximised: plotext charts of its ``chart_series`` (the longer
history) above its full statistics table. Escape (or m) restores.

One unit per axis: the series are split into panels by unit
(``ProbePane.chart_panels``), stacked one above the other on the same time
axis, so packets/s, loss % and RTT µs are never drawn against one y scale.
Each y axis is labelled by ``axis_ticks``: round steps written with the
unit as the panes write it ("2.50 MB/s", "40 %", "1.5k pkt/s"), never
plotext's raw floats ("1234567.0").

plotext is imported lazily (about 115 ms): only when a pane is maximised.
The table follows every frame with new data; the chart is redrawn at most
every ``CHART_EVERY_S`` seconds (a redraw rewrites most of the screen).
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING

from probetop.tui.analysis.axis import axis_ticks
from probetop.tui.analysis.timescale import is_time_unit
from probetop.tui.ui.widgets.keybar import KeyBar
from probetop.tui.ui.widgets.textblock import TextBlock
from probetop.tui.ui.widgets.units import unit_family
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

if TYPE_CHECKING:
    from probetop.tui.ui.widgets.pane import ProbePane

MAX_SERIES = 6  # per panel
MAX_PANELS = 4
TITLED_PANEL_ROWS = 9  # a panel this tall or taller gets its unit as a title
MIN_PLOT_ROWS = 3  # rows of data a panel needs for two ticks and the line between
CHART_EVERY_S = 5.0

Panels = list[tuple[str, dict[str, list[tuple[float, float]]]]]


def fit_rows(lines: list[str], room: int) -> list[str]:
    """The header and as many rows as ``room`` allows; rows left out are
    counted on the last line, never dropped without a word (the table was
    cut at a third of the screen, and the NICs below lo were simply gone)."""
    if len(lines) <= room:
        return lines
    shown = max(1, room - 1)
    return [*lines[:shown], f"... {len(lines) - shown} more rows: a taller terminal shows them"]


def _axis_rows(units: list[str]) -> list[int]:
    """Rows each panel's x axis takes: ticks and a label under the bottom
    panel and under a panel plotted by something other than time, ticks
    alone above such a panel, none above a panel sharing the time axis."""
    rows = []
    for i, unit in enumerate(units):
        below = units[i + 1 :]
        if unit.startswith("by ") or not below:
            rows.append(2)
        else:
            rows.append(0 if all(not u.startswith("by ") for u in below) else 1)
    return rows


def chart_rows_needed(panels: int) -> int:
    """Rows a chart of ``panels`` time panels needs for ``MIN_PLOT_ROWS``
    rows of data in each (the maximised screen leaves them to it)."""
    return panels * (2 + MIN_PLOT_ROWS) + 2 if panels else 5


def panel_heights(units: list[str], height: int) -> tuple[list[int], list[int], bool]:
    """Each panel's height in ``height`` rows, its rows of data, and whether
    the panels are titled.

    The rows of data are shared evenly, after each panel's border, title and
    x axis: with an even split of the whole height the bottom panel lost
    its data rows to the time axis (at 80x24 the mem pane's latency panel
    had one row, and one tick: "0 ms"). A panel is given at least
    ``MIN_PLOT_ROWS`` rows of data when there is room for it."""
    roomy = height // len(units) >= TITLED_PANEL_ROWS
    overhead = [2 + (1 if roomy else 0) + axis for axis in _axis_rows(units)]
    data = max(len(units), height - sum(overhead))
    share, extra = divmod(data, len(units))
    data_rows = [share + (1 if i >= len(units) - extra else 0) for i in range(len(units))]
    return [o + d for o, d in zip(overhead, data_rows, strict=True)], data_rows, roomy


def render_chart(panels: Panels, width: int, height: int, color: bool) -> str:
    """The panels as text, stacked, one y axis (and unit) each, the time axis
    shared (ANSI colours only when ``color``)."""
    import plotext as plt

    drawn = [
        (unit, {k: pts for k, pts in list(series.items())[:MAX_SERIES] if pts})
        for unit, series in panels[:MAX_PANELS]
    ]
    drawn = [(unit, series) for unit, series in drawn if series]
    if not drawn:
        return "no data yet"
    timed = [
        pts[0][0] for unit, series in drawn if not unit.startswith("by ") for pts in series.values()
    ]
    t0 = min(timed, default=0.0)
    plt.main()  # back to the whole figure: the last chart left a subplot active
    plt.clear_figure()
    plt.limit_size(False, False)  # size to our widget, not to the process's terminal
    units_drawn = [unit for unit, _s in drawn]
    heights, data_rows, roomy = panel_heights(units_drawn, max(height, 5 * len(drawn)))
    plt.plotsize(max(width, 20), sum(heights))
    plt.subplots(len(drawn), 1)
    for row, (unit, series) in enumerate(drawn, start=1):
        plt.subplot(row, 1)
        plt.plotsize(max(width, 20), heights[row - 1])
        plt.theme("clear" if not color else "pro")
        by_time = not unit.startswith("by ")
        values = [v for points in series.values() for _t, v in points]
        units = [u for u in unit.split(", ") if u] if by_time else []
        axis_unit = units[0] if len(units) == 1 else unit_family(units[0]) if units else ""
        rows = data_rows[row - 1]
        # A flat series gets 0..2v with labels at the ends, where it can be
        # (see flat_range); else round steps, a label every other row or so.
        ticks, labels = axis_ticks(values, axis_unit, max(2, min(6, (rows + 1) // 2)))
        # A time axis in the unit that fits it ("2.5 µs" for a series in ms):
        # the legend and the title say that unit, not the series' own.
        shown = axis_unit
        if is_time_unit(axis_unit) and " " in labels[-1]:
            shown = labels[-1].rsplit(" ", 1)[1]
        for key, points in series.items():
            xs = [t - t0 for t, _v in points] if by_time else [t for t, _v in points]
            if shown != axis_unit and key.endswith(f" {axis_unit}"):
                key = key[: -len(axis_unit)] + shown
            plt.plot(xs, [v for _t, v in points], label=key)
        plt.ylim(ticks[0], ticks[-1])
        plt.yticks(ticks, labels)
        if roomy:  # short panels: the legend names the unit, the title would eat a row
            plt.title((shown if shown != axis_unit and unit == axis_unit else unit) or "value")
        if not by_time:
            plt.xlabel(unit[3:])
        elif row == len(drawn):
            plt.xlabel("seconds")
        elif len(drawn) > 1 and all(not u.startswith("by ") for u, _s in drawn[row:]):
            plt.xticks([], [])  # the panels below share this time axis
    text = str(plt.build())
    return text if color else str(plt.uncolorize(text))


class MaximisedScreen(Screen[None]):
    """See the module docstring."""

    BINDINGS = [
        Binding("escape,m", "restore", "Restore"),
    ]

    def __init__(self, pane: ProbePane) -> None:
        super().__init__()
        self.pane = pane
        self.chart = Static("", id="chart")
        self.table = TextBlock([""], header_rows=1, id="max-table")
        self._chart_drawn = -math.inf
        self._panels = pane.chart_panels()

    def compose(self) -> ComposeResult:
        title = self.pane.full_title or str(self.pane.border_title or self.pane.probe_id)
        yield Static(Text(title), id="max-title")
        yield self.chart
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.refresh_chart(force=True)

    def on_resize(self) -> None:
        self.refresh_chart(force=True)

    def refresh_chart(self, force: bool = False) -> None:
        """Update the table now; redraw the chart at most every CHART_EVERY_S.

        A chart redraw rewrites most of the screen (~30 KB at 120x40), so
        redrawing it every second would blow the 10 KB/s terminal budget.
        """
        keys = list(self.pane.history.keys)
        width = max([12, *(len(self.pane.label(k)) for k in keys)])
        lines = self.pane.stats_lines(
            keys, label_width=min(width, 32), width=self.app.size.width - 1
        )
        # Several chart panels need the room: the table gets less of the screen.
        # and never so much that a panel is left a row of data, with one tick.
        share = 3 if len(self._panels) <= 1 else 4
        panels = min(len(self._panels), MAX_PANELS)
        height = self.app.size.height
        room = min(height // share, height - 3 - chart_rows_needed(panels))
        self.table.set_lines(fit_rows(lines, max(2, room)), header_rows=1)
        now = time.monotonic()
        if not force and now - self._chart_drawn < CHART_EVERY_S:
            return
        self._chart_drawn = now
        self._panels = self.pane.chart_panels()
        width, screen_height = self.app.size
        height = max(5, screen_height - len(self.table.lines) - 3)
        color = not os.environ.get("NO_COLOR")
        text = render_chart(self._panels, width - 2, height, color)
        self.chart.update(Text.from_ansi(text))

    def action_restore(self) -> None:
        self.dismiss(None)
