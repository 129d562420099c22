"""Every pane of the recorded demo, at the sizes people use: numbers read one
way (bytes with a space and their prefixed unit), no line is cut at the
pane's edge, and the maximised chart's y axis carries the unit."""

from __future__ import annotations

import re

import pytest
from probetop.tui.analysis.axis import axis_ticks, nice_ticks
from probetop.tui.ui.panes.cpu import side_by_side
from probetop.tui.ui.panes.disk import map_line
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.sparkrow import value_label
from probetop.tui.ui.widgets.textblock import TextBlock, column_cut
from probetop.tui.ui.widgets.units import fmt_with_unit
from rich.cells import cell_len, set_cell_size
from tui_fixtures import demo_app, screen_text, wait_for

# A byte figure glued to its number: "8.04MB/s", "134MB", "12kB".
GLUED_BYTES = re.compile(r"\d(?:[kMGTP]i?)?B(?:/s)?\b")


def test_one_formatter_for_sizes_and_rates() -> None:
    assert fmt_with_unit(12.0e6, "B") == "12.0 MB"
    assert fmt_with_unit(134_217_728, "B") == "134 MB"
    assert fmt_with_unit(8_040_000, "B/s") == "8.04 MB/s"
    assert fmt_with_unit(512, "B") == "512 B"
    assert fmt_with_unit(None, "B/s") == "- B/s"
    assert fmt_with_unit(2841, "IO/s") == "2841 IO/s"
    assert fmt_with_unit(36_600, "IO/s", 12) == "  36.6k IO/s"
    assert fmt_with_unit(3, "/s") == "3.00/s"
    assert value_label("throughput", 995_000, "B/s").endswith(" 995 kB/s")
    assert value_label("throughput", 123e6, "B/s").endswith(" 123 MB/s")


def test_a_table_is_cut_at_a_column_end() -> None:
    header = "URL        latest   TTFB, ms     total, ms   HTTP errors"
    assert column_cut(header, 80) == 80  # it fits: nothing cut
    assert header[: column_cut(header, 40)].endswith("TTFB, ms")
    assert header[: column_cut(header, 28)].endswith("TTFB, ms")
    assert header[: column_cut(header, 27)].endswith("latest")
    assert column_cut(header, 2) == 2  # no field fits: crop as before


def test_side_by_side_stacks_when_the_pane_is_narrow() -> None:
    left, right = ["abc", "de"], ["xy", "z", "w"]
    assert side_by_side(left, right, 0) == ["abc  xy", "de   z", "     w"]
    assert side_by_side(left, right, 7) == ["abc  xy", "de   z", "     w"]
    assert side_by_side(left, right, 6) == ["abc", "de", "xy", "z", "w"]


def test_the_done_map_fits_its_width_and_keeps_its_end() -> None:
    cells = [1.0] * 60 + [0.0] * 3 + [1.0]
    assert map_line(cells) == "█" * 60 + "···█"
    short = map_line(cells, 16)
    assert len(short) == 16 and short[0] == "█" and short[-1] == "▒"  # the end still shows


@pytest.mark.parametrize(
    ("values", "unit", "labels"),
    [
        ([1_234_567.0, 2_345_678.0], "B/s", ["1.0 MB/s", "1.5 MB/s", "2.0 MB/s", "2.5 MB/s"]),
        ([12.3, 480.0], "µs", ["0 µs", "200 µs", "400 µs", "600 µs"]),
        ([28_410.0, 31_000.0], "pkt/s", ["28k pkt/s", "29k pkt/s", "30k pkt/s", "31k pkt/s"]),
        ([0.0, 0.0], "%", ["0 %", "1 %"]),
        ([100.0, 100.0], "%", ["0 %", "100 %"]),  # a busy core: never an axis to 200 %
        ([70.0, 70.0], "%", ["0 %", "100 %"]),
        ([30.0, 30.0], "%", ["0 %", "60 %"]),
        ([5.0, 5.0], "ms", ["0 ms", "10 ms"]),
        # times in the unit that fits: a few µs given in ms read "0.0025 ms"
        ([0.002, 0.0035], "ms", ["2.0 µs", "2.5 µs", "3.0 µs", "3.5 µs"]),
        ([12_000.0, 30_000.0], "ms", ["10 s", "20 s", "30 s"]),
    ],
)
def test_axis_ticks_are_round_and_carry_the_unit(
    values: list[float], unit: str, labels: list[str]
) -> None:
    assert axis_ticks(values, unit, 4)[1] == labels


