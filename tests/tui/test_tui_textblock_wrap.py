"""A block of facts wraps between its fields; a table's rows still crop.

Before, every TextBlock cropped a line at the pane's edge: at 120x40 the
demo's ICMP pane lost its p50/p90/p99 figures, the CPU pane ended in "(e"
and the HTTP pane in "skipped turn" and "tim".
"""

from __future__ import annotations

import re

from probetop.tui.ui.panes.icmp import rtt_line
from probetop.tui.ui.widgets.textblock import CONTINUATION, TextBlock, wrap_fields
from rich.cells import cell_len
from textual.app import App, ComposeResult

RTT = "RTT µs min/avg/max/mdev 14.1/24.7/56.5/7.41  p50/p90/p99 22.8/34.3/52.7"
HEADER = "raw socket · 200 req/s · 127.0.0.1 via lo · 56 B payload · grace 1 s"


def test_a_line_that_fits_is_one_row() -> None:
    assert wrap_fields(RTT, len(RTT)) == [RTT]
    assert wrap_fields(RTT, 0) == [RTT]  # width unknown (not mounted yet)


def test_wrapped_rows_fit_keep_every_field_and_never_cut_a_word() -> None:
    for line in (RTT, HEADER, "lost 0  duplicates 0  reordered 0  late 0  in flight 0"):
        widest = max(cell_len(f) for f in re.split(r" {2,}| · ", line))
        for width in range(widest + len(CONTINUATION) + 2, cell_len(line)):
            rows = wrap_fields(line, width)
            assert all(cell_len(row) <= width for row in rows), (width, rows)
            assert all(row.startswith(CONTINUATION) for row in rows[1:])
            assert " ".join(" ".join(rows).split()) == " ".join(line.split())


def test_rtt_line_splits_before_its_percentiles() -> None:
    assert wrap_fields(RTT, 55) == [
        "RTT µs min/avg/max/mdev 14.1/24.7/56.5/7.41",
        "  p50/p90/p99 22.8/34.3/52.7",
    ]
    assert rtt_line.__doc__  # the pane's own line has this shape


def test_a_field_wider_than_the_row_stays_whole() -> None:
    long = "x" * 50
    assert wrap_fields(f"a  {long}  b", 20) == ["a", f"  {long}", "  b"]


class Host(App[None]):
    def __init__(self, block: TextBlock) -> None:
        super().__init__()
        self.block = block

    def compose(self) -> ComposeResult:
        yield self.block


async def test_the_block_grows_with_its_rows_and_follows_a_resize() -> None:
    wrapped = TextBlock(["starting..."], wrap=True)
    async with Host(wrapped).run_test(size=(50, 10)) as pilot:
        wrapped.set_lines([HEADER, RTT])
        await pilot.pause()
        shown = [wrapped.render_line(y).text.rstrip() for y in range(wrapped.size.height)]
        assert len(shown) == len(wrapped.rows) > 2
        text = " ".join(" ".join(shown).split())
        for figure in ("22.8/34.3/52.7", "grace 1 s", "56 B payload"):
            assert figure in text, shown
        await pilot.resize_terminal(120, 10)
        await pilot.pause()
        assert wrapped.rows == [HEADER, RTT] and wrapped.size.height == 2


async def test_a_table_block_still_crops() -> None:
    table = TextBlock(["starting..."])
    async with Host(table).run_test(size=(50, 10)) as pilot:
        table.set_lines([RTT])
        await pilot.pause()
        assert table.rows == [RTT] and table.size.height == 1


async def test_e_in_a_paused_replay_shows_the_explanation() -> None:
    """A pane's content that grows between frames gets its rows: ``e`` in a
    paused (or ended) replay showed nothing, the CPU pane kept the height
    planned before the explanation was there."""
    from probetop.tui.ui.panes.cpu import CpuBenchPane
    from tui_fixtures import demo_app

    app = demo_app()
    async with app.run_test(size=(200, 60)) as pilot:
        app.player.paused = True  # type: ignore[union-attr]
        await app._seek(12.0)
        await pilot.pause()
        (pane,) = [p for p in app.panes.values() if isinstance(p, CpuBenchPane)]
        before = pane.size.height
        pane.focus()
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        await pilot.pause()
        rows = len(pane.explain_block.rows)
        assert rows >= 2 and pane.size.height >= before + rows, (before, pane.size.height)
        assert pane.explain_block.size.height == rows
