"""A table whose rows end in their own sparkline: one row per series.

A row is its text (fixed-width cells: a label, latest value, statistics)
followed by a one-row sparkline of the same series that takes the free width
of the pane, so a series is never shown twice (once as a table row and again
as a sparkline row) and no wide pane has an empty middle.

Contract:
- ``set_rows(rows)`` stores the rows and repaints only the rows whose drawn
  text changed; a layout pass happens only when the number of rows changes
  (the widget's height follows it), as ``TextBlock`` does.
- The text column is as wide as the longest row text (``text_width`` fixes
  it); the sparkline gets what is left, when that is at least
  ``MIN_SPARK`` cells, else the row shows text only.
- Each drawn row is two segments at most (text style, bar style): a changed
  value costs one terminal line.
- Styles: ``seriestable--header`` (the first ``header_rows``),
  ``seriestable--body``, ``seriestable--bar`` (theme variables in TCSS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from probetop.tui.ui.widgets.bars import column_rows
from probetop.tui.ui.widgets.linewidget import LineWidget
from probetop.tui.ui.widgets.textblock import changed_span
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip

MIN_SPARK = 8
KEEP = 512  # values kept per row: wider than any sparkline drawn
GAP = 2  # cells between the text and its sparkline


@dataclass(frozen=True, slots=True)
class SeriesRow:
    """One row: its text and, optionally, the series drawn after it."""

    text: str
    values: Sequence[float | None] | None = None
    max_value: float | None = None


class SeriesTable(LineWidget):
    """Rows of text, each with its sparkline in the free width. See the module docstring."""

    COMPONENT_CLASSES = {"seriestable--header", "seriestable--body", "seriestable--bar"}

    DEFAULT_CSS = """
    SeriesTable {
        height: 1;
        width: 1fr;
    }
    SeriesTable > .seriestable--header {
        color: $text-muted;
        text-style: bold;
    }
    SeriesTable > .seriestable--body {
        color: $foreground;
    }
    SeriesTable > .seriestable--bar {
        color: $accent;
    }
    """

    def __init__(
        self,
        rows: Sequence[SeriesRow] = (),
        *,
        header_rows: int = 0,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows: list[SeriesRow] = list(rows)
        self.header_rows = header_rows
        self.text_width: int | None = None
        self._drawn: list[tuple[str, str]] = []
        self.styles.height = max(1, len(self.rows))

    # -- data ------------------------------------------------------------
    @property
    def lines(self) -> list[str]:
        """The rows' text (without sparklines): what tests and help read."""
        return [row.text for row in self.rows]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def set_rows(
        self,
        rows: Sequence[SeriesRow],
        header_rows: int | None = None,
        text_width: int | None = None,
    ) -> None:
        """Replace the rows; repaint only the rows that changed (see the module docstring)."""
        if header_rows is not None:
            self.header_rows = header_rows
        self.text_width = text_width
        resized = max(1, len(rows)) != max(1, len(self.rows))
        # A copy of each series: the caller's deque goes on growing, but what
        # is drawn changes only here (a covered pane must not move).
        self.rows = [
            row if row.values is None else replace(row, values=tuple(row.values)[-KEEP:])
            for row in rows
        ]
        if resized:
            self.styles.height = max(1, len(self.rows))  # the one layout pass needed
            self._drawn = []
            self.refresh()
            return
        old, self._drawn = self._drawn, self._draw(self.line_width)
        if len(old) != len(self._drawn):
            self.refresh()
            return
        regions = []
        for y, (before, after) in enumerate(zip(old, self._drawn, strict=True)):
            span = changed_span(before[0] + before[1], after[0] + after[1])
            if span is not None:  # only the changed cells of the row
                regions.append(Region(span[0], y, span[1] - span[0], 1))
        if regions:
            self.refresh(*regions)

    # -- drawing ---------------------------------------------------------
    def _draw(self, width: int) -> list[tuple[str, str]]:
        """(text part, bar part) per row, exactly ``width`` cells together."""
        if width <= 0:
            return []
        text_w = self.text_width
        if text_w is None:
            text_w = max((cell_len(r.text) for r in self.rows if r.values is not None), default=0)
        spark_w = width - text_w - GAP
        out = []
        for row in self.rows:
            if row.values is None or spark_w < MIN_SPARK:
                out.append((set_cell_size(row.text, width), ""))
                continue
            bar = column_rows(row.values, spark_w, 1, row.max_value, align="left")[0]
            out.append((set_cell_size(row.text, text_w + GAP), bar))
        return out

    def on_resize(self) -> None:
        self._drawn = []

    def render_line(self, y: int) -> Strip:
        width = self.line_width
        if len(self._drawn) != len(self.rows) or (
            self._drawn and cell_len(self._drawn[0][0]) + len(self._drawn[0][1]) != width
        ):
            self._drawn = self._draw(width)
        if y >= len(self._drawn):
            return Strip.blank(width)
        text, bar = self._drawn[y]
        part = "seriestable--header" if y < self.header_rows else "seriestable--body"
        segments = [Segment(text, self.part_style(part))]
        if bar:
            segments.append(Segment(bar, self.part_style("seriestable--bar")))
        return Strip(segments, width)
