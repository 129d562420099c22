"""What ``--assert`` can check: every assertable metric, per probe kind, read
from the probe's summary (the footer's and the ``--json`` report's numbers).

Contract:
- ``CATALOG``: name -> ``Assertable`` (the probe kind it reads, its unit,
  how to read it from one summary, a line of help). Adding a summary field
  is one entry here: ``_at(KIND, "name", "unit", "key", "sub-key")``.
- ``assertables(kinds)``: the entries for a set of probe kinds, in catalog
  order (what an unknown-metric error lists).
- ``COMMAND_KINDS``: the probe kinds each command runs (``demo``: all).
- ``direction(kind, metric, unit)``: +1 when a larger per-interval value is
  better (rates), -1 when smaller is better (latencies, losses, errors),
  0 when neither (progress, thread counts, passive load): what
  ``probetop compare`` calls a regression.
- ``TARGET_PARAMS``: per kind, the parameters that name a target
  ``probetop demo`` creates afresh for every run (a temporary file, a
  random port), which ``compare`` ignores between two demo recordings.

Summaries are read through the families' front doors (their kind
constants, ``disk.Plateau`` for a warm-up's plateau); a value the summary
does not have (an older recording, a probe that never ran) reads as None,
which fails an assertion rather than passing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes import cpu, disk, http, icmp, mem, registry
from probetop.tui.analysis.units import Unit

Reader = Callable[[Mapping[str, Any]], float | None]


@dataclass(frozen=True, slots=True)
class Assertable:
    """One metric ``--assert`` can check."""

    name: str
    kind: str
    unit: Unit
    read: Reader
    help: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _dig(summary: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = summary
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _path(*keys: str, scale: float = 1.0) -> Reader:
    def read(summary: Mapping[str, Any]) -> float | None:
        value = _number(_dig(summary, keys))
        return None if value is None else value * scale

    return read


def _at(
    kind: str,
    name: str,
    unit: str,
    *keys: str,
    scale: float = 1.0,
    help: str = "",
    basis: tuple[str, ...] = (),
) -> Assertable:
    """One summary field. ``basis``: the count of observations the value is
    a statistic of (events, I/Os, replies): with none, the value is None, so
    an assertion on it fails instead of passing on nothing (fio reports
    percentiles of 0 for a direction that did no I/O)."""
    read = _path(*keys, scale=scale)
    if basis:
        read = _given(_path(*basis), read)
    return Assertable(name, kind, Unit.of(unit), read, help or ".".join(keys))


def _given(count: Reader, read: Reader) -> Reader:
    def checked(summary: Mapping[str, Any]) -> float | None:
        return read(summary) if (count(summary) or 0) > 0 else None

    return checked


# -- http: one probe may sample several URLs; latency is the worst URL's, counts the sum.
# Latencies cover successful responses (2xx/3xx) unless the run had --include-errors.


def _http_urls(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    urls = summary.get("urls")
    return [u for u in urls.values() if isinstance(u, Mapping)] if isinstance(urls, Mapping) else []


def _http_latency(phase: str, stat: str) -> Reader:
    def read(summary: Mapping[str, Any]) -> float | None:
        found = [_number(_dig(u, ("phases_ms", phase, stat))) for u in _http_urls(summary)]
        values = [v for v in found if v is not None]
        return max(values) if values else None

    return read


def _http_requests(summary: Mapping[str, Any]) -> float | None:
    urls = _http_urls(summary)
    return float(sum(_number(u.get("requests")) or 0.0 for u in urls)) if urls else None


def _http_errors(summary: Mapping[str, Any]) -> float | None:
    urls = _http_urls(summary)
    if not urls:
        return None
    total = 0.0
    for u in urls:
        errors = u.get("errors")
        if isinstance(errors, Mapping):
            total += sum(_number(v) or 0.0 for v in errors.values())
    return total


def _http_sum(*keys: str) -> Reader:
    """A count summed over every URL (None without URLs)."""

    def read(summary: Mapping[str, Any]) -> float | None:
        urls = _http_urls(summary)
        if not urls:
            return None
        return float(sum(_number(_dig(u, keys)) or 0.0 for u in urls))

    return read


def _http_worst(*keys: str) -> Reader:
    """The worst (largest) URL's value; None when no URL has one."""

    def read(summary: Mapping[str, Any]) -> float | None:
        found = [_number(_dig(u, keys)) for u in _http_urls(summary)]
        values = [v for v in found if v is not None]
        return max(values) if values else None

    return read


def _http_error_rate(summary: Mapping[str, Any]) -> float | None:
    requests, errors = _http_requests(summary), _http_errors(summary)
    if not requests or errors is None:
        return None
    return 100.0 * errors / requests


