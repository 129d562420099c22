"""sysbench 1.0.20's ``cpu`` report, written from a CpuProbe summary and read back.

Contract:
- ``format_report(summary, ...)`` prints the sections, names, widths and
  meanings of ``sysbench cpu run`` (CPU speed, General statistics, Latency
  (ms), Threads fairness; ``[ 1s ] thds: ... eps: ... lat (ms,95%): ...``
  lines when interval lines are asked for, the last one at --time), from
  the ``sysbench 1.0.20 (using probetop X, ENGINE engine)`` banner to the
  closing empty line; then probetop's own lines (interrupted, notes,
  warnings), and for a sweep its table and chart before the last run's
  block, each clearly outside the sysbench sections.
- ``parse_report(text)`` reads the sysbench sections back, from our report
  or from real sysbench output, into the same keys as the JSON document.
- ``json_document(summary, ...)`` is the ``--json`` output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from probetop.probes import version

SCHED_IDLE_NOTE = (
    "more threads than 2 per CPU: the workers ran as SCHED_IDLE threads, so the "
    "dashboard and Ctrl-C stayed responsive (same events/s on an otherwise idle "
    "machine; any other load ran first)"
)
LATENCY_WIDTH = 53  # sysbench right-aligns latency values to this column
STAT_PREFIX = 41  # "    total time:" padded to this width
FAIRNESS_PREFIX = 35
PERCENTILE_DISABLED = "         percentile stats:               disabled"  # --percentile=0


SYSBENCH_VERSION = "1.0.20"  # the sysbench whose cpu test and report this follows


def _pct_label(pct: float) -> str:
    return f"{pct:g}th percentile"


def _latency_line(label: str, value: float | None) -> str:
    left = f"         {label}:"
    text = f"{(value or 0.0):.2f}"
    return left + text.rjust(LATENCY_WIDTH - len(left))


def interval_line(row: Mapping[str, Any], percentile: float) -> str:
    """sysbench's per-interval line: ``[ 1s ] thds: 2 eps: 5743.19 lat (ms,95%): 0.35``.

    Whole seconds as sysbench prints them; one decimal for sub-second intervals.
    """
    t = float(row["t"])
    when = f"{t:.0f}" if abs(t - round(t)) < 0.05 else f"{t:.1f}"
    return (
        f"[ {when}s ] thds: {row['threads']} eps: {row['eps']:4.2f} "
        f"lat (ms,{percentile:g}%): {(row.get('lat_pct_ms') or 0.0):4.2f}"
    )


def sysbench_block(s: Mapping[str, Any]) -> list[str]:
    """The four sysbench sections for one run (one thread count)."""
    lat = s["latency_ms"]
    fair = s["fairness"]
    pct = float(s.get("percentile", 95))
    pct_value = lat.get(f"p{pct:g}", lat.get("p95"))
    return [
        "CPU speed:",
        f"    events per second: {s['events_per_second']:8.2f}",
        "",
        "General statistics:",
        "    total time:".ljust(STAT_PREFIX) + f"{s['total_time']:.4f}s",
        "    total number of events:".ljust(STAT_PREFIX) + f"{s['total_events']}",
        "",
        "Latency (ms):",
        _latency_line("min", lat.get("min")),
        _latency_line("avg", lat.get("avg")),
        _latency_line("max", lat.get("max")),
        _latency_line(_pct_label(pct), pct_value) if pct > 0 else PERCENTILE_DISABLED,
        _latency_line("sum", lat.get("sum")),
        "",
        "Threads fairness:",
        "    events (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['events_avg']:.4f}/{fair['events_stddev']:3.2f}",
        "    execution time (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['time_avg']:.4f}/{fair['time_stddev']:3.2f}",
    ]


def sweep_table(rows: list[Mapping[str, Any]], percentile: float) -> list[str]:
    """Thread sweep: events/s, speedup and scaling efficiency vs 1 thread, and a bar chart."""
    out = [
        "Thread sweep (one run per thread count):",
        f"    threads  events/s     speedup  efficiency  lat (ms,{percentile:g}%)",
    ]
    top = max((r["events_per_second"] for r in rows), default=0.0) or 1.0
    for r in rows:
        speedup = "-" if r.get("speedup") is None else f"{r['speedup']:.2f}x"
        eff = "-" if r.get("efficiency") is None else f"{100 * r['efficiency']:.0f}%"
        lat = r.get("latency_pct_ms")
        out.append(
            f"    {r['threads']:>7}  {r['events_per_second']:>10.2f}  {speedup:>8}  {eff:>10}"
            f"  {('-' if lat is None else f'{lat:.2f}'):>10}"
        )
    out.append("")
    out.append("    events/s by threads:")
    for r in rows:
        bar = "#" * round(40 * r["events_per_second"] / top)
        out.append(f"    {r['threads']:>3} | {bar:<40} {r['events_per_second']:.0f}")
    return out


def banner(summary: Mapping[str, Any]) -> str:
    """sysbench's first line. The version is the sysbench whose method and
    report this follows (a script's ``sysbench (\\d+)\\.`` check picks the 1.0
    layout, which is the one printed); the parenthesis, where sysbench names
    its Lua runtime, names what really ran (docs/cpu.md#output)."""
    # The Python engine's label ("python engine: not comparable ...") says so here too.
    engine = summary.get("label") or f"{summary.get('engine')} engine"
    return f"sysbench {SYSBENCH_VERSION} (using probetop {version()}, {engine})"


def format_report(
    summary: Mapping[str, Any],
    *,
    show_intervals: bool = False,
    report_interval_s: float | None = None,
    reason: str | None = None,
) -> str:
    """The headless text report, line for line as ``sysbench cpu run`` (see
    the module docstring); ``report_interval_s`` prints sysbench's
    "Report intermediate results" line."""
    pct = float(summary.get("percentile", 95))
    sweep = summary.get("sweep")
    label = summary.get("label")
    lines = [banner(summary), "", "Running the test with following options:"]
    lines.append(
        "Number of threads: "
        + (
            f"{','.join(str(r['threads']) for r in sweep)} (sweep: one run per thread count)"
            if sweep
            else f"{summary.get('threads')}"
        )
    )
    if report_interval_s:
        lines.append(f"Report intermediate results every {report_interval_s:g} second(s)")
    lines += [
        # sysbench prints this for every test (cpu draws no random numbers in
        # either tool); kept so the report lines up with sysbench's.
        "Initializing random number generator from current time",
        "",
        "",
        f"Prime numbers limit: {summary.get('max_prime')}",
        "",
        "Initializing worker threads...",
        "",
        "Threads started!",
        "",
    ]
    if show_intervals:
        phase = None
        for row in summary.get("intervals", []):
            if sweep and row.get("phase") != phase:
                phase = row.get("phase")
                lines.append(f"-- {row['threads']} threads:")
            if row.get("full") or row.get("at_time"):
                lines.append(interval_line(row, pct))
        if sweep:
            lines.append("")
    if sweep:
        lines += sweep_table(sweep, pct)
        lines.append("")
        lines.append(f"Last run of the sweep ({summary.get('threads')} threads):")
    lines += sysbench_block(summary)
    lines.append("")  # sysbench ends its report with an empty line
    if reason and reason.startswith("interrupted"):
        lines += [
            f"INTERRUPTED {reason[len('interrupted') :].strip()}: this report covers the "
            f"{summary.get('total_time', 0.0):.2f} s that ran.",
        ]
    if summary.get("workers_sched_idle"):
        lines.append(f"NOTE: {SCHED_IDLE_NOTE}")
    if label:
        lines.append(f"WARNING: {label}")
    return "\n".join(lines) + "\n"


def json_document(summary: Mapping[str, Any], *, reason: str | None = None) -> dict[str, Any]:
    """The ``--json`` document: the summary plus how the run ended."""
    doc = dict(summary)
    doc["interrupted"] = bool(reason and reason.startswith("interrupted"))
    doc["reason"] = reason
    return doc


_NUM = r"([-+]?\d+(?:\.\d+)?)"
_PATTERNS = {
    "events_per_second": rf"events per second:\s+{_NUM}",
    "total_time": rf"total time:\s+{_NUM}s",
    "total_events": rf"total number of events:\s+{_NUM}",
    "lat_min": rf"^\s+min:\s+{_NUM}$",
    "lat_avg": rf"^\s+avg:\s+{_NUM}$",
    "lat_max": rf"^\s+max:\s+{_NUM}$",
    "lat_pct": rf"^\s+([\d.]+)th percentile:\s+{_NUM}$",
    "lat_sum": rf"^\s+sum:\s+{_NUM}$",
    "fair_events": rf"events \(avg/stddev\):\s+{_NUM}/{_NUM}",
    "fair_time": rf"execution time \(avg/stddev\):\s+{_NUM}/{_NUM}",
    "threads": r"Number of threads:\s+(\d+)\s*$",
    "max_prime": r"Prime numbers limit:\s+(\d+)",
}
_INTERVAL = re.compile(
    rf"^\[ {_NUM}s \] thds: (\d+) eps: {_NUM} lat \(ms,([\d.]+)%\): {_NUM}$", re.MULTILINE
)


def parse_report(text: str) -> dict[str, Any]:
    """Read a sysbench-style cpu report (ours or sysbench's). Raises ValueError."""
    found: dict[str, re.Match[str]] = {}
    for key, pattern in _PATTERNS.items():
        # The last match: a sweep report's final block is the one that counts.
        matches = list(re.finditer(pattern, text, re.MULTILINE))
        if matches:
            found[key] = matches[-1]
    missing = [k for k in ("events_per_second", "total_time", "total_events") if k not in found]
    if missing:
        raise ValueError(f"not a sysbench cpu report: missing {', '.join(missing)}")

    def num(key: str, group: int = 1) -> float | None:
        m = found.get(key)
        return float(m.group(group)) if m else None

    pct = num("lat_pct", 1) or 95.0
    doc: dict[str, Any] = {
        "events_per_second": num("events_per_second"),
        "total_time": num("total_time"),
        "total_events": int(num("total_events") or 0),
        "percentile": pct,
        "latency_ms": {
            "min": num("lat_min"),
            "avg": num("lat_avg"),
            "max": num("lat_max"),
            f"p{pct:g}": num("lat_pct", 2),
            "sum": num("lat_sum"),
        },
        "fairness": {
            "events_avg": num("fair_events", 1),
            "events_stddev": num("fair_events", 2),
            "time_avg": num("fair_time", 1),
            "time_stddev": num("fair_time", 2),
        },
        "intervals": [
            {
                "t": float(m.group(1)),
                "threads": int(m.group(2)),
                "eps": float(m.group(3)),
                "percentile": float(m.group(4)),
                "lat_pct_ms": float(m.group(5)),
            }
            for m in _INTERVAL.finditer(text)
        ],
        "interrupted": "INTERRUPTED" in text,
        "python_engine": "python engine: not comparable with sysbench" in text,
    }
    if "threads" in found:
        doc["threads"] = int(found["threads"].group(1))
    if "max_prime" in found:
        doc["max_prime"] = int(found["max_prime"].group(1))
    return doc
