"""Preformatted lines drawn without a layout pass: the panes' cheap table.

A ``Static`` re-lays-out the screen on every ``update``; a ``DataTable`` keeps
a heavy model. Panes redraw once a second over SSH, so this widget takes a
list of strings, repaints only the cells that changed, and asks for a layout
pass only when the number of lines changes (its height follows the line count).
The first ``header_rows`` lines use the ``textblock--header`` component style.
"""

from __future__ import annotations

from collections.abc import Sequence

from probetop.tui.widgets.linewidget import LineWidget
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip


def changed_span(before: str, after: str) -> tuple[int, int] | None:
    """The cells ``[start, end)`` where two renderings of one row differ, or
    None when they are the same. Textual repaints a dirty row from the
    widget's left edge up to the dirty region's right end, so marking only
    up to ``end`` saves the unchanged cells right of a change (a table row
    whose last column did not change, the blank rest of a filling sparkline)."""
    if before == after:
        return None
    n = min(len(before), len(after))
    start = 0
    while start < n and before[start] == after[start]:
        start += 1
    x0 = cell_len(after[:start])
    old_w, new_w = cell_len(before), cell_len(after)
    if old_w != new_w or len(before) != len(after):
        # The text after the change moved: repaint to the end of the longer one.
        return x0, max(old_w, new_w, x0 + 1)
    end = len(after)
    while end > start and before[end - 1] == after[end - 1]:
        end -= 1
    return x0, max(cell_len(after[:end]), x0 + 1)


class TextBlock(LineWidget):
    """Fixed lines of text; see the module docstring."""

    COMPONENT_CLASSES = {"textblock--header", "textblock--body"}

    DEFAULT_CSS = """
    TextBlock {
        height: 1;
        width: 1fr;
    }
    TextBlock > .textblock--header {
        color: $text-muted;
        text-style: bold;
    }
    TextBlock > .textblock--body {
        color: $foreground;
    }
    """

    def __init__(
        self,
        lines: Sequence[str] = (),
        *,
        header_rows: int = 0,
        fixed_height: int | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines: list[str] = list(lines)
        self.header_rows = header_rows
        self.fixed_height = fixed_height
        self.styles.height = fixed_height if fixed_height is not None else max(1, len(self.lines))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def set_lines(self, lines: Sequence[str], header_rows: int | None = None) -> None:
        """Replace the text; redraw only if it changed, re-layout only if it grew/shrank."""
        lines = list(lines)
        if header_rows is not None:
            self.header_rows = header_rows
        if lines == self.lines:
            return
        resized = self.fixed_height is None and max(1, len(lines)) != max(1, len(self.lines))
        old, self.lines = self.lines, lines
        if resized:
            self.styles.height = max(1, len(lines))  # triggers the one layout pass needed
            self.refresh()
            return
        # Same shape: repaint only the rows that changed, and each only up to
        # its last changed cell: one new number costs part of one line.
        width = self.line_width
        regions = []
        for y, (before, after) in enumerate(zip(old, lines, strict=False)):
            span = changed_span(before, after)
            if span is not None:
                x0, x1 = span[0], max(span[0] + 1, min(span[1], width))
                regions.append(Region(x0, y, x1 - x0, 1))
        if regions:  # one refresh call: each costs Textual a dirty-set update and a message
            self.refresh(*regions)

    def render_line(self, y: int) -> Strip:
        width = self.line_width
        if y >= len(self.lines):
            return Strip.blank(width)
        part = "textblock--header" if y < self.header_rows else "textblock--body"
        style = self.part_style(part)
        # Pad/crop the text itself: one segment per row, the cheapest redraw.
        segments = [Segment(set_cell_size(self.lines[y], width), style)]
        return Strip(segments, width)
