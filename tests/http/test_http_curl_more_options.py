"""More of curl's options in `probetop http`, beside curl 7.88 on one loopback
server: -G, -r, --max-filesize, -Y/-y, --noproxy, --tcp-fastopen and
--no-keepalive were refused ("not supported by probetop http"). Each case
runs both tools with the same words and compares what a script reads (the
exit status, -w's fields) and what the server saw (the request line, the
Range header).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_fixtures import LocalServer, run_tool

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
# (not the size: /echo's body is the request's headers, and the two tools'
# User-Agent lines differ)
WRITE_OUT = "%{http_code} %{method} %{url_effective}"


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


def _seen(server: LocalServer, tag: str) -> list[dict]:
    return [s for s in server.seen if f"tag={tag}" in s["line"]]


@needs_curl
@pytest.mark.parametrize(
    ("words", "path", "status", "line"),
    [
        # -G: the -d data becomes the query, after the URL's own (&), in a GET
        (["-G", "-d", "a=1", "-d", "b=2"], "/echo?t=1", 0, "GET /echo?t=1&tag={tag}&a=1&b=2"),
        (["-G", "-d", "a=1", "-I"], "/echo?t=1", 0, "HEAD /echo?t=1&tag={tag}&a=1"),
        # --max-filesize: a Content-Length above it fails before the body (63)
        (["--max-filesize", "100"], "/bytes?n=5000", 63, "GET /bytes?n=5000&tag={tag}"),
        (["--max-filesize", "10K"], "/bytes?n=5000", 0, "GET /bytes?n=5000&tag={tag}"),
        # accepted, and the request is as curl's
        (["--tcp-fastopen"], "/echo?t=1", 0, "GET /echo?t=1&tag={tag}"),
        (["--no-keepalive"], "/echo?t=1", 0, "GET /echo?t=1&tag={tag}"),
    ],
)
def test_as_curl(
    server: LocalServer, words: list[str], path: str, status: int, line: str, tmp_path: Path
) -> None:
    out = {}
    for tool in ("curl", "probetop"):
        tag = f"{tool}-{os.getpid()}-{len(server.seen)}"
        url = f"{server.url}{path}&tag={tag}"
        done = run_tool(tool, ["-s", "-o", "/dev/null", "-w", WRITE_OUT, *words, url], tmp_path)
        assert done.returncode == status, (tool, done.stderr)
        seen = _seen(server, tag)
        assert [s["line"].rsplit(" ", 1)[0] for s in seen] == [line.format(tag=tag)], tool
        out[tool] = done.stdout.replace(tag, "TAG")
    assert out["probetop"] == out["curl"]


@needs_curl
def test_range_sends_curls_header(server: LocalServer, tmp_path: Path) -> None:
    for tool in ("curl", "probetop"):
        tag = f"range-{tool}-{os.getpid()}"
        done = run_tool(
            tool, ["-s", "-o", "/dev/null", "-r", "0-9", f"{server.url}/echo?tag={tag}"], tmp_path
        )
        assert done.returncode == 0, (tool, done.stderr)
        (seen,) = _seen(server, tag)
        assert "Range: bytes=0-9" in seen["headers"], (tool, seen["headers"])


@needs_curl
def test_speed_limit_ends_a_slow_transfer_with_28(server: LocalServer, tmp_path: Path) -> None:
    # 20 chunks of 1 KiB, 150 ms apart (~7 KiB/s, 3 s), under -Y 100000 for -y 1
    url = f"{server.url}/stream?chunks=20&size=1024&pause_ms=150"
    for tool in ("curl", "probetop"):
        done = run_tool(tool, ["-s", "-o", "/dev/null", "-Y", "100000", "-y", "1", url], tmp_path)
        assert done.returncode == 28, (tool, done.stderr)


@needs_curl
def test_noproxy_bypasses_the_proxy(server: LocalServer, tmp_path: Path) -> None:
    proxy = ["-x", "http://127.0.0.1:9"]  # nothing listens there: refused
    for tool in ("curl", "probetop"):
        url = f"{server.url}/echo?tag=np-{tool}"
        refused = run_tool(tool, ["-s", "-o", "/dev/null", *proxy, url], tmp_path)
        assert refused.returncode == 7, (tool, refused.stderr)
        direct = run_tool(
            tool, ["-s", "-o", "/dev/null", *proxy, "--noproxy", "127.0.0.1", url], tmp_path
        )
        assert direct.returncode == 0, (tool, direct.stderr)


def test_repeated_mode_sends_the_query_of_g(server: LocalServer, tmp_path: Path) -> None:
    tag = f"rep-{os.getpid()}"
    words = ["-G", "-d", "a=1", "--count", "2", "--sample-interval", "0.2", "--headless"]
    done = run_tool("probetop", [*words, f"{server.url}/echo?tag={tag}"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert [s["line"].split(" ")[:2] for s in _seen(server, tag)] == [
        ["GET", f"/echo?tag={tag}&a=1"]
    ] * 2
