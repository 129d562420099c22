"""Run what a test times at real-time priority, or skip it where the test may
not: it measures a pacer, not a loaded machine's scheduler."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def promptly_scheduled() -> Iterator[bool]:
    """The calling thread, and the threads it starts meanwhile (the engine's
    workers inherit it), in SCHED_RR priority 1; skips the test when this
    process may not (neither root nor CAP_SYS_NICE). For tests that time a
    pacer: on a 2-core machine at a load average of 9, a worker sleeping
    until its next slot waited tens of ms to run again, and the paced loop
    (then restarting its grid after lateness) delivered 40-100 of 800 IO/s; at
    real-time priority it delivered 793. The pacer is what is measured, not
    the scheduler: without real-time priority the figure is the scheduler's
    (a non-root `make test` beside a CPU hog: 240-580 of 800 IO/s), so the
    test cannot tell a pacer bug from a busy machine and does not run.
    The workers sleep between I/Os; the kernel's RT throttling bounds them.
    A user other than root may too, where RLIMIT_RTPRIO allows priority 1."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    except OSError as exc:
        pytest.skip(
            f"needs real-time priority (SCHED_RR: root, CAP_SYS_NICE or `ulimit -r` >= 1, "
            f"e.g. `@{_group()} - rtprio 1` in /etc/security/limits.conf; {exc.strerror}) "
            "to time the pacer rather than the scheduler"
        )
    try:
        yield True
    finally:
        os.sched_setscheduler(0, policy, param)


def _group() -> str:
    import grp

    try:
        return grp.getgrgid(os.getegid()).gr_name
    except KeyError:
        return str(os.getegid())
