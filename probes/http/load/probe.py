"""HTTP load mode: the ``http.load`` probe (``probetop http URL --rate R``).

Contract:
- ``HttpLoadProbe(settings)`` (``settings.load`` set) runs the generator of
  ``generator.py`` in a worker process and emits one ``LoadInterval``
  sample per interval (the worker's aggregates, merged here into the run's
  histograms), plus a warning ``Status`` when an interval turns
  generator-limited (``records.is_generator_limited``) and when it
  recovers.
- ``summary()`` is ``LoadRun.summary()``: run totals, per status class the
  corrected and service latency percentiles (p50..p99.9, max) and their
  histograms, phases, errors, generator figures and the last interval rows;
  read by ``report.py``.
- The worker ends by itself after ``--time`` (it sends nothing from then
  on; requests in flight get ``DRAIN_S``, those due and not sent are
  ``unsent``); on cancellation it gets SIGTERM, sends its last interval and
  exits within ``STOP_GRACE_S``, else it is killed. Either way it is gone
  before ``run`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, ProbeError
from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.http.load.hist import Histogram
from probetop.probes.http.load.records import (
    LOAD_KIND,
    LOAD_METRICS,
    PCT_KEYS,
    BoundCounts,
    ClassLatency,
    LoadInterval,
    LoadParams,
    generator_limit,
    is_generator_limited,
    pct_table,
)
from probetop.probes.http.load.settings import DRAIN_S, LoadSettings
from probetop.probes.http.probe import url_labels
from probetop.probes.http.request import check_http_version, check_url
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.status import ERROR_MARKER_SHARE, STATUS_CLASSES, StatusClass
from probetop.probes.http.transfer import PHASES
from probetop.probes.record import redact_url

# How long a stopped worker gets to send its last interval (the hub waits 1.5 s).
STOP_GRACE_S = 0.8
# Interval rows kept for the report (the last ones, older ones counted as
# ``intervals_dropped``): bounded memory for hours.
KEEP_ROWS = 300
# One worker line may hold several histograms of a few thousand buckets.
LINE_LIMIT = 16 * 1024 * 1024


class LoadRun:
    """Everything measured in one load run so far: the run's histograms per
    status class (corrected and service), per phase, of the generator's lag,
    and the counters. Memory is bounded (``Histogram``, ``KEEP_ROWS``)."""

    def __init__(self, settings: LoadSettings) -> None:
        self.settings = settings
        self.corrected: dict[StatusClass, Histogram] = {}
        self.service: dict[StatusClass, Histogram] = {}
        self.phases = {phase: Histogram() for phase in PHASES}
        self.gen_lag = Histogram()
        self.seconds = 0.0
        self.scheduled = self.sent = self.done = 0
        # The run's own time and what finished in it (not the drain after --time):
        # what the rates divide, as wrk's Requests/sec does.
        self.run_seconds = 0.0
        self.run_done = self.run_sent = 0
        # wrk's report (report.wrk_lines): responses of any status and the bytes
        # read within the run, and its responses/s every 100 ms (its Req/Sec).
        self.run_responses = self.run_bytes = 0
        self.run_errors: dict[str, int] = {}
        self.responses_per_s = Histogram()
        self.waited = self.connects = 0
        self.in_flight_max = 0
        self.cpu_s = 0.0
        self.busy_s = 0.0  # seconds the generator's loop was not waiting
        self.wait_s = 0.0  # seconds the generator waited for a CPU (run-queue delay)
        self.errors: dict[str, int] = {}
        self.codes: dict[str, int] = {}
        self.intervals = 0
        self.limited_intervals = 0
        self.limits: dict[str, int] = {}  # generator-limited intervals by kind
        self.unfinished = self.unsent = 0
        # When the run's last request was sent (s from the schedule's start):
        # before --time, as wrk2 stops sending at -d.
        self.last_sent_s: float | None = None
        self.last_error: str | None = None
        self.rows: IntervalLog[dict[str, Any]] = IntervalLog(KEEP_ROWS)

    def add(self, line: Mapping[str, Any]) -> LoadInterval:
        """Merge one worker line; the interval it describes, as a record."""
        seconds = float(line.get("seconds") or 0.0)
        classes: dict[StatusClass, ClassLatency] = {}
        le_corrected: dict[StatusClass, BoundCounts] = {}
        le_service: dict[StatusClass, BoundCounts] = {}
        for name, hists in (line.get("classes") or {}).items():
            cls = StatusClass(name)
            corrected = Histogram.from_list(hists.get("corrected"))
            service = Histogram.from_list(hists.get("service"))
            classes[cls] = ClassLatency.of(corrected, service)
            le_corrected[cls] = BoundCounts.of(corrected)
            le_service[cls] = BoundCounts.of(service)
            self.corrected.setdefault(cls, Histogram()).merge(corrected)
            self.service.setdefault(cls, Histogram()).merge(service)
        phases: dict[str, dict[str, float | None]] = {}
        le_phases: dict[str, BoundCounts] = {}
        for phase, raw in (line.get("phases") or {}).items():
            hist = Histogram.from_list(raw)
            self.phases[phase].merge(hist)
            if hist.count:
                le_phases[phase] = BoundCounts.of(hist)
            found = hist.percentiles((50.0, 99.0))
            phases[phase] = {
                "p50": _ms(found[50.0]),
                "p99": _ms(found[99.0]),
                "mean": _ms(hist.mean),
            }
        lag = Histogram.from_list(line.get("gen_lag"))
        self.gen_lag.merge(lag)
        cpu_s = float(line.get("cpu_s") or 0.0)
        cpu_share = cpu_s / seconds if seconds >= 0.05 else None
        busy = line.get("busy")
        busy_share = float(busy) if isinstance(busy, (int, float)) and seconds >= 0.05 else None
        wait = line.get("run_wait")
        wait_share = float(wait) if isinstance(wait, (int, float)) and seconds >= 0.05 else None
        ok = classes.get(StatusClass.SUCCESS)
        ok_p99_ms = ok.corrected_ms.get("p99") if ok else None
        lag_p99 = lag.percentile(99.0)
        limit = generator_limit(
            lag_p99,
            None if ok_p99_ms is None else ok_p99_ms * 1000.0,
            cpu_share,
            busy_share,
            wait_share,
        )
        limited = limit is not None
        self.seconds += seconds
        if not line.get("drain"):
            self.run_seconds += seconds
            self.run_done += int(line.get("done") or 0)
            self.run_sent += int(line.get("sent") or 0)
            self.run_bytes += int(line.get("bytes") or 0)
            answered = sum(
                int((hists.get("service") or {}).get("n") or 0)
                for name, hists in (line.get("classes") or {}).items()
                if name != StatusClass.TRANSPORT.value
            )
            self.run_responses += answered
            for kind, n in (line.get("errors") or {}).items():
                self.run_errors[kind] = self.run_errors.get(kind, 0) + int(n)
            if "req_per_s" not in line and seconds >= 0.05:  # a recording made before
                self.responses_per_s.record(int(answered / seconds))
        # wrk's Req/Sec samples, every 100 ms within the run (generator.record_rate)
        self.responses_per_s.merge(Histogram.from_list(line.get("req_per_s")))
        self.scheduled += int(line.get("scheduled") or 0)
        self.sent += int(line.get("sent") or 0)
        self.done += int(line.get("done") or 0)
        self.waited += int(line.get("waited") or 0)
        self.connects += int(line.get("connects") or 0)
        self.cpu_s += cpu_s
        if busy_share is not None:
            self.busy_s += busy_share * seconds
        if wait_share is not None:
            self.wait_s += wait_share * seconds
        self.in_flight_max = max(self.in_flight_max, int(line.get("in_flight_max") or 0))
        for kind, n in (line.get("errors") or {}).items():
            self.errors[kind] = self.errors.get(kind, 0) + int(n)
        for code, n in (line.get("codes") or {}).items():
            self.codes[code] = self.codes.get(code, 0) + int(n)
        if line.get("last_error"):
            self.last_error = str(line["last_error"])
        last_sent = line.get("last_sent_s")
        if isinstance(last_sent, (int, float)):
            self.last_sent_s = float(last_sent)
        final = bool(line.get("final"))
        if final:
            self.unfinished = int(line.get("unfinished") or 0)
            self.unsent = int(line.get("unsent") or 0)
        if seconds >= 0.05 or not final:  # not the empty tail after the last report
            self.intervals += 1
            self.limited_intervals += limited
            if limit is not None:
                self.limits[limit[0]] = self.limits.get(limit[0], 0) + 1
        interval = LoadInterval(
            target_rps=self.settings.rate or 0.0,
            seconds=seconds,
            scheduled=int(line.get("scheduled") or 0),
            sent=int(line.get("sent") or 0),
            done=int(line.get("done") or 0),
            classes=classes,
            run=self.run_classes(),
            errors=dict(line.get("errors") or {}),
            codes=dict(line.get("codes") or {}),
            phases_ms=phases,
            le_corrected=le_corrected,
            le_service=le_service,
            le_phases=le_phases,
            in_flight_max=int(line.get("in_flight_max") or 0),
            in_flight_mean=_round(line.get("in_flight_mean")),
            backlog=int(line.get("backlog") or 0),
            waited=int(line.get("waited") or 0),
            connects=int(line.get("connects") or 0),
            gen_lag_p99_ms=_ms(lag_p99),
            gen_cpu_pct=None if cpu_share is None else round(100.0 * cpu_share, 1),
            gen_busy_pct=None if busy_share is None else round(100.0 * busy_share, 1),
            gen_wait_pct=None if wait_share is None else round(100.0 * wait_share, 1),
            generator_limited=limited,
            final=final,
            drain=bool(line.get("drain")),
            unfinished=int(line.get("unfinished") or 0),
            unsent=int(line.get("unsent") or 0),
            last_error=line.get("last_error"),
        )
        if seconds >= 0.05 or not final:
            self.rows.append(_row(interval, self.seconds))
        return interval

    def run_classes(self) -> dict[StatusClass, ClassLatency]:
        return {
            cls: ClassLatency.of(self.corrected[cls], self.service[cls])
            for cls in STATUS_CLASSES
            if cls in self.corrected
        }

    def summary(self) -> dict[str, Any]:
        s = self.settings
        errors = sum(h.count for cls, h in self.corrected.items() if cls.is_error)
        ok = self.corrected.get(StatusClass.SUCCESS)
        ok_p99 = ok.percentile(99.0) if ok else None
        cpu_share = self.cpu_s / self.seconds if self.seconds > 0 else None
        busy_share = self.busy_s / self.seconds if self.seconds > 0 else None
        wait_share = self.wait_s / self.seconds if self.seconds > 0 else None
        return {
            "mode": "load",
            "rate": s.rate,
            "connections": s.connections,
            "time_s": s.time_s,
            "interval_s": s.interval_s,
            "connection": s.connection,
            "seconds": round(self.seconds, 3),
            "run_s": round(self.run_seconds, 3),
            "scheduled": self.scheduled,
            "sent": self.sent,
            "done": self.done,
            "done_in_drain": self.done - self.run_done,
            # Over the run's own time (--time), not the drain after it: wrk's
            # Requests/sec counts what finished within the run's duration.
            "sent_rps": _rate(self.run_sent, self.run_seconds),
            "done_rps": _rate(self.run_done, self.run_seconds),
            "run_responses": self.run_responses,
            "run_bytes": self.run_bytes,
            "run_errors": dict(self.run_errors),
            "responses_per_s": self.responses_per_s.to_list(),
            "classes": {cls.value: c.to_dict() for cls, c in self.run_classes().items()},
            "errors": dict(self.errors),
            "error_share": round(errors / self.done, 6) if self.done else None,
            "error_marker": bool(self.done) and errors / self.done > ERROR_MARKER_SHARE,
            "codes": dict(sorted(self.codes.items())),
            "phases_ms": {
                phase: {**pct_table(hist), "mean": _ms(hist.mean)}
                for phase, hist in self.phases.items()
                if hist.count
            },
            "in_flight_max": self.in_flight_max,
            "waited": self.waited,
            "connects": self.connects,
            "gen_lag_ms": pct_table(self.gen_lag),
            "gen_cpu_pct": None if cpu_share is None else round(100.0 * cpu_share, 1),
            "gen_busy_pct": None if busy_share is None else round(100.0 * busy_share, 1),
            "gen_wait_pct": None if wait_share is None else round(100.0 * wait_share, 1),
            "generator_limited": is_generator_limited(
                self.gen_lag.percentile(99.0), ok_p99, cpu_share, busy_share, wait_share
            ),
            "intervals": self.intervals,
            "generator_limited_intervals": self.limited_intervals,
            "generator_limits": dict(self.limits),
            "unfinished": self.unfinished,
            "unsent": self.unsent,
            "last_sent_s": None if self.last_sent_s is None else round(self.last_sent_s, 6),
            "last_error": self.last_error,
            "interval_rows": self.rows.rows(),
            **({"intervals_dropped": self.rows.dropped} if self.rows.dropped else {}),
            "histograms_us": {
                "corrected": {cls.value: h.to_list() for cls, h in self.corrected.items()},
                "service": {cls.value: h.to_list() for cls, h in self.service.items()},
            },
        }


def _row(interval: LoadInterval, t_s: float) -> dict[str, Any]:
    """One interval as a report row."""
    ok = interval.success()
    return {
        "t_s": round(t_s, 3),
        "sent_rps": _round(interval.sent_rps),
        "done_rps": _round(interval.done_rps),
        "ok": ok.count,
        "errors": interval.error_count,
        "corrected_ms": {k: ok.corrected_ms.get(k) for k in PCT_KEYS},
        "service_ms": {k: ok.service_ms.get(k) for k in PCT_KEYS},
        "in_flight_max": interval.in_flight_max,
        "backlog": interval.backlog,
        "gen_lag_p99_ms": interval.gen_lag_p99_ms,
        "generator_limited": interval.generator_limited,
    }


class HttpLoadProbe:
    """Open-model HTTP load with coordinated-omission-corrected latency. See
    the module docstring."""

    kind = LOAD_KIND
    metrics = LOAD_METRICS

    def __init__(self, settings: HttpSettings, *, probe_id: str | None = None) -> None:
        if settings.load is None:
            raise ProbeError("HttpLoadProbe needs load settings (--rate)")
        self.settings = settings
        self.load: LoadSettings = settings.load
        self.url = settings.urls[0] if settings.urls else ""
        self.request = settings.request
        self.label: str | None = None
        self.id = probe_id or _default_id(self.url)
        self.run_stats = LoadRun(self.load)
        self.worker_pid: int | None = None
        self._limited = False

    # -- Probe protocol ---------------------------------------------------
    def prepare(self) -> None:
        self.settings.validate()
        self.load.validate()
        try:
            import pycurl  # noqa: F401
        except ImportError as exc:
            raise ProbeError(f"pycurl is not importable ({exc}): pip install pycurl") from None
        self.url = check_url(self.url)
        check_http_version(self.request.http_version)
        self.label = url_labels([self.url])[self.url]

    def params(self) -> Mapping[str, Any]:
        return LoadParams(
            url=redact_url(self.url),
            label=self.label,
            rate=self.load.rate or 0.0,  # 0: closed loop
            connections=self.load.connections,
            time_s=self.load.time_s,
            interval_s=self.load.interval_s,
            connection=self.load.connection,
            request=self.request.redacted(),
        ).to_dict()

    def reference_command(self) -> str | None:
        """The wrk2 command for the same load (wrk2 installs as ``wrk``; a
        method or body other than GET needs its Lua script); wrk's for the
        closed loop."""
        if not self.url:
            return None
        load = self.load
        parts = ["wrk", "-t1", f"-c{load.connections}", "--latency"]
        if load.rate is not None:
            parts.insert(3, f"-R{load.rate:g}")
        parts.append(f"-d{load.time_s:g}s" if load.time_s else "-d1h")
        for header in self.request.headers:
            parts += ["-H", header]
        parts.append(redact_url(self.url))
        return ("wrk: " if load.rate is None else "wrk2: ") + shlex.join(parts)

    def summary(self) -> Mapping[str, Any]:
        out = self.run_stats.summary()
        out["url"] = redact_url(self.url)
        out["label"] = self.label
        out["reference_command"] = self.reference_command()
        return out

    async def run(self, emit: Emit) -> None:
        if self.label is None:
            self.prepare()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "probetop.probes.http.load.generator",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        self.worker_pid = proc.pid
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        config = {
            "url": self.url,
            "request": self.request.to_dict(),
            "rate": self.load.rate,
            "connections": self.load.connections,
            "time_s": self.load.time_s,
            "interval_s": self.load.interval_s,
            "fresh": self.load.fresh,
            "drain_s": DRAIN_S,
        }
        try:
            proc.stdin.write((json.dumps(config) + "\n").encode())
            await proc.stdin.drain()
            await self._read(proc.stdout, emit)
            code = await proc.wait()
            if code != 0:
                err = (await proc.stderr.read()).decode(errors="replace").strip()
                tail = err.splitlines()[-1] if err else f"exit code {code}"
                raise ProbeError(f"the HTTP load worker failed: {tail}")
        finally:
            if proc.returncode is None:
                # Stopped: ask for the last interval, wait a little, then kill.
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                with contextlib.suppress(TimeoutError, asyncio.CancelledError, ValueError):
                    await asyncio.wait_for(self._read(proc.stdout, emit), STOP_GRACE_S)
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                with contextlib.suppress(asyncio.CancelledError):
                    await proc.wait()
            self.worker_pid = None

    async def _read(self, stream: asyncio.StreamReader, emit: Emit) -> None:
        async for raw in stream:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            interval = self.run_stats.add(line)
            t_ns = int(line.get("t_ns") or now_ns())
            emit(interval.to_sample(self.id, t_ns))
            self._say_limited(interval, t_ns, emit)

    def _say_limited(self, interval: LoadInterval, t_ns: int, emit: Emit) -> None:
        """A warning when the generator starts limiting, a note when it stops."""
        if interval.generator_limited == self._limited or interval.final:
            return
        self._limited = interval.generator_limited
        if self._limited:
            message = (
                f"generator-limited: {interval.generator_reason()} (sent "
                f"{interval.sent_rps or 0:.0f} of {self.load.rate or 0:g} req/s); the rate and the "
                "corrected tail are then probetop's (or this machine's) limit, not the server's"
            )
            emit(Status(self.id, t_ns, "warning", message))
        else:
            emit(Status(self.id, t_ns, "info", "generator keeps the rate again"))


def _default_id(url: str) -> str:
    try:
        checked = check_url(url)
    except (ValueError, ProbeError):
        return LOAD_KIND
    return f"{LOAD_KIND}:{url_labels([checked])[checked]}"


def _ms(us: float | None) -> float | None:
    return None if us is None else round(us / 1000.0, 3)


def _round(value: Any) -> float | None:
    return round(float(value), 3) if isinstance(value, (int, float)) else None


def _rate(n: int, seconds: float) -> float | None:
    return round(n / seconds, 3) if seconds > 0 else None
