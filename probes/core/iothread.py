"""File I/O off the event loop, in a daemon thread: ``IoThread``.

Why not ``asyncio.to_thread`` (or aiofiles, which is the same): the event
loop's default executor is joined by ``asyncio.run`` on its way out, so a
call stuck in the kernel on a hung disk (a hard-mounted NFS server gone, a
FUSE server that does not answer) kept the process alive after Ctrl-C. A
daemon thread never does, and a caller may stop waiting for it.

Contract: ``IoThread(name)`` starts one daemon thread that runs the calls
given to it in order. ``await run(fn, *args, timeout=None)`` runs
``fn(*args)`` there and returns its result (or raises its exception); with
``timeout``, raises ``DiskStalled`` once that passes and leaves the call
running (it cannot be interrupted: it is in the kernel); a cancelled
``run`` leaves it running too. ``post(fn, *args)`` queues a call nobody
waits for (its exceptions are dropped). ``stop()`` ends the thread after
what is queued. Users: the recorder (probes/record/writer.py), the replay's
reader in the dashboard (tui/ui/replay_view.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DiskStalled(Exception):
    """A file operation did not finish in the time allowed (``IoThread.run``)."""


class IoThread:
    """One daemon thread that runs file operations in order (module docstring)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        def job() -> None:
            with contextlib.suppress(Exception):
                fn(*args)

        self._jobs.put(job)

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if future.done():  # given up on (a timeout, a cancellation)
                return
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

        def job() -> None:
            value: Any
            try:
                ok, value = True, fn(*args)
            except BaseException as exc:  # handed to the awaiting task
                ok, value = False, exc
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, ok, value)

        self._jobs.put(job)
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, timeout))
        except asyncio.TimeoutError:
            future.cancel()
            raise DiskStalled from None

    def stop(self) -> None:
        self._jobs.put(None)