# -- warm-up: the plateau through the family's own reader


def _plateau_reached(summary: Mapping[str, Any]) -> float | None:
    plateau = summary.get("plateau")
    if not isinstance(plateau, Mapping):
        return None
    return disk.Plateau.from_dict(plateau).reached_at_s


_HTTP_STATS = ("min", "p50", "p90", "p95", "p99", "max", "mean")
_HTTP_PHASES = ("dns", "tcp", "tls", "server", "transfer", "ttfb", "total")
_RTT_STATS = ("min", "avg", "max", "mdev", "p50", "p90", "p99")
_ICMP_COUNTS = ("sent", "received", "lost", "duplicates", "reordered", "late")
_CPU_LATENCY = ("min", "avg", "max", "p50", "p95", "p99")
_FIO_LATENCIES = (
    ("slat.mean", "slat", "mean"),
    ("clat.mean", "clat", "mean"),
    ("clat.max", "clat", "max"),
    ("lat.mean", "lat", "mean"),
    ("lat.max", "lat", "max"),
)
_FIO_PCTS = {
    "p50": "50.000000",
    "p90": "90.000000",
    "p95": "95.000000",
    "p99": "99.000000",
    "p99.9": "99.900000",
}


def _mem_entries() -> list[Assertable]:
    M, ops = mem.KIND, ("total_events",)
    return [
        _at(
            M,
            "mem.ops_per_second",
            "/s",
            "ops_per_second",
            help="operations per second (sysbench)",
            basis=ops,
        ),
        _at(
            M,
            "mem.mib_per_second",
            "MiB/s",
            "mib_per_second",
            help="MiB per second (sysbench)",
            basis=ops,
        ),
        _at(M, "mem.total_events", "", "total_events", help="operations completed"),
        *(
            _at(
                M,
                f"mem.latency.{s}",
                "ms",
                "latency_ms",
                s,
                help=f"operation latency {s}",
                basis=ops,
            )
            for s in ("min", "avg", "max", "p95")
        ),
        _at(M, "mem.fairness.events_stddev", "", "fairness", "events_stddev"),
    ]


