"""curl's --retry family in one-off `probetop http`, beside curl 7.88.

Both tools run the same words against one loopback server; the server
counts the attempts it saw (each run's URL carries its own tag), and what
a script reads (exit status, -w, the -o file) must be curl's. The warnings
are curl's words after each tool's prefix (``Warning:``,
``probetop: warning:``). Waits are curl's 1 s first step, so each case
costs a second or two per tool.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import run_probetop
from http_fixtures import LocalServer, RawServer, run_tool

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
WARNING = re.compile(r"^(?:Warning|probetop: warning): (Problem .*)$", re.M)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


def _attempts(server: LocalServer, tag: str) -> int:
    return sum(1 for seen in server.seen if f"tag={tag}" in seen["line"])


@needs_curl
@pytest.mark.parametrize(
    ("path", "words", "status", "attempts", "warnings", "written"),
    [
        # always 503: one retry, then curl gives up with exit 0 (no -f)
        (
            "/status?code=503",
            ["--retry", "1"],
            "0 503",
            2,
            ["Problem : HTTP error. Will retry in 1 seconds. 1 retries left."],
            "status\n",
        ),
        # 503 then 200: the retry succeeds; -f does not change that
        (
            "/cycle?seq=503:0,200:0",
            ["--retry", "3", "-f"],
            "0 200",
            2,
            ["Problem : HTTP error. Will retry in 1 seconds. 3 retries left."],
            "cycle\n",
        ),
        # -f on a 503 that stays: curl's 22 after the retries
        (
            "/status?code=503",
            ["--retry", "1", "-f"],
            "22 503",
            2,
            ["Problem : HTTP error. Will retry in 1 seconds. 1 retries left."],
            None,
        ),
        # a 404 is not transient: one attempt
        ("/status?code=404", ["--retry", "2"], "0 404", 1, [], "status\n"),
        # --retry-max-time 1 with a 2 s delay: no attempt begins after 1 s
        (
            "/status?code=500",
            ["--retry", "3", "--retry-delay", "2", "--retry-max-time", "1"],
            "0 500",
            2,
            ["Problem : HTTP error. Will retry in 2 seconds. 3 retries left."],
            "status\n",
        ),
    ],
)
def test_retry_as_curl(
    server: LocalServer,
    path: str,
    words: list[str],
    status: str,
    attempts: int,
    warnings: list[str],
    written: str | None,
    tmp_path: Path,
) -> None:
    for tool in ("curl", "probetop"):
        tag = f"{tool}-{os.getpid()}-{len(server.seen)}-{id(words)}"
        out = tmp_path / f"{tool}.out"
        url = f"{server.url}{path}&tag={tag}"
        done = run_tool(tool, [*words, "-o", str(out), "-w", "%{http_code}", url], tmp_path)
        assert f"{done.returncode} {done.stdout}" == status, (tool, done.stderr)
        assert _attempts(server, tag) == attempts, tool
        assert WARNING.findall(done.stderr) == warnings, (tool, done.stderr)
        # the -o file holds the last attempt's body alone (curl truncates it)
        assert (out.read_text() if out.exists() else None) == written, tool


@needs_curl
def test_refused_is_retried_only_with_connrefused(tmp_path: Path) -> None:
    with RawServer(b"") as raw:
        url = raw.url  # nothing listens once it is closed
    for tool in ("curl", "probetop"):
        plain = run_tool(tool, ["--retry", "2", "-s", "-o", "/dev/null", url], tmp_path)
        assert plain.returncode == 7 and not WARNING.findall(plain.stderr), tool
        asked = run_tool(
            tool, ["--retry", "1", "--retry-connrefused", "-o", "/dev/null", url], tmp_path
        )
        assert asked.returncode == 7, tool
        # (curl wraps this longer warning at 79 columns; probetop keeps one line)
        said = " ".join(asked.stderr.replace("\nWarning: ", " ").split())
        assert "Problem : connection refused. Will retry in 1 seconds. 1 retries left." in said


@needs_curl
def test_retry_after_sets_the_wait(tmp_path: Path) -> None:
    reply = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n"
    with RawServer(reply) as raw:
        for tool in ("curl", "probetop"):
            done = run_tool(
                tool, ["--retry", "1", "-o", "/dev/null", "-w", "%{http_code}", raw.url], tmp_path
            )
            assert (done.returncode, done.stdout) == (0, "503"), (tool, done.stderr)
            expected = ["Problem : HTTP error. Will retry in 2 seconds. 1 retries left."]
            assert WARNING.findall(done.stderr) == expected, (tool, done.stderr)


@needs_curl
@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--retry", "abc"], "expected a proper numerical parameter"),
        (["--retry", "1.5"], "expected a proper numerical parameter"),
        (["--retry", "-1"], "expected a positive numerical parameter"),
        (["--retry-delay", "1.5"], "expected a proper numerical parameter"),
        (["--retry-max-time", "-1"], "expected a positive numerical parameter"),
    ],
)
def test_bad_values_exit_2_in_curls_words(
    words: list[str], said: str, server: LocalServer, tmp_path: Path
) -> None:
    for tool in ("curl", "probetop"):
        done = run_tool(tool, [*words, "-s", "-o", "/dev/null", f"{server.url}/echo"], tmp_path)
        assert done.returncode == 2, tool
        assert words[0] in done.stderr and said in done.stderr, (tool, done.stderr)


@needs_curl
def test_a_remote_header_name_is_kept_across_attempts(server: LocalServer, tmp_path: Path) -> None:
    # curl keeps the -J file open from one attempt to the next: the second
    # attempt's Content-Disposition names the same file, written from its start.
    for tool in ("curl", "probetop"):
        where = tmp_path / tool
        where.mkdir()
        url = f"{server.url}/cycle?seq=503:0,200:0&cd=attachment%3B+filename%3Dcd.bin&tag={tool}"
        if tool == "curl":
            done = subprocess.run(
                ["curl", "--retry", "1", "-OJ", url],
                capture_output=True, text=True, timeout=60, cwd=where,
            )  # fmt: skip
        else:
            env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
            done = run_probetop(["http", "--retry", "1", "-OJ", url], env=env, cwd=where)
        assert done.returncode == 0, (tool, done.stderr)
        assert sorted(p.name for p in where.iterdir()) == ["cd.bin"], tool
        assert (where / "cd.bin").read_text() == "cycle\n", tool
        assert "Throwing away 6 bytes" in done.stderr, (tool, done.stderr)


@needs_curl
def test_an_output_that_cannot_be_emptied_ends_the_retries_with_23(
    server: LocalServer, tmp_path: Path
) -> None:
    # -o /dev/stdout into a pipe: ftruncate fails, and curl stops rather than
    # append the next attempt's body after this one's.
    probetop = [sys.executable, "-m", "probetop.tui.main", "http"]
    for tool, argv in (("curl", ["curl"]), ("probetop", probetop)):
        url = f"{server.url}/status?code=503&tag=pipe-{tool}-{os.getpid()}"
        done = subprocess.run(
            [*argv, "--retry", "2", "-o", "/dev/stdout", url],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        )  # fmt: skip
        assert done.returncode == 23, (tool, done.stderr)
        assert done.stdout == "status\n", tool  # the one attempt made
        assert _attempts(server, f"pipe-{tool}-{os.getpid()}") == 1, tool
        assert "Failed to truncate file" in done.stderr, (tool, done.stderr)


def test_repeated_mode_refuses_retry(tmp_path: Path) -> None:
    done = run_tool("probetop", ["--retry", "1", "--count", "2", "http://127.0.0.1:9/"], tmp_path)
    assert done.returncode == 2 and "--retry is a one-off option" in done.stderr
