"""What an http load sample carries, typed: the probe writes it, the pane reads it.

Contract:
- ``LoadInterval.to_sample`` is the only place one interval of load mode is
  laid out as a ``Sample`` and ``LoadInterval.from_sample`` the only place it
  is read back (missing or malformed fields read as unknown, never raise).
- ``LoadParams`` is what the probe announces; ``to_dict`` / ``from_mapping``.
- ``LOAD_METRICS`` declares every metric name a load sample may hold.
- ``is_generator_limited`` is the one rule that says an interval's figures
  are the generator's limit, not the server's (see there).

Layout of one sample: ``values`` hold the headline figures (rates, the
successful responses' corrected and service percentiles, counts per status
class as ``responses@<class>``, in-flight requests, backlog, generator lag
and CPU, ``generator_limited`` 0/1); ``extra`` holds the per-class
percentile tables of the interval (``classes``) and of the run so far
(``run``), errors by kind, status codes, phase percentiles of the successful
responses, and the end-of-run counts (``final``, ``unfinished``, ``unsent``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.readback import as_count, as_number
from probetop.probes.core.sample import Sample, metric_key, split_key
from probetop.probes.http.load.hist import Histogram, bucket_value
from probetop.probes.http.spec import LOAD_KIND as LOAD_KIND  # defined in spec.py
from probetop.probes.http.status import (
    CLASS_LABELS,
    ERROR_MARKER_SHARE,
    STATUS_CLASSES,
    StatusClass,
)
from probetop.probes.http.transfer import PHASES

#: The percentiles every latency table shows (ms), plus the exact maximum.
LOAD_PCTS: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9)
PCT_KEYS: tuple[str, ...] = (*tuple(f"p{p:g}" for p in LOAD_PCTS), "max")

#: Generator-limited when its p99 lateness passes this (us) and is a large
#: part of the corrected p99 (``GEN_LAG_SHARE``), when its loop is busy
#: (not waiting for the network or the next send) this share of the time,
#: when it uses this much of a CPU, or when it waited for a CPU (runnable,
#: not running: the kernel's run-queue delay) this share of the interval.
GEN_LAG_FLOOR_US = 1000.0
GEN_LAG_SHARE = 0.25
GEN_BUSY_LIMIT = 0.8
GEN_CPU_LIMIT = 0.9
GEN_WAIT_LIMIT = 0.2

#: The upper bounds (seconds) the samples count requests under
#: (``BoundCounts``), for the Prometheus histograms: the http family's
#: (``metrics.HTTP_BUCKETS_S``; a test holds them equal), 100 us to a minute.
LE_BOUNDS_S: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
LE_BOUNDS_US: tuple[int, ...] = tuple(round(b * 1e6) for b in LE_BOUNDS_S)

TARGET_RPS = "target_rps"
SENT_RPS = "sent_rps"
DONE_RPS = "done_rps"
RESPONSES = "responses"  # per status class: responses@2xx_3xx ...
LOAD_ERRORS = "errors"
IN_FLIGHT = "in_flight"
IN_FLIGHT_MEAN = "in_flight_mean"
BACKLOG = "backlog"
WAITED = "waited"
CONNECTS = "connects"
GEN_LAG_P99_MS = "gen_lag_p99_ms"
GEN_CPU_PCT = "gen_cpu_pct"
GEN_BUSY_PCT = "gen_busy_pct"
GEN_WAIT_PCT = "gen_wait_pct"
GENERATOR_LIMITED = "generator_limited"


def corrected_metric(pct_key: str) -> str:
    """``p99`` -> ``lat_p99_ms`` (corrected latency of successful responses)."""
    return f"lat_{pct_key}_ms"


def service_metric(pct_key: str) -> str:
    """``p99`` -> ``svc_p99_ms`` (service time, uncorrected, of successful responses)."""
    return f"svc_{pct_key}_ms"


LOAD_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(TARGET_RPS, "req/s", "target rate (--rate)"),
    MetricSpec(SENT_RPS, "req/s", "requests sent per second (achieved rate)", True),
    MetricSpec(DONE_RPS, "req/s", "responses and failures per second"),
    *(
        MetricSpec(
            corrected_metric(k),
            "ms",
            f"{k} latency from the scheduled send time (coordinated omission corrected), 2xx/3xx",
            k == "p99",
        )
        for k in PCT_KEYS
    ),
    *(
        MetricSpec(service_metric(k), "ms", f"{k} service time (uncorrected), 2xx/3xx")
        for k in PCT_KEYS
    ),
    MetricSpec(RESPONSES, "", "responses per status class in the interval"),
    MetricSpec(LOAD_ERRORS, "", "requests that ended 4xx, 5xx or in a transport error"),
    MetricSpec(IN_FLIGHT, "", "most requests in flight at once (connections in use)"),
    MetricSpec(IN_FLIGHT_MEAN, "", "mean requests in flight (Little's law)"),
    MetricSpec(BACKLOG, "", "requests due but not sent at the interval's end"),
    MetricSpec(WAITED, "", "requests that waited for a free connection"),
    MetricSpec(CONNECTS, "", "new connections opened"),
    MetricSpec(GEN_LAG_P99_MS, "ms", "p99 of the generator's own lateness in sending"),
    MetricSpec(GEN_CPU_PCT, "%", "CPU the generator process used"),
    MetricSpec(GEN_BUSY_PCT, "%", "share of the time the generator's loop was not waiting"),
    MetricSpec(GEN_WAIT_PCT, "%", "share of the time the generator waited for a CPU"),
    MetricSpec(GENERATOR_LIMITED, "", "1: the generator, not the server, limited this interval"),
)


@dataclass(frozen=True, slots=True)
class BoundCounts:
    """Some requests' latencies counted under ``LE_BOUNDS_S``: ``counts[i]``
    lie above bound ``i - 1`` and at most bound ``i`` (not cumulative; the
    last, past every bound: above a minute); ``sum_us`` is their exact sum.
    Read from a ``Histogram``: a bucket of it counts under the bound its
    value (its midpoint) falls under, so below 2.048 ms the counts are exact
    and above, a request within 0.1 % of a bound may count on its other side
    (HdrHistogram's 3 significant digits)."""

    counts: tuple[int, ...] = ()
    sum_us: int = 0

    @property
    def count(self) -> int:
        return sum(self.counts)

    @classmethod
    def of(cls, hist: Histogram) -> BoundCounts:
        counts = [0] * (len(LE_BOUNDS_US) + 1)
        for index, n in hist.counts.items():
            counts[bisect.bisect_left(LE_BOUNDS_US, bucket_value(index))] += n
        return cls(tuple(counts), hist.total)

    def to_dict(self) -> dict[str, Any]:
        counts = list(self.counts)
        while counts and counts[-1] == 0:  # trailing empty bounds: read back as 0
            counts.pop()
        return {"n": counts, "sum_us": self.sum_us}

    @classmethod
    def from_mapping(cls, raw: Any) -> BoundCounts:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("n"), list):
            return cls()
        counts = [max(0, _int(v)) for v in raw["n"]][: len(LE_BOUNDS_US) + 1]
        counts += [0] * (len(LE_BOUNDS_US) + 1 - len(counts))
        return cls(tuple(counts), max(0, _int(raw.get("sum_us"))))


