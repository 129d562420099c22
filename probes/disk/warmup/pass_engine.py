"""Warm-up job: the pass engine. Runs one pass's I/O workers and watches them.

``PassEngine(plan, pass_name)`` wraps the native ``workers.Engine``:

- ``await start()`` opens the target and starts the workers off the event
  loop (``ProbeError`` if the target cannot be opened);
- ``watch(...)`` wakes every tick (``min(interval, 0.5 s)``: the caller saves
  its checkpoint there) and hands the caller one ``Step`` per interval (this
  pass's direction only), and at once when the last worker ends; True when
  the pass ran to its end, False when it stopped at the deadline (--time).
  The loops stop issuing at the deadline themselves (``Engine.end_at``): the
  last ``Step`` ends at the last completion and counts every I/O issued;
  After the deadline it waits for the I/Os in flight as ``inflight.drain``
  says (a device that answers none of them for ``inflight.HUNG_S`` is hung);
- ``stop()`` stops and joins every worker (``Engine.join_stopped``: within
  ``steps.GRACE_S``, less what a drain already waited, longer while a worker
  is only short of CPU; a worker blocked in the kernel by a hung device is
  left behind, counted in ``stuck``, its I/Os in ``in_flight()``; a close
  the writeback of buffered writes holds is left behind too: ``held_end``) and
  returns the ``Step`` after the last interval (I/O completed after it:
  Ctrl-C, a stop, a hung device), which the caller makes the last interval;
- afterwards: ``done_extents()`` (exactly the completed bytes),
  ``failure()`` (the I/O error that ended the pass; a bad sector does not),
  ``failures`` (worker crashes) and ``first_bad_offset()`` (``--verify``).
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from dataclasses import dataclass

from probetop.probes.core.base import ProbeError
from probetop.probes.core.sample import now_ns
from probetop.probes.disk import inflight
from probetop.probes.disk.counters import (
    READ,
    WRITE,
    DirectionTotals,
    Snapshot,
)
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.inflight import stop_grace
from probetop.probes.disk.steps import GRACE_S, run_step
from probetop.probes.disk.targeterrors import describe_os_error
from probetop.probes.disk.workers import Engine

CHECKPOINT_EVERY_S = 0.5


@dataclass(frozen=True, slots=True)
class Step:
    """This pass's direction over one stretch of time: ``delta`` the I/O
    completed in it, ``bad_sectors`` the pass's count so far (``--verify``)."""

    t_ns: int
    seconds: float
    delta: DirectionTotals
    bad_sectors: int


@dataclass(frozen=True, slots=True)
class PassFailure:
    """The I/O error that stopped a pass."""

    code: int  # errno; 0 for a short I/O
    offset: int
    direction: str

    def describe(self, path: str) -> str:
        what = _errno_text(self.code)
        return f"{self.direction} failed at byte {self.offset:,} of {path}: {what}"