def _entries() -> list[Assertable]:
    C, IO, WU, IC, HT = cpu.KIND, disk.IOPS_KIND, disk.WARMUP_KIND, icmp.KIND, http.KIND
    out = [
        _at(
            C,
            "cpu.events_per_second",
            "/s",
            "events_per_second",
            help="events per second (sysbench)",
            basis=("total_events",),
        ),
        _at(C, "cpu.total_events", "", "total_events", help="events completed"),
        *(
            _at(
                C,
                f"cpu.latency.{s}",
                "ms",
                "latency_ms",
                s,
                help=f"event latency {s}",
                basis=("total_events",),
            )
            for s in _CPU_LATENCY
        ),
        _at(C, "cpu.fairness.events_stddev", "", "fairness", "events_stddev"),
        *_mem_entries(),
    ]
    for d in ("read", "write", "trim"):
        ios = (d, "total_ios")
        out += [
            _at(IO, f"iops.{d}.iops", "/s", d, "iops", help=f"{d} IOPS (fio)"),
            _at(IO, f"iops.{d}.bw", "B/s", d, "bw_bytes", help=f"{d} bandwidth"),
            _at(IO, f"iops.{d}.total_ios", "", d, "total_ios"),
            _at(IO, f"iops.{d}.errors", "", d, "errors"),
            *(
                _at(IO, f"iops.{d}.{name}", "us", d, f"{part}_ns", stat, scale=1e-3, basis=ios)
                for name, part, stat in _FIO_LATENCIES
            ),
            *(
                _at(
                    IO,
                    f"iops.{d}.clat.{name}",
                    "us",
                    d,
                    "clat_ns",
                    "percentile",
                    key,
                    scale=1e-3,
                    basis=ios,
                )
                for name, key in _FIO_PCTS.items()
            ),
        ]
    out += [
        _at(WU, "warmup.bw", "B/s", "bw_bytes", help="bandwidth over the run"),
        _at(WU, "warmup.iops", "/s", "iops", help="IOPS over the run"),
        _at(WU, "warmup.bytes", "B", "bytes", help="bytes transferred"),
        _at(WU, "warmup.seconds", "s", "seconds", help="seconds of I/O"),
        _at(WU, "warmup.complete", "", "complete", help="1 when the pass covered the range"),
        Assertable(
            "warmup.plateau.reached_at_s",
            WU,
            Unit.of("s"),
            _plateau_reached,
            "when fio's steady-state criterion was first met",
        ),
        _at(IC, "icmp.loss", "%", "loss_pct", help="lost / (lost + received)"),
        *(
            _at(
                IC,
                f"icmp.rtt.{s}",
                "us",
                "rtt_us",
                s,
                help=f"round-trip time {s}",
                basis=("received",),
            )
            for s in _RTT_STATS
        ),
        *(_at(IC, f"icmp.{k}", "", k) for k in _ICMP_COUNTS),
        _at(IC, "icmp.replies_per_second", "/s", "replies_per_second"),
        _at(IC, "icmp.pps", "/s", "pps", help="packets through the target per second"),
        _at(IC, "icmp.jitter", "us", "jitter_us", "avg", help="mean |rtt - previous rtt|"),
        _at(IC, "icmp.jitter.max", "us", "jitter_us", "max", help="largest |rtt - previous rtt|"),
        _at(IC, "icmp.outage", "s", "outage_s", help="lost requests x the time between requests"),
    ]
    for s in _HTTP_STATS:  # http.p95: the whole request (total), the worst URL's
        out.append(
            Assertable(f"http.{s}", HT, Unit.of("ms"), _http_latency("total", s), f"total time {s}")
        )
    for phase in _HTTP_PHASES:
        for s in _HTTP_STATS:
            out.append(
                Assertable(
                    f"http.{phase}.{s}", HT, Unit.of("ms"), _http_latency(phase, s), f"{phase} {s}"
                )
            )
    out += [
        Assertable("http.requests", HT, Unit.of(""), _http_requests, "requests, all URLs"),
        Assertable("http.errors", HT, Unit.of(""), _http_errors, "failed requests, all URLs"),
        Assertable("http.error_rate", HT, Unit.of("%"), _http_error_rate, "errors / requests"),
        *(
            Assertable(
                f"http.class.{c.value}",
                HT,
                Unit.of(""),
                _http_sum("classes", c.value),
                f"requests with status class {c.value}, all URLs",
            )
            for c in http.STATUS_CLASSES
        ),
        Assertable(
            "http.jitter",
            HT,
            Unit.of("ms"),
            _http_worst("jitter_ms", "mean"),
            "mean |total difference| of consecutive successes, worst URL",
        ),
        Assertable(
            "http.jitter.max",
            HT,
            Unit.of("ms"),
            _http_worst("jitter_ms", "max"),
            "largest |total difference| of consecutive successes, worst URL",
        ),
        Assertable(
            "http.outage",
            HT,
            Unit.of("s"),
            _http_worst("outage", "seconds"),
            "seconds with no successful response, worst URL",
        ),
        Assertable(
            "http.skipped_turns",
            HT,
            Unit.of(""),
            _http_sum("skipped_turns"),
            "turns skipped: the previous request still running, all URLs",
        ),
        Assertable(
            "http.discarded",
            HT,
            Unit.of(""),
            _http_sum("discarded"),
            "warm-up requests discarded (--warmup), all URLs",
        ),
    ]
    return out


CATALOG: dict[str, Assertable] = {a.name: a for a in _entries()}

COMMAND_KINDS: dict[str, tuple[str, ...]] = {f.name: f.kinds for f in registry.families()}
ALL_KINDS: tuple[str, ...] = tuple(k for kinds in COMMAND_KINDS.values() for k in kinds)


def assertables(kinds: Iterable[str]) -> list[Assertable]:
    """The catalog entries for these probe kinds, in catalog order."""
    wanted = set(kinds)
    return [a for a in CATALOG.values() if a.kind in wanted]


TARGET_PARAMS: dict[str, tuple[str, ...]] = {
    disk.IOPS_KIND: ("target", "backing_device"),
    disk.WARMUP_KIND: ("target", "checkpoint", "backing_device"),
    http.KIND: ("urls", "labels"),
    icmp.KIND: ("host",),
}

ENTITY_PARAMS: dict[str, str] = {http.KIND: "labels"}
"""Per kind, the parameter listing a probe's entities in order (http's URL
labels): two runs against fresh targets pair their entities by position."""

_LOWER_BETTER_WORDS = ("loss", "lost", "error", "drop", "late", "missed", "duplicate", "reorder")
_NEUTRAL = {
    "threads",
    "thread_events",
    "thread_ops",
    "http_code",
    "requests",
    "in_flight",
    "progress_pct",
    "done_bytes",
    "total_bytes",
    "eta_s",
    "elapsed_s",
}
_TIME_UNITS = {"ns", "us", "µs", "ms", "s"}


def direction(kind: str, metric: str, unit: str) -> int:
    """+1 if larger is better, -1 if smaller is better, 0 if neither (see above)."""
    if kind.startswith("system.") or metric in _NEUTRAL:
        return 0
    if any(word in metric for word in _LOWER_BETTER_WORDS):
        return -1
    if unit in _TIME_UNITS:
        return -1
    if unit.endswith("/s"):
        return 1
    return 0
