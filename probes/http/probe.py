"""HTTP phase timings, sampled repeatedly: the ``http`` probe.

Contract:
- ``HttpProbe(urls, request, interval_s, count, fresh)`` requests every URL
  once per interval (``count`` times each, or until stopped) through the
  worker process in ``http_worker`` and emits one Sample per interval.
- Sample values, per URL (entity = ``labels()[url]``, e.g.
  ``ttfb_ms@127.0.0.1:8080/delay``): the latest request's phases ``dns_ms``,
  ``tcp_ms``, ``tls_ms``, ``server_ms``, ``transfer_ms``, plus ``ttfb_ms``
  (libcurl's starttransfer), ``total_ms``, ``http_code``, ``requests`` and
  ``errors`` finished in the interval. Without an entity: ``ttfb_ms`` and
  ``total_ms`` medians over every request finished in the interval, and the
  interval's ``requests`` and ``errors``.
- ``Sample.extra["errors"]`` = cumulative error counts by kind per URL label;
  ``extra["ttfb_ms"]``/``extra["total_ms"]`` = every request's value in the
  interval per label (None for a failed one), for exact percentiles downstream.
- In-interval failures (DNS, refused, timeout, TLS, 4xx/5xx) are counted and
  sampling goes on. ``prepare`` raises ProbeError only for what cannot start.
- Cancellation kills the worker process and waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from probetop.probes.core.base import Emit, MetricSpec, ProbeError, UsageProbeError
from probetop.probes.core.sample import ENTITY_SEP, Sample, metric_key, now_ns
from probetop.probes.core.ticker import Ticker
from probetop.probes.http.request import (
    HttpRequest,
    check_http_version,
    check_url,
    curl_command,
    normalise_url,
)
from probetop.probes.http.stats import UrlStats
from probetop.probes.http.transfer import PHASES, phases_us
from probetop.probes.record.redact import redact_url

MAX_LABEL = 48


def url_labels(urls: list[str]) -> dict[str, str]:
    """Short, unique entity labels: host:port/path?query, never a password or '@'."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for url in urls:
        parts = urlsplit(url)
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
        first = url_labels([normalise_url(urls[0])])
    except (ValueError, IndexError):
        return "http"
    label = next(iter(first.values()))
    return f"http:{label}" + (f"+{len(urls) - 1}" if len(urls) > 1 else "")


