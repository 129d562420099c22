"""A warm-up of any length holds bounded memory (issue 29 Want 8): the run's
interval rows were a list that grew by one dict per interval for the whole
run, hours on a large disk. A run keeps the newest MAX_KEPT_INTERVALS and
counts the older ones; a recording has every interval."""

from __future__ import annotations

import tracemalloc

from probetop.probes.core.intervallog import MAX_KEPT_INTERVALS
from probetop.probes.disk.counters import DirectionTotals
from probetop.probes.disk.warmup.pass_engine import Step
from probetop.probes.disk.warmup.passes import WarmupSummary
from probetop.probes.disk.warmup.settings import WarmupSettings
from probetop.probes.disk.warmup.summary import RunTotals

MIB = 1 << 20


def _intervals(totals: RunTotals, first: int, count: int) -> None:
    for i in range(first, first + count):
        step = Step(i * 10**9, 1.0, DirectionTotals(ios=100, bytes=100 * MIB), 0)
        totals.add_interval("write", step, elapsed_s=float(i), total=10**15, checkpoint_done=None)


def test_rows_stop_growing_after_ten_minutes_and_are_counted() -> None:
    totals = RunTotals()
    totals.start_pass("write", 10**15)
    tracemalloc.start()  # before the kept rows, so replacing them is no growth
    try:
        _intervals(totals, 0, 600)  # the soak's warm-up mark: 10 minutes at 1 s
        before = tracemalloc.take_snapshot()
        _intervals(totals, 600, 3000)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert grown < 160 * 1024, grown  # a row kept per interval: ~1 MB
    summary = totals.summary(
        WarmupSettings("/tmp/bound_warmup_target"),
        done_bytes=0,
        total_bytes=10**15,
        resumed_from=None,
        plateau={},
        checkpoint=None,
        notes=[],
        fio_command="fio",
    )
    assert len(summary.intervals) == MAX_KEPT_INTERVALS
    assert summary.intervals_dropped == 3600 - MAX_KEPT_INTERVALS
    assert summary.intervals[-1]["t_s"] == 3599.0  # the newest kept
    doc = summary.as_dict()
    assert doc["intervals_dropped"] == 3600 - MAX_KEPT_INTERVALS
    assert WarmupSummary.from_dict(doc).intervals_dropped == 3600 - MAX_KEPT_INTERVALS
