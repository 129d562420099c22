"""Preformatted lines drawn without a layout pass: the panes' cheap table.

A ``Static`` re-lays-out the screen on every ``update``; a ``DataTable`` keeps
a heavy model. Panes redraw once a second over SSH, so this widget takes a
list of strings, redraws only when they changed, and asks for a layout pass
only when the number of lines changes (its height follows the line count).
The first ``header_rows`` lines use the ``textblock--header`` component style.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


class TextBlock(Widget):
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
        # Same shape: repaint only the rows that changed, so one new number
        # costs one terminal line, not the whole table.
        width = self.size.width
        for y, (before, after) in enumerate(zip(old, lines, strict=False)):
            if before != after:
                self.refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y >= len(self.lines):
            return Strip.blank(width)
        part = "textblock--header" if y < self.header_rows else "textblock--body"
        style = self.get_component_rich_style(part)
        # Pad/crop the text itself: one segment per row, the cheapest redraw.
        return Strip([Segment(set_cell_size(self.lines[y], width), style)], width)
