"""The disk commands' headless reports: fio-like text, or one JSON document.

Contract:
- The JSON documents are the probes' ``summary()`` (fio's shape for IOPS, the
  warm-up's fields in docs/warmup.md) plus ``error`` when the run failed:
  ``iops_document`` / ``warmup_document``.
- ``format_iops_report`` / ``format_warmup_report`` turn the same document into
  the text report (no trailing newline). The IOPS report's lines from fio's
  job header to ``Disk stats`` are fio's ``--output-format=normal`` layout.
  A run stopped before it measured (during the file's layout) says how far
  the layout got and what was undone.
- ``iops_output``: the IOPS report in one of fio's ``--output-format``
  names (normal: the text above; terse, json, json+: ``fiodoc``).
- ``iops_exit_code`` / ``warmup_exit_code``: 2 when the probe failed (for the
  warm-up also when a pass failed); for the warm-up 1 when ``--verify`` found
  bad sectors or I/Os failed (bad ranges), ``NOT_WARMED_EXIT`` (3) when a
  whole read pass left the volume "not warmed" (never-written blocks a read
  cannot allocate); 128 + the signal's number when a signal interrupted the
  run (130 for SIGINT, 143 for SIGTERM; the partial report is printed
  first); else 0.
- Every figure with a unit is written by ``units`` (fio's choice of unit and
  rounding: ``BW=1B/s``, never ``0.0MB/s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.disk import units
from probetop.probes.disk.passes import Findings, PassTotals, WarmupSummary

NOT_WARMED_EXIT = 3  # a read pass ran to its end and the volume is not warmed


def iops_document(summary: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    """The IOPS run's JSON document: the summary, and ``error`` if it failed."""
    doc = dict(summary)
    if error:
        doc["error"] = error
    return doc


def iops_output(
    summary: Mapping[str, Any],
    error: str | None,
    output_format: str,
    *,
    target: str,
    reason: str,
    duration_s: float,
) -> str:
    """The headless report in one of fio's ``--output-format`` names
    (``settings.OUTPUT_FORMATS``): ``normal`` is ``format_iops_report``,
    the others fio's documents (``fiodoc``). No trailing newline."""
    import json

    if output_format == "normal":
        return format_iops_report(
            iops_document(summary, error), target=target, reason=reason, duration_s=duration_s
        )
    from probetop.probes.disk import fiodoc  # numpy: only when asked for

    if output_format == "terse":
        return fiodoc.terse_line(summary)  # fio too says an error on stderr only
    doc = fiodoc.fio_document(summary, plus=output_format == "json+", error=error, reason=reason)
    return json.dumps(doc, indent=2, default=str)


def _direction_lines(name: str, d: Mapping[str, Any]) -> list[str]:
    """fio's block for one direction: ``IOPS=``, ``BW=`` and ``io/runtime`` in
    fio's units (``units``), then slat, clat, lat and clat's percentiles in
    fio's scale."""
    runtime_ms = int(d.get("runtime") or d.get("runtime_ms") or 0)
    bw = units.rates_per_runtime(int(d["io_bytes"]), runtime_ms)
    iops = units.rates_per_runtime(int(d["total_ios"]), runtime_ms)
    lines = [
        f"  {name}: IOPS={units.count(iops)}, BW={units.bandwidth(bw)}"
        f"({units.size(d['io_bytes'])}/{runtime_ms}msec)"
        + ("; 0 zone resets" if name == "write" else "")  # fio 3.33's write line
        + (f", errors={d['errors']}" if d.get("errors") else ""),
    ]
    # fio's order and labels; a latency with no samples (slat for psync) is
    # left out, as fio does. Reports written before slat/lat existed have clat only.
    for label, key in (("slat", "slat_ns"), ("clat", "clat_ns"), (" lat", "lat_ns")):
        lat = d.get(key) or {}
        if lat.get("N"):
            scale = units.LatencyScale.for_summary(lat["min"], lat["max"], lat["stddev"])
            lines.append(
                f"    {label} ({scale.name}): min={units.num2str(scale.truncate(lat['min']), 6)}, "
                f"max={units.num2str(scale.truncate(lat['max']), 6)}, "
                f"avg={scale.scale(lat['mean']):5.02f}, stdev={scale.scale(lat['stddev']):5.02f}"
            )
    clat = d["clat_ns"]
    pct = clat.get("percentile") or {}
    if pct:
        # fio's show_clat_percentiles: a header line, then four " %5.2fth=[%5llu]"
        # cells a row after "     |", comma-separated, the last without one.
        pscale = units.LatencyScale.for_values([int(v) for v in pct.values()])
        cells = [f" {float(k):5.2f}th=[{pscale.round_up(int(v)):5d}]" for k, v in pct.items()]
        lines.append(f"    clat percentiles ({pscale.name}):")
        for i in range(0, len(cells), 4):
            row = cells[i : i + 4]
            last = i + 4 >= len(cells)
            lines.append("     |" + ",".join(row) + ("" if last else ","))
    return lines


