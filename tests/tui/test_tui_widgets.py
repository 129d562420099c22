"""Pure parts of the dashboard: sparkline rows, number formatting, history, replay clock."""

from __future__ import annotations

import io
import math

import pytest
from probetop.probes.core.sample import Announce, Sample
from probetop.tui.ui.replay_clock import MAX_BATCH, ReplayPlayer
from probetop.tui.ui.widgets.bars import column_rows
from probetop.tui.ui.widgets.history import MetricHistory, fmt_value


def test_sparkline_rows_scale_to_max_and_align_right() -> None:
    rows = column_rows([1.0, 50.0, 100.0], width=5, height=1, max_value=100.0)
    assert rows == ["  ▁▄█"]  # any activity shows at least the lowest bar
    # zero and None draw nothing, so an idle row never changes
    assert column_rows([None, 0.0, 0.0], 3, 1, None) == ["   "]


def test_sparkline_two_rows_split_levels() -> None:
    top, bottom = column_rows([100.0, 50.0], width=2, height=2, max_value=100.0)
    assert bottom == "██"
    assert top == "█ "


def test_sparkline_autoscale_uses_visible_max() -> None:
    (row,) = column_rows([1000.0, 1.0, 2.0], width=2, height=1, max_value=None)
    assert row == "▄█"  # 1000 scrolled out: 2 is the top


def test_fmt_value_units() -> None:
    assert fmt_value(None) == "-"
    assert fmt_value(1_500_000.0, "pkt/s") == "1.50M"
    assert fmt_value(12.345, "ms") == "12.3"
    assert fmt_value(25_000.0, "ms") == "25000"  # never k-prefixed milliseconds
    assert fmt_value(99.5, "%", 6) == "  99.5"
    assert fmt_value(math.nan) == "-"


def test_fmt_value_keeps_three_digits_across_a_rounding_boundary() -> None:
    """99.96 pps was '100.0' beside '100' (the decimals were picked before
    rounding); every value shows 3 significant digits."""
    assert fmt_value(99.96, "pkt/s") == "100"
    assert fmt_value(99.94, "pkt/s") == "99.9"
    assert fmt_value(9.996) == "10.0"
    assert fmt_value(-9.996) == "-10.0"
    assert fmt_value(0.0999) == "0.10"
    assert fmt_value(12_345.0, "IO/s") == "12.3k"


def test_history_stats_and_gaps() -> None:
    h = MetricHistory()
    for i, v in enumerate([1.0, None, 3.0, 2.0]):
        h.add(float(i), v)
    assert h.latest == 2.0
    assert (h.stats.count, h.stats.min, h.stats.max, h.stats.mean) == (3, 1.0, 3.0, 2.0)
    assert h.recent(2) == [3.0, 2.0]
    assert h.p99 is not None and 2.9 < h.p99 <= 3.0


def _records(n: int) -> list[tuple[float, object]]:
    out: list[tuple[float, object]] = [(0.0, Announce("p", 0, {"id": "p", "kind": "k"}))]
    out += [(float(i), Sample("p", int(i * 1e9), 1.0, {"v": float(i)})) for i in range(1, n + 1)]
    return out


def test_player_speed_and_pause() -> None:
    player = ReplayPlayer(_records(30))  # type: ignore[arg-type]
    assert len(player.advance(2.0)) == 3  # announce + t=1,2
    player.set_speed(10.0)
    assert len(player.advance(1.0)) == 10  # t=3..12
    assert player.position_s == 12.0
    player.toggle_pause()
    assert player.advance(5.0) == []
    player.toggle_pause()
    player.set_speed(math.inf)
    rest = player.advance(0.01)
    assert len(rest) == 18 and player.at_end and player.position_s == 30.0


def test_player_max_speed_is_batched() -> None:
    player = ReplayPlayer(_records(MAX_BATCH + 10))  # type: ignore[arg-type]
    player.set_speed(math.inf)
    assert len(player.advance(0.01)) == MAX_BATCH
    assert len(player.advance(0.01)) == 11


def test_player_seek_back_rebuilds_from_start() -> None:
    player = ReplayPlayer(_records(30))  # type: ignore[arg-type]
    rebuild, skipped = player.seek(20.0)
    assert not rebuild and len(skipped) == 21
    rebuild, again = player.seek(5.0)
    assert rebuild and [getattr(r, "t_ns", -1) for r in again][-1] == 5_000_000_000
    assert len(again) == 6  # announce + t=1..5: everything from the start
    rebuild, _ = player.seek(-3.0)
    assert rebuild and player.position_s == 0.0