@dataclass(frozen=True, slots=True)
class ClassLatency:
    """One status class over some requests: how many, and the corrected and
    service latency percentiles (ms, keys ``PCT_KEYS``; None when unknown)."""

    count: int = 0
    corrected_ms: Mapping[str, float | None] = field(default_factory=dict)
    service_ms: Mapping[str, float | None] = field(default_factory=dict)

    @classmethod
    def of(cls, corrected: Histogram, service: Histogram) -> ClassLatency:
        return cls(
            count=corrected.count, corrected_ms=pct_table(corrected), service_ms=pct_table(service)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "corrected_ms": dict(self.corrected_ms),
            "service_ms": dict(self.service_ms),
        }

    @classmethod
    def from_mapping(cls, raw: Any) -> ClassLatency:
        if not isinstance(raw, Mapping):
            return cls()
        return cls(
            count=(as_count(raw.get("count")) or 0),
            corrected_ms=_table(raw.get("corrected_ms")),
            service_ms=_table(raw.get("service_ms")),
        )


def pct_table(hist: Histogram) -> dict[str, float | None]:
    """``{"p50": ms, ..., "p99.9": ms, "max": ms}`` of a microsecond histogram."""
    found = hist.percentiles(LOAD_PCTS)
    out: dict[str, float | None] = {
        key: _ms(found[p]) for key, p in zip(PCT_KEYS, LOAD_PCTS, strict=False)
    }
    out["max"] = _ms(None if hist.max is None else float(hist.max))
    return out


