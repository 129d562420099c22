"""sysbench 1.0.20's ``memory`` report, written from a MemProbe summary and read back.

Contract:
- ``format_report(summary, ...)`` prints the lines of ``sysbench memory run``
  from "Running memory speed test" on (options block, "Total operations: N
  (x per second)", "x MiB transferred (x MiB/sec)" unless --memory-oper none,
  then sysbench's shared sections from ``probes.core.sysbench.report``)
  with sysbench's widths; ``[ 1s ] x MiB/sec`` lines when interval lines are
  asked for, the last one at --time (as cpu's), with no empty line after
  them; the closing empty line, as sysbench's. probetop's own lines
  (header, interrupted) stay outside those sections.
- ``head_lines`` (banner to "Threads started!") and ``LiveLines`` (a
  sample's [ Ns ] line) are the same report printed as the run goes;
  ``format_report(..., rest_only=True)`` is then the rest.
- ``parse_report(text)`` reads those sections back, from our report or from
  real sysbench output, into the keys of the JSON document.
- ``json_document(summary, ...)`` is the ``--json`` output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample
from probetop.probes.core.sysbench.rate import QUEUE_FULL_MESSAGE
from probetop.probes.core.sysbench.report import (
    NUM,
    cumulative_fields,
    cumulative_sections,
    dropped_intervals_line,
    histogram_lines,
    interrupted_line,
    json_document,
    number,
    options_head,
    parse_sections,
    printed,
    prints_at_time,
    stamp,
)
from probetop.probes.core.sysbench.report import banner as sysbench_banner
from probetop.probes.mem.records import MemInterval

__all__ = [
    "LiveLines",
    "format_report",
    "head_lines",
    "interval_line",
    "json_document",
    "parse_report",
]


def interval_line(row: Mapping[str, Any], interval_s: float) -> str:
    """sysbench's memory interval line: ``[ 1s ] 986.72 MiB/sec`` (``interval_s``:
    the reporting period, which sets the stamp's decimals)."""
    return f"{stamp(float(row['t']), interval_s)} {row['mibs']:4.2f} MiB/sec"


def banner(summary: Mapping[str, Any]) -> str:
    """sysbench's first line, naming the engine that ran."""
    return sysbench_banner(f"{summary.get('engine')} engine")


def head_lines(
    s: Mapping[str, Any],
    report_interval_s: float | None,
    *,
    debug: bool = False,
    validate: bool = False,
) -> list[str]:
    """The report's lines before its interval lines: the banner to "Threads
    started!" and its empty line (what ``probetop mem`` prints as it starts);
    ``debug``/``validate``: --debug's and --validate's lines in it."""
    seed = int(s.get("rand_seed") or 0)
    head = options_head(
        str(s["threads"]), s.get("rate"), report_interval_s, seed, debug=debug, validate=validate
    )
    lines = [banner(s), "", *head]
    lines += [
        "",
        "",
        "Running memory speed test with the following options:",
        f"  block size: {s['block_size'] // 1024}KiB",
        f"  total size: {s['total_size'] // 1024 // 1024}MiB",
        f"  operation: {s['oper']}",
        f"  scope: {s['scope']}",
        "",
        "Initializing worker threads...",
        "",
        "Threads started!",
        "",
    ]
    return lines


class LiveLines:
    """The report's interval lines from a run's samples, as they arrive: the
    rows the probe keeps for ``format_report`` rebuilt from its samples
    (``MemInterval``), so the lines are the same, byte for byte."""

    def __init__(self, interval_s: float, time_s: float = 0.0) -> None:
        self.interval_s = interval_s
        self.time_s = time_s
        self._start_ns: int | None = None

    def __call__(self, sample: Sample) -> list[str]:
        rec = MemInterval.from_sample(sample)
        if self._start_ns is None:
            # The first interval starts when the run's clock did: the row's t
            # is measured from there (sample.interval_s is t1 - t0 in ns / 1e9).
            self._start_ns = sample.t_ns - round(sample.interval_s * 1e9)
        # The report prints full intervals, and the last one when it ended at --time.
        if rec.final and not prints_at_time(
            full=False,
            sliver=rec.mibs is None,
            stopped_by=(rec.summary or {}).get("stopped_by"),
            time_s=self.time_s,
            interval_s=self.interval_s,
        ):
            return []
        row = {"t": round((sample.t_ns - self._start_ns) / 1e9, 6), "mibs": rec.mibs}
        return [interval_line(row, self.interval_s)]


