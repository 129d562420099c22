"""The native I/O engine on real temp files (and a loop device as root)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from disk_fixtures import kernel_io, loop_device, promptly_scheduled, read_stamps, run_until_ios
from probetop.probes.disk.counters import (
    BUCKET_VALUES_NS,
    HIST_BUCKETS,
    hist_percentiles,
)
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import run_blocking, warm_up_kernels
from probetop.probes.disk.workers import Engine


def _io_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("probetop-io-")]


def test_bucket_values_are_within_fio_precision():
    # Each bucket's reported value must sit inside [v, v * (1 + 1/64)] of its range.
    for index in (0, 5, 127, 128, 129, 500, 1000, HIST_BUCKETS - 1):
        value = BUCKET_VALUES_NS[index]
        if index < 128:
            assert value == index
        else:
            bits = (index >> 6) - 1
            low = (64 + (index & 63)) << bits
            assert low <= value < low + (1 << bits)


def test_hist_percentiles_walk_the_cumulative_counts():
    hist = np.zeros(HIST_BUCKETS, dtype=np.int64)
    hist[10] = 90  # 90 I/Os of 10 ns
    hist[100] = 10  # 10 of 100 ns
    pct = hist_percentiles(hist, (50, 90, 91, 99))
    assert pct == {50: 10.0, 90: 10.0, 91: 100.0, 99: 100.0}
    assert hist_percentiles(np.zeros(HIST_BUCKETS, dtype=np.int64), (50,)) == {50: None}


@pytest.mark.parametrize("depth", [1, 8])
def test_random_reads_count_every_io_once(data_file, depth):
    plan = EnginePlan(path=data_file, bs=4096, extents=[(0, 4 << 20)], iodepth=depth, direct=False)
    snap, seconds = run_blocking(plan, 0.3)
    read, write = snap.dirs
    assert read.ios > 100
    assert read.bytes == read.ios * 4096
    assert read.errors == 0 and write.ios == 0
    assert int(read.hist.sum()) == read.ios
    assert 0 < read.clat.min_ns <= read.clat.mean_ns <= read.clat.max_ns
    assert 0.25 < seconds < 2.0
    assert not _io_threads()


def test_write_pass_stamps_and_verify_finds_a_corrupt_sector(data_file):
    size = 4 << 20
    plan = EnginePlan(
        path=data_file,
        bs=65536,
        extents=[(0, size)],
        iodepth=4,
        jobs=2,
        readpct=0,
        seq=True,
        wrap=False,
        direct=False,
        stamp=True,
    )
    snap, _ = run_blocking(plan, 30)
    assert snap.dirs[1].bytes == size and snap.dirs[1].ios == size // 65536
    assert read_stamps(data_file, 0, size) == list(range(0, size, 512))
    with open(data_file, "r+b") as f:  # break one sector
        f.seek(3 * 65536 + 1024)
        f.write(b"\0" * 8)
    verify = EnginePlan(
        path=data_file,
        bs=65536,
        extents=[(0, size)],
        iodepth=4,
        seq=True,
        wrap=False,
        direct=False,
        verify=True,
    )
    engine = Engine(verify)
    engine.start()
    assert engine.finished.wait(30)
    engine.join()
    snap = engine.snapshot(time.monotonic_ns())
    assert snap.dirs[0].bad_sectors == 1
    assert engine.first_bad_offset() == 3 * 65536
    assert engine.done_extents() and sum(e - s for s, e in engine.done_extents()) == size


def test_stop_joins_every_worker(data_file):
    plan = EnginePlan(path=data_file, bs=4096, extents=[(0, 4 << 20)], jobs=3, direct=False)
    engine = Engine(plan)
    engine.start()
    assert len(_io_threads()) == 3
    time.sleep(0.1)
    engine.stop()
    assert engine.join(5)
    assert not _io_threads()


def test_short_read_past_the_end_is_an_error_not_a_crash(tmp_path):
    path = tmp_path / "short.img"
    path.write_bytes(b"x" * 6000)
    plan = EnginePlan(
        path=str(path),
        bs=4096,
        extents=[(0, 8192)],
        seq=True,
        wrap=False,
        direct=False,
        stop_on_error=True,
    )
    engine = Engine(plan)
    engine.start()
    assert engine.finished.wait(10)
    engine.join()
    assert engine.last_error() == (0, 4096, "read")
    assert engine.done_extents() == [(0, 4096)]


def test_direct_random_reads_match_the_kernel_counters():
    with loop_device(32 << 20) as dev:
        before = kernel_io(dev)
        plan = EnginePlan(path=dev, bs=4096, extents=[(0, 32 << 20)], jobs=2, iodepth=4)
        snap = run_until_ios(plan, 1001)
        after = kernel_io(dev)
    reads = after[0] - before[0]
    assert snap.dirs[0].ios > 1000
    # O_DIRECT random 4k reads: one kernel request each (adjacent ones may merge);
    # udev's blkid may probe a new loop device meanwhile: a few extra reads.
    assert 0.97 * snap.dirs[0].ios <= reads <= snap.dirs[0].ios + 256
    kernel_bytes = (after[1] - before[1]) * 512
    assert snap.dirs[0].bytes <= kernel_bytes <= snap.dirs[0].bytes + (1 << 20)


@pytest.mark.parametrize("depth", [1, 4])
def test_rate_iops_caps_each_job(data_file, depth):
    plan = EnginePlan(
        path=data_file, bs=4096, extents=[(0, 4 << 20)], jobs=2, iodepth=depth, direct=False,
        rate_iops=400,
    )  # fmt: skip
    warm_up_kernels()  # compiled before the real-time priority: the JIT is CPU-bound
    with promptly_scheduled():
        snap, seconds = run_blocking(plan, 1.0)
    rate = snap.dirs[0].ios / seconds
    assert 0.8 * 800 <= rate <= 1.05 * 800, (rate, snap.dirs[0].ios, seconds)
