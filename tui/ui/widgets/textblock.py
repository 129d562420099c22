"""Preformatted lines drawn without a layout pass: the panes' cheap table.

A ``Static`` re-lays-out the screen on every ``update``; a ``DataTable`` keeps
a heavy model. Panes redraw once a second over SSH, so this widget takes a
list of strings, repaints only the cells that changed, and asks for a layout
pass only when the number of lines changes (its height follows the line count).
The first ``header_rows`` lines use the ``textblock--header`` component style.

Lines wider than the widget are cropped, which suits a table's rows (a
wrapped row would leave its columns). A table (``header_rows``) whose header
is wider than the widget is cropped at the end of its last header field that
fits whole (``column_cut``), every row at the same cell: a column is shown
with its heading or not at all ("TTFB, ms     t" over half a number said
neither what nor how much). A block of facts (``wrap=True``:
"RTT µs min/avg/max/mdev ...  p50/p90/p99 ...") instead breaks such a line
between its fields (runs of two or more spaces, or after " · ") onto
indented continuation rows, so a narrow pane shows every figure rather than
cutting the last ones off mid-word (a field of prose wider than a row
breaks between its words); its height follows the rows, and a
resize that changes their number costs one layout pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from probetop.tui.ui.widgets.linewidget import LineWidget
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

_FIELD_END = re.compile(r" {2,}|(?<= ·) ")
_WORD = re.compile(r"\S+ *|^ +")
CONTINUATION = "  "
"""Indent of a wrapped line's continuation rows."""


def wrap_fields(line: str, width: int) -> list[str]:
    """``line`` as rows of at most ``width`` cells, broken only between
    fields (see the module docstring); a field wider than a row breaks
    between its words, and one with no space stays whole (the row crops
    it). ``[line]`` when it fits or ``width`` is unknown."""
    if width <= 0 or cell_len(line) <= width:
        return [line]
    fields: list[str] = []
    start = 0
    for gap in _FIELD_END.finditer(line):
        fields.append(line[start : gap.end()])
        start = gap.end()
    fields.append(line[start:])
    # A field wider than a row that is prose (words parted by one space: the
    # warm-up's FRESH VOLUME advice) breaks between its words: cropped, it
    # lost the advice's end at 120 columns. A field with no space stays whole.
    room = max(1, width - len(CONTINUATION))
    fields = [
        word
        for field in fields
        for word in (_WORD.findall(field) if cell_len(field.rstrip()) > room else [field])
    ]
    rows: list[str] = []
    row = ""
    for field in fields:
        if row.strip() and cell_len((row + field).rstrip()) > width:
            rows.append(row.rstrip())
            row = CONTINUATION
        row += field
    rows.append(row.rstrip())
    return rows


def counts_text(prefix: str, counts: list[int]) -> str:
    """Per-thread counts on one line (the cpu and mem panes' squeezed form):
    each of up to four threads, else the spread ("16 threads min 700 max 780")."""
    if len(counts) <= 4:
        return prefix + "  ".join(f"t{i} {n:,}" for i, n in enumerate(counts))
    return f"{prefix}min {min(counts):,} max {max(counts):,} ({len(counts)} threads)"


def pack_fields(fields: Sequence[tuple[int, str]], rows: int, width: int) -> list[str]:
    """Fields (``(priority, text)``, in reading order) as one wrapped line
    that takes at most ``rows`` rows of ``width`` cells: while it is taller,
    the field of lowest priority (the first of equals) is left out. The last
    resort of a squeezed pane's short form (the cpu and mem panes): cut from
    the bottom instead, a pane of three rows lost its per-thread figures
    without a word. ``rows`` or ``width`` 0 (unknown): every field."""
    kept = [f for f in fields if f[1]]
    while len(kept) > 1 and rows > 0 and width > 0:
        if wrapped_rows(["  ".join(text for _p, text in kept)], width) <= rows:
            break
        kept.remove(min(kept, key=lambda f: f[0]))
    return ["  ".join(text for _p, text in kept)] if kept else []


