"""From samples to metrics, per probe family: the one place that decides what
Prometheus sees.

Contract:
- A ``Tracker`` follows one probe (by id): ``announce(info)`` reads its
  announced params, ``observe(sample)`` folds one interval in, ``points()``
  gives every series as it stands. Samples are read ONLY through each
  family's typed record (``HttpInterval.from_sample`` ...), never by key.
- Counters are summed here from each interval's counts, so they never go
  backwards (a probe re-added under the same id goes on from where it was).
- ``TRACKERS`` maps a probe kind to its tracker class; a kind without one
  (the passive ``system.*`` probes: node_exporter already exports the
  machine's counters) gives no metrics. ``CATALOG`` lists every metric per
  command, for docs/metrics.md and its test.

HTTP and ICMP use the names users already query: blackbox_exporter's
``probe_*`` gauges and smokeping_prober's ``smokeping_*`` histogram; the
rest is ``probetop_``-prefixed, in base units (docs/metrics.md).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from probetop.probes import cpu, disk, http, icmp
from probetop.probes.core.sample import Sample
from probetop.tui.metrics.model import Histogram, MetricDef, Point

# -- buckets -----------------------------------------------------------------

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

ICMP_BUCKETS_NS: tuple[int, ...] = tuple(1 << k for k in range(12, 36))
"""ICMP round trips: powers of two nanoseconds, 4.096 µs (loopback) to 34 s.
The probe's own histogram (``IcmpInterval.rtt_hist``) has four buckets per
power of two of nanoseconds, so every one of its buckets falls wholly under
one of these bounds: the counts are exact, not interpolated."""
ICMP_BUCKETS_S: tuple[float, ...] = tuple(ns / 1e9 for ns in ICMP_BUCKETS_NS)

CPU_BOUND_BUCKETS: tuple[int, ...] = tuple(range(0, 897, 16))
"""CPU event times: the upper edges of every 16th of sysbench's 1024 log
buckets (127.9 per decade), from bucket 0 (edge 1.009 µs) to bucket 896
(10.25 s): 57 bounds, 8 per decade (each 1.334 times the one before). A
sample's native bucket ``i`` lies wholly under the first bound whose bucket
is >= ``i``: the counts are exact, not interpolated."""
CPU_BUCKETS_S: tuple[float, ...] = tuple(cpu.bucket_upper_ms(i) / 1e3 for i in CPU_BOUND_BUCKETS)

IOPS_BUCKETS_NS: tuple[int, ...] = tuple(
    sorted([(1 << n) - 1 for n in range(9, 34)] + [(3 << (n - 1)) - 1 for n in range(9, 33)])
)
"""Disk completion latencies: 2**n and 1.5 * 2**n ns, 512 ns to 8.6 s (49
bounds, two per power of two), each minus 1 ns: fio's histogram counts whole
ns, and every 2**n and 1.5 * 2**n (n >= 7) is an edge of its buckets, so
``le = edge - 1 ns`` is the largest latency the bucket below the edge holds
and every native bucket lies wholly under one bound: exact counts."""
IOPS_BUCKETS_S: tuple[float, ...] = tuple(ns / 1e9 for ns in IOPS_BUCKETS_NS)


def cpu_slot(index: int) -> int:
    """The Prometheus bucket (index into ``CPU_BUCKETS_S``; its length: +Inf)
    holding sysbench's native bucket ``index``."""
    return bisect.bisect_left(CPU_BOUND_BUCKETS, index)


def iops_slot(index: int) -> int:
    """The Prometheus bucket (index into ``IOPS_BUCKETS_S``; its length:
    +Inf) holding the fio-layout native bucket ``index``: the first bound
    at or above the largest whole-ns latency the bucket holds."""
    high = disk.clat_bucket_range_ns(index)[1]
    return bisect.bisect_left(IOPS_BUCKETS_NS, high - 1)


