"""The --rate-iops pacer (probes/disk/native.py ``pace``) keeps fio's meaning:
the run's average is the rate asked for. Slots missed while the loop waited
for a CPU are caught up at once (fio: the next I/O is due at issued bytes /
rate since the job's epoch); only a halt of a second or more (Ctrl-Z) restarts
the grid. Called directly with a clock that is late by construction, so the
outcome does not depend on how busy the machine is."""

from __future__ import annotations

import time

import numpy as np
from probetop.probes.disk import native
from probetop.probes.disk.counters import N_CONTROL

GAP = 500_000  # --rate-iops 2000


def _pace(due: int, gap: int = GAP) -> int:
    ts = np.zeros(2, dtype=np.int64)
    sl = np.zeros(2, dtype=np.int64)
    ctl = np.zeros(N_CONTROL, dtype=np.int64)
    return native.pace(due, gap, ts.ctypes.data, ts, sl, ctl)


def test_slots_missed_by_a_late_wake_up_are_caught_up() -> None:
    # The loop is 3 gaps late (a busy CPU): the next slot is the missed one's
    # successor on the grid, not one gap after now, and no sleep happens.
    # A pacer that restarted its grid here (as the pacer did until November 2026) held
    # --rate-iops 2000 at ~1,585/s beside three CPU hogs, where fio kept 2,000.
    _pace(0, 0)  # compiled (or loaded) before the clock starts
    due = time.monotonic_ns() - 3 * GAP
    t0 = time.monotonic_ns()
    assert _pace(due) == due + GAP
    assert time.monotonic_ns() - t0 < 50_000_000  # did not sleep a gap's worth each


def test_a_halt_of_a_second_restarts_the_grid_instead_of_a_burst() -> None:
    # Stopped for 2 s (SIGSTOP, Ctrl-Z): catching 4,000 slots up would be a
    # burst; the grid restarts one gap after now.
    due = time.monotonic_ns() - 2 * native.CATCH_UP_NS
    before = time.monotonic_ns()
    nxt = _pace(due)
    assert before + GAP <= nxt <= time.monotonic_ns() + GAP


def test_an_early_call_sleeps_until_its_slot() -> None:
    due = time.monotonic_ns() + 20_000_000
    assert _pace(due) == due + GAP
    assert time.monotonic_ns() >= due
