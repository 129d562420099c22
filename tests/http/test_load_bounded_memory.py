"""A load run of any length holds bounded memory (issue 29): the summary
keeps the newest KEEP_ROWS interval rows, counts the older ones as
``intervals_dropped``, and the text report says where every row is."""

from __future__ import annotations

import tracemalloc

from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.http.load.probe import KEEP_ROWS, LoadRun
from probetop.probes.http.load.report import render_load_report
from probetop.probes.http.load.settings import LoadSettings


def _lines(run: LoadRun, count: int) -> None:
    for _ in range(count):
        run.add({"seconds": 1.0, "scheduled": 10, "sent": 10, "done": 10, "in_flight_max": 1})


def test_memory_stays_flat_and_the_summary_says_what_was_dropped() -> None:
    run = LoadRun(LoadSettings(rate=10.0, connections=1))
    limit, warm, more = 100, 300, 3000
    run.rows = IntervalLog(limit)
    tracemalloc.start()  # before the log fills, so the rows it lets go count as freed
    try:
        _lines(run, warm)
        before = tracemalloc.take_snapshot()
        _lines(run, more)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 160 * 1024, grown  # every row kept: ~3000 x 1 KiB
    dropped = warm + more - limit
    s = run.summary()
    assert s["intervals"] == warm + more and len(s["interval_rows"]) == limit
    assert s["intervals_dropped"] == dropped
    text = render_load_report({"load:x": {**s, "mode": "load"}}, 1.0, "done", False)
    assert f"({warm + more} intervals: the newest {limit} rows in --json" in text


def test_a_run_within_the_bound_says_nothing_dropped() -> None:
    run = LoadRun(LoadSettings(rate=10.0, connections=1))
    assert KEEP_ROWS >= 300
    _lines(run, 5)
    s = run.summary()
    assert len(s["interval_rows"]) == 5 and "intervals_dropped" not in s
