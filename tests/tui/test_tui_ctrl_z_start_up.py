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
- ``find-library``: the dashboard process waits for a child of its own in
  the job's process group, as for the ``ldconfig`` that
  ``ctypes.util.find_library`` runs while the cpu probe is made (seen
  stopped by the Ctrl-Z, the dashboard waiting for it; a ``subprocess``
  child stopped between its vfork and exec, likewise): the key stopped
  that child alone, the dashboard waited for it for good, and the job never
  stopped. The waiter now stops as the job at once during start-up, and
  ``fg`` continues them all;
- ``textual-driver``: right after Textual's ``LinuxDriver.__init__`` put its
  own SIGTSTP handler in (it stops the whole process with SIGSTOP), before
  the dashboard's driver replaced it: the same lost stop;
- ``gil-held``: another thread of the dashboard holds the interpreter lock
  (as a busy machine's scheduling did), so the dashboard's Python handler
  for the Ctrl-Z runs only after ``fg`` continued the job. It noted the
  stop again after the waiter had answered it: the view, once up,
  suspended itself and the job was "Stopped" again (the CI failure "view
  never back", 1 run in 15 beside two busy loops).

The stop is the Ctrl-Z key (the kernel's SIGTSTP to the foreground process
group) or ``kill -TSTP`` of the job's process (the waiter, once split)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from signal import SIGTERM, SIGTSTP

import pytest
from test_tui_jobcontrol import (
    alternate,
    fg_then_quit,
    footer,
    gone,
    job_pids,
    shell,
    type_line,
    wait,
    wait_alternate,
)
from tui_fixtures import DEMO_FILE

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
elif point == "find-library":
    import ctypes.util, subprocess
    find_library = ctypes.util.find_library

    def find(name):
        if not done:  # as ldconfig, which find_library runs: a child in the job's group
            done.append(1)
            open(marker, "w").write(str(os.getpid()))
            subprocess.run(["sleep", str(pause)])
        return find_library(name)

    ctypes.util.find_library = find
elif point == "gil-held":
    import ctypes, signal, threading
    from probetop.tui.ui.quietdriver import QuietLinuxDriver
    quiet_init = QuietLinuxDriver.__init__
    holding = threading.Event()

    def hold_the_lock():  # every signal blocked here: the kernel gives them to others
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        go = os.open(marker + ".go", os.O_RDWR)  # the test's FIFO: a byte once fg is done
        open(marker, "w").write(str(os.getpid()))
        holding.set()
        ctypes.PyDLL(None).read(go, ctypes.create_string_buffer(1), 1)  # PyDLL: GIL held

    def init(self, *args, **kwargs):
        if not done:  # start-up, the view's driver not yet made: the main thread waits
            done.append(1)
            threading.Thread(target=hold_the_lock, daemon=True).start()
            holding.wait()
        quiet_init(self, *args, **kwargs)

    QuietLinuxDriver.__init__ = init
elif point == "live-session-opened":
    from probetop.tui.run import livesession
    session_open = livesession.LiveSession.open

    def open_(self, *args, **kwargs):
        feed = session_open(self, *args, **kwargs)  # the session exists, its handlers not yet
        hold()
        return feed

    livesession.LiveSession.open = open_
from probetop.tui.fastpath import entry
entry()
"""

SIGTSTP_BIT = 1 << (SIGTSTP - 1)  # /proc/PID/status's masks: bit N-1 is signal N


def blocked(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    return 0


@pytest.fixture
def held_at(tmp_path: Path) -> Callable[[str], tuple[str, Path]]:
    """``held_at(point)``: the command that runs probetop held at ``point``
    (``_LAUNCHER``, for ``PAUSE_S``) and the marker file it writes there."""
    launcher = tmp_path / "probetop_at.py"  # "probetop" in its name: job_pids finds it
    launcher.write_text(_LAUNCHER)
    marker = tmp_path / "at"

    os.mkfifo(f"{marker}.go")  # gil-held: the lock holder reads a byte from it

    def held(point: str) -> tuple[str, Path]:
        return f"{sys.executable} {launcher} {point} {marker} {PAUSE_S}", marker

    return held


def wait_marker(marker: Path, timeout: float = 90.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ValueError):
            return int(marker.read_text())
        assert time.monotonic() < deadline, "the launcher never reached its point"
        time.sleep(0.02)


@pytest.mark.parametrize("how", ["C-z", "kill -TSTP"])
@pytest.mark.parametrize(
    "point", ["before-fork", "child-after-fork", "find-library", "textual-driver", "gil-held"]
)
def test_a_stop_at_a_named_moment_of_start_up_stops_the_job_and_fg_resumes_it(
    point: str, how: str, tmp_path: Path, held_at: Callable[[str], tuple[str, Path]]
) -> None:
    run, marker = held_at(point)
    rec = tmp_path / "r.jsonl"
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
            waiter, child = job_pids(tmux)
            assert wait_marker(marker) == child  # held in the dashboard process
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
        if point == "gil-held":
            _release_after_fg(tmux, marker)
        view_up = lambda s: "events/s" in s and s.startswith("probetop")  # noqa: E731
        fg_then_quit(tmux, view_up, 90, typed=point == "gil-held")
    assert footer(rec)["reason"] == "completed"


def _release_after_fg(tmux: Callable[..., str], marker: Path) -> None:
    """``fg`` typed, the job continued (the waiter runs again), then the
    dashboard's lock holder let go: its Python handler for the Ctrl-Z runs
    only now, after the waiter answered that stop."""
    waiter = job_pids(tmux)[0]
    type_line(tmux, "fg")
    deadline = time.monotonic() + 30
    while Path(f"/proc/{waiter}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
        assert time.monotonic() < deadline, "fg did not continue the waiter"
        time.sleep(0.02)
    fd = os.open(f"{marker}.go", os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"g")
    os.close(fd)


def test_a_stop_signal_between_the_sessions_opening_and_its_handlers_says_so_in_the_footer(
    tmp_path: Path, held_at: Callable[[str], tuple[str, Path]]
) -> None:
    """A SIGTERM after the live session was opened, before it put its own
    handlers in (what ``kill %1`` met after a Ctrl-Z during start-up, about 1
    run in 30 under load): the start-up handler ends the app, exit 143 as
    said, but the recording's footer said "aborted" (read as a crash, not the
    signal). Now "interrupted (SIGTERM)", as for a signal a moment later."""
    run, marker = held_at("live-session-opened")
    rec = tmp_path / "r.jsonl"
    with shell(width=100, height=30) as tmux:
        type_line(tmux, f"{run} cpu --threads 1 --time 120 --record {rec}")
        held = wait_marker(marker)
        waiter, child = job_pids(tmux)
        assert held == child  # the dashboard process, held there
        os.kill(child, SIGTERM)
        assert gone(child, waiter, timeout=60), "the run never ended"
        type_line(tmux, "echo RC=$?")
        text = wait(tmux, lambda s: re.search(r"RC=\d", s) is not None, "the exit status", 60)
        assert "RC=143" in text and "Traceback" not in text, text
    assert footer(rec)["reason"] == "interrupted (SIGTERM)"


@pytest.mark.parametrize("how", ["C-z", "kill -TSTP"])
def test_a_stop_while_a_replays_driver_starts_stops_it_and_fg_resumes_it(
    how: str, held_at: Callable[[str], tuple[str, Path]]
) -> None:
    """A replay has no waiter: the process itself is the job and stops, as
    vim does. Right after Textual's driver ``__init__`` its handler (SIGSTOP)
    was in: the same lost stop as a live dashboard's (``textual-driver``)."""
    run, marker = held_at("textual-driver")
    with shell(width=100, height=30) as tmux:
        type_line(tmux, f"{run} replay {DEMO_FILE}")
        pid = wait_marker(marker)
        if how == "C-z":
            tmux("send-keys", "-t", "t", "C-z")
        else:
            os.kill(pid, SIGTSTP)
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job", 90)
        wait_alternate(tmux, False)
        fg_then_quit(tmux, lambda s: "replay" in s and "system.cpu" in s, 90)
