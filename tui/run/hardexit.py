"""Leaving the process at once without leaving its litter behind.

After a hangup the dashboard exits with ``os._exit`` if Textual's own exit
has not finished within a few seconds (it can block on a terminal that is
gone): no ``finally`` and no ``with`` block runs after that. Clean-ups that
must happen anyway (the demo's scratch directory of ~200 MB in /tmp) are
registered here and run first.

Contract:
- ``before_hard_exit(cleanup)`` registers ``cleanup`` (quick, idempotent);
  the function it returns unregisters it (call it once the normal path has
  cleaned up).
- ``hard_exit(code)`` runs every registered clean-up once, each error
  ignored, then ``os._exit(code)``.
- ``flush_output()``: stdout and stderr flushed, errors ignored; a stop
  signal still interrupts it (KeyboardInterrupt), so a report blocked on a
  stdout nobody reads ends on a signal.
- ``exit_now(code)``: how the console scripts end once ``main`` returned
  (after ``flush_output``): ``flush_output()`` again (nothing is left in a
  buffer by then), then ``hard_exit(code)`` (a worker still making the
  demo's targets leaves no scratch directory). ``None``: a stop signal
  raised past main's own handling (a flood of ``kill``): its status
  (128+N), nothing flushed (what the signal interrupted is dropped, as a
  killed process drops it). From its first line on, stop signals are
  ignored: a flood of ``kill`` once raised in Python's shutdown instead
  ("lost sys.stderr") and the process died of SIGTERM, its report lost.
- ``last_words(tell)``: ``hard_exit`` calls ``tell(code)`` after the
  clean-ups, right before ``os._exit`` (the waiter of a split run learns the
  status there, before the kernel may hold this process: foreground.py);
  ``last_words(None)`` drops it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable

from probetop.probes.core import stopsignals

_cleanups: list[Callable[[], None]] = []
_lock = threading.Lock()
_last_words: Callable[[int], None] | None = None


def before_hard_exit(cleanup: Callable[[], None]) -> Callable[[], None]:
    """Run ``cleanup`` before a hard exit; returns the call that unregisters it."""
    with _lock:
        _cleanups.append(cleanup)

    def unregister() -> None:
        with _lock, contextlib.suppress(ValueError):
            _cleanups.remove(cleanup)

    return unregister


def hard_exit(code: int) -> None:
    """The registered clean-ups, then ``os._exit(code)``."""
    with _lock:
        pending = list(_cleanups)
        _cleanups.clear()
    for cleanup in pending:
        with contextlib.suppress(Exception):
            cleanup()
    tell = _last_words
    if tell is not None:
        with contextlib.suppress(Exception):
            tell(code)
    os._exit(code)


def last_words(tell: Callable[[int], None] | None) -> None:
    """What ``hard_exit`` calls with the status last (module docstring)."""
    global _last_words
    _last_words = tell


def flush_output() -> None:
    """Flush stdout and stderr, errors ignored (module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


@stopsignals.uninterrupted
def exit_now(code: int | None) -> None:
    """Exit with ``code``, or a stop signal's status when None (module docstring)."""
    stopsignals.ignore_from_now()
    if code is None:
        code = stopsignals.exit_status()
    else:
        flush_output()
    hard_exit(code)
