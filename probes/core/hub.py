"""The hub runs probes as asyncio tasks and fans their records out.

Data flows one way: probe -> hub -> subscriptions. Control (add a probe, stop
one, stop all) goes through hub methods, never by reaching into a probe.

Two kinds of subscription:
- lossless (the recorder): every record, in order; unbounded, so the
  subscriber must drain promptly (the recorder does, at least once a second).
- lossy (the UI feed): bounded; when full the oldest record is dropped and
  counted, so a stalled UI can never stall a probe or grow memory.

Stopping is bounded: ``stop()`` / ``stop_probe()`` cancel, wait at most
``STOP_DEADLINE_S``, and record a probe that has not finished its cleanup by
then as an error ("did not stop within 1.5 s", with the summary it has so
far), so the footer and the report are still written. Its task is left to
end on its own (probe workers are daemon threads).

Freezes: while any probe runs, a ``FreezeWatch`` (probes/core/freezes.py)
notices the process having been stopped as a whole (SIGSTOP, a freezer);
each running probe then gets a "paused" warning status with the length, so
the recording never has a silent gap, and ``on_freeze(message)`` is called
(the session's notify: the headless run's stderr, the dashboard's toast).

Series ends: every sample a probe emits goes through ``series`` (a
``SeriesTracker``) first; the ``SeriesEnded`` records it shows (a detached
loop device, a removed interface) are fanned out just before that sample,
so every subscriber (the recorder, the panes, the headless runner) gets
them from the same one place. A probe with a true ``lists_every_entity``
(the passive system probes: each sample names every device they have) ends
a series as soon as a sample lacks it. A probe's open series are dropped
without a record when it stops: the footer covers them.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from probetop.probes.core.base import Probe, ProbeError, describe
from probetop.probes.core.freezes import FreezeWatch
from probetop.probes.core.sample import Announce, Record, Sample, Status, now_ns
from probetop.probes.core.series import SeriesTracker

# How long stop() waits for probes to clean up (cancel -> run() returns).
# Probes see cancellation at once and stop their workers within ~0.1 s; ICMP
# waits up to 1 s for replies in flight. Signal to exit stays under 2 s.
STOP_DEADLINE_S = 1.5


class Subscription:
    """A queue of records for one consumer. See the module docstring."""

    def __init__(self, *, lossless: bool, maxsize: int = 2048) -> None:
        self.lossless = lossless
        self._items: deque[Record] = deque(maxlen=None if lossless else maxsize)
        self._ready = asyncio.Event()
        self._closed = asyncio.Event()
        self._last_batch = -float("inf")
        self.dropped = 0
        self.closed = False
        #: Called with each record as it is queued (on the hub's loop), when
        #: set: a consumer that must act on some record at once (the live
        #: mode's first sample of a probe) without looking at the queue on a timer.
        self.on_put: Callable[[Record], None] | None = None

    def put(self, record: Record) -> None:
        if self.closed:
            return
        if not self.lossless and len(self._items) == self._items.maxlen:
            self.dropped += 1
        self._items.append(record)
        self._ready.set()
        if self.on_put is not None:
            self.on_put(record)

    def peek(self) -> list[Record]:
        """Everything queued now, left queued."""
        return list(self._items)

    def drain(self) -> list[Record]:
        """Everything queued now, without waiting."""
        items = list(self._items)
        self._items.clear()
        self._ready.clear()
        return items

    async def wait(self, timeout: float | None = None) -> list[Record]:
        """Wait until something is queued (or timeout, or close), then drain."""
        if not self._items and not self.closed:
            # asyncio.wait, not wait_for: on Python < 3.12 wait_for can swallow
            # a cancellation that races with the event being set, which left a
            # cancelled drain loop running forever.
            waiter = asyncio.ensure_future(self._ready.wait())
            try:
                await asyncio.wait({waiter}, timeout=timeout)
            finally:
                waiter.cancel()
        return self.drain()

    async def wait_batch(self, period: float) -> list[Record]:
        """What is queued, handed over at most once per ``period`` seconds:
        a consumer that writes in batches (the recorder) wakes once per
        period, not once per record. Returns at once on close (with what is
        queued); never returns an empty list otherwise."""
        loop = asyncio.get_running_loop()
        while not self.closed:
            if not self._items:
                self._ready.clear()  # a wake() with nothing queued is no reason to return
            wait_for = self._closed if self._items else self._ready
            timeout = self._last_batch + period - loop.time() if self._items else None
            if timeout is not None and timeout <= 0:
                break
            waiter = asyncio.ensure_future(wait_for.wait())
            try:
                await asyncio.wait({waiter}, timeout=timeout)
            finally:
                waiter.cancel()
        self._last_batch = loop.time()
        return self.drain()

    def wake(self) -> None:
        """End a pending ``wait`` now (it returns what is queued, maybe
        nothing): a consumer that also waits for a stop request calls this
        from its signal handler instead of polling."""
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()
        self._closed.set()


class Hub:
    """Runs probes and fans out their records. Use from one event loop."""

    def __init__(self) -> None:
        self.probes: dict[str, Probe] = {}
        self.descriptions: dict[str, dict[str, Any]] = {}
        self.summaries: dict[str, Mapping[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._subs: list[Subscription] = []
        self._running = False
        self.started_ns = now_ns()
        self.series = SeriesTracker()
        self.freezes: FreezeWatch | None = None
        #: Called (on the hub's loop) with the message of each freeze.
        self.on_freeze: Callable[[str], None] | None = None

    # -- subscriptions -------------------------------------------------
    def subscribe(self, *, lossless: bool = False, maxsize: int = 2048) -> Subscription:
        """A new subscription; it first receives an Announce for every known probe."""
        sub = Subscription(lossless=lossless, maxsize=maxsize)
        for pid, info in self.descriptions.items():
            sub.put(Announce(pid, self.started_ns, info))
        self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        sub.close()
        if sub in self._subs:
            self._subs.remove(sub)

    def publish(self, record: Record) -> None:
        """Fan a record out to every subscription (a sample after the series
        ends it shows: see the module docstring). Never blocks."""
        if isinstance(record, Sample):
            for ended in self.series.observe(record):
                self._fan_out(ended)
        self._fan_out(record)

    def _fan_out(self, record: Record) -> None:
        for sub in self._subs:
            sub.put(record)

    # -- control -------------------------------------------------------
    def add(self, probe: Probe, *, prepared: bool = False) -> None:
        """Check the probe (``prepare``, unless the caller already did:
        ``prepared``) and start it if the hub runs.

        Raises ProbeError from ``prepare`` or when the id is taken, so the caller
        can tell the user before anything starts. ``prepare`` runs once per
        probe: a second one would take a warm-up's target lock again and
        redo an ICMP JIT warm-up on the UI loop.
        """
        if probe.id in self.probes and probe.id in self._tasks and not self._tasks[probe.id].done():
            raise ProbeError(f"a probe with id {probe.id!r} is already running")
        if not prepared:
            probe.prepare()
        self.probes[probe.id] = probe
        info = describe(probe)
        self.descriptions[probe.id] = info
        self.series.watch(probe.id, whole=bool(getattr(probe, "lists_every_entity", False)))
        self.publish(Announce(probe.id, now_ns(), info))
        if self._running:
            self._start(probe)

    def start(self) -> None:
        """Start every added probe. Call from inside the running loop."""
        self._running = True
        for probe in self.probes.values():
            if probe.id not in self._tasks:
                self._start(probe)

    def _watch_freezes(self) -> None:
        """The freeze watch runs while any probe does (``_start`` .. ``_run``'s end)."""
        if self.freezes is not None:
            return
        loop = asyncio.get_running_loop()
        hub = weakref.ref(self)  # the thread must not keep a dropped hub alive

        def frozen(seconds: float, ended_ns: int) -> None:
            owner = hub()
            if owner is not None:
                with contextlib.suppress(RuntimeError):  # the loop has closed: nobody to tell
                    loop.call_soon_threadsafe(owner._frozen, seconds, ended_ns)

        def alive() -> bool:  # a hub dropped with its loop (never stopped) ends its watch
            return hub() is not None and not loop.is_closed()

        self.freezes = FreezeWatch(frozen, alive)
        self.freezes.start()

    def _unwatch_freezes(self) -> None:
        if self.freezes is not None:
            self.freezes.close()
            self.freezes = None

    def _frozen(self, seconds: float, ended_ns: int) -> None:
        running = self.running()
        if not running:
            return
        message = (
            f"paused: this process was stopped for about {seconds:.1f} s (SIGSTOP, a "
            "freezer, a debugger or a paused machine): no probe measured then, and "
            "the interval around it includes that time"
        )
        for probe_id in running:
            self.publish(Status(probe_id, ended_ns, "warning", message))
        if self.on_freeze is not None:
            self.on_freeze(message)

    def _start(self, probe: Probe) -> None:
        self._watch_freezes()
        self._tasks[probe.id] = asyncio.get_running_loop().create_task(
            self._run(probe), name=f"probe:{probe.id}"
        )

    async def _run(self, probe: Probe) -> None:
        self.publish(Status(probe.id, now_ns(), "started", f"{probe.kind} started"))
        reason = "finished"
        try:
            await probe.run(self.publish)
        except asyncio.CancelledError:
            reason = "stopped"
        except ProbeError as exc:
            reason = "failed"
            self.errors[probe.id] = str(exc)
            self.publish(Status(probe.id, now_ns(), "error", str(exc)))
        except Exception as exc:  # a probe bug must not take the dashboard down
            reason = "crashed"
            self.errors[probe.id] = f"{type(exc).__name__}: {exc}"
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            self.publish(Status(probe.id, now_ns(), "error", f"probe crashed: {detail}"))
        finally:
            try:
                self.summaries[probe.id] = probe.summary()
            except Exception as exc:
                self.summaries[probe.id] = {"error": f"summary failed: {exc}"}
            self.series.forget(probe.id)
            self.publish(Status(probe.id, now_ns(), "stopped", reason))
            if not any(not t.done() for pid, t in self._tasks.items() if pid != probe.id):
                self._unwatch_freezes()  # the last probe has ended: no thread outlives them

    def running(self) -> list[str]:
        """Ids of probes whose task is still running."""
        return [pid for pid, task in self._tasks.items() if not task.done()]

    async def stop_probe(self, probe_id: str, timeout: float = STOP_DEADLINE_S) -> None:
        """Cancel one probe and wait (at most ``timeout``) until it has cleaned up."""
        task = self._tasks.get(probe_id)
        if task is not None and not task.done():
            await self._stop({probe_id: task}, timeout)

    async def stop(self, timeout: float = STOP_DEADLINE_S) -> None:
        """Cancel every probe and wait (at most ``timeout``) for all of them to
        clean up; see the module docstring."""
        tasks = {pid: t for pid, t in self._tasks.items() if not t.done()}
        if tasks:
            await self._stop(tasks, timeout)
        self._running = False
        self._unwatch_freezes()

    async def _stop(self, tasks: dict[str, asyncio.Task[None]], timeout: float) -> None:
        for task in tasks.values():
            task.cancel()
        # asyncio.wait, not wait_for/gather: it never cancels the tasks again
        # and returns at the deadline whatever they do (see Subscription.wait).
        _done, pending = await asyncio.wait(set(tasks.values()), timeout=timeout)
        for probe_id, task in tasks.items():
            if task in pending:
                self._abandon(probe_id, timeout)

    def _abandon(self, probe_id: str, timeout: float) -> None:
        """A probe whose cleanup outlived the deadline: an error, with what it has."""
        probe = self.probes[probe_id]
        message = f"did not stop within {timeout:g} s"
        self.errors[probe_id] = message
        try:
            self.summaries[probe_id] = probe.summary()
        except Exception as exc:
            self.summaries[probe_id] = {"error": f"summary failed: {exc}"}
        self.series.forget(probe_id)
        self.publish(Status(probe_id, now_ns(), "error", message))
        self.publish(Status(probe_id, now_ns(), "stopped", "abandoned"))

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until every probe finished by itself, or timeout. True if all done."""
        tasks = [t for t in self._tasks.values() if not t.done()]
        if not tasks:
            return True
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending
