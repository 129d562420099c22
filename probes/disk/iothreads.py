"""The I/O worker threads' share of the CPU.

Contract: ``yield_to_control(jobs)``, called by a worker, lowers that
worker's priority to ``WORKER_NICE`` when the I/O threads are at least as
many as the CPUs (the event loop thread must still get CPU);
``runnable(thread)`` tells a thread waiting for a CPU from one asleep in the
kernel, so a stop waits for the first (up to ``STARVED_CAP_S``) and not for
the second.
"""

from __future__ import annotations

import os
import threading

WORKER_NICE = 19  # I/O threads, when there are more of them than CPUs
STARVED_CAP_S = 10.0
"""How long after a stop ``Engine.join_stopped`` waits at most for workers
that are still runnable (waiting for a CPU, not for the device): at a load
average of 17 on 2 cores a stopped worker took over 1 s to be scheduled
and end, and was reported as blocked by the device. Bounded: the callers
wait on the event loop, and a stop must still end the run."""


def runnable(thread: threading.Thread) -> bool:
    """Whether ``thread`` is running or waiting for a CPU (state R in
    /proc), as opposed to sleeping on I/O (S, D). False if unknown."""
    try:
        with open(f"/proc/self/task/{thread.native_id}/stat", "rb") as f:
            stat_line = f.read()
    except OSError:
        return False
    # "tid (comm) S ...": the name may hold spaces and parentheses.
    state = stat_line.rfind(b")") + 2
    return stat_line[state : state + 1] == b"R"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def yield_to_control(jobs: int) -> None:
    """With at least as many I/O threads as CPUs, this thread (an I/O worker)
    lowers its own priority (nice 19), so the event loop thread (sampling,
    the UI, a stop) always gets CPU: 64 spinning workers on 2 CPUs left it
    ~3 % of a core, and a SIGINT took 5 s to act. Only CPU-bound runs are
    affected (page cache, tmpfs, sparse files); a worker waiting on a device
    sleeps whatever its priority."""
    if jobs < _cpus():
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), WORKER_NICE))
    except (AttributeError, OSError):
        pass
