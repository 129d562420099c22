"""A snapshot never holds an I/O half recorded: its bins sum to its I/O count
(fio's sum of clat_ns.bins equals N and total_ios), also while a loop records."""

from __future__ import annotations

import sys
import threading

import numpy as np
from probetop.probes.disk.counters import C_IOS, HIST_BUCKETS, N_COUNTERS, N_FLOATS
from probetop.probes.disk.workers import Engine


def _bare_engine(jobs: int) -> Engine:
    """An Engine's counter arrays only (no target, no threads): what snapshot reads."""
    engine = object.__new__(Engine)
    engine.cnt = np.zeros((jobs, 2, N_COUNTERS), dtype=np.int64)
    engine.flt = np.zeros((jobs, 2, N_FLOATS), dtype=np.float64)
    engine.hist = np.zeros((jobs, 2, HIST_BUCKETS), dtype=np.int64)
    return engine


def test_snapshot_bins_match_ios_while_a_loop_records() -> None:
    engine = _bare_engine(2)
    stop = threading.Event()

    def recorder() -> None:
        # native.record's order: the count first, the histogram last.
        while not stop.is_set():
            for job in (0, 1):
                engine.cnt[job, 0, C_IOS] += 1
                engine.hist[job, 0, 7] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between the two writes often
    thread = threading.Thread(target=recorder, daemon=True)
    thread.start()
    try:
        bad = []
        for _ in range(3000):
            read = engine.snapshot(0).dirs[0]
            if int(read.hist.sum()) != read.ios:
                bad.append((read.ios, int(read.hist.sum())))
    finally:
        stop.set()
        thread.join(5)
        sys.setswitchinterval(old)
    assert engine.cnt[:, 0, C_IOS].sum() > 1000  # the recorder really ran meanwhile
    assert not bad, f"{len(bad)} of 3000 snapshots half-counted an I/O, e.g. {bad[:3]}"
