"""Pure parts of the layout: the grid plan, titles, labels, bars, the report table."""

from __future__ import annotations

from probetop.tui.ui.widgets.bars import column_rows, hbar, log_fraction, value_bar
from probetop.tui.ui.widgets.pane import fit_title, title_for
from probetop.tui.ui.widgets.panegrid import MIN_PANE_HEIGHT, GridPlan, plan_grid, share
from probetop.tui.ui.widgets.units import (
    fit_fields,
    human_label,
    label_with_unit,
    scale_for,
    unit_family,
    unit_in_label,
)

# The demo's eight panes, natural heights (border included), in screen order.
DEMO = [6, 6, 7, 8, 17, 8, 10, 8]


def test_every_demo_pane_fits_120x40_in_two_squeezed_columns() -> None:
    plan = plan_grid(DEMO, 120, 38)
    assert plan.columns == 2 and not plan.compact
    assert len(plan.rows) == 4 and sum(plan.rows) == 38
    assert plan.rows[:2] == (6, 8)  # short rows keep their natural height
    assert min(plan.rows) >= MIN_PANE_HEIGHT


def test_natural_heights_when_they_fit_fewest_columns_first() -> None:
    assert plan_grid([5, 6, 9], 120, 38) == GridPlan(1, (5, 6, 9))  # the passive panes
    assert plan_grid(DEMO, 200, 58) == GridPlan(2, (6, 8, 17, 10))
    assert plan_grid([5, 6, 9], 200, 48, min_columns=2) == GridPlan(2, (6, 9))
    assert plan_grid([], 80, 22) == GridPlan(1, ())


def test_compact_when_even_a_squeezed_grid_does_not_fit() -> None:
    assert plan_grid(DEMO, 80, 22).compact  # one column of eight: 8 x 5 > 22
    assert not plan_grid([5, 6, 9], 80, 22).compact


def test_share_gives_short_rows_what_they_want() -> None:
    assert share([6, 8, 17, 10], 38) == (6, 8, 14, 10)
    assert share([20, 20], 15) == (8, 7)
    assert share([20, 20, 20], 9) == (MIN_PANE_HEIGHT,) * 3  # never under the floor


def test_titles_drop_whole_words_never_a_stub() -> None:
    title = title_for("http", "http:127.0.0.1:8080/delay?ms=20+1")
    assert title.replace("\u00a0", " ") == "http  127.0.0.1:8080/delay?ms=20 (+1 more)"
    assert fit_title(title, 60) == "http  127.0.0.1:8080/delay?ms=20 (+1 more)"
    assert fit_title(title, 40) == "http  127.0.0.1:8080/delay?ms=20"  # "(+1 more)" goes whole
    assert fit_title(title, 10) == "http"
    assert (
        fit_title("iops  /tmp/x.img  randread bs=4096 jobs=1", 30) == "iops  /tmp/x.img  randread"
    )
    assert title_for("system.cpu", "system.cpu") == "system.cpu"
    assert title_for("icmp", "icmp:127.0.0.1") == "icmp  127.0.0.1"
    for width in range(1, 60):
        fitted = fit_title(title, width)
        assert len(fitted) <= width and "…" not in fitted and not fitted.endswith("+1")


def test_human_labels_and_units() -> None:
    assert human_label("read_clat_p99_us", "µs") == "p99 read latency"
    assert human_label("read_iops", "IO/s") == "read"
    assert label_with_unit("read_iops", "IO/s") == "read IO/s"
    assert label_with_unit("busy_pct", "%") == "busy %"
    assert label_with_unit("rx_errors", "/s") == "rx errors/s"
    assert human_label("bw_Bps", "B/s") == "bandwidth"
    assert human_label("lat_pct_ms", "ms") == "latency percentile"
    assert human_label("load15", "") == "load avg 15 min"
    assert human_label("eps", "events/s") == "events/s"
    assert scale_for([9.2e6, 1e3], "B/s") == (1e6, "MB/s")
    assert scale_for([36_600.0], "IO/s") == (1.0, "IO/s")  # counts keep their k suffix
    assert unit_family("pkt/s") == unit_family("/s") == "/s" != unit_family("B/s")
    assert unit_in_label("loss %") == "%" and unit_in_label("rtt p99 µs") == "µs"
    assert unit_in_label("probe pps") == "pkt/s" and unit_in_label("ttfb a/b") == ""
    # A counted rate names its unit whole: the CPU pane's maximised chart was
    # titled "/s" for events/s. Byte rates keep their family.
    assert unit_in_label("events/s") == "events/s" and unit_in_label("x MB/s") == "B/s"
    assert unit_in_label("MiB/s") == "MiB/s" and scale_for([3e3], "MiB/s") == (1.0, "MiB/s")
    assert fit_fields("a  bb  cc  dd", 9) == "a  bb  cc"


def test_one_bar_implementation() -> None:
    assert hbar(0.5, 4) == "██  "
    assert hbar(1 / 16, 2) == "▏ "
    assert hbar(None, 3) == "   " and hbar(0.0, 3, pad="·") == "···"
    assert value_bar(50, 100, 4) == "██  " and value_bar(5, 0, 2) == "  "
    assert value_bar(0.001, 100, 4, at_least_one=True) == "▏   "
    assert value_bar(log_fraction(10, 1, 100), 1.0, 10).rstrip() == "█" * 5  # disk's log_bar
    assert column_rows([1.0, 50.0, 100.0], 5, 1, 100.0) == ["  ▁▄█"]
    assert column_rows([1.0, 50.0, 100.0], 5, 1, 100.0, align="left") == ["▁▄█  "]


def test_report_table_aligns_long_metric_names() -> None:
    from probetop.tui.run.runner import stats_table

    rows = [
        ("ttfb_ms@127.0.0.1:41949/bytes?n=100000", ["0.898", "2.14", "4.81"], "ms"),
        ("errors", ["0", "0", "12345.6"], ""),
    ]
    header, *body = stats_table(rows, ["min", "mean", "max"]).splitlines()
    for head in ("min", "mean", "max"):  # every cell ends under the end of its heading
        right = header.index(head) + len(head)
        for line, (_name, cells, _unit) in zip(body, rows, strict=True):
            assert line[:right].endswith(cells[["min", "mean", "max"].index(head)]), line
    assert body[0].endswith("  ms") and header.endswith("  unit")


def test_changed_span_covers_what_moved() -> None:
    from probetop.tui.ui.widgets.textblock import changed_span

    assert changed_span("vda 12 0", "vda 12 0") is None
    assert changed_span("vda 12 0", "vda 13 0") == (5, 6)  # only up to the change
    # A shorter line: the text after the change moved left, and the old last
    # cells must be cleared: repaint to the end of the longer one.
    before, after = "rtt 6.14 µs ▁▃█ 57.3 µs", "rtt 6.14 µs ▁▃█ 5.3 µs"
    assert changed_span(before, after) == (17, len(before))
    assert changed_span("ab", "abc") == (2, 3)
