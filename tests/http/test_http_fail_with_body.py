"""`--fail-with-body` as curl 7.88: the error answer's body is written
(stdout or -o; no waterfall), then exit 22; with -f it is refused (exit 2).
Run beside curl on a loopback server: stdout bytes, -o file and exit code
(found by a hostile review: the waterfall came out and no body)."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "http"]


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path == "/ok"
        body = b"fine\n" if found else b"<html>no such page</html>\n"
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize(
    "args",
    [
        ["-s", "--fail-with-body", "{base}/missing"],
        ["-sS", "--fail-with-body", "{base}/ok"],
        ["-s", "--fail-with-body", "-w", "%{{http_code}} %{{size_download}}\\n", "{base}/missing"],
        ["-s", "--fail-with-body", "-o", "{dir}/page", "{base}/missing"],
        ["-s", "-f", "--fail-with-body", "{base}/ok"],
    ],
    ids=["error-page", "ok", "write-out", "output-file", "with-f"],
)
def test_fail_with_body_writes_what_curl_writes(base: str, tmp_path: Path, args: list[str]) -> None:
    results = []
    for tool, cmd in (("curl", ["curl"]), ("probetop", PROBETOP)):
        where = tmp_path / tool
        where.mkdir()
        argv = [a.format(base=base, dir=where) for a in args]
        proc = subprocess.run([*cmd, *argv], capture_output=True, timeout=60)
        page = where / "page"
        results.append((proc.returncode, proc.stdout, page.read_bytes() if page.exists() else None))
    assert results[0] == results[1], results
