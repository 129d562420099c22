"""The drop-in contract with fio's JSON: which fields of a direction block
(``read``/``write`` of ``fio --output-format=json``'s ``jobs[0]``) probetop's
``iops --json`` (and its recording footer summary, the same object) carries
with fio's name, type and unit, and how the two compare.

Contract:
- ``FIO_FIELDS``: dotted path -> ``FioField`` (JSON type, unit). These are
  the fields a script written for fio may read from probetop unchanged
  (the whole document's key set and types: tests/disk/test_iops_fio_parity.py).
- ``shape_problems(block)``: what in one direction block breaks the contract
  (a field missing, of another type, or a unit relation broken: ``bw`` is
  ``bw_bytes // 1024`` KiB/s, ``io_kbytes`` is ``io_bytes >> 10``,
  ``bw_bytes`` is ``io_bytes`` over ``runtime`` ms, each latency's mean lies
  in its min..max, ``lat`` is ``slat`` + ``clat``, percentile keys are fio's
  spelling); empty when it holds. Applied to fio's own output too.
- ``ratios(fio_block, ours)``: probetop / fio for each value compared
  (``iops``, ``bw_bytes``, the three latencies' means, ``clat_ns.percentile.P``
  for P in ``COMPARED_PERCENTILES``); None where fio's value is 0 (psync's slat).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COMPARED_PERCENTILES = ("1.000000", "50.000000", "90.000000", "99.000000", "99.900000")
# fio's three latencies: submission (the submitting system call; no samples
# for psync), completion (from there to the reap; psync: the whole call) and
# their sum.
LATENCIES = ("slat_ns", "clat_ns", "lat_ns")
# lat is slat + clat per I/O, so per mean too, up to the clock reads between
# them (fio's psync: lat mean 72 ns above clat mean).
LAT_SUM_SLACK_NS = 1000


@dataclass(frozen=True, slots=True)
class FioField:
    kind: type
    unit: str


FIO_FIELDS: dict[str, FioField] = {
    "io_bytes": FioField(int, "B"),
    "io_kbytes": FioField(int, "KiB"),
    "bw_bytes": FioField(int, "B/s"),
    "bw": FioField(int, "KiB/s"),
    "iops": FioField(float, "IO/s"),
    "runtime": FioField(int, "ms"),
    "total_ios": FioField(int, "I/Os"),
    "short_ios": FioField(int, "I/Os"),
    "drop_ios": FioField(int, "I/Os"),
    # per-sample statistics of the rate (fio: per job every 500 ms; probetop:
    # per --interval, the whole job): bandwidth in KiB/s, bw_agg in %
    "bw_min": FioField(int, "KiB/s"),
    "bw_max": FioField(int, "KiB/s"),
    "bw_agg": FioField(float, "%"),
    "bw_mean": FioField(float, "KiB/s"),
    "bw_dev": FioField(float, "KiB/s"),
    "bw_samples": FioField(int, "samples"),
    "iops_min": FioField(int, "IO/s"),
    "iops_max": FioField(int, "IO/s"),
    "iops_mean": FioField(float, "IO/s"),
    "iops_stddev": FioField(float, "IO/s"),
    "iops_samples": FioField(int, "samples"),
    **{
        f"{lat}.{stat}": field
        for lat in LATENCIES
        for stat, field in (
            ("min", FioField(int, "ns")),
            ("max", FioField(int, "ns")),
            ("mean", FioField(float, "ns")),
            ("stddev", FioField(float, "ns")),
            ("N", FioField(int, "I/Os")),
        )
    },
    "clat_ns.percentile": FioField(dict, "ns by fio's percentile key"),
}


def get(block: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, or None."""
    value: Any = block
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    if kind is float:  # fio writes a whole float as 0.000000; JSON may give an int
        return isinstance(value, (int, float))
    return isinstance(value, kind)


def shape_problems(block: Mapping[str, Any]) -> list[str]:
    """See the module docstring."""
    problems = []
    for path, spec in FIO_FIELDS.items():
        value = get(block, path)
        if value is None:
            problems.append(f"{path}: missing")
        elif not _is(value, spec.kind):
            problems.append(f"{path}: {type(value).__name__}, fio has {spec.kind.__name__}")
    if problems:
        return problems
    io_bytes, runtime = block["io_bytes"], block["runtime"]
    if block["io_kbytes"] != io_bytes >> 10:
        problems.append("io_kbytes is not io_bytes >> 10 (KiB)")
    if abs(block["bw"] - block["bw_bytes"] // 1024) > 1:
        problems.append("bw is not bw_bytes // 1024 (KiB/s)")
    if runtime > 0:
        expected = 1000 * io_bytes / runtime
        if abs(block["bw_bytes"] - expected) > max(2.0, 0.01 * expected):
            problems.append("bw_bytes is not io_bytes / runtime (ms)")
        iops = 1000 * block["total_ios"] / runtime
        if abs(block["iops"] - iops) > max(0.01, 0.01 * iops):
            problems.append("iops is not total_ios / runtime (ms)")
    for lat in LATENCIES:
        stats = block[lat]
        if stats["N"] and not stats["min"] <= stats["mean"] <= stats["max"]:
            problems.append(f"{lat}: mean outside min..max")
    for rate in ("bw", "iops"):
        # fio's min/max are whole numbers of the samples; the mean lies between
        if block[f"{rate}_samples"] and not (
            block[f"{rate}_min"] - 1 <= block[f"{rate}_mean"] <= block[f"{rate}_max"] + 1
        ):
            problems.append(f"{rate}_mean outside {rate}_min..{rate}_max")
    if block["clat_ns"]["N"] and block["lat_ns"]["N"]:
        parts = block["slat_ns"]["mean"] + block["clat_ns"]["mean"]
        if abs(block["lat_ns"]["mean"] - parts) > max(LAT_SUM_SLACK_NS, 0.02 * parts):
            problems.append("lat_ns.mean is not slat_ns.mean + clat_ns.mean")
    for key, value in block["clat_ns"]["percentile"].items():
        if f"{float(key):.6f}" != key or not _is(value, int):
            problems.append(f"clat_ns.percentile[{key!r}]: not fio's key spelling or not int ns")
    return problems


def compared_paths() -> list[str]:
    return ["iops", "bw_bytes", "slat_ns.mean", "clat_ns.mean", "lat_ns.mean"] + [
        f"clat_ns.percentile.{p}" for p in COMPARED_PERCENTILES
    ]


def ratios(fio_block: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, float | None]:
    """probetop / fio per compared value (percentile keys contain dots, so
    they are looked up directly)."""
    out: dict[str, float | None] = {}
    for path in compared_paths():
        if path.startswith("clat_ns.percentile."):
            key = path.removeprefix("clat_ns.percentile.")
            theirs = fio_block["clat_ns"]["percentile"].get(key)
            mine = ours["clat_ns"]["percentile"].get(key)
        else:
            theirs, mine = get(fio_block, path), get(ours, path)
        out[path] = mine / theirs if theirs and mine is not None else None
    return out
