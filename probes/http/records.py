"""What an http sample carries, typed: the probe writes it, the pane reads it.

Contract:
- ``HttpInterval.to_sample`` is the only place that lays one interval of HTTP
  sampling out as a ``Sample`` (metric keys in ``values``, the rest in
  ``extra``), and ``HttpInterval.from_sample`` the only place that reads one
  back; both keep the recording format of probetop 0.1 (same keys, same order,
  so old recordings replay and new ones are byte-compatible).
- ``HttpParams`` is what the probe announces (``Probe.params``), typed the
  same way: ``to_dict`` writes it, ``from_mapping`` reads it back.
- ``METRICS`` declares every metric name an http sample may hold; the names
  are the constants below (``TTFB_MS``, ``phase_metric("dns")`` ...).

Layout of one sample (entity = the URL's label, e.g. ``127.0.0.1:8080/delay``):
per URL that finished a request in the interval, the latest request's
``dns_ms``/``tcp_ms``/``tls_ms``/``server_ms``/``transfer_ms``, ``ttfb_ms``,
``total_ms``, ``http_code``, then per URL ``requests`` and ``errors``; without
an entity the slowest URL's median ``ttfb_ms``/``total_ms`` of the interval
(``HttpInterval.slowest``) and the interval's ``requests`` and ``errors``.
``extra``: ``errors`` (cumulative counts by error kind per URL label),
``ttfb_ms``/``total_ms`` (every request's value of the interval per label,
None for a failed one and, unless ``--include-errors``, for a 4xx/5xx
response: the values the latency statistics cover, exact percentiles
downstream), ``run`` (per label, the run so far: ``UrlRun``); since 0.4,
only when there is one: ``ssl`` (the labels whose latest request of the
interval got its final response over TLS) and ``tls`` (per label, the TLS
session a handshake of its own found in the interval: ``TlsFacts``); then
``response`` (per label, what libcurl said of the latest request's
final response after it ended: ``ResponseFacts``; absent in recordings
made before it was added, whose URLs then have none).
The medians cover the same values, each over one URL's requests: a median
pooled over URLs is a time no URL took (a 20 ms URL and a 1 ms one would
read 10.5 ms). With one URL it is that URL's median, as probetop 0.1 wrote
it; recordings made with several URLs before this pooled them, so
``from_sample`` derives the figure from the per-URL series, never reads it.
The latest request's per-URL phases, TTFB, total and status are that
request's, whatever its class.
Warm-up requests (``--warmup``) appear in no value, only in ``run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.readback import as_count, as_number
from probetop.probes.core.sample import Sample, metric_key, split_key
from probetop.probes.http.curlinfo import PHASES
from probetop.probes.http.spec import KIND as KIND  # the records' kind (defined in spec.py)

# The five phases of a request, in time order (httpstat's waterfall, except
# TLS, which ends at appconnect): DNS, TCP, TLS, server, transfer.
# PHASES: defined beside the stamps they are made of (curlinfo.py).

TTFB_MS = "ttfb_ms"
TOTAL_MS = "total_ms"
HTTP_CODE = "http_code"
REQUESTS = "requests"
ERRORS = "errors"


def phase_metric(phase: str) -> str:
    """The metric name of a phase: ``dns`` -> ``dns_ms``."""
    return f"{phase}_ms"


_PHASE_OF_METRIC = {phase_metric(p): p for p in PHASES}

METRICS: tuple[MetricSpec, ...] = (
    # Without an entity: the slowest URL's median of the interval (HttpInterval.slowest).
    MetricSpec(TTFB_MS, "ms", "time to first byte (libcurl starttransfer)", True),
    MetricSpec(TOTAL_MS, "ms", "whole request (libcurl total)", True),
    MetricSpec(phase_metric("dns"), "ms", "DNS: namelookup"),
    MetricSpec(phase_metric("tcp"), "ms", "TCP: connect - namelookup"),
    MetricSpec(phase_metric("tls"), "ms", "TLS: appconnect - connect"),
    MetricSpec(phase_metric("server"), "ms", "server: starttransfer - pretransfer"),
    MetricSpec(phase_metric("transfer"), "ms", "transfer: total - starttransfer"),
    MetricSpec(HTTP_CODE, "", "HTTP status of the latest response (0: none)"),
    MetricSpec(REQUESTS, "", "requests finished in the interval"),
    MetricSpec(ERRORS, "", "requests failed in the interval (any kind)"),
)

# Sample.extra keys (recording format 0.1).
_EXTRA_ERRORS = "errors"
_EXTRA_TTFB = "ttfb_ms"
_EXTRA_TOTAL = "total_ms"
_EXTRA_RUN = "run"
_EXTRA_SSL = "ssl"
_EXTRA_TLS = "tls"
_EXTRA_RESPONSE = "response"


@dataclass(frozen=True, slots=True)
class ResponseFacts:
    """A request's final response as libcurl's counters give it, read after
    the transfer (worker.py): ``content_length`` the Content-Length header
    (-1 without one; 0 without a response, as Go's empty response has it),
    ``body_bytes`` the body's size (None: not known, with ``--compressed``),
    ``redirects`` the redirects followed, ``http_version`` ``"1.0"``,
    ``"1.1"``, ``"2"``, ``"3"`` (None: no response) and ``primary_ip`` the
    address of the last connection ("" without one)."""

    content_length: int = -1
    body_bytes: int | None = None
    redirects: int = 0
    http_version: str | None = None
    primary_ip: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "content_length": self.content_length,
            "body_bytes": self.body_bytes,
            "redirects": self.redirects,
            "http_version": self.http_version,
            "primary_ip": self.primary_ip,
        }

    @classmethod
    def from_mapping(cls, raw: Any) -> ResponseFacts | None:
        """Read one back; None when malformed."""
        if not isinstance(raw, Mapping):
            return None
        length = as_count(raw.get("content_length"))
        body = as_count(raw.get("body_bytes"))
        version, ip = raw.get("http_version"), raw.get("primary_ip")
        return cls(
            content_length=-1 if length is None else length,
            body_bytes=body,
            redirects=(as_count(raw.get("redirects")) or 0),
            http_version=version if isinstance(version, str) else None,
            primary_ip=ip if isinstance(ip, str) else "",
        )


@dataclass(frozen=True, slots=True)
class TlsFacts:
    """A URL's TLS session, from a handshake of its own (worker.py): the
    version and cipher as libcurl's log names them (OpenSSL: ``TLSv1.3``,
    ``TLS_AES_256_GCM_SHA384``) and every certificate's NotAfter (Unix
    seconds) in the chain the server sent."""

    version: str | None = None
    cipher: str | None = None
    not_after_s: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "cipher": self.cipher,
            "not_after_s": list(self.not_after_s),
        }

    @classmethod
    def from_mapping(cls, raw: Any) -> TlsFacts | None:
        """Read one back; None when malformed."""
        if not isinstance(raw, Mapping):
            return None
        version, cipher, dates = raw.get("version"), raw.get("cipher"), raw.get("not_after_s")
        return cls(
            version=version if isinstance(version, str) else None,
            cipher=cipher if isinstance(cipher, str) else None,
            not_after_s=tuple(
                int(n) for n in dates if isinstance(n, int) and not isinstance(n, bool)
            )
            if isinstance(dates, list)
            else (),
        )


@dataclass(frozen=True, slots=True)
class UrlRun:
    """One URL's run so far (cumulative): requests per status class (keys:
    ``StatusClass`` values), warm-up requests discarded, skipped turns,
    jitter (mean and max, ms, None before two successes) and outage time (s).
    """

    classes: Mapping[str, int] = field(default_factory=dict)
    discarded: int = 0
    skipped: int = 0
    jitter_mean_ms: float | None = None
    jitter_max_ms: float | None = None
    outage_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": dict(self.classes),
            "discarded": self.discarded,
            "skipped": self.skipped,
            "jitter_mean_ms": self.jitter_mean_ms,
            "jitter_max_ms": self.jitter_max_ms,
            "outage_s": self.outage_s,
        }

    @classmethod
    def from_mapping(cls, raw: Any) -> UrlRun | None:
        """Read one back; None when malformed (a hand-edited recording)."""
        if not isinstance(raw, Mapping):
            return None
        classes = raw.get("classes")
        return cls(
            classes={str(k): (as_count(v) or 0) for k, v in classes.items()}
            if isinstance(classes, Mapping)
            else {},
            discarded=(as_count(raw.get("discarded")) or 0),
            skipped=(as_count(raw.get("skipped")) or 0),
            jitter_mean_ms=as_number(raw.get("jitter_mean_ms")),
            jitter_max_ms=as_number(raw.get("jitter_max_ms")),
            outage_s=as_number(raw.get("outage_s")) or 0.0,
        )


@dataclass(frozen=True, slots=True)
class UrlInterval:
    """One URL in one interval.

    ``phases_ms``, ``ttfb_ms``, ``total_ms`` and ``http_code`` are the URL's
    latest request of the interval (a phase is None when it failed or never
    ran; ``phases_ms`` holds only the phases the sample reported).
    ``http_code`` is 0 when no response came, None when the sample did not
    say. ``every_ttfb_ms``/``every_total_ms`` hold every request of the
    interval in order (None for a failed one). ``ssl``: the latest request's
    final response came over TLS. ``response``: the latest request's final
    response (None: not recorded, as in recordings made before it was).
    """

    label: str
    phases_ms: Mapping[str, float | None] = field(default_factory=dict)
    ttfb_ms: float | None = None
    total_ms: float | None = None
    http_code: int | None = None
    requests: int = 0
    errors: int = 0
    every_ttfb_ms: tuple[float | None, ...] = ()
    every_total_ms: tuple[float | None, ...] = ()
    ssl: bool = False
    response: ResponseFacts | None = None

    def median_ms(self, metric: str) -> float | None:
        """The median of ``every_ttfb_ms`` (``TTFB_MS``) or ``every_total_ms``
        (``TOTAL_MS``) over the requests that have one; None without any."""
        series = self.every_ttfb_ms if metric == TTFB_MS else self.every_total_ms
        values = [v for v in series if v is not None]
        import statistics  # only here: a one-off request never needs it

        return statistics.median(values) if values else None


@dataclass(frozen=True, slots=True)
class Slowest:
    """The URL with the highest median of one interval, and that median (ms)."""

    label: str
    median_ms: float


@dataclass(frozen=True, slots=True)
class HttpInterval:
    """One interval of an http probe: per URL (in the order their first
    request finished) and URL-wide (the slowest URL's medians, the request
    and error counts of all URLs). ``error_counts`` are cumulative since the
    start, per URL label (only URLs with errors), by error kind (``dns``,
    ``refused``, ...)."""

    KIND: ClassVar[str] = KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = METRICS

    urls: tuple[UrlInterval, ...]
    requests: int
    errors: int
    error_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    run: Mapping[str, UrlRun] = field(default_factory=dict)
    tls: Mapping[str, TlsFacts] = field(default_factory=dict)

    def slowest(self, metric: str) -> Slowest | None:
        """Of the URLs that finished a request in the interval, the one whose
        median ``metric`` (``TTFB_MS`` or ``TOTAL_MS``) is highest (the first
        of equals); None when no URL has one. An interval in which a slow
        URL finished nothing names a faster one: its own figure, still true.
        Per URL, never pooled: curl -w and httpstat time one URL, and a
        median over several URLs' requests is a time none of them took."""
        found = [(u.label, u.median_ms(metric)) for u in self.urls]
        known = [Slowest(label, ms) for label, ms in found if ms is not None]
        return max(known, key=_median_of, default=None)

    @property
    def ttfb_ms(self) -> float | None:
        """The slowest URL's median TTFB of the interval (``slowest``)."""
        found = self.slowest(TTFB_MS)
        return None if found is None else found.median_ms

    @property
    def total_ms(self) -> float | None:
        """The slowest URL's median total of the interval (``slowest``)."""
        found = self.slowest(TOTAL_MS)
        return None if found is None else found.median_ms

    def url_wide(self) -> dict[str, float | None]:
        """The figures without an entity, by metric name (for a history)."""
        return {
            TTFB_MS: self.ttfb_ms,
            TOTAL_MS: self.total_ms,
            REQUESTS: float(self.requests),
            ERRORS: float(self.errors),
        }

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {}
        for url in self.urls:
            for phase in PHASES:
                values[metric_key(phase_metric(phase), url.label)] = url.phases_ms.get(phase)
            values[metric_key(TTFB_MS, url.label)] = url.ttfb_ms
            values[metric_key(TOTAL_MS, url.label)] = url.total_ms
            values[metric_key(HTTP_CODE, url.label)] = float(url.http_code or 0)
        for url in self.urls:
            values[metric_key(REQUESTS, url.label)] = float(url.requests)
            values[metric_key(ERRORS, url.label)] = float(url.errors)
        values.update(self.url_wide())
        extra: dict[str, Any] = {
            _EXTRA_ERRORS: {label: dict(kinds) for label, kinds in self.error_counts.items()},
            _EXTRA_TTFB: {url.label: list(url.every_ttfb_ms) for url in self.urls},
            _EXTRA_TOTAL: {url.label: list(url.every_total_ms) for url in self.urls},
        }
        if self.run:
            extra[_EXTRA_RUN] = {label: run.to_dict() for label, run in self.run.items()}
        ssl = [url.label for url in self.urls if url.ssl]
        if ssl:
            extra[_EXTRA_SSL] = ssl
        if self.tls:
            extra[_EXTRA_TLS] = {label: facts.to_dict() for label, facts in self.tls.items()}
        response = {u.label: u.response.to_dict() for u in self.urls if u.response is not None}
        if response:
            extra[_EXTRA_RESPONSE] = response
        return Sample(probe_id, t_ns, interval_s, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> HttpInterval:
        """Read an http sample back (live or from a recording). Missing or
        malformed fields read as "unknown", never raise. A recording without
        every request's TTFB/total in ``extra`` gives each URL's latest."""
        values, extra = sample.values, sample.extra or {}
        found: dict[str, dict[str, Any]] = {}
        for key, value in values.items():
            name, label = split_key(key)
            if label is None:
                continue
            fields = found.setdefault(label, {"phases": {}})
            if name in _PHASE_OF_METRIC:
                fields["phases"][_PHASE_OF_METRIC[name]] = as_number(value)
            else:
                fields[name] = value
        every_ttfb = _series_map(extra.get(_EXTRA_TTFB))
        every_total = _series_map(extra.get(_EXTRA_TOTAL))
        raw_ssl = extra.get(_EXTRA_SSL)
        ssl = {str(lb) for lb in raw_ssl} if isinstance(raw_ssl, list) else set()
        raw_response = extra.get(_EXTRA_RESPONSE)
        responses = raw_response if isinstance(raw_response, Mapping) else {}
        urls = []
        for label, fields in found.items():
            ttfb, total = as_number(fields.get(TTFB_MS)), as_number(fields.get(TOTAL_MS))
            code: int | None = None
            if HTTP_CODE in fields:
                code = as_count(fields[HTTP_CODE]) or 0
            urls.append(
                UrlInterval(
                    label=label,
                    phases_ms=fields["phases"],
                    ttfb_ms=ttfb,
                    total_ms=total,
                    http_code=code,
                    requests=(as_count(fields.get(REQUESTS)) or 0),
                    errors=(as_count(fields.get(ERRORS)) or 0),
                    every_ttfb_ms=every_ttfb.get(label, ()) if every_ttfb else (ttfb,),
                    every_total_ms=every_total.get(label, ()) if every_total else (total,),
                    ssl=label in ssl,
                    response=ResponseFacts.from_mapping(responses.get(label)),
                )
            )
        # The URL-wide ttfb_ms/total_ms are not read: they follow from the
        # per-URL series (and older recordings pooled them over URLs).
        return cls(
            urls=tuple(urls),
            requests=(as_count(values.get(REQUESTS)) or 0),
            errors=(as_count(values.get(ERRORS)) or 0),
            error_counts=_error_counts(extra.get(_EXTRA_ERRORS)),
            run=_runs(extra.get(_EXTRA_RUN)),
            tls=_tls(extra.get(_EXTRA_TLS)),
        )


@dataclass(frozen=True, slots=True)
class HttpParams:
    """What an http probe announces: its URLs (passwords redacted), their
    labels (the sample entities, None before ``prepare``), the sampling
    interval, ``count`` (requests per URL, None: until stopped), the
    connection policy (``fresh`` or ``reuse``), the request options
    (credentials redacted), ``warmup`` (requests per URL discarded first) and
    ``include_errors`` (latency statistics over 4xx/5xx responses too)."""

    urls: tuple[str, ...] = ()
    labels: tuple[str | None, ...] = ()
    interval_s: float = 1.0
    count: int | None = None
    connection: str = "fresh"
    request: Mapping[str, Any] = field(default_factory=dict)
    warmup: int = 0
    include_errors: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "urls": list(self.urls),
            "labels": list(self.labels),
            "interval_s": self.interval_s,
            "count": self.count,
            "connection": self.connection,
            "request": dict(self.request),
            "warmup": self.warmup,
            "include_errors": self.include_errors,
        }

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any] | None) -> HttpParams:
        """Read announced params back; anything missing or malformed gets its default."""
        params = params or {}
        urls = params.get("urls")
        labels = params.get("labels")
        count = params.get("count")
        request = params.get("request")
        return cls(
            urls=tuple(str(u) for u in urls) if isinstance(urls, list) else (),
            labels=tuple(str(lb) if lb else None for lb in labels)
            if isinstance(labels, list)
            else (),
            interval_s=as_number(params.get("interval_s")) or 1.0,
            count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            connection=str(params.get("connection") or "fresh"),
            request=request if isinstance(request, Mapping) else {},
            warmup=(as_count(params.get("warmup")) or 0),
            include_errors=params.get("include_errors") is True,
        )


def _median_of(found: Slowest) -> float:
    return found.median_ms


def _series_map(raw: Any) -> dict[str, tuple[float | None, ...]]:
    """``{label: [ms or None, ...]}`` from extra; {} when absent or malformed."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, tuple[float | None, ...]] = {}
    for label, series in raw.items():
        if isinstance(series, Sequence) and not isinstance(series, str):
            out[str(label)] = tuple(as_number(v) for v in series)
    return out


def _runs(raw: Any) -> dict[str, UrlRun]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, UrlRun] = {}
    for label, value in raw.items():
        run = UrlRun.from_mapping(value)
        if run is not None:
            out[str(label)] = run
    return out


def _tls(raw: Any) -> dict[str, TlsFacts]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, TlsFacts] = {}
    for label, value in raw.items():
        facts = TlsFacts.from_mapping(value)
        if facts is not None:
            out[str(label)] = facts
    return out


def _error_counts(raw: Any) -> dict[str, dict[str, int]]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, dict[str, int]] = {}
    for label, kinds in raw.items():
        if isinstance(kinds, Mapping):
            out[str(label)] = {str(k): (as_count(n) or 0) for k, n in kinds.items()}
    return out
