"""Hub: fan-out, lossless vs lossy subscriptions, lifecycle, errors as data."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from probetop.probes.core.base import MetricSpec, ProbeError
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.sample import Announce, Sample, Status, now_ns
from stopclock import StopClock


class CountingProbe:
    """A real probe with a worker thread: counts, emits every `every` seconds."""

    kind = "test.count"
    metrics = (MetricSpec("n", "", "counter", True),)

    def __init__(self, pid: str = "count", samples: int | None = None, every: float = 0.01):
        self.id = pid
        self.samples = samples
        self.every = every
        self.emitted = 0
        self.thread: threading.Thread | None = None
        self.stop_flag = threading.Event()

    def prepare(self) -> None:
        pass

    def params(self) -> Mapping[str, Any]:
        return {"samples": self.samples}

    def reference_command(self) -> str | None:
        return None

    async def run(self, emit) -> None:
        self.thread = threading.Thread(target=self.stop_flag.wait)
        self.thread.start()
        try:
            while self.samples is None or self.emitted < self.samples:
                await asyncio.sleep(self.every)
                self.emitted += 1
                emit(Sample(self.id, now_ns(), self.every, {"n": float(self.emitted)}))
        finally:
            self.stop_flag.set()
            self.thread.join()

    def summary(self) -> Mapping[str, Any]:
        return {"emitted": self.emitted}


class FailingProbe(CountingProbe):
    kind = "test.fail"

    def prepare(self) -> None:
        raise ProbeError("cannot start: fix the thing")


class CrashingProbe(CountingProbe):
    kind = "test.crash"

    async def run(self, emit) -> None:
        raise RuntimeError("boom")


async def test_lossless_gets_everything_lossy_drops_oldest():
    hub = Hub()
    lossless = hub.subscribe(lossless=True)
    lossy = hub.subscribe(lossless=False, maxsize=5)
    probe = CountingProbe(samples=50, every=0.001)
    hub.add(probe)
    hub.start()
    assert await hub.wait(timeout=5)
    got = [r for r in lossless.drain() if isinstance(r, Sample)]
    assert [s.values["n"] for s in got] == [float(i) for i in range(1, 51)]
    kept = lossy.drain()
    assert len(kept) == 5
    assert lossy.dropped > 0
    # The lossy feed keeps the newest records, so a stalled UI catches up to now.
    assert kept[-1].probe == "count" and isinstance(kept[-1], Status)
    assert hub.summaries["count"] == {"emitted": 50}


async def test_late_subscriber_learns_existing_probes_and_runtime_add():
    hub = Hub()
    hub.add(CountingProbe("a", samples=1))
    sub = hub.subscribe()
    first = sub.drain()
    assert isinstance(first[0], Announce) and first[0].probe == "a"
    hub.start()
    hub.add(CountingProbe("b", samples=1))
    assert await hub.wait(timeout=5)
    ids = {r.probe for r in sub.drain() if isinstance(r, Sample)}
    assert ids == {"a", "b"}


async def test_prepare_error_raises_before_start():
    hub = Hub()
    with pytest.raises(ProbeError, match="fix the thing"):
        hub.add(FailingProbe("f"))
    assert "f" not in hub.probes


async def test_crash_is_data_and_stop_cleans_workers():
    hub = Hub()
    sub = hub.subscribe(lossless=True)
    crash = CrashingProbe("c")
    forever = CountingProbe("forever")
    hub.add(crash)
    hub.add(forever)
    hub.start()
    await asyncio.sleep(0.1)
    await hub.stop()
    records = sub.drain()
    errors = [r for r in records if isinstance(r, Status) and r.level == "error"]
    assert errors and "boom" in errors[0].message
    assert "c" in hub.errors
    # The cancelled probe joined its worker thread before returning.
    assert forever.thread is not None and not forever.thread.is_alive()
    stopped = [r for r in records if isinstance(r, Status) and r.level == "stopped"]
    assert {s.probe for s in stopped} == {"c", "forever"}
    assert hub.running() == []


async def test_subscription_wait_times_out_empty():
    sub = Subscription(lossless=True)
    assert await sub.wait(timeout=0.01) == []


class StubbornProbe(CountingProbe):
    """Cleanup that ignores the first cancellation for a long time: the hub
    must not wait for it."""

    kind = "test.stubborn"

    async def run(self, emit) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(30)  # cancelled again only by the loop's teardown
            raise


async def test_stop_is_bounded_and_records_a_probe_that_did_not_stop():
    from probetop.probes.core.hub import STOP_DEADLINE_S

    hub = Hub()
    good, bad = CountingProbe("good"), StubbornProbe("bad")
    hub.add(good)
    hub.add(bad)
    sub = hub.subscribe(lossless=True)
    hub.start()
    await asyncio.sleep(0.1)
    clock = StopClock(os.getpid()).start()
    await hub.stop()
    took = clock.stop()
    # It waited out the deadline (never less), and not much more of its own
    # time (a loaded machine's wait for a CPU does not count: stopclock.py).
    assert took.wall_s >= STOP_DEADLINE_S - 0.05, str(took)
    assert took.own_s < STOP_DEADLINE_S + 0.5, str(took)
    assert hub.errors == {"bad": f"did not stop within {STOP_DEADLINE_S:g} s"}
    assert "good" not in hub.errors and good.thread is not None and not good.thread.is_alive()
    assert set(hub.summaries) == {"good", "bad"}  # the report still has both
    statuses = [(r.probe, r.level) for r in sub.drain() if isinstance(r, Status)]
    assert ("bad", "error") in statuses and ("bad", "stopped") in statuses
    for task in asyncio.all_tasks():  # the stubborn one, so the test loop can close
        if task is not asyncio.current_task():
            task.cancel()


async def test_stop_probe_is_bounded_too():
    hub = Hub()
    hub.add(StubbornProbe("bad"))
    hub.start()
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await hub.stop_probe("bad", timeout=0.3)
    assert loop.time() - t0 < 0.8
    assert hub.errors["bad"] == "did not stop within 0.3 s"
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()


async def test_a_probe_that_does_not_stop_still_gets_its_footer_and_report(tmp_path):
    """The backstop end to end: a headless run with a recording, one probe
    whose cleanup hangs. The run ends within --time + 1.5 s + a little, the
    footer is written with the error and both summaries."""
    from probetop.probes.core.hub import STOP_DEADLINE_S
    from probetop.probes.record.reader import load_session
    from probetop.tui.run.runner import run_headless

    path = tmp_path / "rec.jsonl"
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    result = await run_headless(
        [CountingProbe("good"), StubbornProbe("bad")],
        duration_s=0.3,
        record=path,
        command=["probetop", "test"],
    )
    assert loop.time() - t0 < 0.3 + STOP_DEADLINE_S + 1.0
    assert result.reason == "time"
    assert result.errors == {"bad": f"did not stop within {STOP_DEADLINE_S:g} s"}
    session = load_session(path)
    assert session.warnings == []
    assert session.footer is not None
    assert session.footer["errors"] == result.errors
    assert set(session.footer["summaries"]) == {"good", "bad"}
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()


async def test_wake_ends_a_pending_wait_at_once():
    sub = Subscription(lossless=True)
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, sub.wake)
    t0 = loop.time()
    assert await sub.wait(timeout=5.0) == []
    assert loop.time() - t0 < 1.0
    sub.put(Status("x", now_ns(), "info", "later"))  # still open: records still flow
    assert len(await sub.wait(timeout=1.0)) == 1


async def test_wait_batch_hands_over_once_per_period_and_at_once_on_close() -> None:
    import time as _time

    from probetop.probes.core.hub import Subscription
    from probetop.probes.core.sample import Status

    sub = Subscription(lossless=True)

    def status(i: int) -> Status:
        return Status("p", i, "info", str(i))

    sub.put(status(0))
    assert len(await sub.wait_batch(0.3)) == 1  # the first batch: at once
    t0 = _time.monotonic()

    async def feed() -> None:
        # One record per turn of the loop, no clock in between: with 20 ms
        # sleeps a loaded machine stretched the five puts past the period
        # (3 of 5 came in the batch), which measured the load, not the hub.
        for i in range(1, 6):
            sub.put(status(i))
            await asyncio.sleep(0)

    task = asyncio.create_task(feed())
    batch = await sub.wait_batch(0.3)
    await task
    assert _time.monotonic() - t0 >= 0.25  # held until the period passed ...
    assert len(batch) == 5  # ... so every record of it came in one batch
    sub.put(status(9))
    t1 = _time.monotonic()
    asyncio.get_running_loop().call_later(0.05, sub.close)
    assert len(await sub.wait_batch(5.0)) == 1
    assert _time.monotonic() - t1 < 1.0  # close does not wait for the period
