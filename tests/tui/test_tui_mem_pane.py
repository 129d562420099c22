"""The mem pane at 80x24 and 120x40, replayed from a real recording
(tests/data/mem_threads12_rate300.jsonl: `probetop mem --threads 12 --rate
300 --time 5 --record ...` in an 80x24 tmux, with the passive panes).

Before: the headline said "avg lat 0.00 ms" for operations of about a
microsecond; at 80x24, with three to five rows inside its border (how many
depends on the passive panes' rows), the per-thread view was not shown at
all (its line came after a headline that wrapped, and was cut from the
bottom); maximised, the latency panel had one
row of data and one tick ("0 ms" for values of 1-13 ms)."""

from __future__ import annotations

import re

import pytest
from probetop.probes.record.reader import load_session
from probetop.tui.run.viewconfig import ReplayView, parse_speed
from probetop.tui.ui.app import ProbetopApp, make_app
from probetop.tui.ui.screens.maximised import render_chart
from textual.pilot import Pilot
from tui_fixtures import DATA, screen_text

MEM_FILE = DATA / "mem_threads12_rate300.jsonl"
PER_THREAD = re.compile(r"per thread (\(interval\) )?min \d+ max \d+ \(12 threads\)")


def mem_rows(text: str) -> list[str]:
    """The mem pane's rows inside its border."""
    rows = text.splitlines()
    top = next(i for i, row in enumerate(rows) if "─ mem " in row or "━ mem " in row)
    bottom = next(i for i in range(top + 1, len(rows)) if rows[i][:1] in "╰┗")
    return [row[1:-1].strip() for row in rows[top + 1 : bottom]]


async def paused_at(pilot: Pilot, t: float) -> None:
    app = pilot.app
    app.player.paused = True  # type: ignore[attr-defined]
    await app._seek(t)  # type: ignore[attr-defined]
    for _ in range(3):
        await pilot.pause()
    app.set_focus(None)
    await pilot.pause()


def mem_app() -> ProbetopApp:
    return make_app(ReplayView(load_session(MEM_FILE), speed=parse_speed("1")))


@pytest.mark.parametrize("t", [3.0, 12.0])  # running; finished
@pytest.mark.parametrize("rows", [24, 23, 22])  # the pane: 4, 3 and 1 rows under its sparklines
async def test_at_80x24_the_per_thread_view_and_the_latency_show(t: float, rows: int) -> None:
    app = mem_app()
    async with app.run_test(size=(80, rows)) as pilot:
        await paused_at(pilot, t)
        text = screen_text(app)
        rows = mem_rows(text)
        assert PER_THREAD.search(" ".join(rows)), text
        assert "seq write  block 1K  scope global" in text  # what runs: in the title
        if t < 5:
            lat = re.search(r"avg lat (\S+) (\S+)", " ".join(rows))
            assert lat and lat[2] in ("ns", "µs") and float(lat[1]) > 0, text
        else:
            assert "finished: " in " ".join(rows), text
        assert all(len(row) <= 80 for row in text.splitlines())


async def test_at_120x40_every_thread_has_its_bar() -> None:
    app = mem_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await paused_at(pilot, 3.0)
        rows = mem_rows(screen_text(app))
        assert "operations per thread (interval)" in rows
        bars = [row for row in rows if re.match(r"t\d+ +\S+ +\d+$", row)]
        assert len(bars) == 12, rows
        head = next(row for row in rows if row.startswith("threads 12"))
        assert re.search(r"avg lat [\d.]*[1-9][\d.]* (ns|µs)", head), head


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_maximised_latency_panel_has_readable_ticks(size: tuple[int, int]) -> None:
    app = mem_app()
    async with app.run_test(size=size) as pilot:
        await paused_at(pilot, 12.0)
        app.action_maximise("mem")
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        panel = text[text.index("latency") - 200 :]
        ticks = re.findall(r"^\s*([\d.]+) (ns|µs|ms|s)┤", panel, re.M)
        # two ticks at least, in the unit the values fit (they are 2-3 µs)
        units = {u for _v, u in ticks}
        assert len(ticks) >= 2 and len(units) == 1 and units <= {"ns", "µs"}, text
        assert any(float(v) > 0 for v, _u in ticks), text
        assert f"latency {units.pop()}" in text  # the legend says the axis' unit


def test_a_latency_panel_under_two_others_keeps_its_ticks() -> None:
    """The review's case: 0.9-13 ms under ops/s and MiB/s at 80x24 (a chart
    15 rows high). An even split gave the bottom panel, which also holds the
    time axis, one row of data: one tick, "0 ms"."""
    ts = range(30)
    latency = [(float(t), 0.9 + (t % 7) * 2.0) for t in ts]
    panels = [
        ("ops/s", {"ops/s": [(float(t), 300.0 + t) for t in ts]}),
        ("MiB/s", {"MiB/s": [(float(t), 0.3) for t in ts]}),
        ("ms", {"latency ms": latency}),
    ]
    text = render_chart(panels, 78, 15, False)
    panel = text[text.index("latency ms") - 200 :]
    ticks = re.findall(r"^\s*([\d.]+) ms┤", panel, re.M)
    assert len(ticks) >= 2 and max(float(v) for v in ticks) >= 13, text
