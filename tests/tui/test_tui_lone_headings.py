"""No pane of the recorded demo ends in a table's heading with no row of
the table under it, at the sizes between 80x24 and 120x40 where the grid
is squeezed. Before: at 120x40 the live demo's iops pane ended in
"completion latency (µs), last interval, log scale" and no percentile."""

from __future__ import annotations

import itertools

import pytest
from textual.pilot import Pilot
from tui_fixtures import demo_app, screen_text

HEADINGS = ("completion latency (µs), last interval, log scale", "this interval ")


async def _paused_at(pilot: Pilot, t: float) -> None:
    app = pilot.app
    app.player.paused = True  # type: ignore[attr-defined]
    await app._seek(t)  # type: ignore[attr-defined]
    for _ in range(4):
        await pilot.pause()


def last_rows(text: str) -> list[str]:
    """The last content row of every pane (the row above a bottom border),
    panes side by side split at their borders."""
    rows = text.splitlines()
    found = []
    for above, row in itertools.pairwise(rows):
        for start in range(len(row)):
            if row[start] in "╰┗" and (start == 0 or row[start - 1] == " "):
                end = next((i for i in range(start + 1, len(row)) if row[i] in "╯┛"), len(row))
                found.append(above[start + 1 : end].strip(" │┃"))
    return found


@pytest.mark.parametrize("size", [(120, 40), (120, 38), (120, 36), (116, 42), (130, 40)])
async def test_no_pane_ends_in_a_lone_table_heading(size: tuple[int, int]) -> None:
    app = demo_app()
    async with app.run_test(size=size) as pilot:
        await _paused_at(pilot, 12.0)
        text = screen_text(app)
        lone = [row for row in last_rows(text) if row.startswith(HEADINGS)]
        assert not lone, text
