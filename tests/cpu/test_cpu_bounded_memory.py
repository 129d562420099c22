"""A CPU run of any length holds bounded memory (issue 29: the per-interval
rows grew by one dict per interval for the life of the probe)."""

from __future__ import annotations

import tracemalloc

import numpy as np
from probetop.probes.core.intervallog import MAX_KEPT_INTERVALS, IntervalLog
from probetop.probes.core.sysbench.counters import Snapshot, new_counters
from probetop.probes.core.sysbench.hist import HIST_SIZE
from probetop.probes.cpu import CpuSettings, format_report
from probetop.probes.cpu.probe import CpuProbe, PhaseResult

THREADS = 1


def _intervals(probe: CpuProbe, phase: PhaseResult, count: int, start: int) -> int:
    """Emit ``count`` one-second intervals of 100 events per thread."""
    stats = new_counters(THREADS)
    hist = np.zeros((THREADS, HIST_SIZE), np.int64)
    prev = Snapshot.take(stats, hist)
    t = start
    for _ in range(count):
        stats[:, 0] += 100
        stats[:, 1] += 100 * 400_000
        hist[:, 5] += 100
        cur = Snapshot.take(stats, hist)
        probe._emit_interval(lambda _s: None, phase, None, prev, cur, t, t + 10**9, True)
        prev, t = cur, t + 10**9
    return t


def test_memory_stays_flat_over_many_intervals() -> None:
    probe = CpuProbe(CpuSettings(time_s=0))  # the demo's endless probe
    limit, warm, more = 100, 300, 3000
    probe.intervals = IntervalLog(limit)
    phase = PhaseResult(threads=THREADS)
    t = _intervals(probe, phase, warm, 0)  # past the limit: the log is full
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        _intervals(probe, phase, more, t)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # One row is ~0.7 KiB: 3000 more rows kept would be ~2 MB. What may grow
    # is the interpreter's own short-lived objects (~2000 ints, ~100 KB at
    # most, then flat), never a row per interval.
    assert grown < 160 * 1024, grown
    dropped = warm + more - limit
    assert len(probe.intervals) == limit and probe.intervals.dropped == dropped
    summary = probe.summary()
    assert summary["intervals_dropped"] == dropped and len(summary["intervals"]) == limit
    report = format_report(summary, show_intervals=True)
    assert f"NOTE: the first {dropped} interval lines were not kept" in report


def test_memory_is_flat_after_ten_minutes_with_the_default_bound() -> None:
    """The soak's goal (issue 29 Want 8): RSS after the 10-minute mark within
    1 % over hours. So the default bound is full within 10 minutes of 1 s
    intervals (10,000 rows grew a 2-hour demo soak by ~6 MiB an hour)."""
    probe = CpuProbe(CpuSettings(time_s=0))
    phase = PhaseResult(threads=THREADS)
    tracemalloc.start()  # before the kept rows, so replacing them is no growth
    try:
        t = _intervals(probe, phase, 600, 0)  # the warm-up mark: 10 minutes at 1 s
        before = tracemalloc.take_snapshot()
        _intervals(probe, phase, 3000, t)  # 50 minutes more
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 160 * 1024, grown
    assert len(probe.intervals) == MAX_KEPT_INTERVALS <= 600


def test_the_default_bound_keeps_the_newest_lines() -> None:
    log = CpuProbe(CpuSettings()).intervals
    assert isinstance(log, IntervalLog) and MAX_KEPT_INTERVALS >= 300
    for i in range(MAX_KEPT_INTERVALS + 5):
        log.append({"t": float(i)})
    assert len(log) == MAX_KEPT_INTERVALS and log.dropped == 5
    assert log.rows()[0]["t"] == 5.0  # the newest are kept
