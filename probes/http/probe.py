"""HTTP phase timings, sampled repeatedly: the ``http`` probe.

Contract:
- ``HttpProbe(settings)`` requests every URL of ``settings.urls`` once per
  ``settings.interval_s`` (``settings.count`` times each, or until stopped)
  through the worker process in ``worker.py`` and emits one Sample per
  interval, laid out by ``records.HttpInterval`` (see there for the keys).
- In-interval failures (DNS, refused, timeout, TLS, 4xx/5xx) are counted by
  status class and sampling goes on. ``prepare`` raises ProbeError only for
  what cannot start.
- The first ``settings.warmup`` requests of each URL are discarded (counted
  as such); ``settings.count`` counts the requests after them.
- ``summary()`` gives per URL label its status classes, every phase's
  distribution over the requests the statistics cover (successes only
  unless ``include_errors``), jitter and outage (``stats.UrlStats.as_dict``),
  read by ``report.py``.
- Cancellation kills the worker process and waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from probetop.probes.core.base import Emit, ProbeError
from probetop.probes.core.sample import ENTITY_SEP, Sample, now_ns
from probetop.probes.core.ticker import Ticker
from probetop.probes.http.inputs import HttpUrlError
from probetop.probes.http.records import (
    KIND,
    METRICS,
    PHASES,
    HttpInterval,
    HttpParams,
    ResponseFacts,
    TlsFacts,
    UrlInterval,
    UrlRun,
)
from probetop.probes.http.request import (
    check_http_version,
    check_url,
    curl_command,
)
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.stats import Outcome, UrlStats
from probetop.probes.http.status import StatusClass
from probetop.probes.http.transfer import phases_us
from probetop.probes.record import redact_url

MAX_LABEL = 48
# A URL's TLS session (version, cipher, certificates' expiry: blackbox's TLS
# series) is looked up by a handshake of its own, in a thread of this process,
# never in the worker, whose timings a thread holding the GIL would stretch:
# after the URL's first response over TLS, then at most every TLS_REFRESH_S
# (a renewed certificate), each bounded by TLS_LOOKUP_S; a counted run's end
# waits at most TLS_WAIT_S for one still running.
TLS_REFRESH_S = 300.0
TLS_LOOKUP_S = 10.0
TLS_WAIT_S = 2.0
# At a stop, how long the worker's last lines may take to read (it is killed
# first, so they are already in the pipe): bounded, inside the 2 s stop.
STOP_READ_S = 0.5


def url_labels(urls: list[str]) -> dict[str, str]:
    """Short, unique entity labels: host:port/path?query of the redacted URL
    (never user-info, a credential parameter or '@'), for checked URLs."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for url in urls:
        parts = urlsplit(redact_url(url))
        host = parts.hostname or "?"
        if ":" in host:
            host = f"[{host}]"
        if parts.port:
            host = f"{host}:{parts.port}"
        label = host + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if parts.scheme == "https":
            label = "https://" + label
        label = label.replace(ENTITY_SEP, "%40")[:MAX_LABEL]
        base, n = label, 2
        while label in used:
            label = f"{base}#{n}"
            n += 1
        used.add(label)
        out[url] = label
    return out


def default_probe_id(urls: list[str]) -> str:
    """``http:<first URL's label>`` (+N more), so several http probes can share a hub."""
    try:
        first = url_labels([check_url(urls[0])])
    except (HttpUrlError, ValueError, IndexError):
        return "http"
    label = next(iter(first.values()))
    return f"http:{label}" + (f"+{len(urls) - 1}" if len(urls) > 1 else "")


