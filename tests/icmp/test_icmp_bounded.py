"""Memory over hours (issue 29, Want 8): the ICMP summary keeps the last
KEEP_INTERVAL_ROWS interval rows, not every one (all of them grew a soak
by ~10 MiB an hour: tracemalloc in benchmarks/soak.py)."""

from __future__ import annotations

from probetop.probes.icmp import IcmpProbe, IcmpSettings
from probetop.probes.icmp.probe import KEEP_INTERVAL_ROWS
from probetop.probes.icmp.records import IntervalRow
from probetop.probes.icmp.stats import IntervalTotals


def test_the_summary_keeps_the_last_rows_only() -> None:
    probe = IcmpProbe(IcmpSettings("127.0.0.1"))
    record = IntervalTotals().record(1.0, "raw")
    for i in range(KEEP_INTERVAL_ROWS + 50):
        probe.interval_rows.append(IntervalRow(float(i + 1), record))
    assert len(probe.interval_rows) == KEEP_INTERVAL_ROWS
    assert probe.interval_rows[0].t_s == 51.0  # the oldest 50 dropped
    assert KEEP_INTERVAL_ROWS >= 600  # ten minutes of 1 s rows


def test_memory_stays_flat_and_the_summary_says_what_was_dropped() -> None:
    """Rows appended as the probe's collector does, past the bound: memory
    flat, and the summary (JSON and read back) counts the rows let go."""
    import tracemalloc

    from probetop.probes.core.intervallog import IntervalLog
    from probetop.probes.icmp.summary import IcmpSummary

    probe = IcmpProbe(IcmpSettings("127.0.0.1"))
    limit, warm, more = 100, 300, 3000
    probe.interval_rows = IntervalLog(limit)
    probe.totals = IntervalTotals()
    tracemalloc.start()  # before the log fills, so the rows it lets go count as freed
    try:
        for i in range(warm):
            probe.interval_rows.append(IntervalRow(float(i + 1), probe.totals.record(1.0, "raw")))
        before = tracemalloc.take_snapshot()
        for i in range(warm, warm + more):
            probe.interval_rows.append(IntervalRow(float(i + 1), probe.totals.record(1.0, "raw")))
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 160 * 1024, grown  # every row kept: ~3000 x 1 KiB
    dropped = warm + more - limit
    doc = probe.summary()
    assert doc["intervals_dropped"] == dropped and len(doc["intervals"]) == limit
    back = IcmpSummary.from_summary(doc).totals
    assert back is not None and back.intervals_dropped == dropped


def test_a_run_within_the_bound_says_nothing_dropped() -> None:
    probe = IcmpProbe(IcmpSettings("127.0.0.1"))
    probe.totals = IntervalTotals()
    probe.interval_rows.append(IntervalRow(1.0, probe.totals.record(1.0, "raw")))
    assert "intervals_dropped" not in probe.summary()