def _run_status_line(name: str, d: Mapping[str, Any]) -> str:
    """fio's "Run status group" line for one direction (one group: the
    slowest and fastest job are given the group's rate)."""
    runtime_ms = int(d.get("runtime") or d.get("runtime_ms") or 0)
    bw = units.rates_per_runtime(int(d["io_bytes"]), runtime_ms)
    iec = units.num2str(bw, pow2=True, unit="B/s")
    si = units.num2str(bw, pow2=False, unit="B/s")
    io = int(d["io_bytes"])
    return (
        f"{name.upper():>7}: bw={iec} ({si}), {iec}-{iec} ({si}-{si}), "
        f"io={units.size(io)} ({units.num2str(io, pow2=False, unit='B')}), "
        f"run={runtime_ms}-{runtime_ms}msec"
    )


def _disk_stats_lines(disks: list[Mapping[str, Any]]) -> list[str]:
    """fio's "Disk stats (read/write):" block (show_disk_util)."""
    if not disks:
        return []
    lines = ["", "Disk stats (read/write):"]
    for u in disks:
        lines.append(
            f"  {u['name']}: ios={u['read_ios']}/{u['write_ios']}, "
            f"merge={u['read_merges']}/{u['write_merges']}, "
            f"ticks={u['read_ticks']}/{u['write_ticks']}, in_queue={u['in_queue']}, "
            f"util={float(u['util']):3.2f}%"
        )
    return lines


def _job_header(doc: Mapping[str, Any]) -> str:
    """fio's job line: ``NAME: (groupid=0, jobs=N): err= 0: pid=PID: DATE``."""
    import os
    import shlex
    import time

    name = "probetop"
    for arg in shlex.split(str(doc.get("fio_command") or "")):
        if arg.startswith("--name="):
            name = arg.removeprefix("--name=")
    jobs = int((doc.get("params") or {}).get("jobs") or 1)
    stamp = int(doc.get("finished_unix_ms") or time.time() * 1000) // 1000
    err = 1 if doc.get("error") else 0
    return f"{name}: (groupid=0, jobs={jobs}): err={err:2d}: pid={os.getpid()}: {time.ctime(stamp)}"


def format_iops_report(
    doc: Mapping[str, Any], *, target: str, reason: str, duration_s: float
) -> str:
    """fio-like text: one block per direction the pattern does, and fio's command."""
    out = [f"probetop iops {target}: {reason}, {duration_s:.1f} s"]
    out += [f"  note: {n}" for n in doc.get("notes", [])]
    layout = doc.get("layout")
    if layout:
        out.append(
            f"  layout {layout.get('state')}: {layout.get('bytes', 0):,} of "
            f"{layout.get('total_bytes', 0):,} bytes written"
            + (f"; {layout['undone']}" if layout.get("undone") else "")
            + "; nothing was measured"
        )
    params = doc.get("params", {})
    shown = [
        name
        for name, other in (("read", ("write", "randwrite")), ("write", ("read", "randread")))
        if params.get("rw") not in other and name in doc
    ]
    if shown:  # fio's layout from here on, line for line (values are ours)
        out.append(_job_header(doc))
        for name in shown:
            out += _direction_lines(name, doc[name])
        out += ["", "Run status group 0 (all jobs):"]
        out += [_run_status_line(name, doc[name]) for name in shown]
        out += _disk_stats_lines(list(doc.get("disk_util") or []))
        out.append("")
    out.append(f"  same job in fio: {doc.get('fio_command')}")
    if doc.get("error"):
        out.append(f"  error: {doc['error']}")
    return "\n".join(out)


def iops_exit_code(error: str | None, *, signal_status: int = 0) -> int:
    """2 when the probe failed, else ``signal_status`` (128 + the number of
    the signal that stopped the run, 0 when none did: the partial report is
    printed, as ``cpu`` and ``http`` do)."""
    if error:
        return 2
    return signal_status


