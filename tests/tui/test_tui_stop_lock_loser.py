"""The loser of two runs on one target exits as its headless run does
(issue 29, a lead from the last session): a dashboard whose probe found
its target taken between the check and the start (``in use by probetop
PID N``) exited 1 on q, while the same run headless exits 2 (the disk
families' status for a failed probe, docs/usage.md). Real terminal: an
interactive bash in a private tmux server.

The race is made certain: Ctrl-Z during start-up suspends the view as soon
as it is up, after the check (``prepare``) and before the probes start
(after the first frame); the test takes the target's lock then, and ``fg``
lets the run go on and find it taken (where the stop landed decides
which check finds it: the one before the view, or the probe's as it
starts). Two ways, by timing: the
dashboard adds its probes (their check again) after the lock was taken,
and says "iops not started" (it exited 0: a run whose one probe never
started passed), or its probe finds it taken as it starts (exit 1). Both
now exit 2 with the reason on stderr, as headless."""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path

import pytest
from probetop.probes.core.targetlock import TargetBusy, TargetLock
from test_tui_jobcontrol import (
    EXE,
    alternate,
    screen,
    shell,
    type_line,
    wait,
    wait_alternate,
    wait_split,
)


def _started(rec: Path, kind: str) -> bool:
    """The recording says the probe started (it took the lock then)."""
    if not rec.exists():
        return False
    for line in rec.read_text().splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if record.get("type") == "status" and record.get("probe") == kind:
                return True
    return False


def test_a_dashboard_whose_target_was_taken_exits_as_headless(tmp_path: Path) -> None:
    img = tmp_path / "t.img"
    img.write_bytes(b"\0" * (16 << 20))
    rec = tmp_path / "r.jsonl"
    line = f"{EXE} iops --rw randread {img} --time 120 --record {rec}"
    with shell(width=120, height=40) as tmux:
        type_line(tmux, line)
        wait_split(tmux)  # the split made, the view not up yet
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job", 90)
        lock = TargetLock.for_target(str(img), "the test")
        try:
            lock.acquire()
        except TargetBusy:
            pytest.fail("the probe started before fg: the race was not made")
        try:
            assert not _started(rec, "iops"), "the probe started while suspended"
            type_line(tmux, "fg")
            # Where the stop landed decides which check finds the target
            # taken: since a stop during start-up stops the job at once
            # (jobcontrol.waiter_tstp), usually the one before the view is
            # drawn (``prepare``: the error on the terminal, as headless);
            # stopped later, the probe's own as it starts (the reason in its
            # pane, the view closed with q). Either way: exit 2 and the reason.
            in_view = False
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if alternate(tmux):
                    in_view = True
                    break
                if "is in use by" in screen(tmux):
                    break
                time.sleep(0.1)
            if in_view:
                wait(tmux, lambda s: "in use by" in s, "the loser's reason in its pane", 60)
                tmux("send-keys", "-t", "t", "q")
                wait_alternate(tmux, False)
            type_line(tmux, "echo RC=$?")
            text = wait(tmux, lambda s: re.search(r"RC=\d", s) is not None, "the exit status")
        finally:
            lock.release()
    assert "RC=2" in text, text  # headless: 2 (iops_exit_code); the dashboard said 1
    assert "is in use by" in text and "Traceback" not in text, text
