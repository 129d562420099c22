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
