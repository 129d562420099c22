"""One pane maximised: a plotext chart of its ``chart_series`` (the longer
history) above its full statistics table. Escape (or m) restores.

plotext is imported lazily (about 115 ms): only when a pane is maximised.
The table follows every frame with new data; the chart is redrawn at most
every ``CHART_EVERY_S`` seconds (a redraw rewrites most of the screen).
"""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING

from probetop.tui.widgets.textblock import TextBlock
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

if TYPE_CHECKING:
    from probetop.tui.widgets.pane import ProbePane

MAX_SERIES = 6
CHART_EVERY_S = 5.0


def render_chart(
    series: dict[str, list[tuple[float, float]]], width: int, height: int, color: bool
) -> str:
    """The chart as text (ANSI colours only when ``color``)."""
    import plotext as plt

    plt.clear_figure()
    plt.limit_size(False, False)  # size to our widget, not to the process's terminal
    plt.plotsize(max(width, 20), max(height, 5))
    plt.theme("clear" if not color else "pro")
    if not color:
        plt.colorless()
    t0 = min((pts[0][0] for pts in series.values() if pts), default=0.0)
    drawn = 0
    for key, points in list(series.items())[:MAX_SERIES]:
        if len(points) < 1:
            continue
        plt.plot([t - t0 for t, _v in points], [v for _t, v in points], label=key)
        drawn += 1
    if not drawn:
        return "no data yet"
    plt.xlabel("seconds")
    return str(plt.build())


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

    def compose(self) -> ComposeResult:
        yield Static(Text(self.pane.border_title or self.pane.probe_id), id="max-title")
        yield self.chart
        yield self.table
        yield Footer()

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
        lines = self.pane.stats_lines(keys, label_width=24)
        self.table.set_lines(lines[: max(2, self.app.size.height // 3)], header_rows=1)
        now = time.monotonic()
        if not force and now - self._chart_drawn < CHART_EVERY_S:
            return
        self._chart_drawn = now
        width, screen_height = self.app.size
        height = max(5, screen_height - len(self.table.lines) - 3)
        color = not os.environ.get("NO_COLOR")
        text = render_chart(self.pane.chart_series(), width - 2, height, color)
        self.chart.update(Text.from_ansi(text))

    def action_restore(self) -> None:
        self.dismiss(None)