def test_nice_ticks_span_the_values() -> None:
    for low, high in ((0.1, 0.37), (1e6, 1e6 + 10), (-5.0, 3.0), (2841.0, 3100.0)):
        ticks = nice_ticks(low, high, 5)
        assert ticks[0] <= low and ticks[-1] >= high and 2 <= len(ticks) <= 20, ticks


def _cut_lines(app) -> list[str]:  # type: ignore[no-untyped-def]
    """Lines of the displayed panes wider than their widget, as drawn."""
    cut = []
    for pane in app.panes.values():
        if not pane.display:
            continue
        for block in pane.query(TextBlock):
            if not block.display:
                continue
            width = block.content_region.width
            for row in block.rows:
                if block.header_rows:
                    row = set_cell_size(row, column_cut(block.rows[0], width)).rstrip()
                if cell_len(row) > width:
                    cut.append(f"{pane.probe_id} ({width} cells): {row}")
    return cut


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (60, 16)])
async def test_no_pane_cuts_a_line_or_glues_a_byte_unit(size: tuple[int, int]) -> None:
    """At 120x40 the CPU pane's "core busy % (all p" and its cores' numbers
    were cut, the warm-up pane wrote "8.88MB / 134MB" and "8.50MB/s", the
    HTTP table's header ended in "t", the done map lost its end."""
    app = demo_app(speed="max")
    async with app.run_test(size=size) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 8 and app.player.at_end)
        await pilot.pause()
        cut: list[str] = []
        glued: list[str] = []
        for _ in range(len(app.panes)):  # compact layouts show one pane at a time: visit each
            await pilot.pause()
            cut += _cut_lines(app)
            glued += GLUED_BYTES.findall(screen_text(app))
            if not app.compact:
                break
            await pilot.press("tab")
        assert not cut, "\n".join(cut)
        assert not glued, glued


async def test_50x15_says_whole_that_it_is_too_small() -> None:
    app = demo_app(speed="max")
    async with app.run_test(size=(50, 15)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Terminal too small: 50x15." in text and "needs at least" in text, text


async def test_the_maximised_chart_writes_its_axis_in_the_unit() -> None:
    """The warm-up pane's bytes/s axis read "1234567.0"."""
    from probetop.tui.ui.panes.disk import WarmupPane

    app = demo_app(speed="max")
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: len(app.panes) == 8 and app.player.at_end)
        (pane,) = [p for p in app.panes.values() if isinstance(p, WarmupPane)]
        app.action_maximise(pane.probe_id)
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        axis = re.findall(r"^ *([^│┤\n]*?)┤", text, re.M)
        assert any(label.endswith(" MB/s") for label in axis), axis
        assert any(label.endswith(" IO/s") for label in axis), axis
        assert all(re.fullmatch(r"-?[\d.]+k? ?[kMG]?(B/s|IO/s)|0", a) for a in axis), axis