def generator_limit(
    gen_lag_p99_us: float | None,
    corrected_p99_us: float | None,
    cpu_share: float | None,
    busy_share: float | None = None,
    wait_share: float | None = None,
) -> tuple[str, str] | None:
    """Why the generator (not the server) limits an interval, or None: a
    kind (``cpu``, ``busy``: it cannot keep up; ``starved``: the machine
    does not give it a CPU; ``late``: it keeps up but sends late) and a
    sentence.

    - its process used at least ``GEN_CPU_LIMIT`` of a CPU, or its loop was
      busy (not waiting for the network or the next send) at least
      ``GEN_BUSY_LIMIT`` of the time: it then notices responses late, and
      libcurl's clocks run on meanwhile, so even the service time grows;
    - its p99 lateness in sending is over ``GEN_LAG_FLOOR_US`` and at least
      ``GEN_LAG_SHARE`` of the corrected p99: that much of the tail is its
      own delay (or this machine's: a busy host runs it late);
    - it waited for a CPU (runnable, not running) at least ``GEN_WAIT_LIMIT``
      of the interval: it then notices responses late, and frees handles
      late, which looks like a slow server to every other figure.
    """
    if cpu_share is not None and cpu_share >= GEN_CPU_LIMIT:
        return "cpu", f"its process uses {100 * cpu_share:.0f} % of a CPU"
    if busy_share is not None and busy_share >= GEN_BUSY_LIMIT:
        return "busy", f"its loop is busy {100 * busy_share:.0f} % of the time"
    if wait_share is not None and wait_share >= GEN_WAIT_LIMIT:
        return "starved", f"it waited for a CPU {100 * wait_share:.0f} % of the time"
    if gen_lag_p99_us is None or gen_lag_p99_us <= GEN_LAG_FLOOR_US:
        return None
    if corrected_p99_us is None or corrected_p99_us <= 0:
        return "late", f"it sends late (lag p99 {gen_lag_p99_us / 1000:.1f} ms)"
    if gen_lag_p99_us >= GEN_LAG_SHARE * corrected_p99_us:
        return "late", (
            f"it sends late: lag p99 {gen_lag_p99_us / 1000:.1f} ms of a "
            f"{corrected_p99_us / 1000:.1f} ms corrected p99"
        )
    return None


def is_generator_limited(
    gen_lag_p99_us: float | None,
    corrected_p99_us: float | None,
    cpu_share: float | None,
    busy_share: float | None = None,
    wait_share: float | None = None,
) -> bool:
    """True when ``generator_limit`` gives a reason."""
    found = generator_limit(gen_lag_p99_us, corrected_p99_us, cpu_share, busy_share, wait_share)
    return found is not None