def format_report(
    summary: Mapping[str, Any],
    *,
    show_intervals: bool = False,
    report_interval_s: float | None = None,
    reason: str | None = None,
    rest_only: bool = False,
    histogram: bool = False,
) -> str:
    """The lines ``sysbench memory run`` prints, in its order and spacing;
    ``report_interval_s`` prints sysbench's "Report intermediate results" line,
    ``histogram`` its --histogram block (before "Total operations").
    ``rest_only``: what follows the interval lines, when the head and those
    lines were printed live (``LiveLines``): then no line was left out, so
    no note says so."""
    s = summary
    lines = [] if rest_only else head_lines(s, report_interval_s)
    if show_intervals and not rest_only:
        interval_s = float(report_interval_s or s.get("interval_s") or 1.0)
        lines += [interval_line(r, interval_s) for r in s.get("intervals", []) if printed(r)]
    if s.get("queue_full"):
        # sysbench's fatal error ends its output: no report (exit 1)
        return "\n".join([*lines, f"FATAL: {QUEUE_FULL_MESSAGE}"]) + "\n"
    if histogram:
        lines += histogram_lines(s.get("histogram") or {})
    # sysbench goes from the last interval line (or histogram) straight to "Total operations".
    lines += [
        f"Total operations: {s['total_events']} ({s['ops_per_second']:8.2f} per second)",
        "",
    ]
    if s["oper"] != "none":
        lines += [
            f"{s['mib_transferred']:4.2f} MiB transferred ({s['mib_per_second']:4.2f} MiB/sec)",
            "",
        ]
    lines += ["", *cumulative_sections(s), ""]  # sysbench ends its report with an empty line
    interrupted = interrupted_line(reason, s.get("total_time", 0.0))
    if interrupted:
        lines.append(interrupted)
    dropped = dropped_intervals_line(s) if show_intervals and not rest_only else None
    if dropped:
        lines.append(dropped)
    return "\n".join(lines) + "\n"


_PATTERNS = {
    "ops": rf"^Total operations: (\d+) \(\s*{NUM} per second\)$",
    "mib": rf"^{NUM} MiB transferred \({NUM} MiB/sec\)$",
    "block_kib": r"^\s+block size: (\d+)KiB$",
    "total_mib": r"^\s+total size: (\d+)MiB$",
    "oper": r"^\s+operation: (\w+)$",
    "scope": r"^\s+scope: (\w+)$",
}
_INTERVAL = re.compile(rf"^\[ {NUM}s \] {NUM} MiB/sec$", re.MULTILINE)


def parse_report(text: str) -> dict[str, Any]:
    """Read a sysbench-style memory report (ours or sysbench's). Raises ValueError."""
    found = parse_sections(
        text, _PATTERNS, required=("ops", "total_time", "total_events"), what="memory"
    )
    shared = cumulative_fields(found, text)
    doc: dict[str, Any] = {
        "total_events": int(found["ops"].group(1)),
        "ops_per_second": number(found, "ops", 2),
        "mib_transferred": number(found, "mib", 1),
        "mib_per_second": number(found, "mib", 2),
        "total_time": shared.pop("total_time"),
        **{k: v for k, v in shared.items() if k != "total_events"},
        "intervals": [
            {"t": float(m.group(1)), "mibs": float(m.group(2))} for m in _INTERVAL.finditer(text)
        ],
    }
    for key in ("block_kib", "total_mib"):
        if key in found:
            doc[key] = int(found[key].group(1))
    for key in ("oper", "scope"):
        if key in found:
            doc[key] = found[key].group(1)
    target = re.search(r"^Target transaction rate: (-?\d+)/sec$", text, re.MULTILINE)
    if target:
        doc["rate"] = int(target.group(1))
    return doc
