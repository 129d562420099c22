"""Embedded local targets for ``probetop demo``: nothing leaves this machine.

``DemoTargets`` is a context manager that starts
- an HTTP server on 127.0.0.1 (an ephemeral port) in a daemon thread, with
  ``/`` (small page), ``/delay?ms=N`` (waits N ms before answering) and
  ``/bytes?n=N`` (N bytes of body),
- a scratch directory for file-based disk probes, removed on exit (with
  everything the probes created in it), and its data files
  (``DemoContext.data_file``; ``tui/run/demo_scratch.py``: the dashboard's
  demo starts laying them out at the process's start and hands its
  ``Scratch`` in),
and reports whether this process may send ICMP (raw or datagram sockets).
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

from probetop.probes.core.family import DemoContext
from probetop.probes.core.privileges import has_net_raw, ping_group_allows
from probetop.tui.run.demo_scratch import Scratch


class _Handler(BaseHTTPRequestHandler):
    server_version = "probetop-demo/1"
    protocol_version = "HTTP/1.1"
    # Buffer the response and send it in one write on a TCP_NODELAY socket:
    # headers and body in separate segments meet Nagle + delayed ACK on a
    # kept-alive connection and show ~40 ms of "transfer" that is not real.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep the terminal clean
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/delay":
            time.sleep(min(float(query.get("ms", ["20"])[0]), 10_000) / 1000.0)
            body = b"delayed\n"
        elif url.path == "/bytes":
            body = b"x" * min(int(query.get("n", ["1024"])[0]), 64 << 20)
        elif url.path == "/":
            body = b"<html><body>probetop demo target</body></html>\n"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    do_HEAD = do_GET


class _QuietServer(ThreadingHTTPServer):
    """The demo's server: a client that goes away mid-answer (the HTTP probe
    stopping at the end of a run) is normal, not a traceback on stderr."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class DemoTargets:
    """Local targets for the demo. See the module docstring."""

    def __init__(self, interval_s: float = 1.0, scratch: Scratch | None = None) -> None:
        self.interval_s = interval_s  # the sampling interval demo probes should use
        self.http_server: ThreadingHTTPServer | None = None
        self.scratch: Path | None = None
        self._scratch = scratch  # closed on exit, as one made here
        self._thread: threading.Thread | None = None

    @property
    def http_url(self) -> str:
        assert self.http_server is not None, "use DemoTargets as a context manager"
        port = self.http_server.server_address[1]
        return f"http://127.0.0.1:{port}"

    @property
    def icmp_allowed(self) -> bool:
        return has_net_raw() or ping_group_allows()

    def context(self) -> DemoContext:
        """What the families' ``demo_probes`` read (inside the ``with``)."""
        assert self._scratch is not None, "use DemoTargets as a context manager"
        return DemoContext(
            interval_s=self.interval_s,
            scratch=self._scratch.path,
            http_url=self.http_url,
            icmp_allowed=self.icmp_allowed,
            data_file=self._scratch.data_file,
        )

    def __enter__(self) -> DemoTargets:
        self.http_server = _QuietServer(("127.0.0.1", 0), _Handler)
        self.http_server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.http_server.serve_forever, name="demo-http", daemon=True
        )
        self._thread.start()
        if self._scratch is None:
            self._scratch = Scratch({})
        self.scratch = self._scratch.path
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.http_server is not None:
            self.http_server.shutdown()
            self.http_server.server_close()
        if self._scratch is not None:
            self._scratch.close()