class PassEngine:
    """See the module docstring."""

    def __init__(self, plan: EnginePlan, pass_name: str) -> None:
        self.engine = Engine(plan)
        self.pass_name = pass_name
        self.direction = READ if pass_name == "read" else WRITE
        self._last: Snapshot | None = None

    async def start(self) -> None:
        """Open the target and start the workers off the event loop (a stop
        while they start stops them at once)."""
        engine = self.engine
        try:
            await run_step(lambda stop: engine.start(), name="probetop-start", on_stop=engine.stop)
        except OSError as exc:
            raise ProbeError(
                f"{self.engine.plan.path}: cannot open for the {self.pass_name} pass: "
                f"{describe_os_error(exc)}"
            ) from None

    async def watch(
        self,
        *,
        interval_s: float,
        deadline_ns: int | None,
        on_tick: Callable[[], None] | None,
        on_interval: Callable[[Step], None],
    ) -> bool:
        """Tick, report intervals, until the pass ends (True) or the deadline
        (False). The loops stop issuing at the deadline themselves
        (``Engine.end_at``); the last interval then waits for the I/Os in
        flight and ends at the last completion, so it counts every I/O the
        pass issued. A tick that would leave less than a quarter interval
        before the deadline emits nothing: the last interval takes it."""
        engine, d = self.engine, self.direction
        if deadline_ns is not None:
            engine.end_at(deadline_ns)
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        engine.on_finish = lambda: loop.call_soon_threadsafe(ended.set)
        if engine.finished.is_set():
            ended.set()
        step_ns = int(min(interval_s, CHECKPOINT_EVERY_S) * 1e9)
        interval_ns = int(interval_s * 1e9)
        # Zero counters at the start time: I/O done before this line counts too.
        prev = Snapshot(engine.started_ns, (DirectionTotals(), DirectionTotals()))
        last_emit = prev.t_ns
        next_tick = prev.t_ns + step_ns
        while True:
            # Wake on the next tick, at the deadline, or as soon as the last
            # worker ends.
            wake = next_tick if deadline_ns is None else min(next_tick, deadline_ns)
            await _wait(ended, (wake - now_ns()) / 1e9)
            t = now_ns()
            while next_tick <= t:
                next_tick += step_ns
            timed_out = deadline_ns is not None and t >= deadline_ns
            if timed_out and not engine.finished.is_set():
                # The loops stop issuing at the deadline by themselves (a
                # paced one sleeps no later): wait for what is in flight.
                await inflight.drain(engine, ended)
            done = engine.finished.is_set()
            if done:
                engine.join(GRACE_S)
                t = engine.finished_ns or t
            if on_tick is not None:
                on_tick()
            due = t - last_emit >= interval_ns - step_ns * 0.25
            near_end = deadline_ns is not None and deadline_ns - t < interval_ns // 4
            if done or timed_out or (due and not near_end):
                snap = engine.snapshot(t)
                cur = snap.dirs[d]
                seconds = (snap.t_ns - prev.t_ns) / 1e9
                on_interval(Step(snap.t_ns, seconds, cur.minus(prev.dirs[d]), cur.bad_sectors))
                prev, last_emit = snap, t
                self._last = snap
            if done:
                return not engine.expired
            if timed_out:
                return False

    def stop(self) -> Step:
        """Stop and join the workers; the I/O done after the last interval."""
        engine, d = self.engine, self.direction
        engine.stop()
        engine.join_stopped(stop_grace(engine))
        last = self._last
        base = last.dirs[d] if last is not None else DirectionTotals()
        t0 = last.t_ns if last is not None else engine.started_ns
        end = engine.snapshot(engine.finished_ns or now_ns())
        cur = end.dirs[d]
        return Step(end.t_ns, max(0.0, (end.t_ns - t0) / 1e9), cur.minus(base), cur.bad_sectors)

    def done_extents(self) -> list[tuple[int, int]]:
        return self.engine.done_extents()

    def failure(self) -> PassFailure | None:
        """The I/O error that ended the pass: any with ``stop_on_error``,
        else one after which going on is pointless (full, read-only, gone,
        the target shorter than the pass). Other failed I/Os (EIO on a bad
        sector) are counted and the pass goes on past them."""
        error = self.engine.halting_error()
        if error is None and self.engine.plan.stop_on_error:
            error = self.engine.last_error()
        return PassFailure(*error) if error is not None else None

    @property
    def failures(self) -> list[str]:
        return self.engine.failures

    @property
    def stuck(self) -> int:
        """Workers still blocked in the kernel after ``stop()``."""
        return self.engine.stuck

    def held_end(self, target: str) -> str | None:
        """After ``stop()``: why the kernel holds the pass's end, if it does
        (workers blocked with I/Os in flight, or a close held by writeback),
        by the rule ``iops`` applies (``inflight.held_end``)."""
        return inflight.held_end(target, self.engine)[0]

    def fatal_error(self) -> str | None:
        """An I/O error that makes going on pointless (disk full, device gone)."""
        return self.engine.fatal_error()

    def first_bad_offset(self) -> int | None:
        return self.engine.first_bad_offset()


async def _wait(event: asyncio.Event, timeout_s: float) -> None:
    """Until ``event`` is set or ``timeout_s`` passed; always yields."""
    try:
        await asyncio.wait_for(event.wait(), max(0.0, timeout_s))
    except asyncio.TimeoutError:
        pass


def _errno_text(code: int) -> str:
    if code == errno.ENOSPC:
        return "disk full (ENOSPC)"
    if code == errno.EIO:
        return "I/O error (EIO): the device reported a failure"
    if code == 0:
        return "short I/O: the target now ends before this byte (it shrank)"
    return os.strerror(code) if code > 0 else "AIO setup failed"
