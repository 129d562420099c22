"""The native I/O loops run before any clock, and a plan run in one call.

Contract: ``warm_up_kernels()`` loads the loops (``workers.compile_kernels``)
and runs each engine (psync, libaio, io_uring where the kernel has it) once
on an 8 KiB scratch file, so no JIT happens once a clock runs; idempotent;
a failure is a ``NativeCodeError``. ``keep_kernels()`` (``probetop
compile``) also keeps numba's loops as object code for later processes.
``run_blocking(plan, seconds)`` runs a plan in the calling thread and
returns its final snapshot (benchmarks, tests).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from probetop.probes.disk.counters import Snapshot
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.workers import Engine, NativeCodeError, compile_kernels

# Set once the loops have passed their self-test in this process.
_WARM = threading.Event()


def warm_up_kernels() -> None:
    """Compile and run both loops once on a tiny temp file, so no JIT happens
    once a clock runs. Idempotent."""
    if _WARM.is_set():
        return
    compile_kernels()
    _checked_self_test()
    _WARM.set()


def keep_kernels() -> bool:
    """``probetop compile``: numba compiles the loops (or loads them from its
    cache) and runs each engine once, they are kept as object code, and the
    kept ones run once too (what the next process loads without numba).
    False when they cannot be kept (numba's cache is off: its loops still
    work). Raises ``NativeCodeError``."""
    from probetop.probes.disk.workers import keep_kernels as keep
    from probetop.probes.disk.workers import kernels_kept

    if kernels_kept():  # kept already, from these sources on this CPU
        warm_up_kernels()
        return True
    _WARM.clear()
    kept = keep(_checked_self_test)
    _WARM.clear()
    warm_up_kernels()
    return kept


def _checked_self_test() -> None:
    try:
        _self_test()
    except OSError as exc:
        raise NativeCodeError(f"the native I/O loop failed its self-test: {exc}") from None


def _scratch_file() -> Any:
    """An 8 KiB scratch file for the self-test: in memory (memfd) when the kernel
    has it, so no filesystem needs to be writable; else a temp file."""
    import tempfile

    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        try:
            return os.fdopen(memfd("probetop-selftest", os.MFD_CLOEXEC), "w+b")
        except OSError:
            pass
    return tempfile.TemporaryFile()


def _self_test() -> None:
    with _scratch_file() as f:
        f.truncate(8192)
        plan = EnginePlan(
            path=f"/proc/self/fd/{f.fileno()}",
            bs=4096,
            readpct=50,
            seq=True,  # a finite pass: the loops run to the end, so they compile now
            wrap=False,
            extents=[(0, 8192)],
            direct=False,
            stamp=True,
            verify=True,
        )
        from probetop.probes.disk import uring

        engines = [("psync", 1), ("libaio", 2)]
        if uring.probe() is None:
            engines.append(("io_uring", 2))
        for engine, depth in engines:
            plan.ioengine, plan.iodepth = engine, depth
            eng = Engine(plan)
            eng.start()
            eng.finished.wait(600)
            eng.join(5.0)
            if eng.failures:
                raise OSError("; ".join(eng.failures))


def run_blocking(plan: EnginePlan, seconds: float) -> tuple[Snapshot, float]:
    """Run ``plan`` in this thread for ``seconds`` (or until its work list ends);
    return the final snapshot and the seconds it ran. For benchmarks and tests."""
    warm_up_kernels()
    engine = Engine(plan)
    engine.start()
    t0 = time.monotonic_ns()
    try:
        engine.finished.wait(seconds)
    finally:
        engine.stop()
        engine.join()
    t1 = engine.finished_ns or time.monotonic_ns()
    return engine.snapshot(t1), (t1 - t0) / 1e9