class HttpProbe:
    """Repeated HTTP requests with libcurl phase timings. See module docstring."""

    kind = "http"
    metrics = (
        MetricSpec("ttfb_ms", "ms", "time to first byte (libcurl starttransfer)", True),
        MetricSpec("total_ms", "ms", "whole request (libcurl total)", True),
        MetricSpec("dns_ms", "ms", "DNS: namelookup"),
        MetricSpec("tcp_ms", "ms", "TCP: connect - namelookup"),
        MetricSpec("tls_ms", "ms", "TLS: appconnect - connect"),
        MetricSpec("server_ms", "ms", "server: starttransfer - pretransfer"),
        MetricSpec("transfer_ms", "ms", "transfer: total - starttransfer"),
        MetricSpec("http_code", "", "HTTP status of the latest response (0: none)"),
        MetricSpec("requests", "", "requests finished in the interval"),
        MetricSpec("errors", "", "requests failed in the interval (any kind)"),
    )

    def __init__(
        self,
        urls: list[str],
        request: HttpRequest | None = None,
        *,
        interval_s: float = 1.0,
        count: int | None = None,
        fresh: bool = True,
        probe_id: str | None = None,
    ) -> None:
        self.urls = list(urls)
        self.request = request or HttpRequest()
        self.interval_s = interval_s
        self.count = count
        self.fresh = fresh
        self.id = probe_id or default_probe_id(self.urls)
        self.labels: dict[str, str] = {}
        self.stats: dict[str, UrlStats] = {}
        self.skipped = 0
        self.worker_pid: int | None = None

    # -- Probe protocol ---------------------------------------------------
    def prepare(self) -> None:
        if not self.urls:
            raise UsageProbeError("give at least one URL")
        if self.count is not None and self.count < 1:
            raise UsageProbeError(f"--count must be at least 1, got {self.count}")
        if not self.interval_s > 0:
            raise UsageProbeError("--interval must be positive")
        try:
            import pycurl  # noqa: F401
        except ImportError as exc:
            raise ProbeError(f"pycurl is not importable ({exc}): pip install pycurl") from None
        self.urls = [check_url(u) for u in self.urls]
        check_http_version(self.request.http_version)
        self.labels = url_labels(self.urls)
        self.stats = {self.labels[u]: UrlStats(redact_url(u)) for u in self.urls}

    def params(self) -> Mapping[str, Any]:
        return {
            "urls": [redact_url(u) for u in self.urls],
            "labels": [self.labels.get(u) for u in self.urls],
            "interval_s": self.interval_s,
            "count": self.count,
            "connection": "fresh" if self.fresh else "reuse",
            "request": self.request.redacted(),
        }

    def reference_command(self) -> str | None:
        if not self.urls:
            return None
        return curl_command(self.request, self.urls[0])

    def summary(self) -> Mapping[str, Any]:
        return {
            "interval_s": self.interval_s,
            "connection": "fresh" if self.fresh else "reuse",
            "skipped_turns": self.skipped,
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
            "count": self.count,
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
                t1 = now_ns()
                if results:
                    batch = results[:]
                    results.clear()
                    emit(self._sample(batch, t1, (t1 - t0) / 1e9))
                t0 = t1
                if reader.done():
                    break
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

    async def _read(self, stream: asyncio.StreamReader, into: list[dict[str, Any]]) -> None:
        async for line in stream:
            with contextlib.suppress(ValueError):
                into.append(json.loads(line))

    # -- aggregation ------------------------------------------------------
    def _sample(self, batch: list[dict[str, Any]], t_ns: int, seconds: float) -> Sample:
        values: dict[str, float | None] = {}
        per_url_requests: dict[str, int] = {}
        per_url_errors: dict[str, int] = {}
        ttfbs: list[float] = []
        totals: list[float] = []
        every_ttfb: dict[str, list[float | None]] = {}
        every_total: dict[str, list[float | None]] = {}
        errors = 0
        for result in batch:
            label = self.labels[self.urls[result["i"]]]
            stats = self.stats[label]
            phases = phases_us(
                result["stamps_us"],
                failed=result["error"] or None,
                got_response=result["http_code"] > 0,
            )
            kind = stats.add(result, phases)
            per_url_requests[label] = per_url_requests.get(label, 0) + 1
            if kind:
                errors += 1
                per_url_errors[label] = per_url_errors.get(label, 0) + 1
            for phase in PHASES:
                us = phases[phase]
                values[metric_key(f"{phase}_ms", label)] = None if us is None else us / 1000.0
            ttfb, total = stats.last_ttfb_ms, stats.last_total_ms
            values[metric_key("ttfb_ms", label)] = ttfb
            values[metric_key("total_ms", label)] = total
            values[metric_key("http_code", label)] = float(result["http_code"])
            every_ttfb.setdefault(label, []).append(ttfb)
            every_total.setdefault(label, []).append(total)
            if ttfb is not None:
                ttfbs.append(ttfb)
            if total is not None:
                totals.append(total)
        for label, n in per_url_requests.items():
            values[metric_key("requests", label)] = float(n)
            values[metric_key("errors", label)] = float(per_url_errors.get(label, 0))
        values["ttfb_ms"] = statistics.median(ttfbs) if ttfbs else None
        values["total_ms"] = statistics.median(totals) if totals else None
        values["requests"] = float(len(batch))
        values["errors"] = float(errors)
        self.skipped = sum(s.skipped for s in self.stats.values())
        extra = {
            "errors": {lb: dict(s.errors) for lb, s in self.stats.items() if s.errors},
            # Every request of the interval (values keep only each URL's latest).
            "ttfb_ms": every_ttfb,
            "total_ms": every_total,
        }
        return Sample(self.id, t_ns, seconds, values, extra)
