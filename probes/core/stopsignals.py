"""Stop signals that arrive before a run installs its own handlers (process-wide:
the console script installs the handler, the runners read what it recorded).

A run routes SIGINT, SIGTERM and SIGHUP to its event loop once it has
started (``LiveSession.install_signal_handlers``). Before that -- imports,
parsing, resolving the target, compiling a native loop (seconds on a cold
cache) -- the process had the dispositions it inherited, and a parent that
starts probetop in the background of a script (``probetop ... &``) leaves
SIGINT *ignored*: a Ctrl-C or ``kill -INT`` sent during start-up was lost,
and a flood without ``--time`` then ran until something killed it.

Contract:
- ``install()`` (first thing in the console script, before heavy imports):
  SIGINT, SIGTERM and SIGHUP are caught from then on, whatever was
  inherited; each one is recorded (``pending()``), never lost.
- ``interrupt_from_now()``: a signal also raises ``KeyboardInterrupt`` in
  the main thread, so a long start-up step ends at once (the console script
  exits 128 + the signal number, no traceback) -- but never inside a
  finalizer or inside llvmlite/numba, whose state an exception between two
  bytecodes can break; there it stays pending for the next ``check()``.
  Before that call (during imports, where an exception would print a
  traceback) it is only recorded, and ``main`` checks ``pending()`` as it
  starts.
- ``check()``: raise ``KeyboardInterrupt`` if a signal is pending (for the
  steps that may swallow an exception raised inside them, e.g. a ctypes
  callback during numba's compile); runners call ``pending()`` right after
  installing their own handlers, so a signal from start-up stops the run.
- ``exit_status()``: 128 + the pending signal's number (130 for SIGINT).
- ``status_of(name)``: 128 + the named signal's number: the one exit status
  a stop signal means, whether it came during start-up or while probes ran
  (the shell's convention, and what fio and sysbench exit with when killed).
- ``spare_report()``: a run has stopped and its report is next. The next
  stop signal (a Ctrl-C pressed twice, a ``kill`` sent again) is recorded,
  not raised: it can stop nothing more, and raising it lost the report that
  says what ran. So is every signal in the ``SPARE_S`` that follow (a
  flood of ``kill``: it once cut the report short, or raised where nothing
  could catch it and the process died of SIGTERM in Python's shutdown).
  After that, any signal but the one spared raises as before, so a report
  blocked on a stdout nobody reads still ends on a signal.
- ``@uninterrupted``: a stop signal handled while the decorated function
  (or anything it calls) runs is recorded, never raised: a process's last
  steps, a session writing its exit status. A burst of ``kill`` once
  raised inside a session's ``finally`` and it ended "died", its report and
  footer written but not its status. (A ``try`` in the function could not
  do it: the signal can be handled as the function is entered.) Its first
  act is ``ignore_from_now()``: a flood of signals (a ``kill`` loop) once
  nested the handler until RecursionError.
- ``share_receipts()`` (before a fork: tui/sessions/waiter.py) makes a
  counter per signal that both processes see; ``note(sig)`` (every handler
  of a stop or job signal in this process calls it) counts one received,
  ``receipts(sig)`` reads the count. The waiter reads it to tell a signal the
  run got itself (sent to the whole process group: ``timeout``, ``kill --
  -PGID``) from one sent to the waiter alone, which it passes on: one user
  action, one handling.
- ``run_stoppable(step)``: run a long start-up step (numba's JIT: seconds
  on a cold cache) in a daemon thread while the main thread waits, checking
  for a stop signal every 50 ms: a signal raises ``KeyboardInterrupt`` at
  once instead of inside the compiler, which can swallow it (the stop then
  waited for the whole compile, over 3 s) or fail later with an error of its
  own. The abandoned step dies with the process (the console script exits
  with ``os._exit``). Called off the main thread, it just runs the step.
"""

from __future__ import annotations

import contextlib
import mmap
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_pending: list[int] = []
_raise = False
_spared = 0  # signals still to record without raising (``spare_report``)
_spare_until_ns = 0  # every signal before this (monotonic) is spared (``spare_report``)

SPARE_S = 2.0
"""How long after ``spare_report`` every stop signal is spared: a report
takes milliseconds; a flood of ``kill`` goes on until the process is gone."""


_NO_RAISE_IN = ("/llvmlite/", "/numba/")
"""Code an exception raised between two of its bytecodes can leave broken:
llvmlite takes its global lock and runs numba's callbacks in ``__enter__``/
``__exit__``, so a KeyboardInterrupt there left the lock held or a library
object half closed ("Exception ignored in: ObjectRef.__del__" on stderr,
seen once in CI when ``stop`` hit a session during its start-up)."""


_UNINTERRUPTED: set[CodeType] = set()
"""The code of the ``@uninterrupted`` functions."""

_receipts: mmap.mmap | None = None
_COUNT = struct.Struct("Q")


