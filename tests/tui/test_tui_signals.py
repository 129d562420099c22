"""A recording dashboard in a real pty: SIGTERM / SIGHUP (an SSH drop) must
stop the probes, close the recording with its footer, and restore the
terminal (leave the alternate screen)."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from probetop.probes.record.reader import load_session


def _run_in_pty(args: list[str]) -> tuple[subprocess.Popen[bytes], int, bytearray]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    proc = subprocess.Popen(
        [sys.executable, "-m", "probetop.tui.main", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        close_fds=True,
        # Make the pty the controlling terminal, as sshd does, so closing the
        # master delivers a real hangup (SIGHUP) to the dashboard.
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    output = bytearray()

    def drain() -> None:  # a full pty would block the app's writes
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            output.extend(chunk)

    threading.Thread(target=drain, daemon=True).start()
    return proc, master, output


def _wait_for_samples(path: Path, count: int = 3, timeout: float = 20.0) -> bool:
    """Wait until the recording holds ``count`` sample lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count('"type":"sample"') >= count:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_closes_recording_and_restores_terminal(tmp_path: Path, sig: int) -> None:
    path = tmp_path / "rec.jsonl"
    proc, master, output = _run_in_pty(["--record", str(path), "--interval", "0.2"])
    try:
        if not _wait_for_samples(path):
            pytest.fail(f"no samples recorded; screen: {bytes(output)[-500:]!r}")
        assert proc.poll() is None, "the dashboard exited by itself"
        proc.send_signal(sig)
        rc = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        time.sleep(0.1)
        os.close(master)
    assert rc == 0
    session = load_session(path)
    assert session.footer is not None, session.warnings
    assert session.footer["reason"] == f"interrupted ({signal.Signals(sig).name})"
    assert session.warnings == []
    assert session.samples("system.cpu")
    assert b"\x1b[?1049l" in output  # left the alternate screen: terminal restored


def test_no_color_runs_without_hues() -> None:
    """NO_COLOR: Textual's monochrome filter leaves only greys (256-colour 232-255)."""
    import re

    env_backup = os.environ.get("NO_COLOR")
    os.environ["NO_COLOR"] = "1"
    try:
        proc, master, output = _run_in_pty(["--interval", "0.2"])
    finally:
        if env_backup is None:
            os.environ.pop("NO_COLOR", None)
        else:
            os.environ["NO_COLOR"] = env_backup
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and b"load avg" not in output:
            time.sleep(0.1)
        assert proc.poll() is None, bytes(output)[-800:]
        assert b"load avg" in output
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
        time.sleep(0.1)
        os.close(master)
    text = bytes(output).decode("utf-8", "replace")
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
    proc, master, _output = _run_in_pty(["--record", str(path), "--interval", "0.2"])
    try:
        assert _wait_for_samples(path)
        os.close(master)
        rc = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0
    session = load_session(path)
    assert session.footer is not None and session.footer["reason"] == "interrupted (SIGHUP)"