def warmup_document(summary: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    """The warm-up's JSON document: the summary, and ``error`` if it failed
    (the probe's own message, naming the checkpoint, wins)."""
    doc = dict(summary)
    if error and not doc.get("error"):
        doc["error"] = error
    return doc


def _pass_row(row: PassTotals) -> str:
    plateau = row.plateau
    if row.pass_name == "total":
        reached = ""
    elif plateau is not None and plateau.reached_at_s is not None:
        reached = f"at {plateau.reached_at_s:.0f} s" + (
            f", left {plateau.left_at_s:.0f} s" if plateau.left_at_s is not None else ""
        )
    else:
        reached = "not reached" if row.outcome != "not started" else "-"
    seconds = units.per_second  # fio's integer rates over a ms runtime
    outcome = row.outcome + (f": {row.reason}" if row.reason else "")
    return (
        f"  {row.pass_name:<10} {row.bytes:>17,} {row.seconds:>8.3f} s "
        f"{units.bandwidth(seconds(row.bytes, row.seconds)):>22} "
        f"{units.count(seconds(row.ios, row.seconds)):>6} {reached:<20} {outcome}"
    )


def format_warmup_report(doc: Mapping[str, Any], *, reason: str) -> str:
    """Text: the outcome, progress, a row per pass and the total (bytes, time,
    bandwidth and IOPS in fio's units, plateau, outcome), verify, checkpoint,
    fio's command. The headline never says "completed" for a run whose passes
    did not complete: a run that ended by itself shows its passes' outcome."""
    s = WarmupSummary.from_dict(doc)
    total = s.total
    said = total.outcome if reason == "completed" else reason
    lines = [f"probetop warmup {s.target}: {s.pass_name} pass, {said}"]
    if s.time_based:
        lines.append(
            f"  written: {total.bytes:,} bytes at random over {s.total_bytes:,} "
            f"(time-based), complete: {'yes' if total.completed else 'no'}"
        )
    else:
        pct = 100.0 * s.done_bytes / s.total_bytes if s.total_bytes else 0.0
        lines.append(
            f"  done: {s.done_bytes:,} of {s.total_bytes:,} bytes ({pct:.1f} %), "
            f"complete: {'yes' if total.completed else 'no'}"
        )
    lines.append(
        f"  {'pass':<10} {'bytes':>17} {'time':>10} {'bandwidth':>22} {'IOPS':>6} "
        f"{'plateau':<20} outcome"
    )
    lines += [_pass_row(row) for row in s.passes]
    if len(s.passes) > 1:
        lines.append(_pass_row(total))
    if s.resumed_from is not None:
        lines.append(f"  resumed from {s.resumed_from:,} bytes done")
    criterion = s.plateau.criterion if s.plateau else None
    lines.append(f"  plateau criterion: {criterion} (fio --steadystate), detected afresh per pass")
    if s.verify is not None:
        bad, _first = s.verify
        ok = bad == 0 and total.completed
        lines.append(f"  verify: {bad} bad sectors" + (" (ok)" if ok else ""))
    if s.findings is not None:
        lines += _findings_lines(s.findings)
    for note in s.notes:
        lines.append(f"  note: {note}")
    if s.checkpoint:
        lines.append(f"  checkpoint: {s.checkpoint}")
    lines.append(f"  same pass in fio: {s.fio_command}")
    if s.error:
        lines.append(f"  error: {s.error}")
    return "\n".join(lines)


def _findings_lines(f: Findings) -> list[str]:
    """The verdict, what it rests on, and the bad ranges (the first ten)."""
    pct = 100.0 * f.never_written_fraction
    lines = [
        f"  verdict: {f.verdict} ({f.case}): {f.reason}",
        f"  never written: {f.never_written_bytes:,} of {f.range_bytes:,} bytes ({pct:.1f} %, "
        f"{f.never_written_source})"
        + (f"; read back all zero: {f.zero_bytes:,} bytes" if f.zero_bytes else ""),
    ]
    if f.bad_ranges:
        shown = ", ".join(f"{a:,}-{b:,}" for a, b in f.bad_ranges[:10])
        more = f" and {len(f.bad_ranges) - 10} more" if len(f.bad_ranges) > 10 else ""
        lines.append(
            f"  bad ranges: {len(f.bad_ranges)} ({f.bad_bytes:,} bytes failed): {shown}{more}"
        )
    return lines


def warmup_exit_code(doc: Mapping[str, Any], error: str | None, *, signal_status: int = 0) -> int:
    """2 when the probe failed or a pass failed (e.g. randwrite completed no
    I/O), 1 when ``--verify`` found bad sectors, else ``signal_status`` (128 +
    the number of the signal that stopped the run) when one did; then 1 when
    I/Os failed (bad ranges), ``NOT_WARMED_EXIT`` when a read-only run's
    whole read pass left the volume not warmed; else 0."""
    if error:
        return 2
    s = WarmupSummary.from_dict(doc)
    if s.total.outcome == "failed":
        return 2
    if s.verify is not None and s.verify[0]:
        return 1
    if signal_status:
        return signal_status
    f = s.findings
    if f is not None and f.bad_ranges:
        return 1
    read = [p for p in s.passes if p.pass_name == "read"]
    wrote = any(p.pass_name != "read" for p in s.passes)
    if f is not None and f.verdict == "not warmed" and read and read[0].completed and not wrote:
        return NOT_WARMED_EXIT
    return 0
