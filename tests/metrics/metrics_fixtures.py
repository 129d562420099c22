"""Helpers for the metrics tests: a free loopback port, a scrape parsed with
prometheus_client's own parsers, a small loopback HTTP target, and checks
shared by the live and export tests."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"

# Sample suffixes whose values only grow (counters and the cumulative parts
# of histograms and summaries).
CUMULATIVE_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_text(url: str, *, openmetrics: bool = False, timeout: float = 2.0) -> str:
    request = urllib.request.Request(url, headers={"Accept": OPENMETRICS} if openmetrics else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read().decode("utf-8")


def parse(text: str, *, openmetrics: bool = False) -> dict[str, Any]:
    """Families by name, parsed by prometheus_client (raises on bad text)."""
    if openmetrics:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
    return {f.name: f for f in text_string_to_metric_families(text)}


def wait_for(url: str, proc: subprocess.Popen[str], deadline_s: float = 60.0) -> None:
    """Until the endpoint answers (or the process ends: fail with its output)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"probetop exited {proc.returncode}:\n{out}\n{err}")
        try:
            scrape_text(url, timeout=0.5)
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.05)
    raise AssertionError(f"{url} did not answer within {deadline_s} s")


def cumulative_values(
    families: dict[str, Any],
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every counter-like sample's value by (sample name, labels)."""
    out = {}
    for family in families.values():
        for s in family.samples:
            if family.type in ("counter", "histogram", "summary") and s.name.endswith(
                CUMULATIVE_SUFFIXES
            ):
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def assert_never_backwards(scrapes: Iterable[dict[str, Any]]) -> int:
    """Counters, histogram buckets/counts/sums and summary counts/sums never
    decrease from one scrape to the next; returns how many pairs were compared."""
    previous: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    compared = 0
    for families in scrapes:
        now = cumulative_values(families)
        for key, value in now.items():
            if key in previous:
                assert value >= previous[key], f"{key} went back: {previous[key]} -> {value}"
                compared += 1
        previous.update(now)
    return compared


def samples(families: dict[str, Any], name: str) -> list[Any]:
    return [s for f in families.values() for s in f.samples if s.name == name]


def value(families: dict[str, Any], name: str, **labels: str) -> float:
    found = [
        s.value
        for s in samples(families, name)
        if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples"
    return float(found[0])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.startswith("/cut"):
            # a 200 whose body stops short: the transfer fails after the status
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"partial")
            self.wfile.flush()
            self.close_connection = True
            return
        code = 503 if self.path.startswith("/fail") else 200
        body = b"ok\n" if code == 200 else b"down\n"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def make_tls_cert(directory: Path) -> tuple[Path, Path]:
    """(cert, key) PEM files of a fresh self-signed cert for 127.0.0.1, valid
    two days, made with the openssl CLI (skips when openssl is missing), as
    tests/http's ``make_cert``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    files = ["-keyout", str(key), "-out", str(cert), "-days", "2"]
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", *files, *subject],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


class LoopbackHttp:
    """An HTTP server on 127.0.0.1 (``/`` answers 200, ``/fail`` 503, ``/cut`` a
    200 whose body is cut short); HTTPS with ``tls=(cert, key)``."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> LoopbackHttp:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def run_and_scrape(
    argv: list[str], url: str, *, every_s: float = 0.3, openmetrics: bool = False
) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """Run probetop, scrape ``url`` until it exits; (parsed scrapes, result)."""
    proc = subprocess.Popen(
        [*PROBETOP, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    scrapes: list[dict[str, Any]] = []
    try:
        wait_for(url, proc)
        while proc.poll() is None:
            try:
                scrapes.append(
                    parse(scrape_text(url, openmetrics=openmetrics), openmetrics=openmetrics)
                )
            except (urllib.error.URLError, ConnectionError, OSError):
                break  # the run ended between poll() and the request
            time.sleep(every_s)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return scrapes, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