@dataclass(frozen=True, slots=True)
class LoadInterval:
    """One interval of load mode. Rates are per second of the interval;
    ``classes`` are this interval's requests by status class, ``run`` the
    whole run's so far. ``phases_ms``: per phase of the successful responses,
    ``{"p50", "p99", "mean"}`` in ms. ``le_corrected`` / ``le_service`` (per
    status class) and ``le_phases`` (per phase, successes): this interval's
    requests counted under ``LE_BOUNDS_S`` (empty in recordings from before
    they were kept)."""

    KIND: ClassVar[str] = LOAD_KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = LOAD_METRICS

    target_rps: float
    seconds: float
    scheduled: int = 0
    sent: int = 0
    done: int = 0
    classes: Mapping[StatusClass, ClassLatency] = field(default_factory=dict)
    run: Mapping[StatusClass, ClassLatency] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)
    codes: Mapping[str, int] = field(default_factory=dict)
    phases_ms: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    le_corrected: Mapping[StatusClass, BoundCounts] = field(default_factory=dict)
    le_service: Mapping[StatusClass, BoundCounts] = field(default_factory=dict)
    le_phases: Mapping[str, BoundCounts] = field(default_factory=dict)
    in_flight_max: int = 0
    in_flight_mean: float | None = None
    backlog: int = 0
    waited: int = 0
    connects: int = 0
    gen_lag_p99_ms: float | None = None
    gen_cpu_pct: float | None = None
    gen_busy_pct: float | None = None
    gen_wait_pct: float | None = None
    generator_limited: bool = False
    final: bool = False
    drain: bool = False  # after --time: requests in flight finish, none is sent
    unfinished: int = 0
    unsent: int = 0
    last_error: str | None = None

    @property
    def sent_rps(self) -> float | None:
        return self.sent / self.seconds if self.seconds > 0 else None

    @property
    def done_rps(self) -> float | None:
        return self.done / self.seconds if self.seconds > 0 else None

    @property
    def error_count(self) -> int:
        return sum(c.count for k, c in self.classes.items() if k.is_error)

    def success(self) -> ClassLatency:
        return self.classes.get(StatusClass.SUCCESS, ClassLatency())

    def run_rows(self) -> list[tuple[str, ClassLatency]]:
        """The run so far per status class that has requests, in display
        order, with the class's label (``2xx/3xx``, ``4xx`` ...)."""
        return [
            (CLASS_LABELS[cls], self.run[cls])
            for cls in STATUS_CLASSES
            if cls in self.run and self.run[cls].count
        ]

    def run_counts(self) -> list[tuple[str, int]]:
        """Every status class's count over the run so far, in display order."""
        return [(CLASS_LABELS[c], self.run.get(c, ClassLatency()).count) for c in STATUS_CLASSES]

    def run_error_share(self) -> float | None:
        """Errors (4xx, 5xx, transport) over all requests of the run so far."""
        total = sum(c.count for c in self.run.values())
        errors = sum(c.count for k, c in self.run.items() if k.is_error)
        return errors / total if total else None

    def generator_reason(self) -> str | None:
        """Why this interval is generator-limited (None when it is not)."""
        if not self.generator_limited:
            return None
        p99 = self.success().corrected_ms.get("p99")
        found = generator_limit(
            None if self.gen_lag_p99_ms is None else self.gen_lag_p99_ms * 1000.0,
            None if p99 is None else p99 * 1000.0,
            None if self.gen_cpu_pct is None else self.gen_cpu_pct / 100.0,
            None if self.gen_busy_pct is None else self.gen_busy_pct / 100.0,
            None if self.gen_wait_pct is None else self.gen_wait_pct / 100.0,
        )
        return found[1] if found else "its own figures passed the limits"

    @property
    def error_marker(self) -> bool:
        """True when the run's errors pass ``ERROR_MARKER_SHARE`` (1 %)."""
        share = self.run_error_share()
        return share is not None and share > ERROR_MARKER_SHARE

    def to_sample(self, probe_id: str, t_ns: int) -> Sample:
        ok = self.success()
        values: dict[str, float | None] = {
            TARGET_RPS: self.target_rps,
            SENT_RPS: self.sent_rps,
            DONE_RPS: self.done_rps,
        }
        for key in PCT_KEYS:
            values[corrected_metric(key)] = ok.corrected_ms.get(key)
        for key in PCT_KEYS:
            values[service_metric(key)] = ok.service_ms.get(key)
        for cls in STATUS_CLASSES:
            values[metric_key(RESPONSES, cls.value)] = float(
                self.classes.get(cls, ClassLatency()).count
            )
        values[LOAD_ERRORS] = float(self.error_count)
        values[IN_FLIGHT] = float(self.in_flight_max)
        values[IN_FLIGHT_MEAN] = self.in_flight_mean
        values[BACKLOG] = float(self.backlog)
        values[WAITED] = float(self.waited)
        values[CONNECTS] = float(self.connects)
        values[GEN_LAG_P99_MS] = self.gen_lag_p99_ms
        values[GEN_CPU_PCT] = self.gen_cpu_pct
        values[GEN_BUSY_PCT] = self.gen_busy_pct
        values[GEN_WAIT_PCT] = self.gen_wait_pct
        values[GENERATOR_LIMITED] = 1.0 if self.generator_limited else 0.0
        extra: dict[str, Any] = {
            "scheduled": self.scheduled,
            "sent": self.sent,
            "done": self.done,
            "classes": {k.value: v.to_dict() for k, v in self.classes.items()},
            "run": {k.value: v.to_dict() for k, v in self.run.items()},
            "errors": dict(self.errors),
            "codes": dict(self.codes),
            "phases_ms": {p: dict(t) for p, t in self.phases_ms.items()},
            "final": self.final,
            "drain": self.drain,
            "unfinished": self.unfinished,
            "unsent": self.unsent,
            "last_error": self.last_error,
        }
        if self.le_corrected or self.le_service or self.le_phases:
            extra["le"] = {
                "bounds_s": list(LE_BOUNDS_S),
                "corrected": {k.value: v.to_dict() for k, v in self.le_corrected.items()},
                "service": {k.value: v.to_dict() for k, v in self.le_service.items()},
                "phases": {p: v.to_dict() for p, v in self.le_phases.items()},
            }
        return Sample(probe_id, t_ns, self.seconds, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> LoadInterval:
        values, extra = sample.values, sample.extra or {}
        seconds = float(sample.interval_s) if isinstance(sample.interval_s, (int, float)) else 0.0
        counts = {}
        for key, value in values.items():
            name, entity = split_key(key)
            if name == RESPONSES and entity is not None:
                counts[entity] = as_count(value) or 0
        classes = _classes(extra.get("classes"))
        for name, n in counts.items():  # a sample without tables still has its counts
            cls_ = _status_class(name)
            if cls_ is not None and cls_ not in classes and n:
                classes[cls_] = ClassLatency(count=n)
        lag = as_number(values.get(GEN_LAG_P99_MS))
        le = extra.get("le")
        if not isinstance(le, Mapping) or le.get("bounds_s") != list(LE_BOUNDS_S):
            le = {}  # none kept, or under other bounds: no counts rather than wrong ones
        return cls(
            target_rps=as_number(values.get(TARGET_RPS)) or 0.0,
            seconds=seconds,
            scheduled=_int(extra.get("scheduled")),
            sent=_int(extra.get("sent"), _count_at(values.get(SENT_RPS), seconds)),
            done=_int(extra.get("done"), _count_at(values.get(DONE_RPS), seconds)),
            classes=classes,
            run=_classes(extra.get("run")),
            errors=_counts(extra.get("errors")),
            codes=_counts(extra.get("codes")),
            phases_ms=_phases(extra.get("phases_ms")),
            le_corrected=_class_counts(le.get("corrected")),
            le_service=_class_counts(le.get("service")),
            le_phases={
                str(p): BoundCounts.from_mapping(raw)
                for p, raw in (le.get("phases") or {}).items()
                if p in PHASES
            }
            if isinstance(le.get("phases"), Mapping)
            else {},
            in_flight_max=_int(values.get(IN_FLIGHT)),
            in_flight_mean=as_number(values.get(IN_FLIGHT_MEAN)),
            backlog=_int(values.get(BACKLOG)),
            waited=_int(values.get(WAITED)),
            connects=_int(values.get(CONNECTS)),
            gen_lag_p99_ms=lag,
            gen_cpu_pct=as_number(values.get(GEN_CPU_PCT)),
            gen_busy_pct=as_number(values.get(GEN_BUSY_PCT)),
            gen_wait_pct=as_number(values.get(GEN_WAIT_PCT)),
            generator_limited=bool(as_number(values.get(GENERATOR_LIMITED))),
            final=extra.get("final") is True,
            drain=extra.get("drain") is True,
            unfinished=_int(extra.get("unfinished")),
            unsent=_int(extra.get("unsent")),
            last_error=str(extra["last_error"])
            if isinstance(extra.get("last_error"), str)
            else None,
        )


@dataclass(frozen=True, slots=True)
class LoadParams:
    """What a load probe announces: the URL (redacted) and its label, the
    target rate, the connections, the duration (None: until stopped), the
    reporting interval, the connection policy and the request (redacted)."""

    url: str = ""
    label: str | None = None
    rate: float = 0.0
    connections: int = 0
    time_s: float | None = None
    interval_s: float = 1.0
    connection: str = "reuse"
    request: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "label": self.label,
            "rate": self.rate,
            "connections": self.connections,
            "time_s": self.time_s,
            "interval_s": self.interval_s,
            "connection": self.connection,
            "request": dict(self.request),
        }

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any] | None) -> LoadParams:
        params = params or {}
        request = params.get("request")
        label = params.get("label")
        return cls(
            url=str(params.get("url") or ""),
            label=str(label) if label else None,
            rate=as_number(params.get("rate")) or 0.0,
            connections=_int(params.get("connections")),
            time_s=as_number(params.get("time_s")),
            interval_s=as_number(params.get("interval_s")) or 1.0,
            connection=str(params.get("connection") or "reuse"),
            request=request if isinstance(request, Mapping) else {},
        )


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000.0, 3)


