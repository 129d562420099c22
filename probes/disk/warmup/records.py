"""What the warm-up's samples and parameters carry, typed: the probe writes
them, the pane reads them.

Contract:
- ``WarmupInterval.to_sample`` is the only place that lays a warm-up interval
  out as a ``Sample`` (metric keys in ``values``, the rest in ``extra``);
  ``from_sample`` the only place that reads one back. Both keep the
  recording format of probetop 0.1, key for key and in the same order (old
  recordings replay); a missing or malformed field reads as None, never
  raises.
- ``WarmupParams`` is the probe's ``params()`` (recording header, Announce).
- ``WARMUP_METRICS`` declares every metric name a sample may hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.readback import as_number
from probetop.probes.core.sample import Sample
from probetop.probes.disk.kernelview import implausible
from probetop.probes.disk.records import as_int, as_str, params_of

WARMUP_KIND = "warmup"

WARMUP_BW = "bw_Bps"
WARMUP_IOPS = "iops"
PROGRESS_PCT = "progress_pct"
DONE_BYTES = "done_bytes"
TOTAL_BYTES = "total_bytes"
ETA_S = "eta_s"
ELAPSED_S = "elapsed_s"
WARMUP_ERRORS = "errors"

WARMUP_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(WARMUP_BW, "B/s", "bytes transferred per second in the interval", True),
    MetricSpec(WARMUP_IOPS, "IO/s", "I/Os completed per second in the interval", True),
    MetricSpec(PROGRESS_PCT, "%", "share of the range done (this pass)"),
    MetricSpec(DONE_BYTES, "B", "bytes of the range done (this pass)"),
    MetricSpec(TOTAL_BYTES, "B", "bytes in the range"),
    MetricSpec(ETA_S, "s", "time left at the rate of the last 5 intervals"),
    MetricSpec(ELAPSED_S, "s", "time since this run started"),
    MetricSpec(WARMUP_ERRORS, "", "failed I/Os in the interval"),
)


@dataclass(frozen=True, slots=True)
class Plateau:
    """The plateau detector's state in one interval (``steady.SteadyState``):
    its fio criterion, window, state ("filling", "searching", "steady",
    "left") and the first plateau's dates."""

    criterion: str | None
    window_s: float | None
    state: str | None
    reached_at_s: float | None
    reached_at_bytes: float | None
    left_at_s: float | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plateau:
        return cls(
            criterion=as_str(d.get("criterion")),
            window_s=as_number(d.get("window_s")),
            state=as_str(d.get("state")),
            reached_at_s=as_number(d.get("reached_at_s")),
            reached_at_bytes=as_number(d.get("reached_at_bytes")),
            left_at_s=as_number(d.get("left_at_s")),
        )


