"""What the IOPS probe's samples and parameters carry, typed: the probe
writes them, the pane reads them (the warm-up's are probes/disk/warmup/records.py).

Contract:
- ``IopsInterval.to_sample`` is the only place that lays an IOPS interval
  out as a ``Sample`` (metric keys in ``values``, the rest in ``extra``);
  ``from_sample`` the only place that reads one back. Both keep the
  recording format of probetop 0.1, key for key and in the same order (old
  recordings replay); a missing or malformed field reads as None, never
  raises.
- ``IopsParams`` is the probe's ``params()`` (written to the recording
  header and the Announce), typed the same way.
- ``IOPS_METRICS`` declares every metric name a sample may hold;
  ``DIRECTION_METRICS`` names the per-direction keys.
- ``params_of``, ``as_int``, ``as_str``: the tolerant readers both families'
  records use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.buckets import decode_runs, encode_runs
from probetop.probes.core.readback import as_number
from probetop.probes.core.sample import Sample

IOPS_KIND = "iops"

DIRECTIONS = ("read", "write")
# fio's completion-latency percentiles (its --percentile_list default).
FIO_PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)


def pct_key(p: float) -> str:
    """fio's percentile key spelling: "99.900000"."""
    return f"{p:.6f}"


# -- the IOPS probe ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DirectionMetrics:
    """The metric names of one direction ("read" or "write")."""

    iops: str
    bps: str
    clat_p50_us: str
    clat_p99_us: str
    clat_mean_us: str


DIRECTION_METRICS = {
    d: DirectionMetrics(
        f"{d}_iops", f"{d}_Bps", f"{d}_clat_p50_us", f"{d}_clat_p99_us", f"{d}_clat_mean_us"
    )
    for d in DIRECTIONS
}
READ_IOPS, WRITE_IOPS = DIRECTION_METRICS["read"].iops, DIRECTION_METRICS["write"].iops
IOPS_ERRORS = "errors"

IOPS_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("read_iops", "IO/s", "reads completed per second in the interval", True),
    MetricSpec("write_iops", "IO/s", "writes completed per second in the interval", True),
    MetricSpec("read_Bps", "B/s", "bytes read per second in the interval"),
    MetricSpec("write_Bps", "B/s", "bytes written per second in the interval"),
    MetricSpec("read_clat_p50_us", "µs", "median read completion latency"),
    MetricSpec("read_clat_p99_us", "µs", "99th percentile read completion latency"),
    MetricSpec("write_clat_p50_us", "µs", "median write completion latency"),
    MetricSpec("write_clat_p99_us", "µs", "99th percentile write completion latency"),
    MetricSpec("read_clat_mean_us", "µs", "mean read completion latency"),
    MetricSpec("write_clat_mean_us", "µs", "mean write completion latency"),
    MetricSpec(IOPS_ERRORS, "/s", "failed or short I/Os per second"),
)


@dataclass(frozen=True, slots=True)
class DirectionRates:
    """One direction of one interval: rates and completion latency (µs).

    ``clat_us`` maps fio's percentile keys ("99.000000") to µs; percentiles
    with no I/O behind them are left out. ``clat_hist`` holds the interval's
    I/Os in the fio-layout latency histogram, sparse ((bucket index, I/Os),
    ... for the non-empty buckets, ascending; ``clat_bucket_range_ns`` gives
    a bucket's edges; ``extra["clat_hist"][direction]`` in JSON, as runs:
    ``probes.core.buckets``); None in recordings made before it."""

    iops: float | None
    bps: float | None
    clat_p50_us: float | None
    clat_p99_us: float | None
    clat_mean_us: float | None
    clat_us: Mapping[str, float] = field(default_factory=dict)
    clat_hist: tuple[tuple[int, int], ...] | None = None

    def percentile_us(self, p: float) -> float | None:
        return self.clat_us.get(pct_key(p))


