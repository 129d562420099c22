"""``d`` in a live dashboard: the run goes on as a background session.

Real terminal (tmux on a private socket), real processes: the dashboard is
started from a shell in tmux, ``d`` is pressed, and the shell must get its
prompt back while the probes keep running; ``ls``, ``attach`` and ``stop``
then work on the session, and its recording holds every interval from the
start, across the moment of the detach, with no gap.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import sys
import urllib.request
from pathlib import Path

import pytest
from probetop.probes.record import load_session
from test_sessions import _screen, _tmux, env, probetop, sessions, wait_for

__all__ = ["env"]  # the fixture, imported for its side of the test

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _shell(sock: str, env: dict[str, str], command: str) -> None:
    """Run ``command`` from a shell in a 120x40 tmux window ``w``; the shell
    prints ``EXIT=<status>`` when the command returns."""
    exports = " ".join(f"{k}={env[k]}" for k in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR"))
    _tmux(sock, "new-session", "-d", "-x", "120", "-y", "40", "-s", "w", "bash --norc")
    line = f"export {exports} TERM=xterm-256color; {command}; echo EXIT=$?"
    _tmux(sock, "send-keys", "-t", "w", line, "Enter")


def _interval_gaps(recording: Path, probe: str) -> tuple[int, float]:
    """(samples, largest gap between consecutive samples' times) of ``probe``."""
    times = [
        float(line["t"])
        for line in load_session(recording).lines
        if line.get("type") == "sample" and line["probe"] == probe
    ]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return len(times), max(gaps, default=0.0)


def test_d_detaches_the_dashboard_without_losing_a_sample(env: dict[str, str]) -> None:
    sock = f"ptfg-{os.getpid()}"
    cmd = f"{sys.executable} -m probetop.tui.main cpu --time 60 --interval 0.5 --name fg"
    try:
        _shell(sock, env, cmd)
        wait_for(lambda: "events/s" in _screen(sock, "w"), timeout=60, what="cpu pane")
        wait_for(lambda: "events 0 " not in _screen(sock, "w"), what="events counted")
        _tmux(sock, "send-keys", "-t", "w", "d")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="the shell's prompt back")
        screen = _screen(sock, "w")
        assert "detached into session fg" in screen, screen
        assert "probetop attach fg" in screen
        info = sessions(env)["fg"]
        assert info["state"] == "running", info
        recording = Path(str(info["recording"]))
        assert recording.name == "fg.jsonl.zst"
        assert oct(recording.stat().st_mode & 0o777) == "0o600"
        # The probes go on after the terminal was given back.
        before, _gap = _interval_gaps(recording, "cpu")
        wait_for(lambda: _interval_gaps(recording, "cpu")[0] >= before + 4, what="new samples")
        # An attached view shows the history from before the detach.
        _tmux(sock, "send-keys", "-t", "w", "clear", "Enter")
        attach = f"{sys.executable} -m probetop.tui.main attach fg"
        _tmux(sock, "send-keys", "-t", "w", attach, "Enter")
        wait_for(lambda: "attached fg (running)" in _screen(sock, "w"), what="attached view")
        _tmux(sock, "send-keys", "-t", "w", "Home")
        wait_for(lambda: "playing 00:0" in _screen(sock, "w"), what="seek to the start")
        _tmux(sock, "send-keys", "-t", "w", "d")
        stopped = probetop(env, "stop", "fg")
        assert stopped.returncode == 0, stopped.stderr
        assert "events per second:" in stopped.stdout  # the command's own report
        assert sessions(env)["fg"]["state"] == "finished"
        session = load_session(recording)
        assert session.footer is not None
        assert session.footer["reason"].startswith("interrupted")
        samples, gap = _interval_gaps(recording, "cpu")
        assert samples >= before + 4
        assert gap < 1.5, f"a gap of {gap:.2f} s in 0.5 s intervals"
        _n, passive_gap = _interval_gaps(recording, "system.cpu")
        assert passive_gap < 1.5
    finally:
        _tmux(sock, "kill-server")


def test_quit_without_detaching_leaves_no_session(env: dict[str, str]) -> None:
    sock = f"ptfq-{os.getpid()}"
    try:
        _shell(sock, env, f"{sys.executable} -m probetop.tui.main cpu --time 30")
        wait_for(lambda: "events/s" in _screen(sock, "w"), timeout=60, what="cpu pane")
        _tmux(sock, "send-keys", "-t", "w", "q")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="quit")
        assert sessions(env) == {}
        state = Path(env["XDG_STATE_HOME"]) / "probetop"
        assert not list(state.glob("*.jsonl*")) if state.exists() else True
    finally:
        _tmux(sock, "kill-server")


def test_a_detached_dashboard_keeps_serving_its_metrics(env: dict[str, str]) -> None:
    # --metrics serves from a thread: the split is made before it starts, so
    # the endpoint goes on in the background session after d.
    sock = f"ptfm-{os.getpid()}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        cmd = f"{sys.executable} -m probetop.tui.main cpu --metrics 127.0.0.1:{port} --name fm"
        _shell(sock, env, cmd)
        wait_for(lambda: "events/s" in _screen(sock, "w"), timeout=60, what="cpu pane")
        _tmux(sock, "send-keys", "-t", "w", "d")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="the shell's prompt back")

        def events() -> float:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            line = next(x for x in text.splitlines() if x.startswith("probetop_cpu_events_total"))
            return float(line.split()[-1])

        first = events()
        wait_for(lambda: events() > first, what="the counter moving after the detach")
        stopped = probetop(env, "stop", "fm")
        assert stopped.returncode == 0, stopped.stderr
    finally:
        _tmux(sock, "kill-server")


def test_d_with_a_taken_name_says_so_and_the_dashboard_goes_on(env: dict[str, str]) -> None:
    started = probetop(env, "cpu", "--time", "30", "--detach", "--name", "taken")
    assert started.returncode == 0, started.stderr
    sock = f"ptft-{os.getpid()}"
    try:
        _shell(sock, env, f"{sys.executable} -m probetop.tui.main cpu --time 30 --name taken")
        wait_for(lambda: "events/s" in _screen(sock, "w"), timeout=60, what="cpu pane")
        _tmux(sock, "send-keys", "-t", "w", "d")
        wait_for(lambda: "not detached" in _screen(sock, "w"), what="the refusal")
        assert "EXIT=" not in _screen(sock, "w")  # still the dashboard
        listed = sessions(env)
        assert list(listed) == ["taken"] and listed["taken"]["pid"] != 0
        _tmux(sock, "send-keys", "-t", "w", "q")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="quit")
    finally:
        _tmux(sock, "kill-server")
        probetop(env, "stop", "taken")
