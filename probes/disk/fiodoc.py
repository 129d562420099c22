"""``probetop iops --output-format json|json+|terse``: the documents fio
writes for the same job (fio 3.33's layout), made from an IOPS run's summary.

Contract:
- ``OUTPUT_FORMATS``: fio's names, ``normal`` (the text report), ``terse``,
  ``json`` and ``json+``.
- ``fio_document(summary, plus=...)``: fio's JSON document: ``fio version``
  (the fio whose layout it follows), ``timestamp``, ``timestamp_ms``,
  ``time``, ``global options`` (the equivalent fio command's options, as
  strings), ``jobs[]``: one entry per job when the summary has ``per_job``
  (``--numjobs N`` without ``--group_reporting``: each job's own counters,
  same jobname and groupid 0, as fio), else one for the group (as fio's
  ``--group_reporting``), with fio's keys, JSON types and units per direction
  (``read``, ``write``, ``trim``, ``sync``) and per job, ``disk_util[]``
  (the kernel's view of the target's disk; absent where it has none, as in
  fio), and probetop's own summary under ``probetop``. With ``plus``,
  ``clat_ns.bins`` maps each non-empty histogram bucket's value (fio's
  ``plat_idx_to_val``) to its count, as fio's json+.
- ``job_views(summary)``: the summary as each reported job sees it (its own
  figures over the group's), what ``fio_job`` and the text report read.
- ``terse_line(summary)``: fio's terse version 3 lines, one per reported
  job (no trim fields).
- Where probetop measures differently (docs/iops.md#fio-output-formats):
  ``bw_*``/``iops_*`` samples are probetop's per-interval rates of the
  reported job (fio: per 500 ms window; with group reporting, summed over
  jobs); ``iodepth_*`` come from the configured depth (the loops keep it
  full); ``latency_*`` and the bins come from the completion-latency
  histogram (fio's, 1/64 precision).
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Mapping, Sequence
from typing import Any

from probetop.probes.disk.counters import BUCKET_VALUES_NS, HIST_BUCKETS
from probetop.probes.disk.diskutil import terse_fields
from probetop.probes.disk.records import FIO_PERCENTILES, pct_key

OUTPUT_FORMATS = ("normal", "terse", "json", "json+")
FIO_VERSION = "fio-3.33"  # the layout written; probetop's own version is under "probetop"
TERSE_VERSION = 3
FIO_PERCENTILE_SLOTS = 20  # fio's FIO_IO_U_LIST_MAX_LEN: terse always has 20 percentile fields
LAT_EDGES = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)  # fio's latency_ns/us labels
LAT_MS_LABELS = (*map(str, LAT_EDGES), "2000", ">=2000")
# Keys of a direction block, in fio's order (add_ddir_status_json).
DIRECTION_KEYS = (
    "io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios",
    "short_ios", "drop_ios", "slat_ns", "clat_ns", "lat_ns",
)  # fmt: skip
# Summary keys that are fio's raw material, not probetop's report.
_RAW_KEYS = ("clat_hist", "per_job")


def _zero_lat() -> dict[str, Any]:
    return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}


def _sample_stats(values: Sequence[float]) -> tuple[int, int, float, float, int]:
    """min, max, mean, stddev (fio's: n - 1) and count of per-interval samples."""
    n = len(values)
    if not n:
        return 0, 0, 0.0, 0.0, 0
    mean = sum(values) / n
    dev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return int(min(values)), int(max(values)), mean, dev, n


def _samples(summary: Mapping[str, Any], name: str, key: str) -> list[float]:
    rows = summary.get("intervals") or []
    return [float(r[f"{name}_{key}"]) for r in rows if not r.get("ramp") and f"{name}_{key}" in r]


def _stats(
    summary: Mapping[str, Any], name: str, key: str, unit: int
) -> tuple[int, int, float, float, int]:
    """``_sample_stats`` of a row field in ``unit``s: from the running stats a
    long run kept (``interval_stats``, when older rows were dropped) or else
    from the rows. ``unit`` is a power of two, so dividing the stats is exact."""
    st = (summary.get("window_stats") or {}).get(f"{name}_{key}")
    if st is None:  # a recording made before fio's windows: its rows
        st = (summary.get("interval_stats") or {}).get(f"{name}_{key}")
    if st is None:
        return _sample_stats([v / unit for v in _samples(summary, name, key)])
    n = int(st["samples"])
    if not n:
        return 0, 0, 0.0, 0.0, 0
    return (
        int(st["min"] / unit),
        int(st["max"] / unit),
        float(st["mean"]) / unit,
        float(st["dev"]) / unit,
        n,
    )


def _hist(summary: Mapping[str, Any], name: str) -> list[tuple[int, int]]:
    """Non-empty (bucket index, count) of a direction's clat histogram."""
    return [(int(i), int(c)) for i, c in (summary.get("clat_hist") or {}).get(name, []) if c]


def _bins(hist: Sequence[tuple[int, int]]) -> dict[str, int]:
    return {str(int(BUCKET_VALUES_NS[min(i, HIST_BUCKETS - 1)])): c for i, c in hist}


def direction_block(
    summary: Mapping[str, Any], name: str, *, plus: bool, group_bw_bytes: int | None = None
) -> dict[str, Any]:
    """One of ``read``/``write``/``trim`` as fio writes it; ``group_bw_bytes``
    is the group's rate in that direction (``bw_agg``'s base; None: this
    job is the group)."""
    d = summary.get(name) or {}
    block: dict[str, Any] = {}
    for key in DIRECTION_KEYS:
        if key in ("slat_ns", "clat_ns", "lat_ns"):
            lat = dict(d.get(key) or _zero_lat())
            if not lat.get("N"):
                lat.pop("percentile", None)  # fio: no percentiles without samples
            block[key] = lat
        elif key == "iops":
            block[key] = float(d.get(key, 0.0))
        else:
            block[key] = int(d.get(key, 0))
    hist = _hist(summary, name)
    if plus and block["clat_ns"].get("N") and hist:
        block["clat_ns"]["bins"] = _bins(hist)
    bmin, bmax, bmean, bdev, bn = _stats(summary, name, "bw_bytes", 1024)
    agg_kib = (block["bw_bytes"] if group_bw_bytes is None else group_bw_bytes) / 1024
    block["bw_min"], block["bw_max"] = bmin, bmax
    # fio's convert_agg_kbytes_percent: this job's mean over the group's, capped at 100
    block["bw_agg"] = min(100.0, bmean * 100 / agg_kib) if bn and agg_kib else 0.0
    block["bw_mean"], block["bw_dev"], block["bw_samples"] = bmean, bdev, bn
    imin, imax, imean, idev, i_n = _stats(summary, name, "iops", 1)
    block["iops_min"], block["iops_max"] = imin, imax
    block["iops_mean"], block["iops_stddev"], block["iops_samples"] = imean, idev, i_n
    return block


def _depth_levels(iodepth: int) -> tuple[dict[str, float], dict[str, float]]:
    """fio's iodepth_level and iodepth_submit/complete at a full queue of ``iodepth``."""
    level_labels = ("1", "2", "4", "8", "16", "32", ">=64")
    level = {k: 0.0 for k in level_labels}
    level[level_labels[min(6, max(0, iodepth.bit_length() - 1))]] = 100.0
    submit_labels = ("0", "4", "8", "16", "32", "64", ">=64")
    submit = {k: 0.0 for k in submit_labels}
    # One I/O per submitting call (psync: each pread; the AIO loops refill as they reap).
    submit["4"] = 100.0
    return level, submit


def _lat_buckets(summary: Mapping[str, Any]) -> tuple[list[float], list[float], list[float]]:
    """fio's latency_ns/us/ms: % of all I/Os by completion latency (stat_calc_lat:
    a non-empty bucket below 0.01 % shows 0.01)."""
    counts_n, counts_u, counts_m = [0] * 10, [0] * 10, [0] * 12
    total = 0
    for name in ("read", "write"):
        for i, c in _hist(summary, name):
            ns = int(BUCKET_VALUES_NS[min(i, HIST_BUCKETS - 1)])
            total += c
            if ns < 1000:
                counts_n[_edge_index(ns)] += c
            elif ns < 1_000_000:
                counts_u[_edge_index(ns // 1000)] += c
            else:
                ms = ns // 1_000_000
                idx = 11 if ms >= 2000 else 10 if ms >= 1000 else _edge_index(ms)
                counts_m[idx] += c

    def pct(counts: list[int]) -> list[float]:
        out = []
        for c in counts:
            v = 100.0 * c / total if total else 0.0
            out.append(0.01 if c and v < 0.01 else v)
        return out

    return pct(counts_n), pct(counts_u), pct(counts_m)


def _edge_index(value: int) -> int:
    """fio's io_u_mark_lat_*: the first label above ``value`` (2: 0-1, 4: 2-3, ...)."""
    for i, edge in enumerate(LAT_EDGES):
        if value < edge:
            return i
    return len(LAT_EDGES) - 1


def fio_options(fio_command: str) -> tuple[dict[str, str], dict[str, str]]:
    """(global options, job options) of an fio command line, as fio's JSON
    lists them: options before the first --name are global; an option given
    without a value (--time_based) is not listed (fio lists none such)."""
    glob: dict[str, str] = {}
    job: dict[str, str] = {}
    current = glob
    for arg in shlex.split(fio_command)[1:]:
        if not arg.startswith("--") or "=" not in arg:
            continue
        key, value = arg[2:].split("=", 1)
        if key == "name":
            current = job
        current[key] = value
    return glob, job


def job_views(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The summary as each reported job sees it: one per ``per_job`` entry
    (its directions, histogram, runtime, CPU use and interval stats over the
    group's; ``jobs`` 1; ``group_bw_bytes`` the group's rate per direction),
    or the summary itself when the run is reported as one group."""
    per_job = summary.get("per_job") or []
    if not per_job:
        jobs = int((summary.get("params") or {}).get("jobs") or 1)
        args = shlex.split(str(summary.get("fio_command") or ""))
        if jobs > 1 and "--group_reporting" not in args and not _measured(summary):
            # stopped before any I/O: each job written with zeros, as fio
            return [{**summary, "params": {**summary["params"], "jobs": 1}}] * jobs
        return [dict(summary)]
    params = {**(summary.get("params") or {}), "jobs": 1}
    group = {n: int((summary.get(n) or {}).get("bw_bytes", 0)) for n in ("read", "write")}
    return [
        {**summary, **entry, "params": params, "intervals": [], "group_bw_bytes": group}
        for entry in per_job
    ]


def _measured(summary: Mapping[str, Any]) -> bool:
    return "read" in summary or "write" in summary


def fio_job(summary: Mapping[str, Any], *, plus: bool) -> dict[str, Any]:
    """One ``jobs[]`` entry from a ``job_views`` view (or a summary reported as one group)."""
    params = summary.get("params") or {}
    group = summary.get("group_bw_bytes") or {}
    _glob, job_opts = fio_options(str(summary.get("fio_command") or "fio --name=probetop"))
    usage = summary.get("job_usage") or {}
    runtime_ms = int(summary.get("runtime_ms") or 0)
    jobs = int(params.get("jobs") or 1)
    # fio sums each job's runtime in a group (recordings made before the
    # per-job figure existed: the run's, once per job)
    job_runtime = int(summary.get("job_runtime_ms") or runtime_ms * jobs)
    # fio's elapsed: whole seconds since the jobs started, rounded up
    elapsed_ms = round(1000 * float(summary.get("elapsed_s") or runtime_ms / 1000))
    level, submit = _depth_levels(int(params.get("iodepth") or 1))
    lat_n, lat_u, lat_m = _lat_buckets(summary)
    out: dict[str, Any] = {
        "jobname": job_opts.get("name", "probetop"),
        "groupid": 0,
        "error": 0,
        "eta": 0,
        "elapsed": (elapsed_ms + 999) // 1000,
        "job options": job_opts,
        "read": direction_block(summary, "read", plus=plus, group_bw_bytes=group.get("read")),
        "write": direction_block(summary, "write", plus=plus, group_bw_bytes=group.get("write")),
        "trim": direction_block({}, "trim", plus=plus),
        "sync": {"total_ios": 0, "lat_ns": _zero_lat()},
        "job_runtime": job_runtime,
        "usr_cpu": 100.0 * float(usage.get("usr_ms", 0.0)) / job_runtime if job_runtime else 0.0,
        "sys_cpu": 100.0 * float(usage.get("sys_ms", 0.0)) / job_runtime if job_runtime else 0.0,
        "ctx": int(usage.get("ctx", 0)),
        "majf": int(usage.get("majf", 0)),
        "minf": int(usage.get("minf", 0)),
        "iodepth_level": level,
        "iodepth_submit": submit,
        "iodepth_complete": dict(submit),
        "latency_ns": dict(zip(map(str, LAT_EDGES), lat_n, strict=True)),
        "latency_us": dict(zip(map(str, LAT_EDGES), lat_u, strict=True)),
        "latency_ms": dict(zip(LAT_MS_LABELS, lat_m, strict=True)),
        # fio 3.33 always writes these four (latency_target is off: 0)
        "latency_depth": int(params.get("iodepth") or 1),
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    }
    return out


def fio_document(
    summary: Mapping[str, Any],
    *,
    plus: bool = False,
    error: str | None = None,
    reason: str = "completed",
) -> dict[str, Any]:
    """See the module docstring. ``summary`` is ``IopsProbe.summary()``
    (without directions when the run ended before it measured: then each
    reported job is written with zeros, as fio writes a job that did no I/O,
    so ``jobs[0]`` is always there). ``reason`` is the run's end
    (``RunResult.reason``): an "interrupted (SIG...)" one goes under
    "probetop" as ``interrupted``, with a note when nothing was measured."""
    stamp_ms = int(summary.get("finished_unix_ms") or time.time() * 1000)
    glob, _job = fio_options(str(summary.get("fio_command") or "fio"))
    doc: dict[str, Any] = {
        "fio version": FIO_VERSION,
        "timestamp": stamp_ms // 1000,
        "timestamp_ms": stamp_ms,
        "time": time.ctime(stamp_ms // 1000),
    }
    if glob:
        doc["global options"] = glob
    measured = _measured(summary)
    doc["jobs"] = [fio_job(view, plus=plus) for view in job_views(summary)]
    if summary.get("disk_util"):
        doc["disk_util"] = list(summary["disk_util"])
    own = {k: v for k, v in summary.items() if k not in _RAW_KEYS}
    if reason.startswith("interrupted"):
        own["interrupted"] = reason
        if not measured:
            own["notes"] = [
                *own.get("notes", []),
                f"{reason} before any I/O was measured: the job's figures are zeros",
            ]
    if error:
        own["error"] = error
    doc["probetop"] = own
    return doc


def _terse_lat(lat: Mapping[str, Any]) -> str:
    if not lat.get("N"):
        return ";0;0;0.000000;0.000000"
    return (
        f";{int(lat['min']) // 1000};{int(lat['max']) // 1000};"
        f"{float(lat['mean']) / 1000:f};{float(lat['stddev']) / 1000:f}"
    )


def _terse_direction(block: Mapping[str, Any]) -> str:
    runtime = int(block["runtime"])
    bw = (1000 * int(block["io_bytes"]) // runtime) // 1024 if runtime else 0
    iops = (1000 * int(block["total_ios"])) // runtime if runtime else 0
    out = f";{int(block['io_bytes']) >> 10};{bw};{iops};{runtime}"
    out += _terse_lat(block["slat_ns"]) + _terse_lat(block["clat_ns"])
    # fio lists its percentiles with 0 for a direction without samples
    pct = block["clat_ns"].get("percentile") or {pct_key(p): 0 for p in FIO_PERCENTILES}
    cells = [f";{float(k):f}%={int(v) // 1000}" for k, v in pct.items()]
    cells += [";0%=0"] * (FIO_PERCENTILE_SLOTS - len(cells))
    out += "".join(cells[:FIO_PERCENTILE_SLOTS]) + _terse_lat(block["lat_ns"])
    if block["bw_samples"]:
        out += (
            f";{block['bw_min']};{block['bw_max']};{block['bw_agg']:f}%;"
            f"{block['bw_mean']:f};{block['bw_dev']:f}"
        )
    else:
        out += ";0;0;0.000000%;0.000000;0.000000"
    return out


def terse_line(summary: Mapping[str, Any]) -> str:
    """fio's ``--output-format=terse`` lines (version 3; ``--terse-version=3``):
    one per reported job (``job_views``), each with the disk util, as fio."""
    if "read" not in summary and "write" not in summary:
        return ""
    return "\n".join(_terse_job(view) for view in job_views(summary))


def _terse_job(summary: Mapping[str, Any]) -> str:
    job = fio_job(summary, plus=False)
    out = f"{TERSE_VERSION};{FIO_VERSION};{job['jobname']};{job['groupid']};{job['error']}"
    out += _terse_direction(job["read"]) + _terse_direction(job["write"])
    out += f";{job['usr_cpu']:f}%;{job['sys_cpu']:f}%;{job['ctx']};{job['majf']};{job['minf']}"
    out += "".join(f";{v:3.1f}%" for v in job["iodepth_level"].values())
    lat_u = list(job["latency_us"].values())
    # fio's stat_calc_lat_nu: the ns buckets are added to the first us bucket
    lat_u[0] += 100.0 * sum(_ns_counts(summary)) / max(1, _total_ios(summary))
    out += "".join(f";{v:3.2f}%" for v in lat_u)
    out += "".join(f";{v:3.2f}%" for v in job["latency_ms"].values())
    for entry in summary.get("disk_util") or []:
        out += terse_fields(entry)
    return out


def _ns_counts(summary: Mapping[str, Any]) -> list[int]:
    return [
        c
        for name in ("read", "write")
        for i, c in _hist(summary, name)
        if BUCKET_VALUES_NS[min(i, HIST_BUCKETS - 1)] < 1000
    ]


def _total_ios(summary: Mapping[str, Any]) -> int:
    return sum(int((summary.get(n) or {}).get("total_ios", 0)) for n in ("read", "write"))


__all__ = [
    "OUTPUT_FORMATS",
    "direction_block",
    "fio_document",
    "fio_options",
    "job_views",
    "terse_line",
]
