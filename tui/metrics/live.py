"""``--metrics [ADDR:]PORT`` and ``--textfile DIR`` for a live session.

Contract:
- ``parse_metrics_address`` / ``parse_textfile_dir`` are the options' value
  parsers (``OptionValueError``: an argparse usage error, exit 2).
- ``MetricsExporter.open()`` binds the HTTP server and checks the textfile
  directory by writing the file once; it raises ``MetricsError`` (exit 2)
  when the port is taken or not allowed, the address is not local, or the
  directory cannot be written. ``tui.run.launch`` calls it after every probe's
  ``prepare`` and before any probe starts.
- ``attach(hub)`` subscribes (lossless: a counter must see every interval)
  and returns the task that folds the hub's records into the metrics.
  Work happens once per record batch on the event loop (a few hundred
  numbers); the families are rebuilt then and swapped in whole, so a scrape,
  served by prometheus-client's WSGI app in the server's own thread, only
  formats what was published. The textfile is rewritten at most once per
  sampling interval (``replace_file``: checked like every output, a private
  temporary file with a random name, synced, renamed; in a worker thread).
- One run per textfile: ``open()`` takes a lock on ``DIR/probetop.prom``
  (the disk probes' ``TargetLock``) held until ``close()``; a second run
  writing the same file is refused naming the first one's PID (two writers
  would make every series flap between them). A kernel filesystem
  (``--textfile /dev``, ``/proc``) or a device/FIFO at the file's name is
  refused like a recording target.
- One writer per file: every write of the textfile holds ``_write_lock``,
  so a periodic write still running in its worker thread (its task
  cancelled by the session's shutdown: a thread cannot be cancelled) is
  finished before the final write starts, never beside it; and once the
  final write is done, a periodic write that was still waiting for the
  lock writes nothing (older counters never replace the final ones).
- ``close()`` folds what is left, writes the textfile a last time (the
  final counters) and stops the server (its thread ends within 0.1 s) --
  unless ``linger_s`` (``--metrics-linger``) is set: then the server goes
  on serving the final counters until ``linger()``, which a headless run
  calls after its report, waits ``linger_s`` (a stop signal ends the wait
  at once) and stops it. Without it, a run shorter than the scrape
  interval was never scraped whole (Prometheus saw 11,900 of 12,000
  requests).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from probetop.probes.core import stopsignals
from probetop.probes.core.base import ProbeError
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.targetlock import TargetLock
from probetop.probes.record import RecordingError, replace_file
from probetop.tui.metrics.address import TEXTFILE_NAME, MetricsAddress, MetricsError
from probetop.tui.metrics.families import StaticCollector, build_families, make_registry
from probetop.tui.metrics.state import MetricsState


class MetricsExporter:
    """The live metrics of one session: HTTP endpoint, textfile, or both."""

    def __init__(
        self,
        address: MetricsAddress | None = None,
        textfile_dir: Path | None = None,
        *,
        interval_s: float = 1.0,
    ) -> None:
        self.address = address
        self.textfile = textfile_dir / TEXTFILE_NAME if textfile_dir is not None else None
        self.interval_s = interval_s
        self.state = MetricsState()
        self.collector = StaticCollector()
        self.registry: Any = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sub: Subscription | None = None
        self._hub: Hub | None = None
        self._last_write = 0.0
        self._written = True
        self._failed = False
        self._lock: TargetLock | None = None
        self._write_lock = threading.Lock()  # one writer per file (see the contract)
        self._final_written = False
        self.url: str | None = None
        self.linger_s = 0.0

    # -- set-up, before the probes start ----------------------------------
    def open(self) -> None:
        """Bind the server and check the textfile directory (MetricsError)."""
        self.registry = make_registry(self.collector)
        self._publish()
        if self.textfile is not None:
            self._check_textfile()
        if self.address is not None:
            self._serve(self.address)

    def _check_textfile(self) -> None:
        assert self.textfile is not None
        directory = self.textfile.parent
        if not directory.is_dir():
            what = "does not exist" if not directory.exists() else "is not a directory"
            raise MetricsError(f"--textfile {directory}: {what}")
        # Keyed by the file's real path plus a suffix: the file's own key is
        # what `replace_file` checks before each write (it must stay free).
        key = f"{os.path.realpath(self.textfile)}#textfile"
        lock = TargetLock.for_path(key, "textfile", str(self.textfile))
        try:
            lock.acquire()
        except ProbeError as exc:
            raise MetricsError(f"--textfile {directory}: {exc}") from None
        self._lock = lock
        try:
            self._write_textfile()
        except (OSError, RecordingError) as exc:
            self._release()
            raise MetricsError(f"--textfile {directory}: {_why(exc)}") from None

    def _serve(self, address: MetricsAddress) -> None:
        from wsgiref.simple_server import WSGIRequestHandler, make_server

        from prometheus_client import make_wsgi_app
        from prometheus_client.exposition import ThreadingWSGIServer

        class Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """No access log on the dashboard's terminal."""

        try:
            infos = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise MetricsError(
                f"--metrics {address}: cannot resolve {address.host!r}: {exc.strerror}"
            ) from None
        except (UnicodeError, ValueError) as exc:  # the parser refuses these first
            raise MetricsError(f"--metrics {address}: not a host name ({exc})") from None

        class Server(ThreadingWSGIServer):
            address_family = infos[0][0]

        host = str(infos[0][4][0])
        try:
            server = make_server(
                host, address.port, make_wsgi_app(self.registry), Server, handler_class=Quiet
            )
        except OSError as exc:
            raise MetricsError(_bind_message(address, exc)) from None
        self._server = server
        bound = server.server_address
        shown = MetricsAddress(_display_host(address.host, str(bound[0])), int(bound[1]))
        self.url = f"http://{shown}/metrics"
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            daemon=True,
            name="probetop-metrics",
        )
        self._thread.start()
        print(f"probetop: serving metrics on {self.url}", file=sys.stderr, flush=True)

    # -- running ------------------------------------------------------------
    def attach(self, hub: Hub) -> asyncio.Task[None]:
        """Subscribe to ``hub`` and fold its records in until ``close``."""
        self._hub = hub
        self._sub = hub.subscribe(lossless=True)
        return asyncio.get_running_loop().create_task(self._follow(self._sub), name="metrics")

    async def _follow(self, sub: Subscription) -> None:
        while not sub.closed:
            records = await sub.wait(timeout=self.interval_s)
            if self._fold(records):
                self._written = False
            if (
                self.textfile is not None
                and not self._written
                and time.monotonic() - self._last_write >= self.interval_s * 0.9
            ):
                await asyncio.to_thread(self._write_quietly)

    def _fold(self, records: list[Any]) -> bool:
        changed = False
        try:
            for record in records:
                changed = self.state.feed(record) or changed
            if changed:
                self._publish()
        except Exception as exc:  # a metrics bug must not stop the probes
            if not self._failed:
                self._failed = True
                print(
                    f"probetop: warning: metrics stopped updating: {type(exc).__name__}: {exc}",
                    file=sys.stderr,
                    flush=True,
                )
            return False
        return changed

    def _publish(self) -> None:
        self.collector.publish(build_families(self.state.points()))

    def _write_textfile(self, *, final: bool = False) -> None:
        from prometheus_client import generate_latest

        assert self.textfile is not None
        with self._write_lock:
            if self._final_written:
                return  # the final counters are there: nothing older goes over them
            self._last_write = time.monotonic()
            self._written = True
            data = generate_latest(self.registry).decode("utf-8")
            # 0644: node_exporter reads it, usually as another user (the labels
            # are redacted like every recorded URL).
            with replace_file(self.textfile, verb="write", mode=0o644) as f:
                f.write(data)
            self._final_written = final

    def _write_quietly(self, final: bool = False) -> None:
        try:
            self._write_textfile(final=final)
        except (OSError, RecordingError) as exc:
            print(f"probetop: warning: --textfile: {_why(exc)}", file=sys.stderr, flush=True)

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    # -- the end ----------------------------------------------------------------
    async def close(self) -> None:
        """Fold the last records, write the textfile once more, stop serving."""
        sub, self._sub = self._sub, None
        if sub is not None:
            self._fold(sub.drain())
            if self._hub is not None:
                self._hub.unsubscribe(sub)
        if self.textfile is not None and self.registry is not None and self._lock is not None:
            await asyncio.to_thread(self._write_quietly, True)
        self._release()
        if not self.linger_s:
            self.stop_server()

    def linger(self) -> None:
        """Serve the final counters ``linger_s`` seconds more, then stop.
        A stop signal (recorded once the run has stopped) ends the wait."""
        deadline = time.monotonic() + self.linger_s
        if self._server is not None:
            while time.monotonic() < deadline and stopsignals.pending() is None:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        self.stop_server()

    def stop_server(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.shutdown()  # returns within poll_interval (0.1 s)
                server.server_close()


def _display_host(asked: str, bound: str) -> str:
    try:
        ipaddress.ip_address(asked)
    except ValueError:
        return asked  # a name: show it as given
    return bound


def _bind_message(address: MetricsAddress, exc: OSError) -> str:
    import errno

    if exc.errno == errno.EADDRINUSE:
        return (
            f"--metrics {address}: the port is already in use (another probetop or exporter?); "
            "pick another port"
        )
    if exc.errno == errno.EACCES:
        return f"--metrics {address}: not allowed to listen there (ports below 1024 need root)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--metrics {address}: {address.host} is not an address of this machine"
    return f"--metrics {address}: cannot listen: {exc.strerror or exc}"


def exporter_for(
    address: MetricsAddress | None, textfile_dir: Path | None, interval_s: float
) -> MetricsExporter | None:
    """The exporter a plan asks for, not yet opened (None when neither option is given)."""
    if address is None and textfile_dir is None:
        return None
    return MetricsExporter(address, textfile_dir, interval_s=interval_s)


def _why(exc: OSError | RecordingError) -> str:
    """The reason in a write error, without repeating the path."""
    if isinstance(exc, OSError):
        return f"cannot write: {exc.strerror or exc}"
    return str(exc)
