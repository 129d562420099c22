"""The I/Os in flight when a run ends: waiting for them, and naming the ones
a device never answered.

Contract:
- ``await drain(engine, ended)``: after the loops were told to end (the
  deadline, a stop), wait while they reap what is in flight; True once every
  loop returned. False when the device stopped answering: no I/O completed
  for ``HUNG_S``, or ``DRAIN_CAP_S`` passed in all (fio waits for such I/O:
  300 s, ``FIO_REAP_TIMEOUT``, before it gives up on a job). While waiting,
  ``engine.draining_since_ns`` is set, so a stop during the wait gives the
  workers only what is left of ``steps.GRACE_S`` (``stop_grace``).
- ``hung_message``: what a run whose device stopped answering says, naming
  the I/Os still in flight (``pending.InFlight``).
- ``held_end(target, engine)``: after a stop and join, why the kernel holds
  the run's end, if it does, as ``(message, in_flight)``: workers still
  blocked (their I/Os in flight), or the fds' close held by the writeback
  of buffered writes (``Engine.close_held``); ``(None, [])`` otherwise. The
  one rule ``iops`` and ``warmup`` both apply (exit 2 when it says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from probetop.probes.core.sample import now_ns
from probetop.probes.disk.counters import C_ERRORS, C_IOS
from probetop.probes.disk.pending import InFlight, describe
from probetop.probes.disk.steps import GRACE_S

if TYPE_CHECKING:
    from probetop.probes.disk.workers import Engine

HUNG_S = 5.0
"""A device that completes none of the I/Os in flight for this long after the
run's end has stopped answering (a slow one, seconds per I/O, still drains)."""
DRAIN_CAP_S = 30.0
"""The longest a run waits for its I/Os in flight after its end, in all."""
_POLL_S = 0.05


def _completed(engine: Engine) -> int:
    return int(engine.cnt[:, :, C_IOS].sum() + engine.cnt[:, :, C_ERRORS].sum())


async def drain(engine: Engine, ended: asyncio.Event) -> bool:
    """See the module docstring. ``ended`` is set when the last loop returns."""
    began = last_progress = now_ns()
    engine.draining_since_ns = began
    seen = _completed(engine)
    while not engine.finished.is_set():
        t = now_ns()
        done = _completed(engine)
        if done != seen:
            seen, last_progress = done, t
        if t - last_progress >= HUNG_S * 1e9 or t - began >= DRAIN_CAP_S * 1e9:
            return False
        try:
            await asyncio.wait_for(ended.wait(), _POLL_S)
        except asyncio.TimeoutError:
            pass
    return True


def stop_grace(engine: Engine) -> float:
    """How long a stop waits for the workers: ``GRACE_S``, less what a drain
    already waited (Ctrl-C while a device does not answer ends at once)."""
    since = engine.draining_since_ns
    if not since:
        return GRACE_S
    return max(0.0, GRACE_S - (now_ns() - since) / 1e9)


def hung_message(target: str, engine: Engine, ios: Sequence[InFlight]) -> str:
    """What a run whose device stopped answering says (the report's error)."""
    since = engine.draining_since_ns
    waited = f" {(now_ns() - since) / 1e9:.1f} s after the run's end" if since else ""
    return (
        f"{target}: the device stopped answering: {describe(ios)} still in flight{waited}, "
        "not counted (the kernel may hold this process until they complete or fail)"
    )


def held_end(target: str, engine: Engine) -> tuple[str | None, list[InFlight]]:
    """See the module docstring: call after ``Engine.join_stopped``."""
    if engine.stuck:
        ios = engine.in_flight()
        return hung_message(target, engine, ios), ios
    return engine.close_held, []
