"""A stop key or signal at named moments of a live dashboard's start-up, at a
real interactive bash in tmux (issue 29, job control: a Ctrl-Z typed during
start-up was lost under load, about 2 runs in 25: the job never stopped).

The moments are opened on purpose, with no hook in the product: the real
console script runs under a small launcher (``_LAUNCHER``) that pauses the
process at one point, writes a marker file, and sleeps; the test sends the
stop while it sleeps there, then checks that the shell says "Stopped", that
``fg`` brings the view back, and that ``q`` ends the run with status 0. The
points:

- ``before-fork``: in the process the shell started, inside the split's
  ``os.fork`` (``os.register_at_fork(before=...)``), one process still,
  SIGTSTP blocked there: the stop is pending in the waiter alone after the
  fork (a child inherits no pending signal) and must reach the dashboard;
- ``child-after-fork``: in the dashboard process right after the fork,
  before the rest of the split ran (the waiter has blocked SIGTSTP by then:
  the test waits for that). SIGTSTP's default action stopped the dashboard
  alone there; the waiter took its own copy for the dashboard's and passed
  nothing on: the job ran on, no "Stopped", the terminal frozen. Earlier
  still, before Python's after-fork clean-up (the child waiting for its
  first CPU), a handler's call was dropped: SIGTSTP must be blocked there,
  which the test checks in the held child;
- ``textual-driver``: right after Textual's ``LinuxDriver.__init__`` put its
  own SIGTSTP handler in (it stops the whole process with SIGSTOP), before
  the dashboard's driver replaced it: the same lost stop.

The stop is the Ctrl-Z key (the kernel's SIGTSTP to the foreground process
group) or ``kill -TSTP`` of the job's process (the waiter, once split)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path
from signal import SIGTSTP

import pytest
from test_tui_jobcontrol import alternate, footer, job_pids, shell, type_line, wait, wait_alternate

PAUSE_S = 4.0  # how long the launcher holds the process at its point: the stop comes inside

_LAUNCHER = """
import os, sys, time
point, marker, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
sys.argv = ["probetop", *sys.argv[4:]]
done = []

def hold():
    if not done:  # the first fork only (the split's); the child's hooks are its own copy
        done.append(1)
        open(marker, "w").write(str(os.getpid()))
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline:  # a signal handler may cut one sleep short
            time.sleep(0.05)

if point == "before-fork":
    os.register_at_fork(before=hold)
elif point == "child-after-fork":
    os.register_at_fork(after_in_child=hold)
elif point == "textual-driver":
    from textual.drivers.linux_driver import LinuxDriver
    textual_init = LinuxDriver.__init__

    def init(self, *args, **kwargs):
        textual_init(self, *args, **kwargs)  # Textual's SIGTSTP handler is in now
        hold()

    LinuxDriver.__init__ = init
from probetop.tui.fastpath import entry
entry()
"""

SIGTSTP_BIT = 1 << (SIGTSTP - 1)  # /proc/PID/status's masks: bit N-1 is signal N


def blocked(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    return 0


def wait_marker(marker: Path, timeout: float = 90.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ValueError):
            return int(marker.read_text())
        assert time.monotonic() < deadline, "the launcher never reached its point"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["C-z", "kill -TSTP"])
@pytest.mark.parametrize("point", ["before-fork", "child-after-fork", "textual-driver"])
def test_a_stop_at_a_named_moment_of_start_up_stops_the_job_and_fg_resumes_it(
    point: str, how: str, tmp_path: Path
) -> None:
    launcher = tmp_path / "probetop_at.py"  # "probetop" in its name: job_pids finds it
    launcher.write_text(_LAUNCHER)
    marker = tmp_path / "at"
    rec = tmp_path / "r.jsonl"
    run = f"{sys.executable} {launcher} {point} {marker} {PAUSE_S}"
    with shell(width=100, height=30) as tmux:
        type_line(tmux, f"{run} cpu --threads 1 --time 120 --record {rec}")
        wait_marker(marker)
        if point == "child-after-fork":
            # Held in Python's after-fork hooks: a stop that came before (the
            # child waiting for its first CPU) waits, blocked, for the split
            # to unblock it; delivered there, Python's after-fork clean-up
            # dropped its handler's call (the stop lost: 3 runs in 8 of the
            # flaky tests at load 11-13 with the handler alone).
            child = wait_marker(marker)
            assert blocked(child) & SIGTSTP_BIT, "SIGTSTP open in the child across the fork"
        if point != "before-fork":
            waiter, _child = job_pids(tmux)
            # The worst order: the waiter already takes SIGTSTP itself.
            deadline = time.monotonic() + PAUSE_S / 2
            while not blocked(waiter) & SIGTSTP_BIT:
                assert time.monotonic() < deadline, "the waiter never blocked SIGTSTP"
                time.sleep(0.01)
        assert not alternate(tmux)  # the view is not up: start-up
        if how == "C-z":
            tmux("send-keys", "-t", "t", "C-z")
        else:
            # The shell reads no line while its job runs: from here.
            os.kill(wait_marker(marker) if point == "before-fork" else job_pids(tmux)[0], SIGTSTP)
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job", 90)
        wait_alternate(tmux, False)
        type_line(tmux, "fg")
        wait_alternate(tmux, True, timeout=90)
        wait(tmux, lambda s: "events/s" in s and s.startswith("probetop"), "the view", 90)
        tmux("send-keys", "-t", "t", "q")
        wait_alternate(tmux, False)
        type_line(tmux, "echo RC=$?")
        text = wait(tmux, lambda s: re.search(r"RC=\d", s) is not None, "the exit status")
        assert "RC=0" in text and "Traceback" not in text, text
    assert footer(rec)["reason"] == "completed"
