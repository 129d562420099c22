"""No secret in any process's command line or environment (issue 29, Want 2).

``/proc/PID/cmdline`` and ``/proc/PID/environ`` of every process on the
machine are read while a command holding five secrets runs detached, in
the foreground, and through ``--remote`` (a real sshd on loopback with
throwaway keys, tests/tui/sshd_fixture.py): the session process, the ssh
client here, the shell sshd starts and the probetop it runs there. The
secrets are fresh random strings, so no other process can hold them by
chance. The loopback HTTP server checks that the secrets did reach the
probe (over the private channel), or the test would pass on a probe that
never got its options."""

from __future__ import annotations

import http.server
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_remote import remote  # the sshd fixture
from test_sessions import env, probetop

__all__ = ["env", "remote"]


def _secrets() -> list[str]:
    return [f"zq{i}{secrets.token_hex(6)}" for i in range(1, 6)]


class _Seen(http.server.BaseHTTPRequestHandler):
    seen: list[bytes] = []

    def _answer(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        _Seen.seen.append(self.path.encode() + bytes(self.headers) + body)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Seen.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Seen)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _command(url: str, s: list[str]) -> list[str]:
    return [
        "http",
        "-H", f"X-Auth-Token: {s[0]}",
        "-H", f"Authorization: Bearer {s[1]}",
        "-u", f"user:{s[2]}",
        "-d", f"password={s[3]}",
        f"{url}/x?sig={s[4]}",
        "--count", "100",
    ]  # fmt: skip


def holders(words: list[str], skip: set[int] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """``PID: cmdline`` of every process whose command line or environment
    holds one of ``words`` (those in ``skip`` excepted)."""
    found = []
    raw = [w.encode() for w in words]
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip or int(entry) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                data = Path(f"/proc/{entry}/{part}").read_bytes()
            except OSError:
                continue
            if any(w in data for w in raw):
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{entry} ({part}): {cmd.decode(errors='replace')[:300]}")
    return found


def _watch(proc: subprocess.Popen[str], words: list[str]) -> list[str]:
    """Every holder seen while ``proc`` runs (``proc`` itself excepted: the
    user's own command line, until it hides it)."""
    seen: list[str] = []
    while proc.poll() is None:
        seen += holders(words, {proc.pid})
        time.sleep(0.01)
    return seen


def _received(words: list[str]) -> None:
    got = b"".join(_Seen.seen)
    assert got, "the probe sent no request"
    for word in (words[0], words[1], words[4]):  # headers and the URL's sig
        assert word.encode() in got, f"{word} did not reach the server"


def test_a_detached_session_shows_no_secret(env: dict[str, str], server: str) -> None:
    words = _secrets()
    argv = [sys.executable, "-m", "probetop.tui.main", *_command(server, words),
            "--detach", "--name", "sec"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    during = _watch(proc, words)
    _out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert during == []
    deadline = time.monotonic() + 30
    while not _Seen.seen and time.monotonic() < deadline:
        time.sleep(0.1)
    assert holders(words) == []  # the session, for its whole life
    _received(words)
    listed = probetop(env, "ls", "--json")
    assert not any(w in listed.stdout for w in words)
    assert probetop(env, "stop", "sec").returncode == 0


def test_a_foreground_run_hides_its_secrets(env: dict[str, str], server: str) -> None:
    words = _secrets()
    argv = [sys.executable, "-m", "probetop.tui.main", *_command(server, words), "--headless"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not _Seen.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert holders(words) == []
        shown = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        body = f"<{len('password=' + words[3])} bytes>".encode()  # the length, no hash
        assert b"X-Auth-Token: ***" in shown and body in shown
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    _received(words)


def test_remote_sessions_get_their_options_over_stdin(remote: tuple[object, Path],
                                                      server: str) -> None:  # fmt: skip
    _sshd, far = remote
    words = _secrets()
    argv = [sys.executable, "-m", "probetop.tui.main", "--remote", "ptest",
            *_command(server, words), "--detach", "--name", "rsec"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)  # fmt: skip
    during = _watch(proc, words)  # the ssh client, sshd's shell, probetop there, the session
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "session rsec started" in out
    assert during == []
    deadline = time.monotonic() + 30
    while not _Seen.seen and time.monotonic() < deadline:
        time.sleep(0.1)
    assert holders(words) == []
    _received(words)
    meta = (far / "rsec.session.json").read_text()
    assert not any(w in meta for w in words)
    stop = [sys.executable, "-m", "probetop.tui.main", "stop", "--remote", "ptest", "rsec"]
    stopped = subprocess.run(stop, capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr


def test_stored_bodies_are_keyed_by_a_private_per_install_secret(
    env: dict[str, str], server: str, tmp_path: Path
) -> None:
    """A recording keeps a body's length and HMAC (key: 32 random bytes,
    0600 in the private state directory), never its unsalted SHA-256;
    ``--record-body`` keeps the body itself."""
    import hashlib
    import hmac
    import json

    body = "password=hunter2"
    rec = tmp_path / "r.jsonl"
    run = probetop(env, "http", "-d", body, f"{server}/", "--count", "2", "--interval", "0.2",
                   "--headless", "--record", str(rec))  # fmt: skip
    assert run.returncode == 0, run.stderr
    key_file = Path(env["XDG_STATE_HOME"]) / "probetop" / "body-hmac.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = key_file.read_bytes()
    assert len(key) == 32
    text = rec.read_text()
    assert hashlib.sha256(body.encode()).hexdigest() not in text
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    assert f"<{len(body)} bytes, hmac-sha256:{mac}>" in text
    assert body not in text
    again = tmp_path / "again.jsonl"  # the same install: the same digest, bodies compare
    assert probetop(env, "http", "-d", body, f"{server}/", "--count", "1", "--headless",
                    "--record", str(again)).returncode == 0  # fmt: skip
    assert mac in again.read_text()
    assert key_file.read_bytes() == key
    kept = tmp_path / "kept.jsonl"
    assert probetop(env, "http", "-d", body, f"{server}/", "--count", "1", "--headless",
                    "--record-body", "--record", str(kept)).returncode == 0  # fmt: skip
    assert any(body in json.dumps(json.loads(ln)) for ln in kept.read_text().splitlines())
