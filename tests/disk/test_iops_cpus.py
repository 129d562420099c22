"""fio's --cpus_allowed for the I/O engine (issue 28): off by default; when
given, every I/O thread runs on those CPUs only (fio's "shared" policy)."""

from __future__ import annotations

import os
import time

import pytest
from disk_fixtures import run_cli, summary_of
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.workers import Engine


def _affinities(engine: Engine) -> list[set[int]]:
    deadline = time.monotonic() + 30
    while engine.snapshot(0).dirs[0].ios == 0:  # the loops are running
        assert time.monotonic() < deadline, "no I/O in 30 s"
        time.sleep(0.01)
    return [os.sched_getaffinity(t.native_id) for t in engine.threads if t.native_id]


@pytest.mark.parametrize("pinned", [False, True])
def test_io_threads_run_where_cpus_allowed_says(data_file: str, pinned: bool) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if pinned and len(allowed) < 2:
        pytest.skip("one CPU only: pinning cannot be told from not pinning")
    cpus = frozenset({allowed[-1]}) if pinned else frozenset()
    warm_up_kernels()
    plan = EnginePlan(
        path=data_file, bs=4096, extents=[(0, 1 << 20)], jobs=2, direct=False, cpus_allowed=cpus
    )
    engine = Engine(plan)
    engine.start()
    try:
        seen = _affinities(engine)
    finally:
        engine.stop()
        assert engine.join(10)
    assert len(seen) == 2
    assert all(s == (set(cpus) if pinned else set(allowed)) for s in seen), seen


def test_the_cli_takes_fios_list_and_says_it_in_the_fio_command(data_file: str) -> None:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    proc = run_cli(["iops", data_file, "--buffered", "--cpus-allowed", str(cpu), "--time",
                    "0.5", "--json"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"--cpus_allowed={cpu}" in summary_of(proc.stdout)["fio_command"]
    for bad, message in (("4095", "not one this process may run on"), ("1-x", "CPU list")):
        refused = run_cli(["iops", data_file, "--cpus-allowed", bad, "--time", "1"])
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
