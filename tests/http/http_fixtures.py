"""Local HTTP(S) targets for the http probe tests: nothing leaves loopback.

- ``make_cert(dir)``: a self-signed certificate for 127.0.0.1/localhost made
  with the openssl CLI (skips when openssl is missing).
- ``LocalServer``: http.server in a thread, plain or TLS, with handlers that
  delay, redirect, stream a large body, fail, and echo the request.
  ``LocalServer.seen`` keeps the last requests as received (method, raw
  path, header lines, body bytes), to check what was really sent;
  ``LocalServer.accepted`` counts the TCP connections it accepted.
- ``RawServer``: answers every connection with fixed bytes (a hostile
  server: non-UTF-8 Location, control characters in the status line ...).
- ``NginxServer``: a real nginx on a loopback port with a temp config
  (TLS + HTTP/2), skipped when nginx is missing.

Responses go out in one write: http.server's default of headers and body in
separate small writes meets Nagle + delayed ACK on a reused connection and
adds ~40 ms that would blur every timing assertion.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest


def make_cert(directory: Path) -> tuple[Path, Path]:
    """(cert, key) PEM files of a fresh self-signed cert for 127.0.0.1 and localhost."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


CYCLE_LOCK = threading.Lock()
CYCLE_TURNS: dict[str, list[int]] = {}


class Handler(BaseHTTPRequestHandler):
    server_version = "probetop-test/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # TLS 1.3 session tickets go out right after the handshake; with Nagle
        # on, the response then waits for their ACK (delayed ACK, ~40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _reply(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        head = [f"HTTP/1.1 {code} {self.responses.get(code, ('',))[0]}"]
        head.append(f"Content-Length: {len(body)}")
        head.append("Content-Type: text/plain")
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if self.command != "HEAD":
            data += body
        self.wfile.write(data)
        self.wfile.flush()

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def handle_any(self) -> None:
        url = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = self._body()
        seen = getattr(self.server, "seen", None)
        if seen is not None:
            # raw_requestline is bytes: the path exactly as it came over the wire.
            line = self.raw_requestline.decode("latin-1").rstrip("\r\n")
            headers = [f"{k}: {v}" for k, v in self.headers.items()]
            seen.append({"line": line, "headers": headers, "body": body})
        path = url.path
        if path == "/delay":
            time.sleep(float(q.get("ms", "20")) / 1000.0)
            self._reply(200, b"delayed\n")
        elif path == "/status":
            self._reply(int(q.get("code", "500")), b"status\n")
        elif path == "/cycle":
            # /cycle?seq=200:30,404:0,500:0: answers in turn, each CODE after
            # waiting MS (a fast 404 beside a slow 200); one turn counter per
            # query string, shared by every connection; &cd=VALUE: each answer
            # with that Content-Disposition (curl's -J across a --retry).
            steps = [item.split(":") for item in q.get("seq", "200:0").split(",")]
            with CYCLE_LOCK:
                turns = CYCLE_TURNS.setdefault(url.query, [0])
                code, ms = steps[turns[0] % len(steps)]
                turns[0] += 1
            time.sleep(float(ms) / 1000.0)
            cd = q.get("cd")
            self._reply(int(code), b"cycle\n", {"Content-Disposition": cd} if cd else None)
        elif path == "/redirect":
            # /redirect?n=K: K more hops to /redirect?n=K-1, then /delay
            n = int(q.get("n", "1"))
            code = int(q.get("code", "302"))
            to = q.get("to", "/echo")
            target = f"/redirect?n={n - 1}&code={code}&to={quote(to)}" if n > 1 else to
            self._reply(code, b"", {"Location": target})
        elif path == "/bytes":
            self._reply(200, b"x" * int(q.get("n", "1024")))
        elif path == "/disposition":
            # /disposition?cd=VALUE: a Content-Disposition header as given (curl's -J)
            cd = q.get("cd")
            self._reply(200, b"disposed\n", {"Content-Disposition": cd} if cd else None)
        elif path == "/stream":
            # A large body in chunks with pauses: transfer time is real time.
            chunks, size = int(q.get("chunks", "10")), int(q.get("size", "65536"))
            pause = float(q.get("pause_ms", "5")) / 1000.0
            self.wfile.write(
                (
                    f"HTTP/1.1 200 OK\r\nContent-Length: {chunks * size}\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n"
                ).encode()
            )
            for _ in range(chunks):
                self.wfile.write(b"y" * size)
                self.wfile.flush()
                time.sleep(pause)
        elif path == "/auth":
            expected = "Basic " + base64.b64encode(b"bob:s3cret").decode()
            if self.headers.get("Authorization") == expected:
                self._reply(200, b"welcome\n")
            else:
                self._reply(401, b"no\n", {"WWW-Authenticate": 'Basic realm="t"'})
        elif path == "/noauth":
            # 400 if credentials arrived: shows whether a redirect hop kept them.
            sent = self.headers.get("Authorization") is not None
            self._reply(400 if sent else 200, b"credentials sent\n" if sent else b"none\n")
        elif path == "/close":
            self.close_connection = True
            self.wfile.write(b"")  # empty reply: curl error 52
        else:  # /echo and anything else: what the server received, as JSON
            doc = {
                "method": self.command,
                "version": self.request_version,
                "path": self.path,
                "headers": [f"{k}: {v}" for k, v in self.headers.items()],
                "body": body.decode("latin-1"),
            }
            self._reply(200, json.dumps(doc).encode(), {"Content-Type": "application/json"})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class _CountingServer(ThreadingHTTPServer):
    """Counts the TCP connections it accepts (``accepted``)."""

    accepted = 0

    def get_request(self) -> tuple[socket.socket, Any]:
        conn = super().get_request()
        self.accepted += 1  # only the serving thread accepts
        return conn