@dataclass(frozen=True, slots=True)
class WarmupInterval:
    """One interval of a warm-up pass.

    ``progress_pct`` and ``eta_s`` are None for the time-based randwrite
    pattern (no end), and so is ``done_map`` (fraction done of each of 64
    equal slices of the range). ``plateau`` is the detector's JSON
    (``SteadyState.as_dict()``), recorded whole; ``plateau_view`` reads it."""

    KIND: ClassVar[str] = WARMUP_KIND
    METRICS: ClassVar[tuple[MetricSpec, ...]] = WARMUP_METRICS

    bw_bps: float | None
    iops: float | None
    progress_pct: float | None
    done_bytes: float | None
    total_bytes: float | None
    eta_s: float | None
    elapsed_s: float | None
    errors: float | None
    pass_name: str
    done_map: tuple[float, ...] | None
    plateau: Mapping[str, Any]
    plateau_state: str | None
    bad_sectors: int
    # The read pass so far: bytes read back never written (holes, all zero)
    # and bytes read; per map cell the share never written and failed.
    zero_bytes: int | None = None
    read_bytes: int | None = None
    never_map: tuple[float, ...] | None = None
    bad_map: tuple[float, ...] | None = None
    # The read pass so far as the kernel saw it: bytes the disk under the
    # target (kernel_device, /proc/diskstats) read since the pass started;
    # None where no disk is under it (tmpfs, NFS).
    kernel_bytes: int | None = None
    kernel_device: str | None = None

    @property
    def never_written_share(self) -> float | None:
        """Share of the bytes read so far that came back never written."""
        if not self.read_bytes or self.zero_bytes is None:
            return None
        return self.zero_bytes / self.read_bytes

    @property
    def implausible_read(self) -> bool:
        """The read so far is far above what the disk under the target read
        (``kernelview.implausible``): too good to be true."""
        return self.read_bytes is not None and implausible(self.read_bytes, self.kernel_bytes)

    @property
    def writes(self) -> bool:
        return "write" in self.pass_name

    @property
    def plateau_view(self) -> Plateau | None:
        return Plateau.from_dict(self.plateau) if self.plateau else None

    def to_sample(self, probe_id: str, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {
            WARMUP_BW: self.bw_bps,
            WARMUP_IOPS: self.iops,
            PROGRESS_PCT: self.progress_pct,
            DONE_BYTES: self.done_bytes,
            TOTAL_BYTES: self.total_bytes,
            ETA_S: self.eta_s,
            ELAPSED_S: self.elapsed_s,
            WARMUP_ERRORS: self.errors,
        }
        extra = {
            "pass": self.pass_name,
            "map": list(self.done_map) if self.done_map is not None else None,
            "plateau": dict(self.plateau),
            "plateau_state": self.plateau_state,
            "bad_sectors": self.bad_sectors,
        }
        if self.read_bytes is not None:  # keys absent before probetop 0.2: read as None
            extra["zero_bytes"] = self.zero_bytes
            extra["read_bytes"] = self.read_bytes
        if self.never_map is not None:
            extra["never_map"] = list(self.never_map)
        if self.bad_map is not None and any(self.bad_map):
            extra["bad_map"] = list(self.bad_map)
        if self.kernel_bytes is not None:  # absent before probetop 0.3: read as None
            extra["kernel_bytes"] = self.kernel_bytes
            extra["kernel_device"] = self.kernel_device
        return Sample(probe_id, t_ns, interval_s, values, extra)

    @classmethod
    def from_sample(cls, sample: Sample) -> WarmupInterval:
        """Read a warm-up sample back (live or from a recording)."""
        values, extra = sample.values, sample.extra or {}
        cells = extra.get("map")
        plateau = extra.get("plateau")
        return cls(
            bw_bps=as_number(values.get(WARMUP_BW)),
            iops=as_number(values.get(WARMUP_IOPS)),
            progress_pct=as_number(values.get(PROGRESS_PCT)),
            done_bytes=as_number(values.get(DONE_BYTES)),
            total_bytes=as_number(values.get(TOTAL_BYTES)),
            eta_s=as_number(values.get(ETA_S)),
            elapsed_s=as_number(values.get(ELAPSED_S)),
            errors=as_number(values.get(WARMUP_ERRORS)),
            pass_name=as_str(extra.get("pass")) or "",
            done_map=(
                tuple(as_number(c) or 0.0 for c in cells) if isinstance(cells, list) else None
            ),
            plateau=plateau if isinstance(plateau, Mapping) else {},
            plateau_state=as_str(extra.get("plateau_state")),
            bad_sectors=as_int(extra.get("bad_sectors")) or 0,
            zero_bytes=as_int(extra.get("zero_bytes")),
            read_bytes=as_int(extra.get("read_bytes")),
            never_map=_cells(extra.get("never_map")),
            bad_map=_cells(extra.get("bad_map")),
            kernel_bytes=as_int(extra.get("kernel_bytes")),
            kernel_device=as_str(extra.get("kernel_device")),
        )


def _cells(value: Any) -> tuple[float, ...] | None:
    return tuple(as_number(c) or 0.0 for c in value) if isinstance(value, list) else None


@dataclass(frozen=True, slots=True)
class WarmupParams:
    """What a warm-up probe runs with, as its ``params()`` (recording header)."""

    target: str
    pass_name: str
    verify: bool
    bs: int
    jobs: int
    iodepth: int
    engine: str
    range: tuple[int | None, int | None]
    direct: bool | None
    resume: bool
    checkpoint: str | None
    time_s: float | None
    rate_iops: int | None
    steadystate: str
    ss_dur: float
    ss_ramp: float
    interval_s: float
    backing_device: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "pass": self.pass_name,
            "verify": self.verify,
            "bs": self.bs,
            "jobs": self.jobs,
            "iodepth": self.iodepth,
            "engine": self.engine,
            "range": list(self.range),
            "direct": self.direct,
            "resume": self.resume,
            "checkpoint": self.checkpoint,
            "time_s": self.time_s,
            "rate_iops": self.rate_iops,
            "steadystate": self.steadystate,
            "ss_dur": self.ss_dur,
            "ss_ramp": self.ss_ramp,
            "interval_s": self.interval_s,
            "backing_device": self.backing_device,
        }

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> WarmupParams:
        """From a probe description (``Announce.info`` or a recording header)."""
        p = params_of(info)
        rng = p.get("range")
        start, end = (rng[0], rng[1]) if isinstance(rng, list) and len(rng) == 2 else (None, None)
        return cls(
            target=as_str(p.get("target")) or as_str(info.get("id")) or "",
            pass_name=as_str(p.get("pass")) or "",
            verify=bool(p.get("verify", False)),
            bs=as_int(p.get("bs")) or 0,
            jobs=as_int(p.get("jobs")) or 1,
            iodepth=as_int(p.get("iodepth")) or 1,
            engine=as_str(p.get("engine"))
            or ("libaio" if (as_int(p.get("iodepth")) or 1) > 1 else "psync"),
            range=(as_int(start), as_int(end)),
            direct=p.get("direct") if isinstance(p.get("direct"), bool) else None,
            resume=bool(p.get("resume", False)),
            checkpoint=as_str(p.get("checkpoint")),
            time_s=as_number(p.get("time_s")),
            rate_iops=as_int(p.get("rate_iops")),
            steadystate=as_str(p.get("steadystate")) or "",
            ss_dur=as_number(p.get("ss_dur")) or 0.0,
            ss_ramp=as_number(p.get("ss_ramp")) or 0.0,
            interval_s=as_number(p.get("interval_s")) or 1.0,
            backing_device=as_str(p.get("backing_device")),
        )