class BucketCounter:
    """Cumulative histogram counts over fixed upper bounds (Prometheus ``le``)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound
        self.total = 0
        self.sum = 0.0

    def slot(self, value: float) -> int:
        """The first bucket whose bound is >= value (Prometheus: value <= le)."""
        return bisect.bisect_left(self.bounds, value)

    def add(self, value: float) -> None:
        self.add_to(self.slot(value), 1, value)

    def add_to(self, slot: int, n: int, total: float) -> None:
        self.counts[slot] += n
        self.total += n
        self.sum += total

    def snapshot(self) -> Histogram:
        cumulative = []
        running = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            running += n
            cumulative.append((bound, running))
        return Histogram(tuple(cumulative), self.total, self.sum)


def _count(rate: float | None, interval_s: float) -> int:
    """How many events a per-second rate over an interval stands for."""
    if rate is None or not math.isfinite(rate) or interval_s <= 0:
        return 0
    return max(0, round(rate * interval_s))


def _float_label(value: float) -> str:
    """A quantile as a label value, as summaries spell it (0.95, 0.9999)."""
    return format(value, "g")


def _label(value: Any) -> str:
    return "" if value is None else str(value)


# -- trackers ----------------------------------------------------------------


class Tracker:
    """Follows one probe. Subclasses declare ``KIND``, ``COMMAND`` and ``DEFS``."""

    KIND: ClassVar[str] = ""
    COMMAND: ClassVar[str] = ""
    DEFS: ClassVar[tuple[MetricDef, ...]] = ()

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.probe_id = probe_id
        self.announce(info)

    def announce(self, info: Mapping[str, Any]) -> None:
        """The probe was announced (again): read its params."""

    def observe(self, sample: Sample) -> None:
        raise NotImplementedError

    def points(self) -> list[Point]:
        raise NotImplementedError


def _def(name: str, type_: str, unit: str, help_: str, labels: Iterable[str]) -> MetricDef:
    return MetricDef(name, type_, unit, help_, tuple(labels))  # type: ignore[arg-type]


# HTTP ------------------------------------------------------------------------

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

SUCCESS_HELP = (
    "1 if the latest check succeeded, else 0 (http: the URL's latest request got a 2xx, "
    "blackbox_exporter's default valid_status_codes, and its whole body; icmp: a reply "
    "came back in the latest interval that resolved a request)"
)
HTTP_SUCCESS = _def("probe_success", "gauge", "", SUCCESS_HELP, _HTTP_LABELS)
HTTP_DURATION = _def(
    "probe_duration_seconds",
    "gauge",
    "seconds",
    "the URL's latest request: whole request time (libcurl total)",
    _HTTP_LABELS,
)
HTTP_PHASE = _def(
    "probe_http_duration_seconds",
    "gauge",
    "seconds",
    "the URL's latest request by phase (blackbox_exporter's phases: resolve, "
    "connect, tls, processing, transfer)",
    (*_HTTP_LABELS, "phase"),
)
HTTP_STATUS = _def(
    "probe_http_status_code",
    "gauge",
    "",
    "HTTP status of the URL's latest response (0: no response)",
    _HTTP_LABELS,
)
HTTP_REQUEST_SECONDS = _def(
    "probetop_http_request_duration_seconds",
    "histogram",
    "seconds",
    "every successful (2xx/3xx) request's whole time (libcurl total); 4xx/5xx too "
    "with --include-errors",
    _HTTP_LABELS,
)
HTTP_TTFB_SECONDS = _def(
    "probetop_http_ttfb_seconds",
    "histogram",
    "seconds",
    "every successful (2xx/3xx) request's time to first byte (libcurl starttransfer); "
    "4xx/5xx too with --include-errors",
    _HTTP_LABELS,
)
HTTP_REQUESTS = _def(
    "probetop_http_requests",
    "counter",
    "",
    "requests finished (as the http probe counts them: failed ones included)",
    _HTTP_LABELS,
)
HTTP_FAILURES = _def(
    "probetop_http_request_errors",
    "counter",
    "",
    "requests that failed, by error kind (dns, refused, timeout, http ...)",
    (*_HTTP_LABELS, "kind"),
)


class _UrlState:
    def __init__(self) -> None:
        self.success: float | None = None
        self.total_s: float | None = None
        self.phases_s: dict[str, float] = {}
        self.code: int | None = None
        self.requests = 0
        self.total = BucketCounter(HTTP_BUCKETS_S)
        self.ttfb = BucketCounter(HTTP_BUCKETS_S)
        self.errors: dict[str, int] = {}


class HttpTracker(Tracker):
    KIND = http.KIND
    COMMAND = "http"
    DEFS = (
        HTTP_SUCCESS,
        HTTP_DURATION,
        HTTP_PHASE,
        HTTP_STATUS,
        HTTP_REQUEST_SECONDS,
        HTTP_TTFB_SECONDS,
        HTTP_REQUESTS,
        HTTP_FAILURES,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.urls: dict[str, _UrlState] = {}
        self.label_url: dict[str, str] = {}
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = http.HttpParams.from_mapping(info.get("params"))
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
        interval = http.HttpInterval.from_sample(sample)
        for url in interval.urls:
            state = self._url(url.label)
            if url.requests or url.http_code is not None:
                code = url.http_code or 0
                state.code = code
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
            if state.code is not None:
                out.append(Point(HTTP_STATUS, labels, float(state.code)))
            out.append(Point(HTTP_REQUEST_SECONDS, labels, state.total.snapshot()))
            out.append(Point(HTTP_TTFB_SECONDS, labels, state.ttfb.snapshot()))
            out.append(Point(HTTP_REQUESTS, labels, float(state.requests)))
            for kind, n in sorted(state.errors.items()):
                out.append(Point(HTTP_FAILURES, (*labels, kind), float(n)))
        return _by_metric(out, self.DEFS)


# ICMP ------------------------------------------------------------------------

_ICMP_LABELS = ("probe", "host", "ip")

ICMP_SUCCESS = _def("probe_success", "gauge", "", SUCCESS_HELP, _ICMP_LABELS)
ICMP_PHASE = _def(
    "probe_icmp_duration_seconds",
    "gauge",
    "seconds",
    'round-trip time by phase; phase="rtt": the mean RTT of the latest interval with '
    "replies (resolve and setup happen once, before the first request, and are not timed)",
    (*_ICMP_LABELS, "phase"),
)
ICMP_REQUESTS = _def(
    "smokeping_requests",
    "counter",
    "",
    "echo requests sent (smokeping_prober's smokeping_requests_total)",
    _ICMP_LABELS,
)
ICMP_RTT = _def(
    "smokeping_response_duration_seconds",
    "histogram",
    "seconds",
    "round-trip time of every echo reply (smokeping_prober's histogram; bounds: "
    "powers of two nanoseconds)",
    _ICMP_LABELS,
)
ICMP_DUPLICATES = _def(
    "smokeping_response_duplicates",
    "counter",
    "",
    "extra replies to a request already answered",
    _ICMP_LABELS,
)
ICMP_SEND_ERRORS = _def(
    "smokeping_send_errors",
    "counter",
    "",
    "local send/receive errors (errno)",
    _ICMP_LABELS,
)
ICMP_LOST = _def(
    "probetop_icmp_lost",
    "counter",
    "",
    "requests unanswered for longer than the grace period",
    _ICMP_LABELS,
)
ICMP_LOSS = _def(
    "probetop_icmp_loss_ratio",
    "gauge",
    "ratio",
    "lost / (lost + received) over the requests resolved in the latest interval that resolved any",
    _ICMP_LABELS,
)
ICMP_REORDERED = _def(
    "probetop_icmp_reordered",
    "counter",
    "",
    "replies that arrived after a reply to a later request",
    _ICMP_LABELS,
)
ICMP_LATE = _def(
    "probetop_icmp_late",
    "counter",
    "",
    "replies that arrived after their request was counted lost",
    _ICMP_LABELS,
)
ICMP_ERRORS = _def(
    "probetop_icmp_error_replies",
    "counter",
    "",
    "ICMP errors about our requests (unreachable, time exceeded)",
    _ICMP_LABELS,
)


class IcmpTracker(Tracker):
    KIND = icmp.KIND
    COMMAND = "icmp"
    DEFS = (
        ICMP_SUCCESS,
        ICMP_PHASE,
        ICMP_REQUESTS,
        ICMP_RTT,
        ICMP_DUPLICATES,
        ICMP_SEND_ERRORS,
        ICMP_LOST,
        ICMP_LOSS,
        ICMP_REORDERED,
        ICMP_LATE,
        ICMP_ERRORS,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.host = ""
        self.ip = ""
        self.success: float | None = None
        self.rtt_s: float | None = None
        self.loss: float | None = None
        self.counts = {
            m.name: 0
            for m in (
                ICMP_REQUESTS,
                ICMP_DUPLICATES,
                ICMP_SEND_ERRORS,
                ICMP_LOST,
                ICMP_REORDERED,
                ICMP_LATE,
                ICMP_ERRORS,
            )
        }
        self.rtt = BucketCounter(ICMP_BUCKETS_S)
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = icmp.IcmpParams.from_params(info.get("params"))
        self.host = params.settings.host
        if params.target is not None:
            self.ip = params.target.address

    def observe(self, sample: Sample) -> None:
        iv = icmp.IcmpInterval.from_sample(sample)
        self.counts[ICMP_REQUESTS.name] += _count(iv.requests_per_s, sample.interval_s)
        for metric, n in (
            (ICMP_DUPLICATES, iv.duplicates),
            (ICMP_SEND_ERRORS, iv.send_errors),
            (ICMP_LOST, iv.lost),
            (ICMP_REORDERED, iv.reordered),
            (ICMP_LATE, iv.late),
            (ICMP_ERRORS, iv.icmp_errors),
        ):
            self.counts[metric.name] += max(0, n or 0)
        replies = 0
        if iv.rtt_hist:
            for bucket in iv.rtt_hist:
                n = max(0, round(bucket.count))
                # [low, high) µs; every bound is a power of two ns, and so is
                # each bucket's high edge or lies past it: value < high <= le.
                slot = bisect.bisect_left(ICMP_BUCKETS_NS, round(bucket.high_us * 1e3))
                self.rtt.add_to(slot, n, 0.0)
                replies += n
            if iv.rtt.avg_us is not None:
                self.rtt.sum += iv.rtt.avg_us / 1e6 * replies
        else:
            replies = _count(iv.replies_per_s, sample.interval_s)
        # An interval in which no request was resolved (ping -i 2 sampled
        # each second) says nothing: the gauges keep the last answer.
        if replies > 0 or (iv.lost or 0) > 0:
            self.success = 1.0 if replies > 0 else 0.0
        if iv.rtt.avg_us is not None:
            self.rtt_s = iv.rtt.avg_us / 1e6
        if iv.loss_pct is not None:
            self.loss = iv.loss_pct / 100.0

    def points(self) -> list[Point]:
        labels = (self.probe_id, self.host, self.ip)
        out: list[Point] = []
        if self.success is not None:
            out.append(Point(ICMP_SUCCESS, labels, self.success))
        if self.rtt_s is not None:
            out.append(Point(ICMP_PHASE, (*labels, "rtt"), self.rtt_s))
        out.append(Point(ICMP_RTT, labels, self.rtt.snapshot()))
        if self.loss is not None:
            out.append(Point(ICMP_LOSS, labels, self.loss))
        for metric in self.DEFS:
            if metric.name in self.counts:
                out.append(Point(metric, labels, float(self.counts[metric.name])))
        return _by_metric(out, self.DEFS)


# CPU -------------------------------------------------------------------------

_CPU_LABELS = ("probe",)

CPU_EVENTS = _def(
    "probetop_cpu_events",
    "counter",
    "",
    "sysbench cpu events completed (one event: the prime test up to --max-prime)",
    _CPU_LABELS,
)
CPU_EPS = _def(
    "probetop_cpu_events_per_second",
    "gauge",
    "",
    "events per second over the latest interval (sysbench's events/s)",
    _CPU_LABELS,
)
CPU_LATENCY = _def(
    "probetop_cpu_event_latency_seconds",
    "histogram",
    "seconds",
    "time per event over the run, from sysbench's own latency histogram (bounds: "
    "edges of its log buckets, 8 per decade)",
    _CPU_LABELS,
)
CPU_LATENCY_PCT = _def(
    "probetop_cpu_event_latency_quantile_seconds",
    "gauge",
    "seconds",
    "the --percentile of the latest interval's event times, as sysbench reports it "
    "(quantile: 0.95 for the 95th)",
    (*_CPU_LABELS, "quantile"),
)
CPU_THREADS = _def("probetop_cpu_threads", "gauge", "", "worker threads running", _CPU_LABELS)
CPU_INFO = _def(
    "probetop_cpu",
    "info",
    "",
    "what the CPU probe runs: engine, threads, max prime",
    (*_CPU_LABELS, "engine", "threads", "max_prime"),
)


class CpuTracker(Tracker):
    KIND = cpu.KIND
    COMMAND = "cpu"
    DEFS = (CPU_EVENTS, CPU_EPS, CPU_LATENCY, CPU_LATENCY_PCT, CPU_THREADS, CPU_INFO)

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.events = 0
        self.eps: float | None = None
        self.threads: int | None = None
        self.quantile: tuple[float, float] | None = None
        # None until a sample carries its histogram (older recordings do not)
        self.latency: BucketCounter | None = None
        self.engine = ""
        self.max_prime = ""
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = info.get("params")
        params = params if isinstance(params, Mapping) else {}
        self.max_prime = _label(params.get("max_prime"))

    def observe(self, sample: Sample) -> None:
        iv = cpu.CpuInterval.from_sample(sample)
        events = sum(max(0, n) for n in iv.per_thread_events)
        self.events += events
        if iv.eps is not None:
            self.eps = iv.eps
        self.threads = iv.threads
        if iv.lat_hist is not None:
            if self.latency is None:
                self.latency = BucketCounter(CPU_BUCKETS_S)
            in_hist = 0
            for index, n in iv.lat_hist:
                self.latency.add_to(cpu_slot(index), n, 0.0)
                in_hist += n
            if iv.lat_sum_ms is not None:
                self.latency.sum += iv.lat_sum_ms / 1e3
            elif iv.lat_avg_ms is not None:
                self.latency.sum += iv.lat_avg_ms / 1e3 * in_hist
        if iv.lat_pct_ms is not None:
            self.quantile = (iv.percentile / 100.0, iv.lat_pct_ms / 1e3)
        if iv.engine:
            self.engine = iv.engine

    def points(self) -> list[Point]:
        labels = (self.probe_id,)
        out = [Point(CPU_EVENTS, labels, float(self.events))]
        if self.eps is not None:
            out.append(Point(CPU_EPS, labels, self.eps))
        if self.latency is not None:
            out.append(Point(CPU_LATENCY, labels, self.latency.snapshot()))
        if self.quantile is not None:
            q, seconds = self.quantile
            out.append(Point(CPU_LATENCY_PCT, (*labels, _float_label(q)), seconds))
        if self.threads is not None:
            out.append(Point(CPU_THREADS, labels, float(self.threads)))
            out.append(
                Point(
                    CPU_INFO,
                    labels,
                    {
                        "engine": self.engine,
                        "threads": str(self.threads),
                        "max_prime": self.max_prime,
                    },
                )
            )
        return _by_metric(out, self.DEFS)


# IOPS ------------------------------------------------------------------------

_IOPS_LABELS = ("probe", "target", "direction")

IOPS_IOS = _def(
    "probetop_iops_ios", "counter", "", "I/Os completed (fio's total_ios)", _IOPS_LABELS
)
IOPS_BYTES = _def("probetop_iops_bytes", "counter", "bytes", "bytes transferred", _IOPS_LABELS)
IOPS_RATE = _def(
    "probetop_iops_ios_per_second",
    "gauge",
    "",
    "I/Os per second over the latest interval (fio's iops)",
    _IOPS_LABELS,
)
IOPS_BW = _def(
    "probetop_iops_bytes_per_second",
    "gauge",
    "",
    "bytes per second over the latest interval (fio's bw)",
    _IOPS_LABELS,
)
IOPS_CLAT = _def(
    "probetop_iops_completion_latency_seconds",
    "histogram",
    "seconds",
    "completion latency (fio's clat) over the run outside --ramp, from the probe's "
    "fio-layout histogram (bounds: 2**n and 1.5*2**n ns minus 1 ns)",
    _IOPS_LABELS,
)
IOPS_CLAT_PCT = _def(
    "probetop_iops_completion_latency_quantile_seconds",
    "gauge",
    "seconds",
    "fio's completion-latency percentiles (1 ... 99.99) of the latest interval "
    "(quantile: 0.99 for the 99th)",
    (*_IOPS_LABELS, "quantile"),
)
IOPS_ERRORS = _def(
    "probetop_iops_errors", "counter", "", "failed or short I/Os", ("probe", "target")
)
IOPS_RAMP = _def(
    "probetop_iops_ramp",
    "gauge",
    "",
    "1 while in --ramp (not counted in the latency histogram), else 0",
    ("probe", "target"),
)
IOPS_INFO = _def(
    "probetop_iops",
    "info",
    "",
    "what the IOPS probe runs (fio's options)",
    ("probe", "target", "rw", "bs", "iodepth", "jobs", "engine"),
)


class _Direction:
    def __init__(self) -> None:
        self.ios = 0
        self.bytes = 0
        self.rate: float | None = None
        self.bw: float | None = None
        self.quantiles: tuple[tuple[float, float], ...] = ()
        # None until a sample carries its histogram (older recordings do not)
        self.latency: BucketCounter | None = None


class IopsTracker(Tracker):
    KIND = disk.IOPS_KIND
    COMMAND = "iops"
    DEFS = (
        IOPS_IOS,
        IOPS_BYTES,
        IOPS_RATE,
        IOPS_BW,
        IOPS_CLAT,
        IOPS_CLAT_PCT,
        IOPS_ERRORS,
        IOPS_RAMP,
        IOPS_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.directions: dict[str, _Direction] = {}
        self.errors = 0
        self.ramp: bool | None = None
        self.params: disk.IopsParams | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        self.params = disk.IopsParams.from_info(info)

    def observe(self, sample: Sample) -> None:
        iv = disk.IopsInterval.from_sample(sample)
        seconds = sample.interval_s
        for name in disk.DIRECTIONS:
            rates = iv.direction(name)
            if rates is None:
                continue
            state = self.directions.setdefault(name, _Direction())
            ios = _count(rates.iops, seconds)
            state.ios += ios
            state.bytes += _count(rates.bps, seconds)
            state.rate, state.bw = rates.iops, rates.bps
            if rates.clat_hist is not None:
                if state.latency is None:
                    state.latency = BucketCounter(IOPS_BUCKETS_S)
                if not iv.ramp:
                    in_hist = 0
                    for index, n in rates.clat_hist:
                        state.latency.add_to(iops_slot(index), n, 0.0)
                        in_hist += n
                    if rates.clat_mean_us is not None:
                        state.latency.sum += rates.clat_mean_us / 1e6 * in_hist
            if rates.clat_us:
                state.quantiles = tuple(
                    sorted((float(p) / 100.0, us / 1e6) for p, us in rates.clat_us.items())
                )
        self.errors += _count(iv.errors_per_s, seconds)
        self.ramp = iv.ramp

    def points(self) -> list[Point]:
        target = self.params.target if self.params else ""
        base = (self.probe_id, target)
        out: list[Point] = []
        for name, d in self.directions.items():
            labels = (*base, name)
            out.append(Point(IOPS_IOS, labels, float(d.ios)))
            out.append(Point(IOPS_BYTES, labels, float(d.bytes)))
            if d.rate is not None:
                out.append(Point(IOPS_RATE, labels, d.rate))
            if d.bw is not None:
                out.append(Point(IOPS_BW, labels, d.bw))
            if d.latency is not None:
                out.append(Point(IOPS_CLAT, labels, d.latency.snapshot()))
            for q, seconds in d.quantiles:
                out.append(Point(IOPS_CLAT_PCT, (*labels, _float_label(q)), seconds))
        out.append(Point(IOPS_ERRORS, base, float(self.errors)))
        if self.ramp is not None:
            out.append(Point(IOPS_RAMP, base, 1.0 if self.ramp else 0.0))
        if self.params is not None:
            p = self.params
            out.append(
                Point(
                    IOPS_INFO,
                    base,
                    {
                        "rw": p.rw,
                        "bs": str(p.bs),
                        "iodepth": str(p.iodepth),
                        "jobs": str(p.jobs),
                        "engine": p.engine,
                    },
                )
            )
        return _by_metric(out, self.DEFS)


# Warm-up ---------------------------------------------------------------------

_WARMUP_LABELS = ("probe", "target", "pass")

WARMUP_BYTES = _def(
    "probetop_warmup_bytes", "counter", "bytes", "bytes transferred", _WARMUP_LABELS
)
WARMUP_IOS = _def("probetop_warmup_ios", "counter", "", "I/Os completed", _WARMUP_LABELS)
WARMUP_ERRORS = _def("probetop_warmup_errors", "counter", "", "failed I/Os", _WARMUP_LABELS)
WARMUP_BW = _def(
    "probetop_warmup_bytes_per_second",
    "gauge",
    "",
    "bytes per second over the latest interval",
    _WARMUP_LABELS,
)
WARMUP_PROGRESS = _def(
    "probetop_warmup_progress_ratio",
    "gauge",
    "ratio",
    "share of the range done in this pass (absent for the time-based randwrite pass)",
    _WARMUP_LABELS,
)
WARMUP_DONE = _def(
    "probetop_warmup_done_bytes", "gauge", "bytes", "bytes of the range done", _WARMUP_LABELS
)
WARMUP_RANGE = _def(
    "probetop_warmup_range_bytes", "gauge", "bytes", "bytes in the range", _WARMUP_LABELS
)
WARMUP_ETA = _def(
    "probetop_warmup_eta_seconds",
    "gauge",
    "seconds",
    "time left at the rate of the last 5 intervals",
    _WARMUP_LABELS,
)
WARMUP_STEADY = _def(
    "probetop_warmup_steady",
    "gauge",
    "",
    "1 while the plateau detector finds the pass steady (fio's steadystate), else 0",
    _WARMUP_LABELS,
)
WARMUP_INFO = _def(
    "probetop_warmup",
    "info",
    "",
    "what the warm-up probe runs",
    ("probe", "target", "bs", "iodepth", "jobs", "steadystate"),
)


class _Pass:
    def __init__(self) -> None:
        self.bytes = 0
        self.ios = 0
        self.errors = 0
        self.gauges: dict[str, float] = {}


class WarmupTracker(Tracker):
    KIND = disk.WARMUP_KIND
    COMMAND = "warmup"
    DEFS = (
        WARMUP_BYTES,
        WARMUP_IOS,
        WARMUP_ERRORS,
        WARMUP_BW,
        WARMUP_PROGRESS,
        WARMUP_DONE,
        WARMUP_RANGE,
        WARMUP_ETA,
        WARMUP_STEADY,
        WARMUP_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.passes: dict[str, _Pass] = {}
        self.params: disk.WarmupParams | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        self.params = disk.WarmupParams.from_info(info)

    def observe(self, sample: Sample) -> None:
        iv = disk.WarmupInterval.from_sample(sample)
        name = iv.pass_name or (self.params.pass_name if self.params else "")
        state = self.passes.setdefault(name, _Pass())
        seconds = sample.interval_s
        state.bytes += _count(iv.bw_bps, seconds)
        state.ios += _count(iv.iops, seconds)
        state.errors += max(0, round(iv.errors or 0))
        gauges: dict[str, float | None] = {
            WARMUP_BW.name: iv.bw_bps,
            WARMUP_PROGRESS.name: iv.progress_pct / 100.0 if iv.progress_pct is not None else None,
            WARMUP_DONE.name: iv.done_bytes,
            WARMUP_RANGE.name: iv.total_bytes,
            WARMUP_ETA.name: iv.eta_s,
            WARMUP_STEADY.name: 1.0 if iv.plateau_state == "steady" else 0.0,
        }
        state.gauges = {k: v for k, v in gauges.items() if v is not None}

    def points(self) -> list[Point]:
        target = self.params.target if self.params else ""
        out: list[Point] = []
        for name, state in self.passes.items():
            labels = (self.probe_id, target, name)
            out.append(Point(WARMUP_BYTES, labels, float(state.bytes)))
            out.append(Point(WARMUP_IOS, labels, float(state.ios)))
            out.append(Point(WARMUP_ERRORS, labels, float(state.errors)))
            for metric in self.DEFS:
                if metric.name in state.gauges:
                    out.append(Point(metric, labels, state.gauges[metric.name]))
        if self.params is not None:
            p = self.params
            out.append(
                Point(
                    WARMUP_INFO,
                    (self.probe_id, target),
                    {
                        "bs": str(p.bs),
                        "iodepth": str(p.iodepth),
                        "jobs": str(p.jobs),
                        "steadystate": p.steadystate,
                    },
                )
            )
        return _by_metric(out, self.DEFS)


# -- the catalog ---------------------------------------------------------------

BUILD_INFO = _def(
    "probetop_build", "info", "", "the probetop version that measured these metrics", ()
)

TRACKERS: dict[str, type[Tracker]] = {
    t.KIND: t for t in (CpuTracker, IopsTracker, WarmupTracker, IcmpTracker, HttpTracker)
}

CATALOG: dict[str, tuple[MetricDef, ...]] = {t.COMMAND: t.DEFS for t in TRACKERS.values()}
"""Every metric, by the command whose probes give it (docs/metrics.md)."""


def _by_metric(points: list[Point], order: Sequence[MetricDef]) -> list[Point]:
    """Points grouped by metric in catalog order (one family's series together)."""
    rank = {id(m): i for i, m in enumerate(order)}
    return sorted(points, key=lambda p: rank.get(id(p.metric), len(rank)))
