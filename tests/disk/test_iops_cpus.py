"""fio's --cpus_allowed for the I/O engine (issue 28): off by default; when
given, every I/O thread runs on those CPUs only (fio's "shared" policy)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path

import pytest
from disk_fixtures import run_cli, summary_of
from probetop.probes.disk import WarmupProbe
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.warmup.settings import WarmupSettings
from probetop.probes.disk.workers import Engine


def _affinities(engine: Engine, want: set[int]) -> list[set[int]]:
    """The I/O threads' affinities once the loops run and each thread has
    set its own (or what they are after 30 s): a thread pins itself as it
    starts, so a loaded machine may show one that has not yet."""
    deadline = time.monotonic() + 30
    while engine.snapshot(0).dirs[0].ios == 0:  # the loops are running
        assert time.monotonic() < deadline, "no I/O in 30 s"
        time.sleep(0.01)
    while True:
        seen = [os.sched_getaffinity(t.native_id) for t in engine.threads if t.native_id]
        if all(s == want for s in seen) or time.monotonic() > deadline:
            return seen
        time.sleep(0.01)


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
        seen = _affinities(engine, set(cpus) if pinned else set(allowed))
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


def _io_thread_affinities(jobs: int, want: set[int], deadline_s: float = 30) -> list[set[int]]:
    """The affinity of the ``jobs`` running probetop I/O threads, once each
    has pinned itself to ``want`` (or what they are at the deadline). Each
    thread pins itself as it starts, so under load a thread may be seen
    before it has (run 1 of a non-root clean clone saw one thread at {0, 1})."""
    deadline = time.monotonic() + deadline_s
    seen: list[set[int]] = []
    while time.monotonic() < deadline:
        threads = [t for t in threading.enumerate() if t.name.startswith("probetop-io-")]
        if threads and all(t.native_id for t in threads):
            with contextlib.suppress(OSError):  # a thread ending meanwhile
                seen = [os.sched_getaffinity(t.native_id or 0) for t in threads]
                if len(seen) == jobs and all(s == want for s in seen):
                    return seen
        time.sleep(0.01)
    assert seen, "no I/O thread in 30 s"
    return seen


def test_warmup_io_threads_run_where_cpus_allowed_says(data_file: str, tmp_path: Path) -> None:
    """warmup shares the I/O engine: --cpus-allowed means the same there."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU only: pinning cannot be told from not pinning")
    cpu = allowed[-1]
    settings = WarmupSettings.from_options(
        {"target": data_file, "jobs": 2, "bs": 4096, "iodepth": 1, "rate_iops": 200,
         "direct": False, "checkpoint": str(tmp_path / "c.json"), "cpus_allowed": (cpu,)},
        time_s=None, interval_s=0.25,
    )  # fmt: skip
    probe = WarmupProbe(settings)
    probe.prepare()
    assert f"--cpus_allowed={cpu}" in probe.reference_command()
    seen: list[set[int]] = []

    async def main() -> None:
        task = asyncio.create_task(probe.run(lambda r: None))
        seen.extend(await asyncio.to_thread(_io_thread_affinities, 2, {cpu}))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(seen) == 2 and all(s == {cpu} for s in seen), seen
    refused = run_cli(["warmup", data_file, "--cpus-allowed", "4095", "--time", "1"])
    assert refused.returncode == 2 and "not one this process may run on" in refused.stderr
