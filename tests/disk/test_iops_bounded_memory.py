"""An IOPS run of any length holds bounded memory (issue 29: ``intervals``
grew by one dict per interval for the life of the probe), and fio's
per-interval figures (bw_min .. iops_stddev) still cover every interval."""

from __future__ import annotations

import statistics
import tracemalloc

import numpy as np
from probetop.probes.core.intervallog import MAX_KEPT_INTERVALS, IntervalLog
from probetop.probes.disk.counters import (
    C_BYTES,
    C_IOS,
    C_LAT_MAX,
    C_LAT_MIN,
    HIST_BUCKETS,
    N_COUNTERS,
    READ,
    Snapshot,
    sum_jobs,
)
from probetop.probes.disk.fiodoc import fio_document
from probetop.probes.disk.iops import IopsProbe
from probetop.probes.disk.settings import IopsSettings

BS = 4096


def _ios(i: int) -> int:
    return 100 + (i % 7) * 10  # varying rates, so min/max/mean/dev mean something


class _Run:
    """Feeds ``IopsProbe._emit_interval`` one-second intervals of reads."""

    def __init__(self, probe: IopsProbe) -> None:
        self.probe = probe
        self.cnt = np.zeros((1, 2, N_COUNTERS), np.int64)
        self.cnt[:, :, C_LAT_MIN] = 1000
        self.cnt[:, :, C_LAT_MAX] = 2000
        self.flt = np.zeros((1, 2, 6), np.float64)
        self.hist = np.zeros((2, HIST_BUCKETS), np.int64)
        self.i = 0
        self.prev = self._snap()

    def _snap(self) -> Snapshot:
        return sum_jobs(self.i * 10**9, self.cnt.copy(), self.flt.copy(), self.hist.copy())

    def intervals(self, count: int) -> None:
        for _ in range(count):
            ios = _ios(self.i)
            self.i += 1
            self.cnt[0, READ, C_IOS] += ios
            self.cnt[0, READ, C_BYTES] += ios * BS
            self.hist[READ, 300] += ios
            cur = self._snap()
            self.probe._emit_interval(self.prev, cur, lambda _s: None, False)
            self.prev = cur


def test_memory_stays_flat_and_fio_figures_cover_every_interval() -> None:
    probe = IopsProbe(IopsSettings("/tmp/bound_iops_target", rw="randread", bs=BS))
    limit, warm, more = 100, 300, 3000
    probe.intervals = IntervalLog(limit)
    run = _Run(probe)
    tracemalloc.start()  # before the log fills, so the rows it lets go count as freed
    try:
        run.intervals(warm)  # past the limit: the log is full
        before = tracemalloc.take_snapshot()
        run.intervals(more)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # A row is ~1 KiB (its percentiles): 3000 more kept would be ~3 MB.
    assert grown < 160 * 1024, grown
    dropped = warm + more - limit
    summary = probe.summary()
    assert summary["intervals_dropped"] == dropped and len(summary["intervals"]) == limit
    read = fio_document(summary)["jobs"][0]["read"]
    iops = [float(_ios(i)) for i in range(warm + more)]
    assert read["iops_samples"] == warm + more == read["bw_samples"]
    assert (read["iops_min"], read["iops_max"]) == (100, 160)
    assert abs(read["iops_mean"] - statistics.fmean(iops)) < 1e-9
    assert abs(read["iops_stddev"] - statistics.stdev(iops)) < 1e-9
    kib = [v * BS / 1024 for v in iops]
    assert (read["bw_min"], read["bw_max"]) == (400, 640)
    assert abs(read["bw_mean"] - statistics.fmean(kib)) < 1e-9
    assert abs(read["bw_dev"] - statistics.stdev(kib)) < 1e-9


def test_a_short_run_keeps_every_row_and_its_json_as_before() -> None:
    probe = IopsProbe(IopsSettings("/tmp/bound_iops_target", rw="randread", bs=BS))
    assert isinstance(probe.intervals, IntervalLog) and MAX_KEPT_INTERVALS >= 20
    _Run(probe).intervals(20)
    summary = probe.summary()
    assert len(summary["intervals"]) == 20
    assert "intervals_dropped" not in summary and "interval_stats" not in summary
    read = fio_document(summary)["jobs"][0]["read"]
    iops = [float(_ios(i)) for i in range(20)]
    assert read["iops_samples"] == 20 and read["iops_mean"] == sum(iops) / 20