class LocalServer:
    """A threaded HTTP or HTTPS server on 127.0.0.1; use as a context manager."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.tls = tls
        self.httpd = _CountingServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.seen: collections.deque[dict[str, Any]] = collections.deque(maxlen=100)
        self.httpd.seen = self.seen  # type: ignore[attr-defined]
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def accepted(self) -> int:
        """TCP connections accepted so far."""
        return int(self.httpd.accepted)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> LocalServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class RawServer:
    """A loopback TCP server that reads a request and answers ``reply`` (bytes)
    on every connection, then closes it; use as a context manager. What each
    connection sent first (the request's head) is kept in ``received``."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.received: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(65536))
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def __enter__(self) -> RawServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NginxServer:
    """nginx on 127.0.0.1 with TLS and HTTP/2 (and plain HTTP), from a temp config."""

    def __init__(self, directory: Path, cert: Path, key: Path) -> None:
        self.nginx = shutil.which("nginx") or (
            "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
        )
        if self.nginx is None:
            pytest.skip("nginx is not installed (apt-get install nginx)")
        self.dir = directory
        self.port = free_port()
        self.plain_port = free_port()
        (directory / "www").mkdir()
        (directory / "www" / "index.html").write_text("hello from nginx\n")
        (directory / "www" / "big.bin").write_bytes(b"z" * 1_000_000)
        conf = directory / "nginx.conf"
        conf.write_text(
            f"""
daemon off;
master_process off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    server {{
        listen 127.0.0.1:{self.port} ssl http2;
        listen 127.0.0.1:{self.plain_port};
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {directory}/www;
        location /moved {{ return 301 /index.html; }}
    }}
}}
"""
        )
        self.conf = conf
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> NginxServer:
        self.proc = subprocess.Popen(
            [str(self.nginx), "-c", str(self.conf), "-p", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                pytest.skip(f"nginx did not start: {err.strip()[:300]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.__exit__()
        pytest.skip("nginx did not start listening within 60 s")

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


class QuicServer:
    """A tiny HTTP/3 server (aioquic) on UDP 127.0.0.1, in a thread with its own loop.

    Answers every request with 200 and a short body after ``delay_ms``.
    Skips the test when aioquic is not installed.
    """

    def __init__(self, cert: Path, key: Path, delay_ms: float = 0.0) -> None:
        try:
            import aioquic  # noqa: F401
        except ImportError:
            pytest.skip("aioquic is not installed (pip install aioquic): no local HTTP/3 server")
        self.cert, self.key, self.delay_ms = cert, key, delay_ms
        self.port = free_udp_port()
        self._ready = threading.Event()
        self._stop: Any = None
        self._loop: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def accepted(self) -> int:
        """TCP connections accepted so far."""
        return int(self.httpd.accepted)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _run(self) -> None:
        import asyncio

        from aioquic.asyncio import QuicConnectionProtocol, serve
        from aioquic.h3.connection import H3_ALPN, H3Connection
        from aioquic.h3.events import HeadersReceived
        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.events import ProtocolNegotiated

        delay = self.delay_ms / 1000.0

        class H3Protocol(QuicConnectionProtocol):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.h3: H3Connection | None = None

            def quic_event_received(self, event: Any) -> None:
                if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
                    self.h3 = H3Connection(self._quic)
                if self.h3 is None:
                    return
                for h3_event in self.h3.handle_event(event):
                    if isinstance(h3_event, HeadersReceived):
                        sid = h3_event.stream_id
                        asyncio.get_running_loop().call_later(delay, self._answer, sid)

            def _answer(self, stream_id: int) -> None:
                assert self.h3 is not None
                body = b"hello over h3\n"
                self.h3.send_headers(
                    stream_id,
                    [
                        (b":status", b"200"),
                        (b"content-type", b"text/plain"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                )
                self.h3.send_data(stream_id, body, end_stream=True)
                self.transmit()

        async def main() -> None:
            config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
            config.load_cert_chain(str(self.cert), str(self.key))
            server = await serve("127.0.0.1", self.port, configuration=config,
                                 create_protocol=H3Protocol)  # fmt: skip
            self._stop = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            self._ready.set()
            await self._stop.wait()
            server.close()

        try:
            asyncio.run(main())
        except BaseException as exc:  # surfaced by __enter__
            self.error = exc
            self._ready.set()

    def __enter__(self) -> QuicServer:
        self.thread.start()
        self._ready.wait(10)
        if self.error is not None:
            pytest.skip(f"the aioquic HTTP/3 server did not start: {self.error!r}")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(5)


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_tool(tool: str, words: list[str], state: Path) -> subprocess.CompletedProcess[str]:
    """``curl WORDS`` or ``probetop http WORDS`` (forked from the zygote, its
    state directory ``state``): the same words run by either tool."""
    if tool == "curl":
        return subprocess.run(["curl", *words], capture_output=True, text=True, timeout=60)
    from forkserver import run_probetop

    return run_probetop(
        ["http", *words], env={**os.environ, "XDG_STATE_HOME": str(state)}, timeout=60
    )
