"""A cheap one-colour sparkline for panes updated over SSH.

Why not Textual's stock ``Sparkline``: it colours every bar differently, so
each changed cell costs an escape sequence and a shifting line changes every
cell every tick. Here each row is ONE segment with ONE style, so a redraw of
a row costs one style sequence plus the bar characters.

Contract:
- ``set_values(values)`` stores the newest values (oldest first) and refreshes
  this widget only (never a layout pass); call it from ``render_frame``.
- The sparkline takes its whole width: a series younger than the width
  starts at the left edge (next to its label) and grows to the right; once it
  fills the width the newest value stays at the right edge and older ones
  scroll out (``align="right"`` keeps the newest at the right edge always).
  ``None`` and zero draw nothing, any positive value at least the lowest bar.
- The scale is 0..``max_value`` when given (e.g. 100 for %), else 0..the
  largest visible value. Height may be more than one row (8 levels per row).
- Styled by the component class ``sparkline--bar`` (theme variables in TCSS).
"""

from __future__ import annotations

from collections.abc import Sequence

from probetop.tui.widgets.bars import column_rows
from probetop.tui.widgets.linewidget import LineWidget
from probetop.tui.widgets.textblock import changed_span
from rich.cells import set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip

KEEP = 512  # values kept: wider than any sparkline we draw


class Sparkline(LineWidget):
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
        align: str = "left",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.max_value = max_value
        self.align = align
        self._values: list[float | None] = []
        self._rows: list[str] | None = None

    def set_values(self, values: Sequence[float | None]) -> None:
        """Store the newest values (oldest first); redraw only the rows whose
        characters changed (a flat or saturated line that shifts costs nothing)."""
        self._values = list(values[-KEEP:])
        width, height = self.line_width, self.size.height
        if width <= 0 or height <= 0:
            self._rows = None
            self.refresh()
            return
        rows = self._draw(width, height)
        old = self._rows
        self._rows = rows
        if old is None or len(old) != len(rows):
            self.refresh()
            return
        regions = []
        for y, (before, after) in enumerate(zip(old, rows, strict=True)):
            span = changed_span(before, after)
            if span is not None:  # only the changed cells: a filling line costs one
                regions.append(Region(span[0], y, span[1] - span[0], 1))
        if regions:
            self.refresh(*regions)

    def _draw(self, width: int, height: int) -> list[str]:
        return column_rows(self._values, width, height, self.max_value, align=self.align)

    def on_resize(self) -> None:
        self._rows = None

    def render_line(self, y: int) -> Strip:
        width, height = self.line_width, self.size.height
        if self._rows is None or len(self._rows) != height or len(self._rows[0]) != width:
            self._rows = self._draw(width, height)
        if y >= len(self._rows):
            return Strip.blank(width)
        style = self.part_style("sparkline--bar")
        segments = [Segment(set_cell_size(self._rows[y], width), style)]
        return Strip(segments, width)