def _int(value: Any, default: int = 0) -> int:
    number = as_count(value)
    return default if number is None else number


def _count_at(rate: Any, seconds: float) -> int:
    """A count rebuilt from a recorded per-second rate (0 when not finite)."""
    count = (as_number(rate) or 0.0) * seconds
    return round(count) if math.isfinite(count) else 0


def _status_class(name: str) -> StatusClass | None:
    try:
        return StatusClass(name)
    except ValueError:
        return None


def _table(raw: Any) -> dict[str, float | None]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): as_number(v) for k, v in raw.items()}


def _counts(raw: Any) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): _int(v) for k, v in raw.items()}


def _phases(raw: Any) -> dict[str, dict[str, float | None]]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(p): _table(t) for p, t in raw.items() if p in PHASES}


def _class_counts(raw: Any) -> dict[StatusClass, BoundCounts]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[StatusClass, BoundCounts] = {}
    for name, counts in raw.items():
        cls_ = _status_class(str(name))
        if cls_ is not None:
            out[cls_] = BoundCounts.from_mapping(counts)
    return out


def _classes(raw: Any) -> dict[StatusClass, ClassLatency]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[StatusClass, ClassLatency] = {}
    for name, table in raw.items():
        cls_ = _status_class(str(name))
        if cls_ is not None:
            out[cls_] = ClassLatency.from_mapping(table)
    return out
