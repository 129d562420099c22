"""Memory over hours (issue 29, Want 8): the ICMP summary keeps the last
KEEP_INTERVAL_ROWS interval rows, not every one (all of them grew a soak
by ~10 MiB an hour: tracemalloc in benchmarks/soak.py)."""

from __future__ import annotations

import asyncio

from privilege import needs_icmp
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


def _interval_with_spread(buckets: int) -> IntervalTotals:
    """An interval whose replies spread over ``buckets`` of the coarse
    histogram's buckets (4 per octave above 64 ns), as a loaded machine
    widens the RTT spread."""
    from probetop.probes.icmp import layout

    totals = IntervalTotals()
    step = layout.HIST_SUB // 4  # one reply in each coarse bucket
    first = layout.HIST_LINEAR
    for k in range(buckets):
        totals.histogram[first + k * step] += 1
    last = first + (buckets - 1) * step
    totals.counters["received"] = totals.counters["sent"] = buckets
    totals.rtt_min_ns = int(layout.hist_bucket_bounds(first)[0])
    totals.rtt_max_ns = int(layout.hist_bucket_bounds(last)[0])
    totals.rtt_sum = float(buckets * totals.rtt_min_ns)
    totals.rtt_sumsq = float(buckets * totals.rtt_min_ns**2)
    return totals


def test_memory_stays_flat_while_the_rtt_spread_widens() -> None:
    """The kept rows are bounded in number (above) and in width: rows whose
    RTT histogram widens from 1 to 140 buckets replace narrow ones and the
    memory held stays flat (each row kept its histogram before: ~1.5 MiB
    more for 100 rows). The row's figures, percentiles included, are the
    interval's, so the summary's ``intervals`` are unchanged."""
    import tracemalloc

    from probetop.probes.core.intervallog import IntervalLog

    probe = IcmpProbe(IcmpSettings("127.0.0.1"))
    limit, widest = 100, 140
    probe.interval_rows = IntervalLog(limit)
    probe.totals = IntervalTotals()
    narrow = _interval_with_spread(1)
    tracemalloc.start()
    try:
        for i in range(limit * 3):
            probe.interval_rows.append(IntervalRow(float(i + 1), narrow.record(1.0, "raw")))
        before = tracemalloc.take_snapshot()
        t = limit * 3
        for width in range(2, widest + 1):
            wide = _interval_with_spread(width)
            for _ in range(10):
                t += 1
                record = wide.record(1.0, "raw")
                assert record.rtt_hist is not None and len(record.rtt_hist) == width
                probe.interval_rows.append(IntervalRow(float(t), record))
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # The old kept histograms grew ~1.5 MiB here; the bound leaves room for
    # what else the process allocated meanwhile (an xdist worker's earlier
    # tests' threads: 99,716 B once at load 15).
    assert grown < 256 * 1024, grown
    row = probe.interval_rows[-1]
    assert row.interval.rtt_hist is None  # not kept ...
    assert row.to_dict() == {"t_s": float(t), **record.values()}  # ... nor needed
    assert row.interval.rtt.p99_us == record.rtt.p99_us is not None


@needs_icmp
def test_a_real_run_keeps_no_interval_s_histogram_alive() -> None:
    """Issue 29, item 8: a soak's tracemalloc diff found 34 -> 54 intervals'
    worth of ICMP ``RttBucket``s alive after its warm-up mark. A real run
    over 127.0.0.1 for many intervals, with the cyclic collector off (so
    garbage in a reference cycle stays and counts): the buckets alive at
    the end are those of the last few intervals, not of a growing number
    (each kept row held its interval's before 92f6583: one interval's worth
    per row, 100 rows here)."""
    import gc

    from probetop.tui.run.runner import run_headless

    intervals = 100
    probe = IcmpProbe(IcmpSettings("127.0.0.1", rate=400.0, interval_s=0.05))
    probe.prepare()
    gc.collect()
    before = _live_buckets()
    gc.disable()
    try:
        result = asyncio.run(run_headless([probe], duration_s=intervals * 0.05))
        alive = _live_buckets() - before
    finally:
        gc.enable()
    assert not result.errors, result.errors
    rows = len(probe.interval_rows)
    assert rows >= intervals // 2, rows  # the run had its intervals (a loaded machine: fewer)
    widest = max(1, _widest_interval(probe))
    assert alive <= 4 * widest, (alive, widest, rows)


def _live_buckets() -> int:
    import gc

    from probetop.probes.icmp.records import RttBucket

    return sum(1 for o in gc.get_objects() if type(o) is RttBucket)


def _widest_interval(probe: IcmpProbe) -> int:
    """The most coarse RTT buckets one interval of the run had (its whole
    histogram, rebuilt: a kept row no longer holds it)."""
    from probetop.probes.icmp.stats import coarse_histogram

    assert probe.totals is not None
    return len(coarse_histogram(probe.totals.histogram))
