"""``label latest [sparkline]`` on one row, drawn by ONE widget.

It used to be a Horizontal holding a TextBlock and a Sparkline: three
widgets for one line. Textual's per-frame cost grows with the widgets it
composes (each is styled, cropped and cached on its own, whether or not it
changed), and the demo shows fourteen of these rows; now each is one
widget whose line is one label segment and one bar segment.

Contract:
- ``set(label, values)``: both parts with one repaint (either may be None:
  unchanged); ``label.set_lines([text])`` and ``spark.set_values(values)``
  set one part each (the API of the two widgets this row replaced).
- ``label.text``: the label, drawn in the
  first ``LABEL_CELLS`` cells (cut or padded), component ``sparkrow--label``.
- ``spark.values``: the series (oldest first) drawn in the rest of the row
  with ``bars.column_rows`` in one style (each changed cell then costs no
  escape sequence of its own; None and zero draw nothing; scale
  0..``max_value`` or the largest visible value),
  component ``sparkrow--bar``; ``spark.size.width`` is the cells it has.
- A change repaints the row only up to its last changed cell; never a
  layout pass (the row is one line high).
"""

from __future__ import annotations

from collections.abc import Sequence

from probetop.tui.ui.widgets.bars import column_rows
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.linewidget import LineWidget
from probetop.tui.ui.widgets.textblock import changed_span
from probetop.tui.ui.widgets.units import scale_for
from rich.cells import set_cell_size
from rich.segment import Segment
from textual.geometry import Region, Size
from textual.strip import Strip

LABEL_CELLS = 28
VALUE_COLUMN = 17  # where a value_label's value starts: "p99 write latency  48.4 µs" fits
KEEP = 512  # values kept: wider than any sparkline drawn


def value_label(label: str, value: float | None, unit: str) -> str:
    """A sparkline's label: what, the latest value and its unit (bytes get
    their SI prefix on the unit, as ``fmt_with_unit`` writes them: "123 MB/s";
    a time the unit that fits it: "12.3 s", not "12345678 µs", "0.41 µs", not
    "0.00 ms")."""
    factor, shown = scale_for([value], unit)
    number = fmt_value(None if value is None else value / factor, shown, 6)
    right = number + (shown if shown.startswith("/") else f" {shown}")
    # At most LABEL_CELLS - 1 cells, so a blank always parts the text from the
    # bars ("read IOPS  1013 IO/s" filled all 28 and ran into them): a long
    # unit takes its cell from the label's padding.
    pad = max(len(label) + 1, min(VALUE_COLUMN, LABEL_CELLS - 1 - len(right)))
    return f"{label:<{pad}}{right}"


class _Label:
    """The row's label part (the API of the TextBlock it replaced)."""

    def __init__(self, row: SparkRow, text: str) -> None:
        self._row = row
        self.text = text

    @property
    def lines(self) -> list[str]:
        return [self.text]

    def set_lines(self, lines: Sequence[str]) -> None:
        self._row.set(lines[0] if lines else "", None)


class _Spark:
    """The row's sparkline part (the API of the Sparkline it replaced)."""

    def __init__(self, row: SparkRow, max_value: float | None) -> None:
        self._row = row
        self.max_value = max_value
        self.values: list[float | None] = []

    @property
    def size(self) -> Size:
        return Size(max(0, self._row.line_width - LABEL_CELLS), 1)

    def set_values(self, values: Sequence[float | None]) -> None:
        self._row.set(None, values)

    def draw(self, width: int | None = None) -> str:
        """The bar in ``width`` cells (default: the cells it has now)."""
        if width is None:
            width = self.size.width
        if width <= 0:
            return ""
        return column_rows(self.values, width, 1, self.max_value, align="left")[0]


class SparkRow(LineWidget):
    """One row: a label and its sparkline. See the module docstring."""

    COMPONENT_CLASSES = {"sparkrow--label", "sparkrow--bar"}

    DEFAULT_CSS = """
    SparkRow {
        height: 1;
        width: 1fr;
    }
    SparkRow > .sparkrow--label {
        color: $foreground;
    }
    SparkRow > .sparkrow--bar {
        color: $accent;
    }
    """

    def __init__(self, key: str, caption: str, max_value: float | None = None) -> None:
        super().__init__()
        self.key = key
        # What the row shows until its first value: what it measures, in
        # words (the metric's name is no label: "read_clat_p99_us").
        self.label = _Label(self, caption)
        self.spark = _Spark(self, max_value)
        # (width, label cells, bar) as last drawn. Keyed by the width it was
        # drawn for: a row drawn from the cells of another width has the wrong
        # length, and Textual places the rest of the screen row after it.
        self._drawn: tuple[int, str, str] | None = None

    def set(self, label: str | None, values: Sequence[float | None] | None) -> None:
        """New label and/or values (None: unchanged); one repaint for both."""
        changed = values is not None
        if values is not None:
            self.spark.values = list(values[-KEEP:])
        if label is not None and label != self.label.text:
            self.label.text = label
            changed = True
        if changed:
            self.redraw()

    def _draw(self, width: int) -> tuple[int, str, str]:
        """The row for ``width`` cells: label and bar are exactly that long together."""
        label = set_cell_size(self.label.text, min(LABEL_CELLS, width))
        return width, label, self.spark.draw(width - LABEL_CELLS)

    def redraw(self) -> None:
        """Repaint the cells that changed since the last frame (none: nothing)."""
        width = self.line_width
        if not self.is_mounted or width <= 0:
            self._drawn = None
            return
        old, new = self._drawn, self._draw(width)
        self._drawn = new
        if old is None or old[0] != width:  # never drawn, or drawn for another width
            self.refresh()
            return
        span = changed_span(old[1] + old[2], new[1] + new[2])
        if span is not None:
            self.refresh(Region(span[0], 0, span[1] - span[0], 1))

    def render_line(self, y: int) -> Strip:
        width = self.line_width
        if y != 0:
            return Strip.blank(width)
        if self._drawn is None or self._drawn[0] != width:
            # The width changed since the last draw (a new layout is drawn
            # before the Resize event reaches this widget): draw for this one.
            self._drawn = self._draw(width)
        _width, label, bar = self._drawn
        segments = [Segment(label, self.part_style("sparkrow--label"))]
        if bar:
            segments.append(Segment(bar, self.part_style("sparkrow--bar")))
        return Strip(segments, width)  # exactly ``width`` cells (``_draw``)