class HttpProbe:
    """Repeated HTTP requests with libcurl phase timings. See module docstring."""

    kind = KIND
    metrics = METRICS

    def __init__(
        self, settings: HttpSettings | None = None, *, probe_id: str | None = None
    ) -> None:
        self.settings = settings or HttpSettings()
        s = self.settings
        self.urls = list(s.urls)  # normalised (scheme added) by prepare
        self.request = s.request
        self.interval_s = s.interval_s
        self.count = s.count
        self.fresh = s.fresh
        self.warmup = s.warmup
        self.include_errors = s.include_errors
        self.id = probe_id or default_probe_id(self.urls)
        self.labels: dict[str, str] = {}
        self.stats: dict[str, UrlStats] = {}
        self.skipped = 0
        self.worker_pid: int | None = None
        self._tls_lock = threading.Lock()
        self._tls_found: dict[str, TlsFacts] = {}  # looked up since the last sample
        self._tls_due: dict[str, float] = {}  # label -> monotonic s of the next look-up
        self._tls_lookups: list[threading.Thread] = []

    # -- Probe protocol ---------------------------------------------------
    def prepare(self) -> None:
        self.settings.validate()
        try:
            import pycurl  # noqa: F401
        except ImportError as exc:
            raise ProbeError(f"pycurl is not importable ({exc}): pip install pycurl") from None
        self.urls = [check_url(u) for u in self.urls]
        check_http_version(self.request.http_version)
        self.labels = url_labels(self.urls)
        self.stats = {
            self.labels[u]: UrlStats(
                redact_url(u), warmup=self.warmup, include_errors=self.include_errors
            )
            for u in self.urls
        }

    def params(self) -> Mapping[str, Any]:
        return HttpParams(
            urls=tuple(redact_url(u) for u in self.urls),
            labels=tuple(self.labels.get(u) for u in self.urls),
            interval_s=self.interval_s,
            count=self.count,
            connection=self.settings.connection,
            request=self.request.redacted(),
            warmup=self.warmup,
            include_errors=self.include_errors,
        ).to_dict()

    def reference_command(self) -> str | None:
        if not self.urls:
            return None
        return curl_command(self.request, self.urls[0])

    def summary(self) -> Mapping[str, Any]:
        return {
            "interval_s": self.interval_s,
            "connection": self.settings.connection,
            "skipped_turns": self.skipped,
            "warmup": self.warmup,
            "include_errors": self.include_errors,
            "reference_command": self.reference_command(),
            "urls": {label: s.as_dict() for label, s in self.stats.items()},
        }

    async def run(self, emit: Emit) -> None:
        if not self.labels:
            self.prepare()
        origin_ns = now_ns()  # the grid of the ticker made next; the worker shares it
        ticker = Ticker(self.interval_s)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "probetop.probes.http.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.worker_pid = proc.pid
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            await self._sample_loop(proc, ticker, origin_ns, emit)
        finally:
            # Cancelled or failed: the worker never outlives the probe.
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            self.worker_pid = None

    async def _sample_loop(
        self, proc: asyncio.subprocess.Process, ticker: Ticker, origin_ns: int, emit: Emit
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        config = {
            "urls": self.urls,
            "request": self.request.to_dict(),
            "interval_s": self.interval_s,
            # Warm-up requests come first and do not count towards --count.
            "count": None if self.count is None else self.count + self.warmup,
            "fresh": self.fresh,
            "origin_ns": origin_ns,
        }
        proc.stdin.write((json.dumps(config) + "\n").encode())
        await proc.stdin.drain()
        results: list[dict[str, Any]] = []
        reader = asyncio.create_task(self._read(proc.stdout, results))
        t0 = now_ns()
        tick: asyncio.Task[int] | None = None
        try:
            while True:
                tick = asyncio.create_task(ticker.tick())
                await asyncio.wait({tick, reader}, return_when=asyncio.FIRST_COMPLETED)
                if not tick.done():
                    tick.cancel()
                    await asyncio.gather(tick, return_exceptions=True)
                if reader.done():  # the worker's last lines: a look-up may still report
                    await self._tls_settled()
                t1 = now_ns()
                if results:
                    batch = results[:]
                    results.clear()
                    emit(self._sample(batch, t1, (t1 - t0) / 1e9))
                t0 = t1
                if reader.done():
                    break
        except asyncio.CancelledError:
            # Stopped (--time, a signal, the dashboard): what the worker said
            # since the last tick is the last interval, not lost with the stop
            # (a hanging request's skipped turns are said as they happen).
            # Killed first, so its output ends; read to that end, bounded.
            if proc.returncode is None:
                proc.kill()
            await asyncio.wait({reader}, timeout=STOP_READ_S)
            # Reaped here, by the loop's child watcher: a transport dropped with
            # its child unreaped leaves it to subprocess's own clean-up, and the
            # watcher then printed "Unknown child process pid N" on stderr.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_READ_S)
            if results:
                t1 = now_ns()
                emit(self._sample(results[:], t1, (t1 - t0) / 1e9))
                results.clear()
            raise
        else:
            code = await proc.wait()
            if code != 0:
                err = (await proc.stderr.read()).decode(errors="replace").strip()
                tail = err.splitlines()[-1] if err else f"exit code {code}"
                raise ProbeError(f"the HTTP sampling worker failed: {tail}")
        finally:
            pending = [t for t in (reader, tick) if t is not None and not t.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _tls_settled(self) -> None:
        running = [t for t in self._tls_lookups if t.is_alive()]
        if running:
            deadline = time.monotonic() + TLS_WAIT_S
            for thread in running:
                await asyncio.to_thread(thread.join, max(0.0, deadline - time.monotonic()))

    def _look_up_tls(self, label: str, url: str) -> None:
        from probetop.probes.http.transfer import tls_details

        limit = min(self.request.timeout_s or TLS_LOOKUP_S, TLS_LOOKUP_S)
        request = dataclasses.replace(self.request, timeout_s=limit)
        tls = tls_details(request, url, chain=True)
        if tls is not None:
            facts = TlsFacts(tls.version, tls.cipher, tls.not_after_s)
            with self._tls_lock:
                self._tls_found[label] = facts

    def _tls_lookup_due(self, label: str, url: str) -> None:
        now = time.monotonic()
        if now < self._tls_due.get(label, 0.0):
            return
        self._tls_due[label] = now + TLS_REFRESH_S
        self._tls_lookups = [t for t in self._tls_lookups if t.is_alive()]
        thread = threading.Thread(
            target=self._look_up_tls, args=(label, url), name=f"tls:{label}", daemon=True
        )
        thread.start()
        self._tls_lookups.append(thread)

    async def _read(self, stream: asyncio.StreamReader, into: list[dict[str, Any]]) -> None:
        async for line in stream:
            with contextlib.suppress(ValueError):
                into.append(json.loads(line))

    # -- aggregation ------------------------------------------------------
    def _sample(self, batch: list[dict[str, Any]], t_ns: int, seconds: float) -> Sample:
        """One interval's worker results as one Sample (``HttpInterval``)."""
        per_url: dict[str, _UrlBatch] = {}  # in the order of each URL's first result
        errors = 0
        counted = 0
        touched: set[str] = set()
        with self._tls_lock:
            tls, self._tls_found = self._tls_found, {}
        for result in batch:
            label = self.labels[self.urls[result["i"]]]
            stats = self.stats[label]
            touched.add(label)
            if "stamps_us" not in result:  # a skipped turn, no request (worker.py)
                stats.skipped = max(stats.skipped, int(result.get("skipped") or 0))
                continue
            phases = phases_us(
                result["stamps_us"],
                failed=result["error"] or None,
                got_response=result["http_code"] > 0,
            )
            outcome = stats.add(result, phases)
            if outcome.discarded:
                continue  # warm-up: in ``run`` only
            counted += 1
            failed = outcome.kind is not None
            errors += failed
            per_url.setdefault(label, _UrlBatch()).add(
                phases, outcome, int(result["http_code"]), failed, result["stamps_us"]
            )
            per_url[label].ssl = bool(result.get("ssl"))
            per_url[label].response = _response(result)
            if result.get("ssl") and isinstance(result.get("url"), str):
                self._tls_lookup_due(label, result["url"])
        self.skipped = sum(s.skipped for s in self.stats.values())
        interval = HttpInterval(
            urls=tuple(url.record(label) for label, url in per_url.items()),
            requests=counted,
            errors=errors,
            error_counts={lb: dict(s.errors) for lb, s in self.stats.items() if s.errors},
            run={
                label: self._run(self.stats[label])
                for label in self.labels.values()
                if label in touched or self.stats[label].requests
            },
            tls=tls,
        )
        return interval.to_sample(self.id, t_ns, seconds)

    @staticmethod
    def _run(stats: UrlStats) -> UrlRun:
        cont = stats.continuity
        return UrlRun(
            classes=stats.class_counts(),
            discarded=stats.discarded,
            skipped=stats.skipped,
            jitter_mean_ms=cont.jitter_mean_ms,
            jitter_max_ms=None if cont.jitter_max_ms is None else round(cont.jitter_max_ms, 3),
            outage_s=round(cont.current_outage_s(), 6),
        )


class _UrlBatch:
    """One URL's requests finished in one interval: the latest one's figures
    and every request's TTFB and total."""

    def __init__(self) -> None:
        self.phases_ms: dict[str, float | None] = {}
        self.http_code = 0
        self.requests = 0
        self.errors = 0
        self.every_ttfb_ms: list[float | None] = []
        self.every_total_ms: list[float | None] = []
        self.latest_ttfb_ms: float | None = None
        self.latest_total_ms: float | None = None
        self.ssl = False  # the latest request's final response came over TLS
        self.response: ResponseFacts | None = None  # the latest request's (worker.py)

    def add(
        self,
        phases_us: Mapping[str, int | None],
        outcome: Outcome,
        http_code: int,
        failed: bool,
        stamps_us: Mapping[str, int],
    ) -> None:
        """One request; the latest one's figures are its own, whatever its
        class; the every-request lists hold what the statistics cover."""
        self.phases_ms = {p: _ms(phases_us[p]) for p in PHASES}
        self.http_code = http_code
        self.requests += 1
        self.errors += failed
        self.every_ttfb_ms.append(outcome.ttfb_ms)
        self.every_total_ms.append(outcome.total_ms)
        got_response = outcome.status is not None and outcome.status is not StatusClass.TRANSPORT
        self.latest_ttfb_ms = stamps_us.get("starttransfer", 0) / 1000.0 if got_response else None
        self.latest_total_ms = stamps_us.get("total", 0) / 1000.0 if got_response else None

    def record(self, label: str) -> UrlInterval:
        return UrlInterval(
            label=label,
            phases_ms=self.phases_ms,
            ttfb_ms=self.latest_ttfb_ms,
            total_ms=self.latest_total_ms,
            http_code=self.http_code,
            requests=self.requests,
            errors=self.errors,
            every_ttfb_ms=tuple(self.every_ttfb_ms),
            every_total_ms=tuple(self.every_total_ms),
            ssl=self.ssl,
            response=self.response,
        )


def _response(result: Mapping[str, Any]) -> ResponseFacts | None:
    """What the worker read of a request's final response after it ended
    (None from a worker line without it)."""
    if "content_length" not in result:
        return None
    answered = int(result.get("http_code") or 0) > 0
    version = result.get("http_version")
    body = result.get("body_bytes")
    return ResponseFacts(
        # Go's empty response (no answer): ContentLength 0, no version.
        content_length=int(result["content_length"] or 0) if answered else 0,
        body_bytes=int(body) if isinstance(body, (int, float)) else None,
        redirects=int(result.get("redirect_count") or 0),
        http_version=version if answered and isinstance(version, str) else None,
        primary_ip=str(result.get("primary_ip") or ""),
    )


def _ms(us: int | None) -> float | None:
    return None if us is None else us / 1000.0
