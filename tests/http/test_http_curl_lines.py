"""Pasted curl command lines: curl options that change nothing here run
(they were "unrecognized arguments", exit 2), and curl's ``--json DATA``,
which probetop's own ``--json`` cannot take, is refused before anything is
sent (its DATA was read as a URL: the other URLs were fetched with GET and
the run exited 0). Beside curl 7.88 against a loopback server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixtures import RawServer

EXE = str(Path(sys.executable).parent / "probetop")
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nhi\n"


@pytest.fixture
def server() -> Iterator[RawServer]:
    with RawServer(REPLY) as s:
        yield s


def _run(tool: str, words: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    cmd = ["curl", *words] if tool == "curl" else [EXE, "http", *words]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, env=env, timeout=60)


def _header(head: bytes, name: str) -> str | None:
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith(name.lower() + ":"):
            return line.split(":", 1)[1].strip()
    return None


@needs_curl
@pytest.mark.parametrize(
    "words",
    [["--basic", "-u", "me:pw"], ["-#"], ["--progress-bar"], ["-q"], ["--disable"], ["-sq"]],
    ids=lambda w: " ".join(w),
)
def test_curl_options_that_change_nothing_run_as_curls(
    words: list[str], server: RawServer, tmp_path: Path
) -> None:
    outs = []
    for tool in ("curl", "probetop"):
        done = _run(tool, ["-s", "-o", "-", *words, server.url], tmp_path)
        assert done.returncode == 0, (tool, done.stderr)
        outs.append(done.stdout)
    assert outs[1] == outs[0] == b"hi\n"
    auth = [_header(head, "Authorization") for head in server.received]
    assert auth[1] == auth[0] == ("Basic bWU6cHc=" if "--basic" in words else None)


@pytest.mark.parametrize("data", ['{"a":1}', "@body.json", "[1, 2]"])
def test_curls_json_data_is_refused_before_anything_is_sent(
    data: str, server: RawServer, tmp_path: Path
) -> None:
    done = _run("probetop", ["--json", data, server.url], tmp_path)
    assert done.returncode == 2, done.stderr
    assert b"curl's --json DATA (DATA POSTed as JSON) is not probetop's --json" in done.stderr
    assert b"--data-binary DATA -H 'Content-Type: application/json'" in done.stderr
    assert server.received == []  # curl would have POSTed; probetop sent a GET


def test_json_with_urls_only_is_probetops(server: RawServer, tmp_path: Path) -> None:
    done = _run("probetop", ["--json", server.url], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b'"http_code": 200' in done.stdout and len(server.received) == 1
