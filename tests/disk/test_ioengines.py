"""--ioengine psync / libaio / io_uring: each engine on real files and loop
devices, counted once per I/O, errors reported, the kernel's queue depth
matching what was asked, and the CLI saying what it ran."""

from __future__ import annotations

import errno
import os
import time

import pytest
from disk_fixtures import (
    kernel_io,
    loop_device,
    promptly_scheduled,
    run_cli,
    run_until_ios,
    summary_of,
)
from probetop.probes.core.base import UsageProbeError
from probetop.probes.disk import ioengines, uring
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import run_blocking, warm_up_kernels
from probetop.probes.disk.workers import Engine
from probetop.probes.system.collectors import DiskProbe
from stopclock import StopClock

ASYNC_ENGINES = ["libaio", "io_uring"]


def need_engine(engine: str) -> None:
    if engine == "io_uring" and (why := uring.probe()) is not None:
        pytest.skip(why)


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
@pytest.mark.parametrize("depth", [1, 8])
def test_each_engine_counts_every_io_once(data_file, engine, depth):
    need_engine(engine)
    plan = EnginePlan(
        path=data_file, bs=4096, extents=[(0, 4 << 20)], iodepth=depth, ioengine=engine,
        readpct=50, direct=False,
    )  # fmt: skip
    snap, seconds = run_blocking(plan, 0.3)
    read, write = snap.dirs
    assert read.ios > 50 and write.ios > 50
    for d in (read, write):
        assert d.bytes == d.ios * 4096 and d.errors == 0
        assert int(d.hist.sum()) == d.ios
        assert 0 < d.clat.min_ns <= d.clat.mean_ns <= d.clat.max_ns
    assert 0.25 < seconds < 2.0


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_a_sequential_write_pass_then_verify_covers_every_sector(data_file, engine):
    need_engine(engine)
    size = 4 << 20
    common = dict(path=data_file, bs=65536, extents=[(0, size)], iodepth=8, jobs=2, seq=True,
                  wrap=False, direct=False, ioengine=engine)  # fmt: skip
    snap, _ = run_blocking(EnginePlan(readpct=0, stamp=True, **common), 30)
    assert snap.dirs[1].bytes == size and snap.dirs[1].ios == size // 65536
    with open(data_file, "r+b") as f:  # break one sector
        f.seek(5 * 65536 + 512)
        f.write(b"\0" * 8)
    engine_ = Engine(EnginePlan(readpct=100, verify=True, **common))
    engine_.start()
    assert engine_.finished.wait(30)
    engine_.join()
    snap = engine_.snapshot(time.monotonic_ns())
    assert snap.dirs[0].bad_sectors == 1
    assert engine_.first_bad_offset() == 5 * 65536
    assert sum(e - s for s, e in engine_.done_extents()) == size


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_direct_reads_match_the_kernel_counters(engine):
    need_engine(engine)
    with loop_device(32 << 20) as dev:
        before = kernel_io(dev)
        plan = EnginePlan(path=dev, bs=4096, extents=[(0, 32 << 20)], jobs=2, iodepth=8,
                          ioengine=engine)  # fmt: skip
        snap = run_until_ios(plan, 1001)
        after = kernel_io(dev)
    reads = after[0] - before[0]
    assert snap.dirs[0].ios > 1000
    assert 0.97 * snap.dirs[0].ios <= reads <= snap.dirs[0].ios + 256


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_a_failing_io_is_counted_with_its_errno(engine):
    """O_DIRECT with a block size the device refuses: the kernel fails every
    I/O with EINVAL (in io_uring, a negative CQE result): counted, not a crash."""
    need_engine(engine)
    with loop_device(8 << 20) as dev:
        plan = EnginePlan(path=dev, bs=1000, extents=[(0, 8 << 20)], iodepth=4, ioengine=engine,
                          seq=True, wrap=False, stop_on_error=True)  # fmt: skip
        engine_ = Engine(plan)
        engine_.start()
        assert engine_.finished.wait(10)
        engine_.join()
    error = engine_.last_error()
    assert error is not None and error[0] == errno.EINVAL and error[2] == "read"
    assert engine_.done_extents() == []


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_the_kernel_sees_the_queue_depth_asked_for(engine):
    """iostat's aqu-sz from the passive disk view: ~1 at depth 1, several at 16."""
    need_engine(engine)
    probe = DiskProbe(interval_s=1.0)
    depths = {}
    with loop_device(64 << 20) as dev:
        name = os.path.basename(dev)
        for depth in (1, 16):
            plan = EnginePlan(path=dev, bs=4096, extents=[(0, 64 << 20)], iodepth=depth,
                              ioengine=engine)  # fmt: skip
            engine_ = Engine(plan)
            engine_.start()
            time.sleep(0.1)
            before, t0 = probe.read(), time.monotonic()
            time.sleep(0.6)
            after, t1 = probe.read(), time.monotonic()
            engine_.stop()
            engine_.join(5)
            depths[depth] = probe.interval(before, after, t1 - t0).disks[name].queue_depth
    assert depths[1] is not None and depths[16] is not None
    assert 0.2 < depths[1] <= 1.1
    assert depths[16] > 3 * depths[1] and depths[16] <= 16.5


def test_psync_refuses_a_deeper_queue():
    with pytest.raises(UsageProbeError, match="psync is synchronous"):
        ioengines.check("psync", 8)
    assert ioengines.resolve(None, 1) == ("psync", None)
    assert ioengines.resolve(None, 32) == ("libaio", None)


@pytest.mark.parametrize("engine", ["psync", *ASYNC_ENGINES])
def test_the_cli_runs_and_reports_the_engine(data_file, engine):
    need_engine(engine)
    depth = "1" if engine == "psync" else "4"
    proc = run_cli(["iops", data_file, "--ioengine", engine, "--iodepth", depth, "--time", "0.5",
                    "--buffered", "--json"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = summary_of(proc.stdout)
    assert out["read"]["total_ios"] > 0
    assert f"--ioengine={engine}" in out["fio_command"]


def test_the_cli_refuses_psync_with_a_queue(data_file):
    proc = run_cli(["iops", data_file, "--ioengine", "psync", "--iodepth", "8", "--time", "1"])
    assert proc.returncode == 2
    assert "psync is synchronous" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_rate_iops_caps_each_job_with_a_queue(data_file, engine):
    need_engine(engine)
    plan = EnginePlan(
        path=data_file, bs=4096, extents=[(0, 4 << 20)], jobs=2, iodepth=4, ioengine=engine,
        direct=False, rate_iops=400,
    )  # fmt: skip
    warm_up_kernels()  # compiled before the real-time priority: the JIT is CPU-bound
    with promptly_scheduled():
        snap, seconds = run_blocking(plan, 1.0)
    rate = snap.dirs[0].ios / seconds
    assert 0.8 * 800 <= rate <= 1.05 * 800, (rate, snap.dirs[0].ios, seconds)


@pytest.mark.parametrize("engine", ASYNC_ENGINES)
def test_stop_returns_promptly_with_a_deep_queue(engine):
    need_engine(engine)
    with loop_device(32 << 20) as dev:
        plan = EnginePlan(path=dev, bs=65536, extents=[(0, 32 << 20)], iodepth=64, ioengine=engine)
        engine_ = Engine(plan)
        engine_.start()
        time.sleep(0.3)
        clock = StopClock(os.getpid()).start()  # its own stop time, not the machine's load
        engine_.stop()
        assert engine_.join(5)
        took = clock.stop()
        assert took.own_s < 0.5, str(took)
