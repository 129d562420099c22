"""HTTP load mode (``http.load``) metrics: what wrk2 reports, as Prometheus
series: requests sent and finished (by status class, code and error kind),
the target and achieved rates, the corrected latency and the service time
as histograms per status class, the phases of the successful responses,
and the generator's own state.

Contract: ``HttpLoadTracker`` reads samples only through ``LoadInterval``
and params through ``LoadParams``; counters are summed from each interval's
counts, so they never go backwards; histograms are the intervals'
``BoundCounts`` added up (``LE_BOUNDS_S``, the http family's bounds), and
appear once a sample carries them (older recordings do not); gauges hold
the run's latest interval (the drain after ``--time``, when nothing is
sent, is not one); the ``_quantile_seconds`` summaries its percentiles as the
load report computes them (nearest rank, HdrHistogram's resolution), with the
count and sum of the histogram they summarise.
The ``url`` label is the probe's already redacted URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Histogram, Point, Summary, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.tracker import Tracker, by_metric, quantile_label
from probetop.probes.http.load.records import (
    LE_BOUNDS_S,
    LOAD_PCTS,
    BoundCounts,
    LoadInterval,
    LoadParams,
)
from probetop.probes.http.spec import LOAD_KIND
from probetop.probes.http.status import STATUS_CLASSES, StatusClass

_LABELS = ("probe", "url")
# The phases under blackbox_exporter's names, as probe_http_duration_seconds
# has them (metrics.HTTP_PHASES): load mode's phase -> label.
PHASE_LABELS = {
    "dns": "resolve",
    "tcp": "connect",
    "tls": "tls",
    "server": "processing",
    "transfer": "transfer",
}
# The percentiles a phase's interval table holds (records.LoadRun.add).
PHASE_PCTS = (50.0, 99.0)

LOAD_TARGET = metric_def(
    "probetop_http_load_target_requests_per_second",
    "gauge",
    "",
    "the target rate (--rate); not served for a closed loop (--connections without --rate)",
    _LABELS,
)
LOAD_SENT_RATE = metric_def(
    "probetop_http_load_sent_requests_per_second",
    "gauge",
    "",
    "requests sent per second over the latest interval (the achieved rate)",
    _LABELS,
)
LOAD_SENT = metric_def("probetop_http_load_requests_sent", "counter", "", "requests sent", _LABELS)
LOAD_REQUESTS = metric_def(
    "probetop_http_load_requests",
    "counter",
    "",
    "requests finished, by status class (2xx_3xx, 4xx, 5xx, transport: no response)",
    (*_LABELS, "class"),
)
LOAD_CODES = metric_def(
    "probetop_http_load_responses",
    "counter",
    "",
    "responses by HTTP status code",
    (*_LABELS, "code"),
)
LOAD_ERRORS = metric_def(
    "probetop_http_load_request_errors",
    "counter",
    "",
    "requests that failed, by error kind (refused, timeout, http_5xx ...), as "
    "probetop_http_request_errors_total counts them",
    (*_LABELS, "kind"),
)
LOAD_LATENCY = metric_def(
    "probetop_http_load_request_duration_seconds",
    "histogram",
    "seconds",
    "every finished request's latency from its scheduled send time (coordinated "
    "omission corrected, wrk2's), by status class",
    (*_LABELS, "class"),
)
LOAD_SERVICE = metric_def(
    "probetop_http_load_service_time_seconds",
    "histogram",
    "seconds",
    "every finished request's time from its actual send (uncorrected, what wrk and ab "
    "report), by status class",
    (*_LABELS, "class"),
)
LOAD_PHASE = metric_def(
    "probetop_http_load_phase_duration_seconds",
    "histogram",
    "seconds",
    "every successful (2xx/3xx) request's phases: resolve, connect, tls, processing, "
    "transfer (probe_http_duration_seconds' phases)",
    (*_LABELS, "phase"),
)
LOAD_LATENCY_PCT = metric_def(
    "probetop_http_load_request_duration_quantile_seconds",
    "summary",
    "seconds",
    "the latest interval's corrected latency percentiles of 2xx/3xx responses, as the "
    "load report computes them (quantile: 0.5, 0.9, 0.99, 0.999); count and sum: the "
    "2xx/3xx responses over the run",
    _LABELS,
)
LOAD_SERVICE_PCT = metric_def(
    "probetop_http_load_service_time_quantile_seconds",
    "summary",
    "seconds",
    "the latest interval's service time percentiles of 2xx/3xx responses (quantile: "
    "0.5, 0.9, 0.99, 0.999); count and sum: the 2xx/3xx responses over the run",
    _LABELS,
)
LOAD_PHASE_PCT = metric_def(
    "probetop_http_load_phase_duration_quantile_seconds",
    "summary",
    "seconds",
    "the latest interval's phase percentiles of 2xx/3xx responses (quantile: 0.5, 0.99); "
    "count and sum: the 2xx/3xx responses' phases over the run",
    (*_LABELS, "phase"),
)
LOAD_IN_FLIGHT = metric_def(
    "probetop_http_load_in_flight_requests",
    "gauge",
    "",
    "the most requests in flight at once in the latest interval (connections in use)",
    _LABELS,
)
LOAD_BACKLOG = metric_def(
    "probetop_http_load_backlog_requests",
    "gauge",
    "",
    "requests due but not yet sent at the latest interval's end (no free connection)",
    _LABELS,
)
LOAD_CONNECTS = metric_def(
    "probetop_http_load_connections_opened", "counter", "", "new connections opened", _LABELS
)
LOAD_LIMITED = metric_def(
    "probetop_http_load_generator_limited",
    "gauge",
    "",
    "1 if probetop's generator, not the server, limited the latest interval (its figures "
    "are then the generator's), else 0",
    _LABELS,
)


class _Hist:
    """Interval ``BoundCounts`` added up."""

    def __init__(self) -> None:
        self.counts = [0] * (len(LE_BOUNDS_S) + 1)
        self.sum_us = 0

    def add(self, found: BoundCounts) -> None:
        for i, n in enumerate(found.counts[: len(self.counts)]):
            self.counts[i] += n
        self.sum_us += found.sum_us

    def snapshot(self) -> Histogram:
        cumulative = []
        running = 0
        for bound, n in zip(LE_BOUNDS_S, self.counts, strict=False):
            running += n
            cumulative.append((bound, running))
        return Histogram(tuple(cumulative), sum(self.counts), self.sum_us / 1e6)

    def summary(self, table: Mapping[str, float], pcts: tuple[float, ...]) -> Summary | None:
        """The interval's percentiles ``table`` (``p99`` -> ms, as the load
        report computes them) with this run's count and sum: a summary, or
        None when the interval has none."""
        quantiles = tuple(
            (float(quantile_label(pct / 100.0)), round(table[f"p{pct:g}"] / 1e3, 6))
            for pct in pcts
            if table.get(f"p{pct:g}") is not None
        )
        if not quantiles:
            return None
        return Summary(quantiles, sum(self.counts), self.sum_us / 1e6)


class HttpLoadTracker(Tracker):
    KIND = LOAD_KIND
    COMMAND = "http"
    DEFS = (
        LOAD_TARGET,
        LOAD_SENT_RATE,
        LOAD_SENT,
        LOAD_REQUESTS,
        LOAD_CODES,
        LOAD_ERRORS,
        LOAD_LATENCY,
        LOAD_SERVICE,
        LOAD_PHASE,
        LOAD_LATENCY_PCT,
        LOAD_SERVICE_PCT,
        LOAD_PHASE_PCT,
        LOAD_IN_FLIGHT,
        LOAD_BACKLOG,
        LOAD_CONNECTS,
        LOAD_LIMITED,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.url = ""
        self.target: float | None = None
        self.latest: LoadInterval | None = None
        self.sent = 0
        self.connects = 0
        self.requests: dict[str, int] = {}
        self.codes: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.latency: dict[str, _Hist] = {}
        self.service: dict[str, _Hist] = {}
        self.phases: dict[str, _Hist] = {}
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        params = LoadParams.from_mapping(info.get("params"))
        self.url = params.url  # already redacted by the family
        self.target = params.rate if params.rate > 0 else None  # 0: a closed loop

    def observe(self, sample: Sample) -> None:
        interval = LoadInterval.from_sample(sample)
        self.sent += max(0, interval.sent)
        self.connects += max(0, interval.connects)
        for cls, latency in interval.classes.items():
            self.requests[cls.value] = self.requests.get(cls.value, 0) + max(0, latency.count)
        _add_counts(self.codes, interval.codes)
        _add_counts(self.errors, interval.errors)
        for cls, counts in interval.le_corrected.items():
            self.latency.setdefault(cls.value, _Hist()).add(counts)
        for cls, counts in interval.le_service.items():
            self.service.setdefault(cls.value, _Hist()).add(counts)
        for phase, counts in interval.le_phases.items():
            self.phases.setdefault(phase, _Hist()).add(counts)
        # The gauges are the run's latest interval: not the drain after
        # --time (nothing is sent then), nor the empty tail after the last report.
        if (interval.seconds >= 0.05 and not interval.drain) or self.latest is None:
            self.latest = interval

    def points(self) -> list[Point]:
        labels = (self.probe_id, self.url)
        out: list[Point] = []
        if self.target is not None:
            out.append(Point(LOAD_TARGET, labels, self.target))
        latest = self.latest
        if latest is not None and latest.sent_rps is not None:
            out.append(Point(LOAD_SENT_RATE, labels, latest.sent_rps))
        out.append(Point(LOAD_SENT, labels, float(self.sent)))
        for cls in STATUS_CLASSES:  # every class, 0 until one comes: rate() needs the series
            n = self.requests.get(cls.value, 0)
            out.append(Point(LOAD_REQUESTS, (*labels, cls.value), float(n)))
        for code, n in sorted(self.codes.items()):
            out.append(Point(LOAD_CODES, (*labels, code), float(n)))
        for kind, n in sorted(self.errors.items()):
            out.append(Point(LOAD_ERRORS, (*labels, kind), float(n)))
        for metric, hists in ((LOAD_LATENCY, self.latency), (LOAD_SERVICE, self.service)):
            for cls in STATUS_CLASSES:
                if cls.value in hists:
                    out.append(Point(metric, (*labels, cls.value), hists[cls.value].snapshot()))
        for phase, label in PHASE_LABELS.items():
            if phase in self.phases:
                out.append(Point(LOAD_PHASE, (*labels, label), self.phases[phase].snapshot()))
        if latest is not None:
            ok = latest.success()
            success = StatusClass.SUCCESS.value
            for metric, table, hists in (
                (LOAD_LATENCY_PCT, ok.corrected_ms, self.latency),
                (LOAD_SERVICE_PCT, ok.service_ms, self.service),
            ):
                found = hists.get(success, _Hist()).summary(table, LOAD_PCTS)
                if found is not None:
                    out.append(Point(metric, labels, found))
            for phase, label in PHASE_LABELS.items():
                table = latest.phases_ms.get(phase) or {}
                found = self.phases.get(phase, _Hist()).summary(table, PHASE_PCTS)
                if found is not None:
                    out.append(Point(LOAD_PHASE_PCT, (*labels, label), found))
            out.append(Point(LOAD_IN_FLIGHT, labels, float(latest.in_flight_max)))
            out.append(Point(LOAD_BACKLOG, labels, float(latest.backlog)))
            out.append(Point(LOAD_LIMITED, labels, 1.0 if latest.generator_limited else 0.0))
        out.append(Point(LOAD_CONNECTS, labels, float(self.connects)))
        return by_metric(out, self.DEFS)


def _add_counts(into: dict[str, int], counts: Mapping[str, int]) -> None:
    for key, n in counts.items():
        into[key] = into.get(key, 0) + max(0, n)


LOAD_TRACKER = HttpLoadTracker