def test_generic_pane_help_escapes_markup() -> None:
    from probetop.tui.ui.screens.help import panes_help
    from probetop.tui.ui.widgets.generic_pane import GenericPane
    from probetop.tui.ui.widgets.registry import pane_for
    from rich.console import Console

    info = {
        "id": "x:1",
        "kind": "no-such-kind",
        "reference_command": "tool --flag [opt]",
        "metrics": [{"name": "eps", "unit": "1/s", "description": "like [ 1s ] lines"}],
    }
    pane = pane_for(info)
    assert isinstance(pane, GenericPane)
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(panes_help([pane.help_text()]))
    text = console.export_text()
    assert "[ 1s ]" in text and "[opt]" in text


def test_pane_help_names_the_panes_own_keys() -> None:
    """The key line shows a focused pane's keys (the CPU pane's ``e``); the
    help, which lists every key, names them too."""
    from probetop.tui.ui.panes.cpu import CpuBenchPane

    rows = CpuBenchPane({"id": "cpu", "kind": "cpu", "params": {}}).help_text().rows
    assert ("key e", "What is one event?") in rows


def test_every_sparkline_row_says_what_it_is_before_its_first_value() -> None:
    """Before a probe's first sample (the iops and warm-up panes wait seconds
    while the native loop compiles) a row shows what it measures in words,
    not the metric's name ('read_iops', 'read_clat_p99_us', 'bw_Bps')."""
    import json

    from probetop.tui.ui.widgets.registry import pane_for
    from probetop.tui.ui.widgets.seriestable import SeriesTable
    from probetop.tui.ui.widgets.sparkrow import SparkRow
    from tui_fixtures import DEMO_FILE

    with DEMO_FILE.open() as f:
        header = json.loads(f.readline())
    kinds = set()
    for info in header["probes"]:
        pane = pane_for(info)
        names = {m["name"] for m in info["metrics"]}
        for row in pane.compose():
            if isinstance(row, SparkRow):
                kinds.add(info["kind"])
                assert "_" not in row.label.text and row.label.text != row.key, info["kind"]
            if isinstance(row, SeriesTable):  # the system panes' one widget
                kinds.add(info["kind"])
                for text in row.lines:
                    assert not names & set(text.split()), (info["kind"], text)
    assert {"cpu", "iops", "warmup", "icmp", "http", "system.cpu"} <= kinds


def test_a_pane_without_samples_says_what_its_probe_last_said() -> None:
    """The compact list read 'waiting for data' while the iops pane compiled
    its loop, and would after the probe had failed: the probe's last word."""
    import json

    from probetop.probes.core.sample import Status
    from probetop.tui.ui.widgets.registry import pane_for
    from tui_fixtures import DEMO_FILE

    with DEMO_FILE.open() as f:
        infos = {i["kind"]: i for i in json.loads(f.readline())["probes"]}
    for kind in ("iops", "cpu", "icmp", "http", "system.cpu", "system.disk"):
        pane = pane_for(infos[kind])
        assert pane.headline_text() == "waiting for data", kind
        pane.add_status(Status(pane.probe_id, 1, "started", f"{kind} started"))
        assert pane.headline_text() == "waiting for data", kind
        pane.add_status(Status(pane.probe_id, 2, "info", "compiling the native I/O loop"))
        assert pane.headline_text() == "compiling the native I/O loop...", kind
        pane.add_status(Status(pane.probe_id, 3, "error", "permission denied"))
        assert pane.headline_text() == "error: permission denied", kind


@pytest.mark.parametrize("height", [6, 9, 14])
def test_a_flat_series_is_charted_on_an_axis_it_can_have(height: int) -> None:
    """ICMP's loss of 0 % all run long was drawn on a row labelled 0.33,
    above a -0.67 %: a flat series gets an axis from 0 with its ends
    labelled, and the line sits on the row labelled 0."""
    import re

    from probetop.tui.ui.screens.maximised import render_chart

    text = render_chart([("%", {"loss %": [(float(t), 0.0) for t in range(5)]})], 60, height, False)
    labels = re.findall(r"^\s*(-?[\d.]+) %┤", text, re.M)
    assert labels and all(float(v) >= 0 for v in labels), labels
    line_row = next(x for x in text.splitlines() if "▄▄▄▄" in x or "▀▀▀▀" in x)
    assert re.match(r"^\s*0(\.0+)? %┤", line_row), line_row