@dataclass(frozen=True, slots=True)
class IopsInterval:
    """One interval of an IOPS run: the active directions (None when the
    pattern does not do that direction), failed I/Os per second, and whether
    the interval lies in the ``--ramp`` (shown, not counted in the totals)."""

    KIND: ClassVar[str] = IOPS_KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = IOPS_METRICS

    read: DirectionRates | None
    write: DirectionRates | None
    errors_per_s: float | None
    ramp: bool = False
    percentiles: tuple[float, ...] = FIO_PERCENTILES
    # An NFS target: the client's view per RPC op this interval, nfsiostat's
    # figures ({"WRITE": {"ops_per_s": ..., "kb_per_op": ..., "avg_rtt_ms": ...,
    # "avg_exe_ms": ...}}); None where the target is not on NFS.
    nfs: Mapping[str, Mapping[str, float | int | None]] | None = None

    def direction(self, name: str) -> DirectionRates | None:
        return self.read if name == "read" else self.write if name == "write" else None

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {}
        clat: dict[str, dict[str, float]] = {}
        hists: dict[str, list[list[int]]] = {}
        for name in DIRECTIONS:
            rates = self.direction(name)
            if rates is None:
                continue
            keys = DIRECTION_METRICS[name]
            values[keys.iops] = rates.iops
            values[keys.bps] = rates.bps
            values[keys.clat_p50_us] = rates.clat_p50_us
            values[keys.clat_p99_us] = rates.clat_p99_us
            values[keys.clat_mean_us] = rates.clat_mean_us
            clat[name] = dict(rates.clat_us)
            if rates.clat_hist is not None:
                hists[name] = encode_runs(rates.clat_hist)
        values[IOPS_ERRORS] = self.errors_per_s
        extra: dict[str, Any] = {
            "clat_us": clat,
            "ramp": self.ramp,
            "percentiles": list(self.percentiles),
        }
        if hists:
            extra["clat_hist"] = hists
        if self.nfs is not None:
            extra["nfs"] = {op: dict(v) for op, v in self.nfs.items()}
        return Sample(probe_id, t_ns, interval_s, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> IopsInterval:
        """Read an IOPS sample back (live or from a recording)."""
        values, extra = sample.values, sample.extra or {}
        clat = extra.get("clat_us")
        clat = clat if isinstance(clat, Mapping) else {}
        hists = extra.get("clat_hist")
        hists = hists if isinstance(hists, Mapping) else {}
        rates: dict[str, DirectionRates | None] = {}
        for name in DIRECTIONS:
            keys = DIRECTION_METRICS[name]
            if keys.iops not in values and name not in clat:
                rates[name] = None
                continue
            pct = clat.get(name)
            pct = pct if isinstance(pct, Mapping) else {}
            rates[name] = DirectionRates(
                iops=as_number(values.get(keys.iops)),
                bps=as_number(values.get(keys.bps)),
                clat_p50_us=as_number(values.get(keys.clat_p50_us)),
                clat_p99_us=as_number(values.get(keys.clat_p99_us)),
                clat_mean_us=as_number(values.get(keys.clat_mean_us)),
                clat_us={str(k): float(v) for k, v in pct.items() if as_number(v) is not None},
                clat_hist=decode_runs(hists.get(name)),
            )
        percentiles = extra.get("percentiles")
        nfs = extra.get("nfs")
        return cls(
            read=rates["read"],
            write=rates["write"],
            errors_per_s=as_number(values.get(IOPS_ERRORS)),
            ramp=bool(extra.get("ramp", False)),
            percentiles=(
                tuple(float(p) for p in percentiles if as_number(p) is not None)
                if isinstance(percentiles, list)
                else FIO_PERCENTILES
            ),
            nfs=(
                {str(op): v for op, v in nfs.items() if isinstance(v, Mapping)}
                if isinstance(nfs, Mapping)
                else None
            ),
        )


# The fio-layout latency histogram (workers.py counts into it): integer ns;
# below 2 * 64 ns one bucket per ns, then each power of two split in 64.
CLAT_HIST_BITS = 6
CLAT_HIST_BUCKETS = 29 << CLAT_HIST_BITS


def clat_bucket_range_ns(index: int) -> tuple[int, int]:
    """The whole-ns latencies ``[low, high)`` the histogram files in bucket
    ``index`` (the last bucket also takes everything above: high is 2**62)."""
    val = 1 << CLAT_HIST_BITS
    if index < 2 * val:
        return index, index + 1
    error_bits = (index >> CLAT_HIST_BITS) - 1
    low = (val + (index & (val - 1))) << error_bits
    if index >= CLAT_HIST_BUCKETS - 1:
        return low, 1 << 62
    return low, low + (1 << error_bits)


def active_directions(rw: str) -> tuple[str, ...]:
    """The directions an fio ``--rw`` pattern does: reads, writes or both."""
    if rw in ("read", "randread"):
        return ("read",)
    if rw in ("write", "randwrite"):
        return ("write",)
    return DIRECTIONS


@dataclass(frozen=True, slots=True)
class IopsParams:
    """What an IOPS probe runs with, as its ``params()`` (recording header)."""

    target: str
    rw: str
    rwmixread: int | None
    bs: int
    jobs: int
    iodepth: int
    offset: int
    size: int | None
    direct: bool | None
    sync: bool
    time_s: float | None
    ramp_s: float
    rate_iops: int | None
    interval_s: float
    engine: str
    backing_device: str | None
    nrfiles: int = 1  # files per job (fio's --nrfiles)
    file_service_type: str = "roundrobin"  # fio's --file_service_type

    @property
    def directions(self) -> tuple[str, ...]:
        return active_directions(self.rw)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "rw": self.rw,
            "rwmixread": self.rwmixread,
            "bs": self.bs,
            "jobs": self.jobs,
            "iodepth": self.iodepth,
            "offset": self.offset,
            "size": self.size,
            "direct": self.direct,
            "sync": self.sync,
            "time_s": self.time_s,
            "ramp_s": self.ramp_s,
            "rate_iops": self.rate_iops,
            "interval_s": self.interval_s,
            "engine": self.engine,
            "backing_device": self.backing_device,
            "nrfiles": self.nrfiles,
            "file_service_type": self.file_service_type,
        }

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> IopsParams:
        """From a probe description (``Announce.info`` or a recording header)."""
        p = params_of(info)
        iodepth = as_int(p.get("iodepth")) or 1
        return cls(
            target=as_str(p.get("target")) or as_str(info.get("id")) or "",
            rw=as_str(p.get("rw")) or "randread",
            rwmixread=as_int(p.get("rwmixread")),
            bs=as_int(p.get("bs")) or 0,
            jobs=as_int(p.get("jobs")) or 1,
            iodepth=iodepth,
            offset=as_int(p.get("offset")) or 0,
            size=as_int(p.get("size")),
            direct=p.get("direct") if isinstance(p.get("direct"), bool) else None,
            sync=bool(p.get("sync", False)),
            time_s=as_number(p.get("time_s")),
            ramp_s=as_number(p.get("ramp_s")) or 0.0,
            rate_iops=as_int(p.get("rate_iops")),
            interval_s=as_number(p.get("interval_s")) or 1.0,
            engine=as_str(p.get("engine")) or ("libaio" if iodepth > 1 else "psync"),
            backing_device=as_str(p.get("backing_device")),
            nrfiles=as_int(p.get("nrfiles")) or 1,
            file_service_type=as_str(p.get("file_service_type")) or "roundrobin",
        )


# -- tolerant readers --------------------------------------------------------


def params_of(info: Mapping[str, Any]) -> Mapping[str, Any]:
    """A recording header's ``params`` mapping ({} when absent or malformed)."""
    params = info.get("params")
    return params if isinstance(params, Mapping) else {}


def as_int(value: Any) -> int | None:
    """An int from a number (None for anything else, bools included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def as_str(value: Any) -> str | None:
    """The value when it is a str, else None."""
    return value if isinstance(value, str) else None
