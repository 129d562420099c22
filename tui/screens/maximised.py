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

from probetop.tui.widgets.keybar import KeyBar
from probetop.tui.widgets.textblock import TextBlock
from probetop.tui.widgets.units import scale_for, unit_family, with_unit
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

if TYPE_CHECKING:
    from probetop.tui.widgets.pane import ProbePane

MAX_SERIES = 6  # per panel
MAX_PANELS = 4
TITLED_PANEL_ROWS = 9  # a panel this tall or taller gets its unit as a title
CHART_EVERY_S = 5.0

Panels = list[tuple[str, dict[str, list[tuple[float, float]]]]]


def flat_range(values: list[float]) -> tuple[float, float] | None:
    """The y range for a panel whose values are all one number, else None
    (plotext's own). Left to plotext, a flat series got an axis around it
    (loss 0 % drawn on a row labelled 0.33, above a -0.67 that no
    percentage can be); a flat value v >= 0 gets 0..2v (0..1 for 0), so it
    sits on a row labelled with a value it can have."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite or min(finite) != max(finite):
        return None
    v = finite[0]
    if v >= 0:
        return 0.0, (2 * v if v > 0 else 1.0)
    return 2 * v, 0.0


_NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_NO_PREFIX = ("%", "ms", "us", "µs", "s", "MHz")  # "12.5 ms", never "0.0125 s"


def nice_ticks(low: float, high: float, count: int) -> list[float]:
    """About ``count`` (at least 2) round values from at or below ``low``
    to at or above ``high``, evenly spaced by 1, 2, 2.5 or 5 times a power
    of ten."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    rough = (high - low) / max(1, count - 1)
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in _NICE_STEPS if m * power >= rough * (1 - 1e-9))
    first = math.floor(low / step + 1e-9) * step
    ticks = [first]
    while ticks[-1] < high - step * 1e-9 and len(ticks) < 4 * count:
        ticks.append(first + len(ticks) * step)
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks]


def axis_ticks(values: list[float], unit: str, count: int) -> tuple[list[float], list[str]]:
    """Round tick values spanning ``values`` and their labels with ``unit``:
    bytes take one SI prefix on the unit ("2.50 MB/s"), other large numbers
    a k/M suffix ("1.5k pkt/s"), times and percentages none; each label is
    given the fewest decimals (the same for all) that write each tick
    exactly."""
    finite = [v for v in values if math.isfinite(v)]
    flat = flat_range(finite)
    low, high = flat if flat is not None else (min(finite, default=0.0), max(finite, default=1.0))
    ticks = nice_ticks(low, high, count) if flat is None else [low, high]
    factor, shown = scale_for(ticks, unit)
    suffix = ""
    top = max(abs(t) for t in ticks)
    if factor == 1.0 and unit not in _NO_PREFIX and top >= 10_000:
        factor, suffix = next((f, p) for f, p in _SI if top >= f)
    scaled = [t / factor for t in ticks]
    step = (scaled[-1] - scaled[0]) / max(1, len(scaled) - 1) or 1.0
    decimals = next(
        (d for d in range(12) if all(abs(round(v, d) - v) < step * 1e-6 for v in scaled)), 12
    )
    numbers = [f"{v:.{decimals}f}{suffix}" if v else "0" for v in scaled]
    return ticks, [with_unit(n, shown) for n in numbers]


def fit_rows(lines: list[str], room: int) -> list[str]:
    """The header and as many rows as ``room`` allows; rows left out are
    counted on the last line, never dropped without a word (the table was
    cut at a third of the screen, and the NICs below lo were simply gone)."""
    if len(lines) <= room:
        return lines
    shown = max(1, room - 1)
    return [*lines[:shown], f"... {len(lines) - shown} more rows: a taller terminal shows them"]


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
    plt.plotsize(max(width, 20), max(height, 5 * len(drawn)))
    plt.subplots(len(drawn), 1)
    roomy = height // len(drawn) >= TITLED_PANEL_ROWS
    for row, (unit, series) in enumerate(drawn, start=1):
        plt.subplot(row, 1)
        plt.theme("clear" if not color else "pro")
        by_time = not unit.startswith("by ")
        for key, points in series.items():
            xs = [t - t0 for t, _v in points] if by_time else [t for t, _v in points]
            plt.plot(xs, [v for _t, v in points], label=key)
        values = [v for points in series.values() for _t, v in points]
        units = [u for u in unit.split(", ") if u] if by_time else []
        axis_unit = units[0] if len(units) == 1 else unit_family(units[0]) if units else ""
        rows = height // len(drawn)
        # A flat series gets 0..2v with labels at the ends, where it can be
        # (see flat_range); else round steps, a label every 3 rows or so.
        ticks, labels = axis_ticks(values, axis_unit, max(2, min(6, rows // 3)))
        plt.ylim(ticks[0], ticks[-1])
        plt.yticks(ticks, labels)
        if roomy:  # short panels: the legend names the unit, the title would eat a row
            plt.title(unit or "value")
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
        share = 3 if len(self._panels) <= 1 else 4
        self.table.set_lines(fit_rows(lines, max(2, self.app.size.height // share)), header_rows=1)
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
