"""Give the C heap's free pages back to the kernel during a long run (issue 29).

Why: glibc's malloc keeps what a program frees inside its heaps for the next
allocation and gives back on its own only a free stretch at the very top of
the main heap. After start-up (imports, the JIT, the first intervals) the
demo's heaps hold ~7 MiB free, and over a run the pages of those free
chunks are touched one by one and stay resident: in a 25-minute demo with
device churn one ``malloc_trim(0)`` gave back 2.9 MiB, more than the RSS had
grown since the 10-minute mark (docs/reliability.md, "Soak with device
churn"). ``malloc_trim(0)`` hands back every whole free page of every arena
(``madvise``), so resident memory follows what is in use. It lowers the
level; it cannot help memory the program still holds.

Contract:
- ``trim_heap()``: one ``malloc_trim(0)``; True when it ran, False where the
  C library has none (musl, macOS: their allocators give memory back
  themselves).
- ``limit_arenas(n)``: at most ``n`` (``ARENA_MAX``) malloc arenas from now
  on (glibc's ``mallopt(M_ARENA_MAX)``), unless the user set
  ``MALLOC_ARENA_MAX``; True when it took effect. Why: glibc gives a thread
  that finds every arena busy a new one, up to 8 per core, and each new
  arena's pages are touched anew; the demo's HTTP target starts a thread
  per connection (two a second), so on a loaded machine the arenas grew in
  number and size for the first hour of a soak (docs/reliability.md, soak
  of 2026-11-29). The threads that call malloc here are Python threads,
  one at a time under the GIL: more arenas buy no speed.
- ``HeapTrimmer(every_s)``: ``start()`` runs ``trim_heap()`` every
  ``every_s`` seconds (default ``TRIM_EVERY_S``) in a daemon thread of its
  own, never on the event loop that draws the dashboard (a trim walks every
  free chunk: up to tens of ms on a loaded machine); ``stop()`` ends it and
  waits for the thread, so a stopped session leaves none behind. Without
  ``malloc_trim`` both do nothing. ``LiveSession`` runs one for every live
  session, headless or not.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

ARENA_MAX = 2
"""Malloc arenas a live session allows (``limit_arenas``): the main heap and
one for every other thread."""
_M_ARENA_MAX = -8  # glibc's malloc.h

TRIM_EVERY_S = 60.0
"""How often a live session trims: a few ms of one thread a minute."""

_malloc_trim: Any = None
_looked_up = False


def _function() -> Any:
    global _malloc_trim, _looked_up
    if not _looked_up:
        _looked_up = True
        try:
            fn = ctypes.CDLL(None).malloc_trim  # glibc only
        except (OSError, AttributeError):
            fn = None
        if fn is not None:
            fn.argtypes = [ctypes.c_size_t]
            fn.restype = ctypes.c_int
        _malloc_trim = fn
    return _malloc_trim


def trim_heap() -> bool:
    """Hand every whole free page of the C heap back (see the module docstring)."""
    fn = _function()
    if fn is None:
        return False
    fn(0)
    return True


def limit_arenas(n: int = ARENA_MAX) -> bool:
    """At most ``n`` malloc arenas from now on (see the module docstring)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False  # the user's own choice, already read by glibc
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc only
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, n))


class HeapTrimmer:
    """``trim_heap()`` every ``every_s`` seconds in a daemon thread."""

    def __init__(self, every_s: float | None = None) -> None:
        self.every_s = TRIM_EVERY_S if every_s is None else every_s
        self.trims = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None or _function() is None:
            return
        self._thread = threading.Thread(target=self._loop, name="probetop-heaptrim", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            trim_heap()
            self.trims += 1

    def stop(self) -> None:
        """End the thread (at once, or after the trim it is doing: ms)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=1.0)
