"""curl's -c/--cookie-jar in `probetop http` (it was refused: "cookies are
not saved"): the jar libcurl writes, beside curl 7.88 with the same words;
every URL of one command sees the cookies the ones before it got, as with
curl's one handle."""

from __future__ import annotations

import email.utils
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixtures import RawServer

EXE = str(Path(sys.executable).parent / "probetop")
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def _cookie_reply() -> bytes:
    """Two cookies, one HttpOnly with an Expires 30 days out (within the 400
    days newer libcurls keep)."""
    expires = email.utils.formatdate(time.time() // 86400 * 86400 + 30 * 86400, usegmt=True)
    return (
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n"
        "Set-Cookie: a=1; Path=/\r\n"
        f"Set-Cookie: s=2; HttpOnly; Expires={expires}\r\n\r\nok"
    ).encode()


def _cookies_seen(server: RawServer) -> list[str | None]:
    """Each request's Cookie header (None: none), in order."""
    seen: list[str | None] = []
    for head in server.received:
        lines = head.decode("latin-1").split("\r\n")
        cookie = [h.split(":", 1)[1].strip() for h in lines if h.lower().startswith("cookie:")]
        seen.append(cookie[0] if cookie else None)
    return seen


@pytest.fixture
def server() -> Iterator[RawServer]:
    with RawServer(_cookie_reply()) as s:
        yield s


def _run(tool: str, words: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    cmd = ["curl", *words] if tool == "curl" else [EXE, "http", *words]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, env=env, timeout=60)


@needs_curl
def test_the_jar_and_the_cookies_sent_are_curls(server: RawServer, tmp_path: Path) -> None:
    jars = {}
    for tool in ("curl", "probetop"):
        jar = tmp_path / f"{tool}.jar"
        urls = [f"{server.url}/one", f"{server.url}/two"]
        done = _run(
            tool, ["-s", "-o", "/dev/null", "-o", "/dev/null", "-c", str(jar), *urls], tmp_path
        )
        assert done.returncode == 0, done.stderr
        jars[tool] = jar.read_bytes()
    assert jars["probetop"] == jars["curl"]
    assert b"#HttpOnly_127.0.0.1\tFALSE\t/\tFALSE\t" in jars["curl"]
    # each tool: no cookie on its first request, both on its second
    assert _cookies_seen(server) == [None, "s=2; a=1", None, "s=2; a=1"]


@needs_curl
def test_a_jar_to_stdout_comes_after_the_bodies(server: RawServer, tmp_path: Path) -> None:
    outs = [
        _run(tool, ["-s", "-o", "-", "-c", "-", server.url], tmp_path).stdout
        for tool in ("curl", "probetop")
    ]
    assert outs[0] == outs[1] and outs[1].startswith(b"ok# Netscape HTTP Cookie File\n")


def test_a_jar_that_cannot_be_written_is_said(server: RawServer, tmp_path: Path) -> None:
    jar = tmp_path / "missing" / "jar"
    done = _run("probetop", ["-o", "/dev/null", "-c", str(jar), server.url], tmp_path)
    assert done.returncode == 0  # as curl 7.88
    assert f"probetop: warning: failed to save cookies in {jar}".encode() in done.stderr


def test_the_jar_is_a_one_off_option(server: RawServer, tmp_path: Path) -> None:
    done = _run("probetop", ["-c", str(tmp_path / "j"), "--count", "2", server.url], tmp_path)
    assert done.returncode == 2 and b"-c/--cookie-jar is a one-off option" in done.stderr
