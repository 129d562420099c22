"""Threads of this process the kernel holds, and the PID the user knows.

A thread blocked in an uninterruptible kernel wait (a ``pread`` on a device
that stopped answering, kernel AIO in flight: the kernel waits for it when
the process exits) keeps the whole process from ending, signals included,
until the I/O completes or fails. A run that gives up on such a thread
says so here, so whatever ends the process can tell the shell's side not to
wait for it (``tui.sessions.foreground``: the run is then a child of the
process the shell started, which exits with the run's status and leaves the
held child to the kernel).

Contract:
- ``hold(what, still)``: a run abandoned threads the kernel holds; ``what``
  says which (one line), ``still()`` whether they still live.
- ``held()``: the lines of the holds still alive, in order.
- ``set_shown_pid(pid)`` / ``shown_pid()``: the PID to name to the user (lock
  files' "in use by probetop PID N"): the process the shell started, which
  is this one unless a split made this process its child.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

_holds: list[tuple[str, Callable[[], bool]]] = []
_lock = threading.Lock()
_shown_pid: int | None = None


def hold(what: str, still: Callable[[], bool]) -> None:
    """Note threads the kernel holds (see the module docstring)."""
    with _lock:
        _holds.append((what, still))


def held() -> list[str]:
    """What is still held (a still() that fails counts as held)."""
    with _lock:
        holds = list(_holds)
    out = []
    for what, still in holds:
        try:
            alive = still()
        except Exception:  # asked on the way out: assume the worst
            alive = True
        if alive:
            out.append(what)
    return out


def set_shown_pid(pid: int | None) -> None:
    global _shown_pid
    _shown_pid = pid


def shown_pid() -> int:
    return _shown_pid if _shown_pid is not None else os.getpid()
