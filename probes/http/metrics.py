"""HTTP (repeated mode) metrics: blackbox_exporter's ``probe_*`` gauges per
URL, and probetop's request/TTFB histograms and counters.

Contract: ``HttpTracker`` reads samples only through ``HttpInterval``
and params through ``HttpParams``; counters never go backwards; URL
labels are the family's (already redacted) URLs.

blackbox_exporter's names, types, labels and meanings as prober/handler.go,
prober/http.go, prober/prober.go and prober/tls.go have them at commit
e39d7d415684f31b907dce55201a435fe2c2cf0d (2026-07-24, 0.28.0 and 72
commits): ``probe_http_ssl`` (the final response came over TLS), and only
then ``probe_ssl_earliest_cert_expiry`` (the earliest NotAfter of the
certificates the server sent: Go's PeerCertificates),
``probe_tls_version_info{version}`` (Go's names, "TLS 1.3") and
``probe_tls_cipher_info{cipher}`` (served only for IANA-named suites, which
OpenSSL's names match for TLS 1.3); ``probe_timeout_seconds`` (handler.go,
since fdebb2e) is the ``-m`` limit, served only with one. The TLS facts come
from a handshake of the worker's own (``TlsFacts``), not from the timed
requests.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.tracker import (
    SUCCESS_HELP,
    BucketCounter,
    Tracker,
    by_metric,
)
from probetop.probes.http.records import HttpInterval, HttpParams, ResponseFacts, TlsFacts
from probetop.probes.http.spec import KIND

HTTP_BUCKETS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""HTTP request times: 100 µs (a loopback request) to a minute."""

_HTTP_LABELS = ("probe", "url")
# blackbox_exporter's phases and the http family's (prober/http.go): resolve
# = DNS, connect = TCP connect, tls = TLS handshake, processing = request
# sent to first response byte (libcurl: starttransfer - pretransfer),
# transfer = first byte to last.
HTTP_PHASES = {
    "resolve": "dns",
    "connect": "tcp",
    "tls": "tls",
    "processing": "server",
    "transfer": "transfer",
}

HTTP_SUCCESS = metric_def("probe_success", "gauge", "", SUCCESS_HELP, _HTTP_LABELS)
HTTP_DURATION = metric_def(
    "probe_duration_seconds",
    "gauge",
    "seconds",
    "the URL's latest request: whole request time (libcurl total)",
    _HTTP_LABELS,
)
HTTP_PHASE = metric_def(
    "probe_http_duration_seconds",
    "gauge",
    "seconds",
    "the URL's latest request by phase (blackbox_exporter's phases: resolve, "
    "connect, tls, processing, transfer)",
    (*_HTTP_LABELS, "phase"),
)
HTTP_DNS = metric_def(
    "probe_dns_lookup_time_seconds",
    "gauge",
    "seconds",
    "the URL's latest request: DNS lookup time (libcurl namelookup; the resolve phase)",
    _HTTP_LABELS,
)
HTTP_STATUS = metric_def(
    "probe_http_status_code",
    "gauge",
    "",
    "HTTP status of the URL's latest response (0: no response)",
    _HTTP_LABELS,
)
HTTP_SSL = metric_def(
    "probe_http_ssl",
    "gauge",
    "",
    "1 if the URL's latest response (after any redirect) came over TLS, else 0",
    _HTTP_LABELS,
)
HTTP_CERT_EXPIRY = metric_def(
    "probe_ssl_earliest_cert_expiry",
    "gauge",
    "",
    "Unix time of the earliest NotAfter among the certificates the server sent "
    "(served while the latest response came over TLS)",
    _HTTP_LABELS,
)
HTTP_TLS_VERSION = metric_def(
    "probe_tls_version_info",
    "gauge",
    "",
    'the TLS version of the URL\'s session, 1 (version="TLS 1.3" ...; served while '
    "the latest response came over TLS)",
    (*_HTTP_LABELS, "version"),
)
HTTP_TLS_CIPHER = metric_def(
    "probe_tls_cipher_info",
    "gauge",
    "",
    "the TLS cipher suite of the URL's session (IANA name), 1 (served while the latest "
    "response came over TLS, for IANA-named suites only)",
    (*_HTTP_LABELS, "cipher"),
)
HTTP_TIMEOUT = metric_def(
    "probe_timeout_seconds",
    "gauge",
    "seconds",
    "the request time limit (-m / --max-time); served only with one",
    _HTTP_LABELS,
)
# blackbox_exporter's own help texts (http.go, utils.go at e39d7d4).
HTTP_CONTENT_LENGTH = metric_def(
    "probe_http_content_length", "gauge", "", "Length of http content response", _HTTP_LABELS
)
HTTP_BODY_LENGTH = metric_def(
    "probe_http_uncompressed_body_length",
    "gauge",
    "",
    "Length of uncompressed response body",
    _HTTP_LABELS,
)
HTTP_REDIRECTS = metric_def(
    "probe_http_redirects", "gauge", "", "The number of redirects", _HTTP_LABELS
)
HTTP_VERSION = metric_def(
    "probe_http_version",
    "gauge",
    "",
    "Returns the version of HTTP of the probe response",
    _HTTP_LABELS,
)
HTTP_IP_PROTOCOL = metric_def(
    "probe_ip_protocol",
    "gauge",
    "",
    "Specifies whether probe ip protocol is IP4 or IP6",
    _HTTP_LABELS,
)
HTTP_IP_HASH = metric_def(
    "probe_ip_addr_hash",
    "gauge",
    "",
    "Specifies the hash of IP address. It's useful to detect if the IP address changes.",
    _HTTP_LABELS,
)
HTTP_REQUEST_SECONDS = metric_def(
    "probetop_http_request_duration_seconds",
    "histogram",
    "seconds",
    "every successful (2xx/3xx) request's whole time (libcurl total); 4xx/5xx too "
    "with --include-errors",
    _HTTP_LABELS,
)
HTTP_TTFB_SECONDS = metric_def(
    "probetop_http_ttfb_seconds",
    "histogram",
    "seconds",
    "every successful (2xx/3xx) request's time to first byte (libcurl starttransfer); "
    "4xx/5xx too with --include-errors",
    _HTTP_LABELS,
)
HTTP_REQUESTS = metric_def(
    "probetop_http_requests",
    "counter",
    "",
    "requests finished (as the http probe counts them: failed ones included)",
    _HTTP_LABELS,
)
HTTP_FAILURES = metric_def(
    "probetop_http_request_errors",
    "counter",
    "",
    "requests that failed, by error kind (dns, refused, timeout, http ...)",
    (*_HTTP_LABELS, "kind"),
)


