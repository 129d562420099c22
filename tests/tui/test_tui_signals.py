"""A recording dashboard in a real pty: SIGTERM / SIGHUP (an SSH drop) must
stop the probes, close the recording with its footer, and restore the
terminal (leave the alternate screen)."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest
from file_size import text_of
from probetop.probes.record.reader import load_session
from pty_session import PROBETOP, PtySession


def _wait_for_samples(path: Path, count: int = 3, timeout: float = 60.0) -> bool:
    """Wait until the recording holds ``count`` sample lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text_of(path).count('"type":"sample"') >= count:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_closes_recording_and_restores_terminal(tmp_path: Path, sig: int) -> None:
    path = tmp_path / "rec.jsonl"
    app = PtySession.start(["--record", str(path), "--interval", "0.2"], controlling=True)
    try:
        if not _wait_for_samples(path):
            pytest.fail(f"no samples recorded; screen: {bytes(app.output)[-500:]!r}")
        assert app.proc.poll() is None, "the dashboard exited by itself"
        app.proc.send_signal(sig)
        rc = app.proc.wait(timeout=60)
    finally:
        app.close()
    assert rc == 0
    session = load_session(path)
    assert session.footer is not None, session.warnings
    assert session.footer["reason"] == f"interrupted ({signal.Signals(sig).name})"
    assert session.warnings == []
    assert session.samples("system.cpu")
    assert b"\x1b[?1049l" in app.output  # left the alternate screen: terminal restored


def test_no_color_runs_without_hues() -> None:
    """NO_COLOR: Textual's monochrome filter leaves only greys (256-colour 232-255)."""
    import re

    env_backup = os.environ.get("NO_COLOR")
    os.environ["NO_COLOR"] = "1"
    try:
        app = PtySession.start(["--interval", "0.2"], controlling=True)
    finally:
        if env_backup is None:
            os.environ.pop("NO_COLOR", None)
        else:
            os.environ["NO_COLOR"] = env_backup
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"load avg" not in app.output:
            time.sleep(0.1)
        assert app.proc.poll() is None, bytes(app.output)[-800:]
        assert b"load avg" in app.output
    finally:
        app.proc.send_signal(signal.SIGTERM)
        app.proc.wait(timeout=60)
        app.close()
    text = app.text
    colours = re.findall(r"\x1b\[[0-9;]*?(?:38|48);5;(\d+)", text)
    assert colours and all(
        232 <= int(c) <= 255 or int(c) in (0, 7, 8, 15, 16, 231) for c in colours
    )
    assert not re.search(r"\x1b\[[0-9;]*?(?:38|48);2;", text)  # no truecolor


def test_terminal_hangup_closes_recording_and_exits(tmp_path: Path) -> None:
    """An SSH drop: the pty master closes, the kernel sends SIGHUP; the
    dashboard must write the footer and exit although it cannot restore a
    terminal that no longer exists."""
    path = tmp_path / "rec.jsonl"
    app = PtySession.start(["--record", str(path), "--interval", "0.2"], controlling=True)
    try:
        assert _wait_for_samples(path)
        app.hangup()
        rc = app.proc.wait(timeout=60)
    finally:
        app.close()
    assert rc == 0
    session = load_session(path)
    assert session.footer is not None and session.footer["reason"] == "interrupted (SIGHUP)"


def test_a_terminal_gone_without_a_sighup_still_ends_the_dashboard(tmp_path: Path) -> None:
    """The terminal can vanish with no SIGHUP for us: the shell that owned it
    dies and forwards nothing (`sh -c 'probetop; ...'` in a tmux window that
    is killed). The dashboard ran its probes on, unseen, until killed (or
    left with os._exit and its demo scratch in /tmp). Here it has no
    controlling terminal at all, so closing the master sends nothing: it
    must notice the hang-up itself, close the recording and exit."""
    path = tmp_path / "rec.jsonl"
    app = PtySession.start(["--record", str(path), "--interval", "0.2"], controlling=False)
    try:
        assert _wait_for_samples(path)
        app.hangup()
        rc = app.proc.wait(timeout=30)
    finally:
        app.close()
    assert rc == 0
    session = load_session(path)
    assert session.footer is not None and session.footer["reason"] == "interrupted (SIGHUP)"


HARD_EXIT = """
import pathlib, sys
from probetop.tui.run.hardexit import before_hard_exit, hard_exit
kept, removed = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
before_hard_exit(removed.unlink)
unregister = before_hard_exit(kept.unlink)
unregister()
hard_exit(3)
"""


def test_a_hard_exit_runs_the_registered_clean_ups_first(tmp_path: Path) -> None:
    """After a hang-up the dashboard leaves with os._exit if Textual's exit
    blocks; the demo's scratch directory (~200 MB in /tmp) was left behind."""
    kept, removed = tmp_path / "kept", tmp_path / "removed"
    kept.touch()
    removed.touch()
    done = subprocess.run([*PROBETOP[:1], "-c", HARD_EXIT, str(kept), str(removed)], timeout=60)
    assert done.returncode == 3
    assert kept.exists() and not removed.exists()


def test_a_headless_run_whose_terminal_hangs_up_exits_129(tmp_path: Path) -> None:
    """The same drop under a headless `--record` run (a closed tmux window):
    the report then met a terminal that is gone (EIO) and the run ended in
    a traceback, exit 1; the hangup's status is 129, the recording whole."""
    path = tmp_path / "rec.jsonl"
    # No PtySession: its drain thread, blocked in read() on the master while
    # a headless run writes nothing, keeps the master open past close(), so
    # the terminal never hangs up. Nothing reads here (the run writes less
    # than a pty holds before its report).
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*PROBETOP, "cpu", "--threads", "1", "--record", str(path), "--headless",
         "--interval", "0.2", "--time", "60"],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )  # fmt: skip
    os.close(slave)
    try:
        assert _wait_for_samples(path)
        os.close(master)  # the window closes: the kernel sends SIGHUP
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 128 + signal.SIGHUP
    session = load_session(path)
    assert session.footer is not None and session.footer["reason"] == "interrupted (SIGHUP)"
    assert session.warnings == []


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "hangup"])
def test_a_replay_ends_cleanly_on_a_signal(how: str) -> None:
    """A replay (and a dashboard attached to a session) handles the stop
    signals in its event loop as a live one does: a SIGHUP once left a replay
    running with no terminal (the signal's KeyboardInterrupt went wherever the
    main thread was, and Textual's exit blocked on the dead terminal)."""
    recording = Path(__file__).resolve().parents[1] / "data" / "demo_session.jsonl"
    app = PtySession.start(["replay", str(recording)], controlling=True)
    try:
        deadline = time.monotonic() + 60
        while b"replay" not in app.output or b"system.cpu" not in app.output:
            assert time.monotonic() < deadline, bytes(app.output)[-800:]
            assert app.proc.poll() is None, bytes(app.output)[-800:]
            time.sleep(0.1)
        if how == "hangup":
            app.hangup()
        else:
            app.proc.send_signal(signal.Signals[how])
        rc = app.proc.wait(timeout=60)
    finally:
        app.close()
    assert rc == 0
    if how != "hangup":
        assert b"\x1b[?1049l" in app.output  # left the alternate screen
