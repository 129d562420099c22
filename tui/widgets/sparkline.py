"""A cheap one-colour sparkline for panes updated over SSH.

Why not Textual's stock ``Sparkline``: it colours every bar differently, so
each changed cell costs an escape sequence and a shifting line changes every
cell every tick. Here each row is ONE segment with ONE style, so a redraw of
a row costs one style sequence plus the bar characters.

Contract:
- ``set_values(values)`` stores the newest values (oldest first) and refreshes
  this widget only (never a layout pass); call it from ``render_frame``.
- The newest value is drawn at the right edge; ``None`` and zero draw
  nothing, any positive value at least the lowest bar.
- The scale is 0..``max_value`` when given (e.g. 100 for %), else 0..the
  largest visible value. Height may be more than one row (8 levels per row).
- Styled by the component class ``sparkline--bar`` (theme variables in TCSS).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

BLOCKS = " ▁▂▃▄▅▆▇█"
KEEP = 512  # values kept: wider than any sparkline we draw


def bar_rows(
    values: Sequence[float | None], width: int, height: int, max_value: float | None
) -> list[str]:
    """The sparkline as ``height`` strings of ``width`` characters, top row first."""
    if width <= 0 or height <= 0:
        return [""] * max(height, 0)
    shown = list(values[-width:])
    pad = width - len(shown)
    finite = [v for v in shown if v is not None]
    top = max_value if max_value else (max(finite) if finite else 0.0)
    levels_total = height * 8
    levels: list[int | None] = []
    for v in shown:
        if v is None:
            levels.append(None)
        elif v <= 0 or top <= 0:
            # Zero draws nothing: an idle NIC's row then never changes, so it
            # costs no terminal bytes (the number beside it still says 0).
            levels.append(0)
        else:
            scaled = round(min(v, top) / top * levels_total)
            levels.append(max(1, scaled))  # any activity shows at least one eighth
    rows = []
    for row in range(height):
        floor = (height - 1 - row) * 8
        chars = [" "] * pad
        for level in levels:
            if level is None:
                chars.append(" ")
            else:
                chars.append(BLOCKS[max(0, min(8, level - floor))])
        rows.append("".join(chars))
    return rows


class Sparkline(Widget):
    """One-colour sparkline. See the module docstring."""

    COMPONENT_CLASSES = {"sparkline--bar"}

    DEFAULT_CSS = """
    Sparkline {
        height: 1;
        width: 1fr;
    }
    Sparkline > .sparkline--bar {
        color: $accent;
    }
    """

    def __init__(
        self,
        max_value: float | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.max_value = max_value
        self._values: list[float | None] = []
        self._rows: list[str] | None = None

    def set_values(self, values: Sequence[float | None]) -> None:
        """Store the newest values (oldest first); redraw only the rows whose
        characters changed (a flat or saturated line that shifts costs nothing)."""
        self._values = list(values[-KEEP:])
        width, height = self.size
        if width <= 0 or height <= 0:
            self._rows = None
            self.refresh()
            return
        rows = bar_rows(self._values, width, height, self.max_value)
        old = self._rows
        self._rows = rows
        if old is None or len(old) != len(rows):
            self.refresh()
            return
        for y, (before, after) in enumerate(zip(old, rows, strict=True)):
            if before != after:
                self.refresh(Region(0, y, width, 1))

    def on_resize(self) -> None:
        self._rows = None

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        if self._rows is None or len(self._rows) != height or len(self._rows[0]) != width:
            self._rows = bar_rows(self._values, width, height, self.max_value)
        if y >= len(self._rows):
            return Strip.blank(width)
        style = self.get_component_rich_style("sparkline--bar")
        return Strip([Segment(set_cell_size(self._rows[y], width), style)], width)
