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
- ``exit_now(code)``: how the console scripts end once ``main`` returned:
  stdout and stderr flushed (errors ignored), then ``hard_exit(code)`` (a
  worker still making the demo's targets leaves no scratch directory).
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


def exit_now(code: int) -> None:
    """Flush stdout and stderr, then ``hard_exit(code)``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    hard_exit(code)
