"""sysbench 1.0.20's ``memory`` report, written from a MemProbe summary and read back.

Contract:
- ``format_report(summary, ...)`` prints the lines of ``sysbench memory run``
  from "Running memory speed test" on (options block, "Total operations: N
  (x per second)", "x MiB transferred (x MiB/sec)" unless --memory-oper none,
  General statistics, Latency (ms), Threads fairness) with sysbench's
  widths; ``[ 1s ] x MiB/sec`` lines when interval lines are asked for.
  probetop's own lines (header, interrupted) stay outside those sections.
- ``parse_report(text)`` reads those sections back, from our report or from
  real sysbench output, into the keys of the JSON document.
- ``json_document(summary, ...)`` is the ``--json`` output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

LATENCY_WIDTH = 53  # sysbench right-aligns latency values to this column
STAT_PREFIX = 41
FAIRNESS_PREFIX = 35


def _latency_line(label: str, value: float | None) -> str:
    left = f"         {label}:"
    return left + f"{(value or 0.0):.2f}".rjust(LATENCY_WIDTH - len(left))


def interval_line(row: Mapping[str, Any]) -> str:
    """sysbench's memory interval line: ``[ 1s ] 986.72 MiB/sec``."""
    t = float(row["t"])
    when = f"{t:.0f}" if abs(t - round(t)) < 0.05 else f"{t:.1f}"
    return f"[ {when}s ] {row['mibs']:4.2f} MiB/sec"


def format_report(
    summary: Mapping[str, Any], *, show_intervals: bool = False, reason: str | None = None
) -> str:
    s = summary
    lat = s["latency_ms"]
    fair = s["fairness"]
    pct = float(s.get("percentile", 95))
    lines = [
        f"probetop mem: sysbench 1.0.20 memory, engine {s.get('engine')}",
        "",
        "Running the test with following options:",
        f"Number of threads: {s['threads']}",
        "",
        "Running memory speed test with the following options:",
        f"  block size: {s['block_size'] // 1024}KiB",
        f"  total size: {s['total_size'] // 1024 // 1024}MiB",
        f"  operation: {s['oper']}",
        f"  scope: {s['scope']}",
        "",
        "Threads started!",
        "",
    ]
    if show_intervals:
        lines += [interval_line(r) for r in s.get("intervals", []) if r.get("full")]
        if s.get("intervals"):
            lines.append("")
    lines += [
        f"Total operations: {s['total_events']} ({s['ops_per_second']:8.2f} per second)",
        "",
    ]
    if s["oper"] != "none":
        lines += [
            f"{s['mib_transferred']:4.2f} MiB transferred ({s['mib_per_second']:4.2f} MiB/sec)",
            "",
        ]
    lines += [
        "",
        "General statistics:",
        "    total time:".ljust(STAT_PREFIX) + f"{s['total_time']:.4f}s",
        "    total number of events:".ljust(STAT_PREFIX) + f"{s['total_events']}",
        "",
        "Latency (ms):",
        _latency_line("min", lat.get("min")),
        _latency_line("avg", lat.get("avg")),
        _latency_line("max", lat.get("max")),
        _latency_line(f"{pct:g}th percentile", lat.get(f"p{pct:g}")),
        _latency_line("sum", lat.get("sum")),
        "",
        "Threads fairness:",
        "    events (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['events_avg']:.4f}/{fair['events_stddev']:3.2f}",
        "    execution time (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['time_avg']:.4f}/{fair['time_stddev']:3.2f}",
    ]
    if reason and reason.startswith("interrupted"):
        lines += [
            "",
            f"INTERRUPTED {reason[len('interrupted') :].strip()}: this report covers the "
            f"{s.get('total_time', 0.0):.2f} s that ran.",
        ]
    return "\n".join(lines) + "\n"


def json_document(summary: Mapping[str, Any], *, reason: str | None = None) -> dict[str, Any]:
    doc = dict(summary)
    doc["interrupted"] = bool(reason and reason.startswith("interrupted"))
    doc["reason"] = reason
    return doc


_NUM = r"([-+]?\d+(?:\.\d+)?)"
_PATTERNS = {
    "ops": rf"^Total operations: (\d+) \(\s*{_NUM} per second\)$",
    "mib": rf"^{_NUM} MiB transferred \({_NUM} MiB/sec\)$",
    "total_time": rf"total time:\s+{_NUM}s",
    "total_events": r"total number of events:\s+(\d+)",
    "lat_min": rf"^\s+min:\s+{_NUM}$",
    "lat_avg": rf"^\s+avg:\s+{_NUM}$",
    "lat_max": rf"^\s+max:\s+{_NUM}$",
    "lat_pct": rf"^\s+([\d.]+)th percentile:\s+{_NUM}$",
    "lat_sum": rf"^\s+sum:\s+{_NUM}$",
    "fair_events": rf"events \(avg/stddev\):\s+{_NUM}/{_NUM}",
    "fair_time": rf"execution time \(avg/stddev\):\s+{_NUM}/{_NUM}",
    "threads": r"^Number of threads:\s+(\d+)\s*$",
    "block_kib": r"^\s+block size: (\d+)KiB$",
    "total_mib": r"^\s+total size: (\d+)MiB$",
    "oper": r"^\s+operation: (\w+)$",
    "scope": r"^\s+scope: (\w+)$",
}
_INTERVAL = re.compile(rf"^\[ {_NUM}s \] {_NUM} MiB/sec$", re.MULTILINE)


def parse_report(text: str) -> dict[str, Any]:
    """Read a sysbench-style memory report (ours or sysbench's). Raises ValueError."""
    found = {k: m for k, p in _PATTERNS.items() if (m := re.search(p, text, re.MULTILINE))}
    missing = [k for k in ("ops", "total_time", "total_events") if k not in found]
    if missing:
        raise ValueError(f"not a sysbench memory report: missing {', '.join(missing)}")

    def num(key: str, group: int = 1) -> float | None:
        m = found.get(key)
        return float(m.group(group)) if m else None

    pct = num("lat_pct", 1) or 95.0
    doc: dict[str, Any] = {
        "total_events": int(found["ops"].group(1)),
        "ops_per_second": num("ops", 2),
        "mib_transferred": num("mib", 1),
        "mib_per_second": num("mib", 2),
        "total_time": num("total_time"),
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
            {"t": float(m.group(1)), "mibs": float(m.group(2))} for m in _INTERVAL.finditer(text)
        ],
        "interrupted": "INTERRUPTED" in text,
    }
    for key in ("threads", "block_kib", "total_mib"):
        if key in found:
            doc[key] = int(found[key].group(1))
    for key in ("oper", "scope"):
        if key in found:
            doc[key] = found[key].group(1)
    return doc