def share_receipts() -> None:
    """The per-signal receipt counters both sides of a fork see (docstring)."""
    global _receipts
    if _receipts is None:
        _receipts = mmap.mmap(-1, _COUNT.size * 65)  # MAP_SHARED | MAP_ANONYMOUS


def note(sig: int) -> None:
    """Count one ``sig`` received by this process (a handler's first act)."""
    if _receipts is not None and 0 < sig <= 64:
        at = _COUNT.size * sig
        _COUNT.pack_into(_receipts, at, _COUNT.unpack_from(_receipts, at)[0] + 1)


def receipts(sig: int) -> int:
    """How many ``sig`` the run noted (0 without ``share_receipts``)."""
    if _receipts is None or not 0 < sig <= 64:
        return 0
    return int(_COUNT.unpack_from(_receipts, _COUNT.size * sig)[0])


_handling = False


def _handler(signum: int, frame: FrameType | None) -> None:
    global _spared, _handling
    if _handling:  # handled inside this handler (a flood of ``kill``): recorded, no more
        _record(signum)
        return
    _handling = True
    try:
        _record(signum)
        if _spared:
            _spared -= 1
            return
        if time.monotonic_ns() < _spare_until_ns:
            return
        if _raise and _may_raise_in(frame):
            raise KeyboardInterrupt
    finally:
        _handling = False


def _record(signum: int) -> None:
    note(signum)
    if signum not in _pending:  # the first of each, in order: a flood holds no memory
        _pending.append(signum)


def _may_raise_in(frame: FrameType | None) -> bool:
    """False while the main thread runs a finalizer (``__del__``: Python
    swallows what it raises, and the stop with it), inside llvmlite or numba
    (``_NO_RAISE_IN``) or in an ``@uninterrupted`` function. The signal
    stays pending there: the waits of start-up (``run_stoppable``, every 50
    ms) and the run's own handlers act on it."""
    while frame is not None:
        code = frame.f_code
        if (
            code.co_name == "__del__"
            or code in _UNINTERRUPTED
            or any(part in code.co_filename for part in _NO_RAISE_IN)
        ):
            return False
        frame = frame.f_back
    return True


def _quiet_unraisable(hook: Any) -> Any:
    """A KeyboardInterrupt raised inside a callback Python cannot propagate
    from (ctypes, during numba's compile) is pending, not a traceback."""

    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt) and _pending:
            return
        hook(info)

    return unraisable


def install() -> None:
    """Catch the stop signals from now on (see the module docstring)."""
    for sig in SIGNALS:
        try:
            signal.signal(sig, _handler)
        except (OSError, RuntimeError, ValueError):  # not the main thread, or no such signal
            continue
    sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)


def interrupt_from_now() -> None:
    """From now on a signal also raises KeyboardInterrupt in the main thread."""
    global _raise
    _raise = True


def uninterrupted(func: F) -> F:
    """Run ``func`` to its end whatever stop signals come (module docstring)."""
    _UNINTERRUPTED.add(func.__code__)
    return func


def ignore_from_now() -> None:
    """A process's last steps (an ``@uninterrupted`` function's first act):
    stop signals are ignored from now on, so a flood of them cannot keep the
    main thread in its handlers. Call it from the main thread."""
    for sig in SIGNALS:
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            signal.signal(sig, signal.SIG_IGN)


def spare_report() -> None:
    """The run has stopped: the next stop signal does not interrupt its
    report (see the module docstring)."""
    global _spared, _spare_until_ns
    _spared = 1
    _spare_until_ns = time.monotonic_ns() + int(SPARE_S * 1e9)


def forget(sig: int) -> None:
    """Drop ``sig`` from the pending signals (a detached session ignores
    SIGHUP: one that came while it started must not stop it either)."""
    _pending[:] = [s for s in _pending if s != sig]


def pending() -> str | None:
    """The name of the first stop signal received so far, or None."""
    return signal.Signals(_pending[0]).name if _pending else None


def check() -> None:
    """Raise KeyboardInterrupt if a stop signal is pending."""
    if _pending:
        raise KeyboardInterrupt


def exit_status(default: int = 130) -> int:
    """128 + the pending signal's number (``default`` when none is)."""
    return 128 + _pending[0] if _pending else default


def status_of(signame: str) -> int:
    """128 + the number of the signal called ``signame`` ("SIGTERM" -> 143)."""
    return 128 + signal.Signals[signame]


def run_stoppable(step: Callable[[], T]) -> T:
    """``step()``, stoppable by a signal while it runs (see the module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        return step()
    result: list[T] = []
    error: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            result.append(step())
        except BaseException as exc:  # handed to the waiting thread
            error.append(exc)
        finally:
            done.set()

    threading.Thread(target=target, name="startup-step", daemon=True).start()
    while not done.wait(0.05):
        check()
    check()
    if error:
        raise error[0]
    return result[0]
