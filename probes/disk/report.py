"""The IOPS command's headless report: fio-like text, or one JSON document
(the warm-up's is probes/disk/warmup/report.py).

Contract:
- ``iops_document``: the probe's ``summary()`` (fio's shape) plus ``error``
  when the run failed.
- ``format_iops_report`` turns the same document into the text report (no
  trailing newline). Its lines from fio's job header to ``Disk stats`` are
  fio's ``--output-format=normal`` layout. A run stopped before it measured
  (during the file's layout) says how far the layout got and what was undone.
- ``iops_output``: the IOPS report in one of fio's ``--output-format``
  names (normal: the text above; terse, json, json+: ``fiodoc``).
- ``iops_exit_code``: 2 when the probe failed; 128 + the signal's number when
  a signal interrupted the run (the partial report is printed first); else 0.
- Every figure with a unit is written by ``units`` (fio's choice of unit and
  rounding: ``BW=1B/s``, never ``0.0MB/s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.disk import units


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


def _sample_lines(block: Mapping[str, Any]) -> list[str]:
    """fio's ``bw (  KiB/s):`` and ``iops        :`` lines of one direction
    (show_ddir_status; none without samples). Above 1 GiB/s of mean, bw is in
    MiB/s, min and max divided as fio's integers."""
    lines = []
    if block.get("bw_samples"):
        bmin, bmax = int(block["bw_min"]), int(block["bw_max"])
        mean, dev, unit = float(block["bw_mean"]), float(block["bw_dev"]), "KiB"
        if mean > 1024 * 1024:
            bmin, bmax, mean, dev, unit = bmin // 1024, bmax // 1024, mean / 1024, dev / 1024, "MiB"
        lines.append(
            f"   bw ({unit:>5}/s): min={bmin:5d}, max={bmax:5d}, "
            f"per={float(block['bw_agg']):3.2f}%, avg={mean:5.02f}, stdev={dev:5.02f}, "
            f"samples={int(block['bw_samples'])}"
        )
    if block.get("iops_samples"):
        lines.append(
            f"   iops        : min={int(block['iops_min']):5d}, max={int(block['iops_max']):5d}, "
            f"avg={float(block['iops_mean']):5.02f}, stdev={float(block['iops_stddev']):5.02f}, "
            f"samples={int(block['iops_samples'])}"
        )
    return lines


def _lat_lines(unit: str, buckets: Mapping[str, float]) -> list[str]:
    """fio's show_lat: the non-empty buckets of one unit, five a line."""
    cells = [f"{'>=2000' if k == '>=2000' else k}={v:3.2f}%" for k, v in buckets.items() if v > 0]
    return [f"  lat ({unit})   : " + ", ".join(cells[i : i + 5]) for i in range(0, len(cells), 5)]


def _job_lines(job: Mapping[str, Any]) -> list[str]:
    """fio's job-wide lines after the directions (show_thread_status_normal):
    latency distribution, cpu, IO depths, submit/complete, issued rwts, latency target."""
    lines = []
    for unit, key in (("nsec", "latency_ns"), ("usec", "latency_us"), ("msec", "latency_ms")):
        lines += _lat_lines(unit, job[key])
    lines.append(
        f"  cpu          : usr={job['usr_cpu']:3.2f}%, sys={job['sys_cpu']:3.2f}%, "
        f"ctx={job['ctx']}, majf={job['majf']}, minf={job['minf']}"
    )

    def dist(d: Mapping[str, float]) -> str:
        return ", ".join(f"{k}={v:3.1f}%" for k, v in d.items())

    lines.append(f"  IO depths    : {dist(job['iodepth_level'])}")
    lines.append(f"     submit    : {dist(job['iodepth_submit'])}")
    lines.append(f"     complete  : {dist(job['iodepth_complete'])}")
    dirs = [job.get(d) or {} for d in ("read", "write", "trim")]

    def four(key: str) -> str:
        return ",".join(str(int(d.get(key, 0))) for d in dirs) + ",0"  # the 4th: sync

    lines.append(
        f"     issued rwts: total={four('total_ios')} short={four('short_ios')} "
        f"dropped={four('drop_ios')}"
    )
    lines.append(
        f"     latency   : target={job['latency_target']}, window={job['latency_window']}, "
        f"percentile={float(job['latency_percentile']):.2f}%, depth={job['latency_depth']}"
    )
    return lines


def _runtime_ms(d: Mapping[str, Any]) -> int:
    return int(d.get("runtime") or d.get("runtime_ms") or 0)


def _run_status_line(name: str, d: Mapping[str, Any], jobs: list[Mapping[str, Any]]) -> str:
    """fio's "Run status group" line for one direction: the group's rate
    (``d``), then the slowest and fastest of the reported ``jobs``' rates and
    runtimes (one group report: the group's own)."""
    runtime_ms = _runtime_ms(d)
    bw = units.rates_per_runtime(int(d["io_bytes"]), runtime_ms)
    rates = [units.rates_per_runtime(int(j["io_bytes"]), _runtime_ms(j)) for j in jobs] or [bw]
    runs = [_runtime_ms(j) for j in jobs] or [runtime_ms]

    def iec(v: float) -> str:
        return units.num2str(v, pow2=True, unit="B/s")

    def si(v: float) -> str:
        return units.num2str(v, pow2=False, unit="B/s")

    lo, hi = min(rates), max(rates)
    io = int(d["io_bytes"])
    return (
        f"{name.upper():>7}: bw={iec(bw)} ({si(bw)}), {iec(lo)}-{iec(hi)} ({si(lo)}-{si(hi)}), "
        f"io={units.size(io)} ({units.num2str(io, pow2=False, unit='B')}), "
        f"run={min(runs)}-{max(runs)}msec"
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
    """fio-like text: one block per direction the pattern does, and fio's command.
    The headline never says "completed" for a job that ended on an error (its
    error line says why): it says "failed", as the exit status does."""
    said = "failed" if doc.get("error") and reason == "completed" else reason
    out = [f"probetop iops {target}: {said}, {duration_s:.1f} s"]
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
        from probetop.probes.disk import fiodoc  # numpy: loaded by the run already

        views = fiodoc.job_views(doc)  # one per job without --group_reporting, as fio
        for view in views:
            job = fiodoc.fio_job(view, plus=False)
            out.append(_job_header(view))
            for name in shown:
                out += _direction_lines(name, view[name])
                out += _sample_lines(job[name])
            out += _job_lines(job)
        out += ["", "Run status group 0 (all jobs):"]
        out += [_run_status_line(name, doc[name], [v[name] for v in views]) for name in shown]
        out += _disk_stats_lines(list(doc.get("disk_util") or []))
        out.append("")
    out.append(f"  same job in fio: {doc.get('fio_command')}")
    if doc.get("error"):
        out.append(f"  error: {doc['error']}")
    # The run's own errors (a device that stopped answering) when the run's
    # status came from elsewhere (a stop signal): the JSON lists them too.
    out += [f"  error: {e}" for e in doc.get("errors") or () if e != doc.get("error")]
    return "\n".join(out)


def iops_exit_code(error: str | None, *, signal_status: int = 0) -> int:
    """2 when the probe failed, else ``signal_status`` (128 + the number of
    the signal that stopped the run, 0 when none did: the partial report is
    printed, as ``cpu`` and ``http`` do)."""
    if error:
        return 2
    return signal_status