# libcurl's log (OpenSSL) names a version as "TLSv1.3"; blackbox (tls.go
# getTLSVersion) as "TLS 1.3", and anything else "unknown".
TLS_VERSIONS = {
    "TLSv1": "TLS 1.0",
    "TLSv1.0": "TLS 1.0",
    "TLSv1.1": "TLS 1.1",
    "TLSv1.2": "TLS 1.2",
    "TLSv1.3": "TLS 1.3",
}


def tls_points(facts: TlsFacts, labels: tuple[str, ...]) -> list[Point]:
    """blackbox's TLS series of one URL's session."""
    out = []
    if facts.not_after_s:
        out.append(Point(HTTP_CERT_EXPIRY, labels, float(min(facts.not_after_s))))
    if facts.version:
        version = TLS_VERSIONS.get(facts.version, "unknown")
        out.append(Point(HTTP_TLS_VERSION, (*labels, version), 1.0))
    if facts.cipher and facts.cipher.startswith("TLS_"):  # an IANA name, as Go's
        out.append(Point(HTTP_TLS_CIPHER, (*labels, facts.cipher), 1.0))
    return out


def ip_hash(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> int:
    """blackbox_exporter's ``ipHash`` (utils.go): FNV-32a over the address's
    bytes, 4 for an IPv4 address (Go's ``To4()``, which an IPv4-mapped IPv6
    address also has), else 16."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    h = 0x811C9DC5
    for byte in address.packed:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def response_points(facts: ResponseFacts, labels: tuple[str, ...]) -> list[Point]:
    """blackbox's response and address series of one URL's latest request:
    0 for what a request without a response (or a connection) has none of,
    as blackbox serves them then; the body length only when known."""
    out = [Point(HTTP_CONTENT_LENGTH, labels, float(facts.content_length))]
    if facts.body_bytes is not None:
        out.append(Point(HTTP_BODY_LENGTH, labels, float(facts.body_bytes)))
    out.append(Point(HTTP_REDIRECTS, labels, float(facts.redirects)))
    try:
        version = float(facts.http_version or 0)
    except ValueError:
        version = 0.0
    out.append(Point(HTTP_VERSION, labels, version))
    try:
        address = ipaddress.ip_address(facts.primary_ip)
    except ValueError:  # no connection: blackbox's gauges unset, 0
        protocol, hashed = 0.0, 0.0
    else:
        v4 = address.version == 4 or getattr(address, "ipv4_mapped", None) is not None
        protocol, hashed = (4.0 if v4 else 6.0), float(ip_hash(address))
    out.append(Point(HTTP_IP_PROTOCOL, labels, protocol))
    out.append(Point(HTTP_IP_HASH, labels, hashed))
    return out


class _UrlState:
    def __init__(self) -> None:
        self.ssl: bool | None = None
        self.tls: TlsFacts | None = None
        self.response: ResponseFacts | None = None
        self.success: float | None = None
        self.total_s: float | None = None
        self.phases_s: dict[str, float] = {}
        self.code: int | None = None
        self.requests = 0
        self.total = BucketCounter(HTTP_BUCKETS_S)
        self.ttfb = BucketCounter(HTTP_BUCKETS_S)
        self.errors: dict[str, int] = {}


class HttpTracker(Tracker):
    KIND = KIND
    COMMAND = "http"
    DEFS = (
        HTTP_SUCCESS,
        HTTP_DURATION,
        HTTP_PHASE,
        HTTP_DNS,
        HTTP_STATUS,
        HTTP_SSL,
        HTTP_CERT_EXPIRY,
        HTTP_TLS_VERSION,
        HTTP_TLS_CIPHER,
        HTTP_TIMEOUT,
        HTTP_CONTENT_LENGTH,
        HTTP_BODY_LENGTH,
        HTTP_REDIRECTS,
        HTTP_VERSION,
        HTTP_IP_PROTOCOL,
        HTTP_IP_HASH,
        HTTP_REQUEST_SECONDS,
        HTTP_TTFB_SECONDS,
        HTTP_REQUESTS,
        HTTP_FAILURES,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.urls: dict[str, _UrlState] = {}
        self.label_url: dict[str, str] = {}
        self.timeout_s: float | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = HttpParams.from_mapping(info.get("params"))
        timeout = params.request.get("timeout_s")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            self.timeout_s = float(timeout)
        if len(params.labels) == len(params.urls):
            for label, url in zip(params.labels, params.urls, strict=True):
                if label:
                    self.label_url[label] = url  # already redacted by the family

    def _url(self, label: str) -> _UrlState:
        state = self.urls.get(label)
        if state is None:
            state = self.urls[label] = _UrlState()
        return state

    def observe(self, sample: Sample) -> None:
        interval = HttpInterval.from_sample(sample)
        for url in interval.urls:
            state = self._url(url.label)
            if url.requests or url.http_code is not None:
                code = url.http_code or 0
                state.code = code
                state.ssl = url.ssl
                state.response = url.response
                # A 2xx whose transfer then failed (reset mid-body, chunked
                # stream cut) is a failed request, as blackbox_exporter and
                # the probe's own counts have it: the sample says so by
                # leaving the latest request's total unset.
                answered = url.total_ms is not None
                state.success = 1.0 if answered and 200 <= code <= 299 else 0.0
                state.total_s = url.total_ms / 1e3 if url.total_ms is not None else None
                state.phases_s = {
                    phase: ms / 1e3
                    for phase, ms in url.phases_ms.items()
                    if ms is not None and math.isfinite(ms)
                }
            state.requests += max(0, url.requests)
            for ms in url.every_total_ms:
                if ms is not None and math.isfinite(ms):
                    state.total.add(ms / 1e3)
            for ms in url.every_ttfb_ms:
                if ms is not None and math.isfinite(ms):
                    state.ttfb.add(ms / 1e3)
        for label, facts in interval.tls.items():
            self._url(label).tls = facts
        for label, kinds in interval.error_counts.items():
            state = self._url(label)
            for kind, n in kinds.items():
                # cumulative in the sample; never let a counter go back
                state.errors[kind] = max(state.errors.get(kind, 0), n)

    def points(self) -> list[Point]:
        out: list[Point] = []
        for label, state in self.urls.items():
            labels = (self.probe_id, self.label_url.get(label, label))
            if state.success is not None:
                out.append(Point(HTTP_SUCCESS, labels, state.success))
            if state.total_s is not None:
                out.append(Point(HTTP_DURATION, labels, state.total_s))
            for ours_name, theirs in HTTP_PHASES.items():
                if theirs in state.phases_s:
                    out.append(Point(HTTP_PHASE, (*labels, ours_name), state.phases_s[theirs]))
            if "dns" in state.phases_s:  # blackbox_exporter's utils.go: the resolve phase
                out.append(Point(HTTP_DNS, labels, state.phases_s["dns"]))
            if state.code is not None:
                out.append(Point(HTTP_STATUS, labels, float(state.code)))
            if state.ssl is not None:
                out.append(Point(HTTP_SSL, labels, 1.0 if state.ssl else 0.0))
            if state.ssl and state.tls is not None:
                out.extend(tls_points(state.tls, labels))
            if self.timeout_s is not None:
                out.append(Point(HTTP_TIMEOUT, labels, self.timeout_s))
            if state.response is not None:
                out.extend(response_points(state.response, labels))
            out.append(Point(HTTP_REQUEST_SECONDS, labels, state.total.snapshot()))
            out.append(Point(HTTP_TTFB_SECONDS, labels, state.ttfb.snapshot()))
            out.append(Point(HTTP_REQUESTS, labels, float(state.requests)))
            for kind, n in sorted(state.errors.items()):
                out.append(Point(HTTP_FAILURES, (*labels, kind), float(n)))
        return by_metric(out, self.DEFS)


TRACKER = HttpTracker
