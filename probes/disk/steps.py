"""Long blocking steps that stop when asked: ``run_step``.

Why: ``asyncio.to_thread`` runs a function in the event loop's default
executor. Cancelling the awaiting task does not stop the function, and
``asyncio.run()`` waits for that executor before it returns, so a long step
(laying out a 1 PiB file) kept the process alive through Ctrl-C, SIGTERM,
SIGHUP and --time. No step of the disk family runs that way.

Contract:
- ``await run_step(fn, *args, name=...)`` runs ``fn(stop, *args)`` in a new
  daemon thread and returns its result, or raises its exception.
- ``stop`` is a ``threading.Event``. ``fn`` looks at it at least every
  ``POLL_S`` (0.1 s) and returns early (or raises ``Stopped``) once set.
- When the awaiting task is cancelled (a signal, --time, the dashboard
  removing the probe), ``stop`` is set, the thread gets ``GRACE_S`` to end,
  then the cancellation goes on. A thread still blocked in the kernel after
  that (a hung device, a compiler that cannot be interrupted) is left
  behind: a daemon thread never keeps the process alive. ``abandoned()``
  counts such threads, for the report.
- ``wait_threads(threads, budget_s)`` joins threads within one time budget
  and returns those still alive (same rule for the I/O workers).
- Starting the I/O engine is a step too: with 64 workers on 2 CPUs, starting
  the threads takes long enough that a signal must not wait for it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

POLL_S = 0.1  # a step looks at its stop flag at least this often
GRACE_S = 1.0  # after a stop request, how long a step may take to end

_abandoned = 0
_abandoned_lock = threading.Lock()


class Stopped(Exception):
    """Raised by a step that saw its stop flag (``run_step`` re-raises the
    cancellation instead, when the stop came from one)."""


def abandoned() -> int:
    """Step threads left running after a stop (blocked in the kernel)."""
    return _abandoned


def _note_abandoned() -> None:
    global _abandoned
    with _abandoned_lock:
        _abandoned += 1


async def run_step(
    fn: Callable[..., T],
    *args: Any,
    name: str = "probetop-step",
    on_stop: Callable[[], None] | None = None,
    grace_s: float = GRACE_S,
) -> T:
    """Run ``fn(stop, *args)`` off the event loop; see the module docstring.
    ``on_stop`` is called at once when the step is cancelled, before the wait
    (e.g. ``Engine.stop`` while the engine's threads are being started);
    ``grace_s`` 0 for a step that cannot stop early (the JIT compiler)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    stop = threading.Event()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def body() -> None:
        try:
            result = fn(stop, *args)
        except BaseException as exc:  # handed to the awaiting task, never lost
            outcome: tuple[bool, Any] = (False, exc)
        else:
            outcome = (True, result)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        if on_stop is not None:
            on_stop()
        done, _ = await asyncio.wait({future}, timeout=grace_s) if grace_s > 0 else (set(), set())
        if future in done and not future.cancelled():
            future.exception()  # retrieved: the step's own end is not an error now
        elif thread.is_alive():
            _note_abandoned()
        raise


def wait_threads(threads: Iterable[threading.Thread], budget_s: float) -> list[threading.Thread]:
    """Join ``threads`` within ``budget_s`` seconds in all; those still alive."""
    deadline = time.monotonic() + budget_s
    alive = []
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            alive.append(thread)
    return alive