def wrapped_rows(lines: Sequence[str], width: int) -> int:
    """Rows ``lines`` take in a wrapping block ``width`` cells wide."""
    return sum(len(wrap_fields(line, width)) for line in lines)


_HEADER_FIELD_END = re.compile(r"\S(?= {2,}|$)")


def column_cut(header: str, width: int) -> int:
    """The cells a table with ``header`` shows in ``width``: all of them when
    the header fits, else up to the end of the last header field (fields are
    parted by two or more spaces) that fits whole; ``width`` when none does."""
    if width <= 0 or cell_len(header) <= width:
        return width
    cut = 0
    for end in _HEADER_FIELD_END.finditer(header):
        cells = cell_len(header[: end.end()])
        if cells > width:
            break
        cut = cells
    return cut or width


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

    class Resized(Message):
        """The block's number of rows changed outside a data frame too (a key
        that shows an explanation, a paused replay): the panes' grid is planned
        from their heights, so the app plans it again."""

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
        wrap: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines: list[str] = list(lines)
        self.wrap = wrap
        self.rows: list[str] = list(self.lines)  # as drawn: ``lines`` wrapped to the width
        self.header_rows = header_rows
        self.fixed_height = fixed_height
        self._cut_for: tuple[int, str] | None = None  # (width, header) _cut was found for
        self._cut = 0
        self.styles.height = fixed_height if fixed_height is not None else max(1, len(self.rows))

    def _rows(self, lines: Sequence[str]) -> list[str]:
        width = self.line_width if self.is_mounted else 0
        if self.wrap:
            return [row for line in lines for row in wrap_fields(line, width)]
        return list(lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def set_lines(self, lines: Sequence[str], header_rows: int | None = None) -> None:
        """Replace the text; redraw only if it changed, re-layout only if it grew/shrank."""
        lines = list(lines)
        same_header = header_rows is None or header_rows == self.header_rows
        if header_rows is not None:
            self.header_rows = header_rows
        if lines == self.lines and same_header:
            return
        self.lines = lines
        self._show(self._rows(lines))

    def on_resize(self) -> None:
        if self.wrap:  # the same lines may need more or fewer rows now
            self._show(self._rows(self.lines))

    def _show(self, rows: list[str]) -> None:
        """Draw ``rows``: a layout pass if their number changed, else only the
        cells that changed."""
        resized = self.fixed_height is None and max(1, len(rows)) != max(1, len(self.rows))
        old, self.rows = self.rows, rows
        if resized:
            self.styles.height = max(1, len(rows))  # triggers the one layout pass needed
            self.refresh()
            if self.is_mounted:
                self.post_message(self.Resized())
            return
        if self.header_rows and old[:1] != rows[:1]:
            self.refresh()  # a table's new header may cut its columns elsewhere
            return
        # Same shape: repaint only the rows that changed, and each only up to
        # its last changed cell: one new number costs part of one line.
        width = self.line_width
        regions = []
        for y, (before, after) in enumerate(zip(old, rows, strict=False)):
            span = changed_span(before, after)
            if span is not None:
                x0, x1 = span[0], max(span[0] + 1, min(span[1], width))
                regions.append(Region(x0, y, x1 - x0, 1))
        if regions:  # one refresh call: each costs Textual a dirty-set update and a message
            self.refresh(*regions)

    def render_line(self, y: int) -> Strip:
        width = self.line_width
        if y >= len(self.rows):
            return Strip.blank(width)
        part = "textblock--header" if y < self.header_rows else "textblock--body"
        style = self.part_style(part)
        text = self.rows[y]
        if self.header_rows:  # a table: cut at a column's end (see the module docstring)
            key = (width, self.rows[0])
            if self._cut_for != key:
                self._cut_for, self._cut = key, column_cut(self.rows[0], width)
            if self._cut < width:
                text = set_cell_size(text, self._cut)
        # Pad/crop the text itself: one segment per row, the cheapest redraw.
        segments = [Segment(set_cell_size(text, width), style)]
        return Strip(segments, width)
