"""curl's -v and -N in `probetop http` (both were refused): the exchange on stderr as
curl -v writes it, beside curl 7.88 on one loopback server. What scripts
read from it (`2>&1 | grep '^< '`: the request's `> ` lines, the response's
`< ` lines, the `{ [N bytes data]` notes) is compared byte for byte; the
`* ` lines are libcurl's own words, and pycurl's libcurl is newer than this
machine's curl, so only their presence is checked.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import run_probetop_bytes
from http_fixtures import LocalServer

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


def _stderr(tool: str, words: list[str], state: Path) -> bytes:
    if tool == "curl":
        done = subprocess.run(["curl", *words], capture_output=True, timeout=60)
    else:
        env = {**os.environ, "XDG_STATE_HOME": str(state)}
        done = run_probetop_bytes(["http", *words], env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _scripted(trace: bytes) -> list[bytes]:
    """The lines a script greps: headers both ways and data notes."""
    kept = (b"> ", b"< ", b"{ ", b"} ")
    return [line for line in trace.splitlines(keepends=True) if line[:2] in kept]


@needs_curl
@pytest.mark.parametrize(
    "words",
    [
        ["-o", "/dev/null", "{url}/bytes?n=5000"],
        ["-s", "-o", "/dev/null", "-H", "X-Trace: 1", "-d", "a=1", "{url}/echo"],
        ["-o", "/dev/null", "-L", "{url}/redirect?n=2&to=/bytes"],
        ["-o", "/dev/null", "-I", "{url}/bytes"],
    ],
    ids=["get", "post", "redirects", "head"],
)
def test_the_trace_reads_as_curls(server: LocalServer, words: list[str], tmp_path: Path) -> None:
    args = ["-v", "-A", "same-agent/1", *(w.replace("{url}", server.url) for w in words)]
    theirs = _stderr("curl", args, tmp_path)
    ours = _stderr("probetop", args, tmp_path)
    assert _scripted(ours) == _scripted(theirs)
    assert _scripted(ours) and b"* " in ours and ours.startswith(b"*   Trying 127.0.0.1:")
    if "-L" in words:  # our hop loop says what libcurl says when it follows
        assert ours.count(b"* Issue another request to this URL: '") == 2


def test_the_body_to_a_terminal_has_no_data_notes(server: LocalServer, tmp_path: Path) -> None:
    """curl -v leaves out `{ [N bytes data]` when the body itself is shown on
    the terminal, and keeps it when the body goes to a file."""
    tty = tmp_path / "tty.txt"
    code = (
        "import os, pty, subprocess, sys\n"
        "parent, child = pty.openpty()\n"
        "done = subprocess.run(sys.argv[1:], stdout=child, stderr=subprocess.PIPE)\n"
        "sys.stderr.buffer.write(done.stderr)\n"
    )
    exe = str(Path(sys.executable).parent / "probetop")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    to_tty = subprocess.run(
        [sys.executable, "-c", code, exe, "http", "-v", "-s", "-w", "", f"{server.url}/bytes?n=9"],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert b"< HTTP/1.1 200 OK" in to_tty.stderr and b"bytes data]" not in to_tty.stderr
    to_file = run_probetop_bytes(
        ["http", "-v", "-o", str(tty), f"{server.url}/bytes?n=9"], env=env, timeout=60
    )
    assert b"{ [9 bytes data]\n" in to_file.stderr


def test_v_is_a_one_off_option(server: LocalServer, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    done = run_probetop_bytes(["http", "-v", "--count", "3", server.url], env=env, timeout=60)
    assert done.returncode == 2 and b"-v/--verbose is a one-off option" in done.stderr


class _HeldServer:
    """Answers one request with a body in two pieces: the first at once, the
    second only once ``release`` is set (or after 20 s)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/"

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst")
            self.release.wait(20)
            conn.sendall(b"-last")

    def close(self) -> None:
        self.release.set()
        self.thread.join(5)
        self.sock.close()


@needs_curl
@pytest.mark.parametrize("tool", ["curl", "probetop"])
def test_no_buffer_writes_each_piece_as_it_arrives(tool: str, tmp_path: Path) -> None:
    """-N (it was refused): the first piece is on stdout while the rest is
    still on its way, as curl -N; and -N alone is curl's output mode, the
    body on stdout (no waterfall)."""
    server = _HeldServer()
    exe = ["curl"] if tool == "curl" else [str(Path(sys.executable).parent / "probetop"), "http"]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("PYTHONUNBUFFERED", None)  # stdout buffered, as a user's is
    run = subprocess.Popen([*exe, "-s", "-N", server.url], stdout=subprocess.PIPE, env=env)
    try:
        assert run.stdout is not None
        ready, _, _ = select.select([run.stdout], [], [], 60)
        first = os.read(run.stdout.fileno(), 100) if ready else b""
        assert first == b"first"  # before the server sent the rest
        server.release.set()
        rest, _ = run.communicate(timeout=60)
    finally:
        server.close()
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0 and rest == b"-last"
