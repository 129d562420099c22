"""curl's `-i/--include` and `-D/--dump-header FILE` in `probetop http`, as
curl 7.88: each response's header lines as received (every hop's with -L,
every URL's in turn), before the body on its output (-i) or in one file
opened once before the first transfer (-D; `-` is stdout); `-I` in curl's
output mode shows them as -i. Run beside curl on a loopback server whose
headers hold no date, so the bytes must be equal: stdout, the -o file, the
-D file and the exit status. Before, both options were refused (exit 2).
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "http"]

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


class _Pages(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/moved":
            self._answer(301, b"see /ok\n", ("Location", "/ok"))
            return
        found = self.path == "/ok"
        self._answer(200 if found else 404, b"fine\n" if found else b"<p>no such page</p>\n")

    def do_HEAD(self) -> None:
        self._answer(200, b"", ("Content-Length", "5"))

    def _answer(self, code: int, body: bytes, *extra: tuple[str, str]) -> None:
        self.send_response_only(code)  # no Date or Server: the same bytes every time
        self.send_header("X-Custom", "  spaced value\t")
        for name, value in extra:
            self.send_header(name, value)
        if not any(name == "Content-Length" for name, _ in extra):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


class _Quiet(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up early is not a test failure


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = _Quiet(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def both(args: list[str], base: str, tmp_path: Path) -> list[tuple[object, ...]]:
    """(exit status, stdout, the -o file, the -D file) of curl, then of probetop."""
    results = []
    for tool, cmd in (("curl", ["curl"]), ("probetop", PROBETOP)):
        where = tmp_path / tool
        where.mkdir()
        argv = [a.format(base=base, dir=where) for a in args]
        proc = subprocess.run(
            [*cmd, *argv],
            capture_output=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")),
        )
        files = [where / name for name in ("page", "heads")]
        results.append(
            (proc.returncode, proc.stdout, *(f.read_bytes() if f.exists() else None for f in files))
        )
    return results


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "-i", "{base}/ok"],
        ["-s", "--include", "{base}/missing", "{base}/ok"],
        ["-s", "-i", "-o", "{dir}/page", "{base}/ok"],
        ["-s", "-iL", "{base}/moved"],
        ["-s", "-i", "{base}/moved"],
        ["-sf", "-i", "{base}/missing"],
        ["-s", "--fail-with-body", "-i", "{base}/missing"],
        ["-s", "-i", "-w", "%{{http_code}} %{{size_header}}\\n", "{base}/ok"],
        ["-s", "-I", "-o", "{dir}/page", "{base}/ok"],
        ["-s", "-I", "-w", "%{{http_code}}\\n", "{base}/ok"],
        ["-s", "-i", "http://127.0.0.1:1/"],
    ],
    ids=[
        "ok",
        "two-urls",
        "to-file",
        "redirect-followed",
        "redirect",
        "fail",
        "fail-with-body",
        "write-out",
        "head-to-file",
        "head-write-out",
        "refused",
    ],
)
def test_include_writes_what_curl_writes(base: str, tmp_path: Path, args: list[str]) -> None:
    ref, ours = both(args, base, tmp_path)
    assert ref == ours, (ref, ours)
    if args[1:3] == ["-i", "{base}/ok"]:  # the case can fail: headers, blank line, body
        assert ours[1].startswith(b"HTTP/1.1 200 OK\r\nX-Custom:   spaced value\t\r\n")
        assert ours[1].endswith(b"\r\n\r\nfine\n")


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "-D", "{dir}/heads", "-o", "/dev/null", "{base}/ok", "{base}/missing"],
        ["-s", "--dump-header", "-", "-o", "/dev/null", "{base}/ok"],
        ["-s", "-D", "-", "{base}/ok"],
        ["-s", "-L", "-D", "{dir}/heads", "{base}/moved"],
        ["-s", "-i", "-D", "{dir}/heads", "-o", "{dir}/page", "{base}/ok"],
        ["-s", "-D", "{dir}/heads", "http://127.0.0.1:1/"],
    ],
    ids=["two-urls", "stdout", "stdout-with-body", "redirect", "with-include", "refused"],
)
def test_dump_header_writes_what_curl_writes(base: str, tmp_path: Path, args: list[str]) -> None:
    ref, ours = both(args, base, tmp_path)
    assert ref == ours, (ref, ours)


def test_one_off_only_and_unopenable_file(base: str, tmp_path: Path) -> None:
    """Repeated mode reports statistics: -i/-D are refused there, as -w; a -D
    FILE that cannot be opened is a write error, 23 (curl 7.88.1 crashes)."""
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    for flag in (["-i"], ["-D", str(tmp_path / "h")]):
        proc = subprocess.run(
            [*PROBETOP, *flag, "--count", "2", f"{base}/ok"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert proc.returncode == 2 and "one-off option" in proc.stderr, proc
    proc = subprocess.run(
        [*PROBETOP, "-s", "-D", str(tmp_path / "no" / "h"), f"{base}/ok"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 23 and "Failed to open" in proc.stderr, proc
    assert proc.stdout == ""
