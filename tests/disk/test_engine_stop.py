"""A stopped engine whose workers are only short of CPU is waited for, not
reported as blocked by the device (found under load: CI at load 17-59)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.iothreads import runnable
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.workers import Engine

# Busy for HOG_S at nice -20 on CPU 0: the engine's workers, pinned there too
# (and at nice 19: more jobs than CPUs), get next to no CPU meanwhile.
HOG_S = 2.5
HOG = (
    "import os, time\nos.nice(-20)\nend = time.monotonic() + {s}\n"
    "print('spinning', flush=True)\nwhile time.monotonic() < end:\n    pass\n"
)


@contextlib.contextmanager
def starved_engine(tmp: Path) -> Iterator[Engine]:
    """A running 2-job engine on one CPU, then hogs on that CPU for HOG_S;
    yields once the hogs run. Needs CAP_SYS_NICE (root) for nice -20."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a negative nice for the CPU hogs)")
    warm_up_kernels()
    target = tmp / "starve.img"
    with open(target, "wb") as f:
        f.truncate(8 << 20)
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})  # the workers inherit it
    hogs: list[subprocess.Popen[bytes]] = []
    engine = Engine(
        EnginePlan(path=str(target), bs=4096, extents=[(0, 8 << 20)], jobs=2, direct=False)
    )
    try:
        engine.start()
        deadline = time.monotonic() + 60
        while engine.snapshot(time.monotonic_ns()).dirs[0].ios < 1000:
            assert time.monotonic() < deadline, "the engine did no I/O in 60 s"
            time.sleep(0.01)
        hogs = [
            subprocess.Popen(
                [sys.executable, "-c", HOG.format(s=HOG_S)],
                preexec_fn=lambda: os.sched_setaffinity(0, {0}),
                stdout=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        # Running, not just started: on a loaded machine an interpreter takes
        # more than a fixed pause to start (the workers were then not starved).
        for hog in hogs:
            assert hog.stdout is not None and hog.stdout.readline() == b"spinning\n"
        time.sleep(0.3)  # the hogs are running
        yield engine
    finally:
        engine.stop()
        for hog in hogs:
            hog.kill()
            hog.wait()
        engine.join(30)
        os.sched_setaffinity(0, saved)


def _not_starved() -> None:
    # The workers need microseconds of CPU to see the stop; on a busy machine
    # the scheduler sometimes gives them that beside the nice -20 hogs (CI at
    # load 7). The scenario did not happen: nothing is shown either way.
    pytest.skip("the workers got the CPU to stop despite the hogs: the scenario did not occur")


def test_workers_short_of_cpu_are_waited_for_not_called_blocked(tmp_path: Path) -> None:
    with starved_engine(tmp_path) as engine:
        t0 = time.monotonic()
        engine.stop()
        ended = engine.join_stopped(0.5)
        took = time.monotonic() - t0
        if took <= 0.5:
            _not_starved()
        assert ended and engine.stuck == 0, (took, engine.stuck)
        assert not engine._fds and not engine._maps  # closed by the join


def test_an_abandoned_engine_is_closed_by_its_last_worker(tmp_path: Path) -> None:
    """join_stopped gives up at its cap (as for a hung device): the workers
    left close the fds and buffers when they end, since nobody joins again."""
    with starved_engine(tmp_path) as engine:
        engine.stop()
        if engine.join_stopped(0.2, cap_s=0.4):
            _not_starved()
        assert engine.stuck > 0 and engine._fds
        deadline = time.monotonic() + 30  # the hogs end after HOG_S
        while engine._fds or any(t.is_alive() for t in engine.threads):
            assert time.monotonic() < deadline, "the workers never closed the engine"
            time.sleep(0.05)
        assert not engine._maps


def test_a_sleeping_thread_is_not_runnable_and_a_busy_one_is() -> None:
    stop = threading.Event()
    sleeper = threading.Thread(target=stop.wait)
    sleeper.start()
    try:
        time.sleep(0.05)
        assert not runnable(sleeper)
    finally:
        stop.set()
        sleeper.join()
    seen: list[bool] = []
    data = bytes(64 << 20)

    def busy() -> None:
        import hashlib

        end = time.monotonic() + 5
        while not seen and time.monotonic() < end:
            hashlib.sha256(data).digest()  # releases the GIL: on a CPU, state R

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            if runnable(worker):
                seen.append(True)
            time.sleep(0.001)
    finally:
        seen.append(False)
        worker.join()
    assert seen[0] is True
