"""How the panes share the terminal: a grid that shows every pane, or a
compact list of headlines when even a squeezed grid would not fit.

``plan_grid(heights, width, height)`` is pure (tested with numbers):

1. the fewest columns (of at least ``MIN_PANE_WIDTH`` cells) in which every
   pane gets its natural height: one column for the three passive panes,
   two for the demo's eight at 200x60;
2. else the most columns that fit the width, the rows sharing the height
   (a short row keeps its natural height, the taller ones share the rest
   evenly) as long as every row gets ``MIN_PANE_HEIGHT``: the demo's eight
   panes at 120x40;
3. else compact: one headline line per pane and the focused pane's details
   below it (80x24 with the demo).

``PaneLayout`` keeps the panes' container laid out: ``update(size)`` plans
again and applies the plan (Textual grid layout with exact row heights) only
when it changed, so data updates never cause a layout pass; in compact mode
it also keeps the selected pane and the ``PaneIndex`` (one line per pane,
redrawn line by line).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probetop.tui.ui.widgets.pane import ProbePane, fit_title
from probetop.tui.ui.widgets.textblock import TextBlock
from probetop.tui.ui.widgets.units import fit_fields
from rich.cells import cell_len, set_cell_size
from textual import events
from textual.message import Message
from textual.widget import Widget

MIN_PANE_WIDTH = 56  # a pane narrower than this cuts its table
MIN_PANE_HEIGHT = 5  # border + three rows: the headline rows of every pane
MIN_DETAIL_HEIGHT = 8  # compact mode: the focused pane gets at least this


@dataclass(frozen=True, slots=True)
class GridPlan:
    """``columns`` and one height per grid row; ``compact`` instead of a grid."""

    columns: int
    rows: tuple[int, ...]
    compact: bool = False


def share(wanted: Sequence[int], total: int, floor: int = MIN_PANE_HEIGHT) -> tuple[int, ...]:
    """Split ``total`` rows among rows that want ``wanted``: a row that wants
    less than an even share keeps what it wants, the rest share the remainder
    evenly (the first ones get the odd rows); none gets less than ``floor``."""
    given = [0] * len(wanted)
    left, todo = total, list(range(len(wanted)))
    while todo:
        fair = left // len(todo)
        small = [i for i in todo if wanted[i] <= fair]
        if not small:
            extra = left - fair * len(todo)
            for n, i in enumerate(todo):
                given[i] = max(floor, fair + (1 if n < extra else 0))
            break
        for i in small:
            given[i] = wanted[i]
            left -= wanted[i]
        todo = [i for i in todo if i not in small]
    return tuple(given)


def plan_grid(heights: Sequence[int], width: int, height: int, min_columns: int = 1) -> GridPlan:
    """The layout for panes of natural ``heights`` in ``width`` x ``height``
    (``min_columns``: at least this many columns when there are that many
    panes and they fit the width, e.g. two on a very wide terminal)."""
    n = len(heights)
    if n == 0:
        return GridPlan(1, ())
    max_cols = max(1, min(n, width // MIN_PANE_WIDTH))
    first = max(1, min(min_columns, max_cols))

    def rows_for(cols: int) -> list[int]:
        return [max(heights[i : i + cols]) for i in range(0, n, cols)]

    for cols in range(first, max_cols + 1):
        rows = rows_for(cols)
        if sum(rows) <= height:
            return GridPlan(cols, tuple(rows))
    rows = rows_for(max_cols)
    if len(rows) * MIN_PANE_HEIGHT <= height:
        return GridPlan(max_cols, share(rows, height))
    return GridPlan(1, (), compact=True)


def apply_plan(
    plan: GridPlan, box: Widget, panes: Sequence[Widget], index: PaneIndex, selected: int
) -> None:
    """Lay ``panes`` (children of ``box``) out as ``plan`` says; in compact
    mode only ``panes[selected]`` is shown, below the ``index``."""
    box.set_class(not plan.compact, "-grid")
    box.set_class(plan.compact, "-compact")
    index.display = plan.compact
    if plan.compact:
        box.styles.layout = "vertical"
        for i, pane in enumerate(panes):
            pane.display = i == selected
        return
    box.styles.layout = "grid"
    box.styles.grid_size_columns = plan.columns
    box.styles.grid_rows = [str(h) for h in plan.rows] or ["auto"]
    for pane in panes:
        pane.display = True


class PaneIndex(TextBlock):
    """The compact list: one line per pane, ``▸`` on the focused one.

    A click on a line posts ``PaneIndex.Selected`` with the pane's index."""

    class Selected(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    TITLE_WIDTH = 24
    first = 0  # the entry on the list's first line (it scrolls with the selection)

    def show(
        self, entries: Sequence[tuple[str, str]], selected: int, max_lines: int | None = None
    ) -> None:
        """``entries``: (title, headline) per pane, in pane order; at most
        ``max_lines`` of them, a window that keeps ``selected`` in view (50
        ICMP panes made the list taller than the terminal, which scrolled
        the status line and the selected pane out of sight)."""
        width = self.size.width or 80
        title_w = min(self.TITLE_WIDTH, max((cell_len(t) for t, _h in entries), default=0))
        shown = len(entries) if max_lines is None else max(1, min(max_lines, len(entries)))
        first = min(max(0, self.first), len(entries) - shown)
        if selected >= 0 and not first <= selected < first + shown:
            first = max(0, min(selected - shown // 2, len(entries) - shown))
        self.first = first
        lines = []
        for i, (title, headline) in enumerate(entries[first : first + shown], start=first):
            mark = "▸" if i == selected else " "
            text = f"{mark} {set_cell_size(fit_title(title, title_w), title_w)}  {headline}"
            lines.append(fit_fields(text, width))
        self.set_lines(lines, header_rows=0)

    def on_click(self, event: events.Click) -> None:
        if 0 <= event.y < len(self.lines):
            self.post_message(self.Selected(self.first + event.y))


class PaneLayout:
    """The panes of ``box`` laid out by ``plan_grid``; see the module docstring."""

    def __init__(self, box: Widget, index: PaneIndex, chrome_rows: int, wide_columns: int) -> None:
        self.box = box
        self.index = index
        self.chrome_rows = chrome_rows  # rows of the screen that are not panes
        self.wide_columns = wide_columns  # from this width: two columns at least
        self.plan: GridPlan | None = None
        self.selected: str | None = None  # compact mode: the pane shown in full
        self._applied: tuple[object, ...] = ()  # (plan, pane ids, selected) last laid out

    @property
    def compact(self) -> bool:
        return self.plan is not None and self.plan.compact

    def panes(self) -> list[ProbePane]:
        """Panes in screen order."""
        return [c for c in self.box.children if isinstance(c, ProbePane)]

    def reset(self) -> None:
        """Forget the last plan (the panes are about to be replaced)."""
        self.plan = None
        self._applied = ()

    def update(self, width: int, height: int, focused: ProbePane | None = None) -> bool:
        """Plan for ``width`` x ``height``; apply if anything changed. True if it did."""
        panes = self.panes()
        if not panes:
            return False
        heights = [pane.natural_height() for pane in panes]
        wide = 2 if width >= self.wide_columns else 1
        plan = plan_grid(heights, width, height - self.chrome_rows, min_columns=wide)
        ids = [p.probe_id for p in panes]
        if plan.compact and self.selected not in ids:
            self.selected = focused.probe_id if focused is not None else ids[0]
        selected = ids.index(self.selected) if plan.compact and self.selected in ids else -1
        applied = (plan, tuple(ids), selected)
        changed = applied != self._applied  # a new plan, a new pane, another pane selected
        if changed:
            self._applied = applied
            self.plan = plan
            apply_plan(plan, self.box, panes, self.index, selected)
        if plan.compact:
            entries = [(p.full_title or str(p.border_title), p.headline_text()) for p in panes]
            room = height - self.chrome_rows - MIN_DETAIL_HEIGHT  # the selected pane's share
            self.index.show(entries, selected, max_lines=room)
        return changed

    def select(self, pane_id: str) -> None:
        """Compact mode: show ``pane_id`` below the list (applied by ``update``)."""
        self.selected = pane_id

    def step(self, step: int) -> ProbePane | None:
        """Compact mode: the pane ``step`` places after (or before) the selected one."""
        panes = self.panes()
        if not panes:
            return None
        ids = [p.probe_id for p in panes]
        i = ids.index(self.selected) if self.selected in ids else 0
        pane = panes[(i + step) % len(panes)]
        self.selected = pane.probe_id
        return pane
