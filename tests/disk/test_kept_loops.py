"""The disk loops kept as object code (``probetop compile``) count what
numba's own loops count: the same plan, the same seed, each engine, in one
process, every I/O, byte and bad sector equal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from probetop.probes.core import native_objects
from probetop.probes.disk import uring, workers
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import _checked_self_test, run_blocking

SIZE = 1 << 20


@pytest.fixture
def swap_kernels() -> Iterator[Any]:
    """Run with a given set of loops; the process's own are put back after."""
    with workers._COMPILE_LOCK:
        saved = dict(workers._KERNELS)

    def use(kernels: dict[str, Any]) -> None:
        with workers._COMPILE_LOCK:
            workers._KERNELS.clear()
            workers._KERNELS.update(kernels)

    yield use
    use(saved)


def counts(path: str, engine: str, write: bool) -> list[tuple[int, int, int, int]]:
    plan = EnginePlan(
        path=path,
        bs=4096,
        readpct=0 if write else 50,
        seq=True,  # a finite pass; the direction of each I/O drawn from the seed
        wrap=False,
        extents=[(0, SIZE)],
        direct=False,
        stamp=True,
        verify=True,
        ioengine=engine,
        iodepth=1 if engine == "psync" else 4,
        seed=7,
    )
    snap, _ = run_blocking(plan, 30.0)
    return [(d.ios, d.bytes, d.errors, d.bad_sectors) for d in snap.dirs]


@pytest.mark.parametrize("engine", ["psync", "libaio", "io_uring"])
def test_kept_loops_count_as_numbas(tmp_path, swap_kernels, engine):
    if engine == "io_uring" and (why := uring.probe()) is not None:
        pytest.skip(why)
    kept = workers._kept_kernels()
    assert kept is not None, "probetop compile (the session's warm-up) kept no loops"
    assert isinstance(kept["sync"], native_objects.Loop)
    path = str(tmp_path / "target.img")
    with open(path, "wb") as f:
        f.truncate(SIZE)
    numbas = workers._numba_kernels()
    from probetop.probes.core import native_cache
    from probetop.probes.disk import native

    # numba's loops from this process's cache (an earlier test once left
    # numba's directory on its tmp dir: they compiled from nothing, in the
    # 30 s of the first count, and counted 0 I/Os).
    cached = native.sync_loop._cache._cache_path
    assert cached.startswith(str(native_cache.configure()) + os.sep), cached
    results = []
    for kernels in (numbas, kept):
        swap_kernels(kernels)
        _checked_self_test()  # each engine once: any JIT before the counted runs
        written = counts(path, engine, write=True)
        mixed = counts(path, engine, write=False)  # reads and writes 50/50 by the seed
        results.append((written, mixed))
    assert results[0] == results[1]
    (written, mixed) = results[1]
    assert written[1] == (SIZE // 4096, SIZE, 0, 0)  # every block written once
    assert mixed[0][0] + mixed[1][0] == SIZE // 4096 and min(mixed[0][0], mixed[1][0]) > 0
    assert mixed[0][3] == 0  # every stamped sector read back verified


def test_loading_the_kept_loops_does_not_import_numba():
    """What the demo's IOPS, warm-up and ICMP panes wait for: loading and
    running the kept loops imports neither numba nor its CPU target."""
    code = (
        "import sys\n"
        "from probetop.probes import disk\n"
        "from probetop.probes.icmp.stream import warm_up_engine\n"
        "from probetop.probes.disk.workers import kernels_kept\n"
        "from probetop.probes.icmp.loopstate import loop_kept\n"
        "disk.load_native()\n"
        "warm_up_engine()\n"
        "print(kernels_kept(), loop_kept(), 'numba' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["True", "True", "False"]
