"""sysbench 1.0.20's ``cpu`` report, written from a CpuProbe summary and read back.

Contract:
- ``format_report(summary, ...)`` prints the sections, names, widths and
  meanings of ``sysbench cpu run`` (CPU speed, General statistics, Latency
  (ms), Threads fairness; ``[ 1s ] thds: ... eps: ... lat (ms,95%): ...``
  lines when interval lines are asked for, the last one at --time), from
  the ``sysbench 1.0.20 (using probetop X, ENGINE engine)`` banner to the
  closing empty line; then probetop's own lines (interrupted, notes,
  warnings), and for a sweep its table and chart before the last run's
  block, each clearly outside the sysbench sections. With ``histogram``
  (--histogram), sysbench's latency histogram before "CPU speed:".
- ``head_lines`` (banner to "Threads started!") and ``LiveLines`` (a
  sample's [ Ns ] lines) are the same report printed as the run goes;
  ``format_report(..., rest_only=True)`` is then the rest.
- ``parse_report(text)`` reads the sysbench sections back, from our report
  or from real sysbench output, into the same keys as the JSON document.
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
from probetop.probes.cpu.records import CpuInterval

__all__ = [
    "LiveLines",
    "format_report",
    "head_lines",
    "interval_line",
    "json_document",
    "parse_report",
    "prints_at_time",
]

SCHED_IDLE_NOTE = (
    "more threads than 2 per CPU: the workers ran as SCHED_IDLE threads, so the "
    "dashboard and Ctrl-C stayed responsive (same events/s on an otherwise idle "
    "machine; any other load ran first)"
)


def interval_line(row: Mapping[str, Any], percentile: float, interval_s: float) -> str:
    """sysbench's per-interval line: ``[ 1s ] thds: 2 eps: 5743.19 lat (ms,95%): 0.35``
    (``interval_s``: the reporting period, which sets the stamp's decimals)."""
    return (
        f"{stamp(float(row['t']), interval_s)} thds: {row['threads']} eps: {row['eps']:4.2f} "
        f"lat (ms,{percentile:g}%): {(row.get('lat_pct_ms') or 0.0):4.2f}"
    )


def queue_line(row: Mapping[str, Any], interval_s: float) -> str | None:
    """sysbench's second line per interval at --rate:
    ``[ 1s ] queue length: 0 concurrency: 1`` (None without --rate)."""
    if row.get("queue_length") is None:
        return None
    return (
        f"{stamp(float(row['t']), interval_s)} queue length: {row['queue_length']} "
        f"concurrency: {row.get('concurrency') or 0}"
    )


def interval_lines(row: Mapping[str, Any], percentile: float, interval_s: float) -> list[str]:
    """An interval's lines: sysbench's ``thds:`` line, and its queue line at --rate."""
    queue = queue_line(row, interval_s)
    return [interval_line(row, percentile, interval_s), *([queue] if queue else [])]


def sysbench_block(s: Mapping[str, Any]) -> list[str]:
    """cpu's sections for one run (one thread count): CPU speed, then the shared ones."""
    return [
        "CPU speed:",
        f"    events per second: {s['events_per_second']:8.2f}",
        "",
        *cumulative_sections(s),
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
    """sysbench's first line, naming the engine that ran (docs/cpu.md#output)."""
    # The Python engine's label ("python engine: not comparable ...") says so here too.
    return sysbench_banner(summary.get("label") or f"{summary.get('engine')} engine")


def head_lines(
    summary: Mapping[str, Any],
    report_interval_s: float | None,
    *,
    debug: bool = False,
    validate: bool = False,
) -> list[str]:
    """The report's lines before its interval lines: the banner to "Threads
    started!" and its empty line (what ``probetop cpu`` prints as it starts);
    ``debug``/``validate``: --debug's and --validate's lines in it."""
    sweep = summary.get("sweep")
    threads = (
        f"{','.join(str(r['threads']) for r in sweep)} (sweep: one run per thread count)"
        if sweep
        else f"{summary.get('threads')}"
    )
    seed = int(summary.get("rand_seed") or 0)
    head = options_head(
        threads, summary.get("rate"), report_interval_s, seed, debug=debug, validate=validate
    )
    lines = [banner(summary), "", *head]
    lines += [
        "",
        "",
        f"Prime numbers limit: {summary.get('max_prime')}",
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
    (``CpuInterval``), so the lines are the same, byte for byte."""

    def __init__(self, percentile: float, sweep: bool, time_s: float, interval_s: float) -> None:
        self.percentile = percentile
        self.sweep = sweep
        self.time_s = time_s
        self.interval_s = interval_s
        self._phase: int | None = None
        self._start_ns: int | None = None

    def __call__(self, sample: Sample) -> list[str]:
        rec = CpuInterval.from_sample(sample)
        out: list[str] = []
        if self._start_ns is None or rec.phase != self._phase:
            if self.sweep and rec.phase != self._phase:
                out.append(f"-- {rec.threads} threads:")
            # A phase's first interval starts when its clock did: the row's t is
            # measured from there (sample.interval_s is t1 - t0 in ns / 1e9).
            self._phase = rec.phase
            self._start_ns = sample.t_ns - round(sample.interval_s * 1e9)
        row = {
            "t": round((sample.t_ns - self._start_ns) / 1e9, 6),
            "threads": rec.threads,
            "eps": rec.eps,
            "lat_pct_ms": rec.lat_pct_ms,
            "full": rec.full,
            "queue_length": rec.queue_length,
            "concurrency": rec.concurrency,
            "at_time": prints_at_time(
                full=rec.full,
                sliver=rec.eps is None,
                stopped_by=(rec.phase_summary or {}).get("stopped_by"),
                time_s=self.time_s,
                interval_s=self.interval_s,
            ),
        }
        if printed(row):
            out += interval_lines(row, self.percentile, self.interval_s)
        return out


def format_report(
    summary: Mapping[str, Any],
    *,
    show_intervals: bool = False,
    report_interval_s: float | None = None,
    reason: str | None = None,
    rest_only: bool = False,
    histogram: bool = False,
) -> str:
    """The headless text report, line for line as ``sysbench cpu run`` (see
    the module docstring); ``report_interval_s`` prints sysbench's
    "Report intermediate results" line, ``histogram`` its --histogram block
    (of the last run of a sweep, before its sections). ``rest_only``: what follows the
    interval lines, when the head and those lines were printed live
    (``LiveLines``): then no line was left out, so no note says so."""
    pct = float(summary.get("percentile", 95))
    sweep = summary.get("sweep")
    label = summary.get("label")
    lines = [] if rest_only else head_lines(summary, report_interval_s)
    if show_intervals and not rest_only:
        interval_s = float(report_interval_s or summary.get("interval_s") or 1.0)
        phase = None
        for row in summary.get("intervals", []):
            if sweep and row.get("phase") != phase:
                phase = row.get("phase")
                lines.append(f"-- {row['threads']} threads:")
            if printed(row):
                lines += interval_lines(row, pct, interval_s)
    if show_intervals and sweep:
        lines.append("")
    if sweep:
        lines += sweep_table(sweep, pct)
        lines.append("")
        lines.append(f"Last run of the sweep ({summary.get('threads')} threads):")
    if summary.get("queue_full"):
        # sysbench's fatal error ends its output: no sections (exit 1)
        return "\n".join([*lines, f"FATAL: {QUEUE_FULL_MESSAGE}"]) + "\n"
    if histogram:
        lines += histogram_lines(summary.get("histogram") or {})
    lines += sysbench_block(summary)
    lines.append("")  # sysbench ends its report with an empty line
    interrupted = interrupted_line(reason, summary.get("total_time", 0.0))
    if interrupted:
        lines.append(interrupted)
    dropped = dropped_intervals_line(summary) if show_intervals and not rest_only else None
    if dropped:
        lines.append(dropped)
    if summary.get("workers_sched_idle"):
        lines.append(f"NOTE: {SCHED_IDLE_NOTE}")
    if label:
        lines.append(f"WARNING: {label}")
    return "\n".join(lines) + "\n"


_PATTERNS = {
    "events_per_second": rf"events per second:\s+{NUM}",
    "max_prime": r"Prime numbers limit:\s+(\d+)",
}
_INTERVAL = re.compile(
    rf"^\[ {NUM}s \] thds: (\d+) eps: {NUM} lat \(ms,([\d.]+)%\): {NUM}$", re.MULTILINE
)
_QUEUE = re.compile(rf"^\[ {NUM}s \] queue length: (\d+) concurrency: (\d+)$", re.MULTILINE)
_TARGET = re.compile(r"^Target transaction rate: (-?\d+)/sec$", re.MULTILINE)


def parse_report(text: str) -> dict[str, Any]:
    """Read a sysbench-style cpu report (ours or sysbench's). Raises ValueError."""
    found = parse_sections(
        text,
        _PATTERNS,
        required=("events_per_second", "total_time", "total_events"),
        what="cpu",
    )
    shared = cumulative_fields(found, text)
    doc: dict[str, Any] = {
        "events_per_second": number(found, "events_per_second"),
        "total_time": shared.pop("total_time"),
        "total_events": shared.pop("total_events"),
        **shared,
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
        "python_engine": "python engine: not comparable with sysbench" in text,
    }
    if "max_prime" in found:
        doc["max_prime"] = int(found["max_prime"].group(1))
    target = _TARGET.search(text)
    if target:
        doc["rate"] = int(target.group(1))
        # --rate: each [ Ns ] line is followed by its queue line
        queues = {float(m.group(1)): m for m in _QUEUE.finditer(text)}
        for row in doc["intervals"]:
            m = queues.get(row["t"])
            if m:
                row["queue_length"] = int(m.group(2))
                row["concurrency"] = int(m.group(3))
    return doc