def test_report_fits_80_columns_and_its_commands_still_paste() -> None:
    """`probetop report` of the demo: params were one 650-cell line, the
    fio command 206, metric@entity rows 88, charts 100 when piped."""
    import io
    import shlex

    from probetop.probes.record.reader import load_session
    from probetop.tui.commands.report import print_report
    from tui_fixtures import DEMO_FILE

    out = io.StringIO()
    print_report(load_session(DEMO_FILE), charts=True, out=out)
    lines = out.getvalue().splitlines()
    # The recording's path is one word, never cut (it must paste): in a clone
    # at a 150-character path its line alone is wider than 80 cells.
    whole_path = f"recording  {DEMO_FILE}"
    wide = [line for line in lines if cell_len(line) > 80 and line != whole_path]
    assert not wide, "\n".join(wide)
    # The charts' y axes in the metric's unit, not raw floats ("1109791.6┤").
    raw = re.findall(r"^ *(-?\d{5,}(?:\.\d+)?)┤", out.getvalue(), re.M)
    assert not raw, raw
    assert re.search(r"^ *[\d.]+ [kM]B/s┤", out.getvalue(), re.M)
    # A wrapped command, its continuations joined, is the recorded one.
    session = load_session(DEMO_FILE)
    for info in session.probes.values():
        ref = info.get("reference_command")
        if not ref:
            continue
        start = next(i for i, line in enumerate(lines) if line.startswith("   reference: "))
        lines = lines[start:]
        text = lines[0].removeprefix("   reference: ")
        for line in lines[1:]:
            if not text.endswith(" \\"):
                break
            text = text[:-2] + " " + line.strip()
        assert shlex.split(text) == shlex.split(ref), (text, ref)
        lines = lines[1:]


@pytest.mark.parametrize("mode", ["replay", "live"])
async def test_help_lists_the_keys_that_work_here(mode: str) -> None:
    """A replay's help offered a (add probe), r (record) and d (detach),
    which do nothing there; a live run's offered the playback keys."""
    from probetop.tui.ui.screens.help import HelpScreen
    from tui_fixtures import live_app

    app = demo_app() if mode == "replay" else live_app()
    async with app.run_test(size=(100, 60)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        live_only = ("add a probe", "start / stop recording", "detach:")
        replay_only = ("pause / resume playback", "seek 10 s", "jump to the start")
        shown, hidden = (replay_only, live_only) if mode == "replay" else (live_only, replay_only)
        assert all(t in text for t in shown), text
        assert not any(t in text for t in hidden), text


def test_compare_chart_axis_in_the_unit_and_80_wide() -> None:
    from probetop.tui.commands.compare import terminal_chart

    a = [(float(t), 1.0e6 + 37_123.4 * t) for t in range(30)]
    b = [(float(t), 1.1e6 - 11_017.9 * t) for t in range(30)]
    text = terminal_chart("read bandwidth", "B/s", a, b, False)
    assert not re.findall(r"^ *(-?\d{5,}(?:\.\d+)?)┤", text, re.M), text
    assert re.search(r"^ *[\d.]+ MB/s┤", text, re.M), text
    assert max(cell_len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.00041, "ms", "0.41 µs"),  # a 1K memory operation: it read "0.00 ms"
        (0.0000412, "ms", "41.2 ns"),
        (0.42, "ms", "0.42 ms"),  # two digits already: as before
        (5.0, "ms", "5.00 ms"),
        (12_345_678.0, "µs", "12.3 s"),
        (0.0, "ms", "0 ms"),
        (None, "ms", "- ms"),
        (0.0004, "MB/s", "0.00 MB/s"),  # not a time: as before
    ],
)
def test_a_time_is_written_in_the_unit_that_fits_it(
    value: float | None, unit: str, text: str
) -> None:
    assert fmt_with_unit(value, unit) == text
    if value is not None and unit == "ms":
        assert value_label("latency", value, unit).split()[-2:] == text.split()


def test_a_time_in_a_fixed_unit_column_never_reads_zero() -> None:
    assert fmt_value(0.00041, "ms") == "0.00041"
    assert fmt_value(0.0000412, "µs", 8) == "0.000041"
    assert fmt_value(0.0049, "ms") == "0.0049"
    assert fmt_value(0.0004, "MB/s") == "0.00"  # a column scaled to MB/s: as before
