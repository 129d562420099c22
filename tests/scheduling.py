"""Run what a test times at real-time priority where the test may, so it
measures a pacer, not a loaded machine's scheduler."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def promptly_scheduled() -> Iterator[bool]:
    """The calling thread, and the threads it starts meanwhile (the engine's
    workers inherit it), in SCHED_RR priority 1 when this process may (root,
    CAP_SYS_NICE); yields whether it could. For tests that time a pacer: on a
    2-core machine at a load average of 9, a worker sleeping until its next
    slot waited tens of ms to run again, and the paced loop (no burst after
    lateness, by design) delivered 40-100 of 800 IO/s; at real-time priority
    it delivered 793. The pacer is what is measured, not the scheduler.
    The workers sleep between I/Os; the kernel's RT throttling bounds them."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setscheduler(0, policy, param)
