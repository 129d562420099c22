"""The IOPS probe: fio-style random/sequential I/O on a file or block device.

Contract:
- Measures what ``fio`` measures for the same job (``reference_command``):
  ``--iodepth 1`` runs fio's psync pattern (one pread/pwrite at a time per
  job), a deeper queue runs kernel AIO like ``--ioengine=libaio``; O_DIRECT
  unless buffered I/O is asked for or impossible (then a status says so).
- One Sample per interval with per-interval (not cumulative) IOPS and bytes/s
  per direction and completion-latency percentiles (fio's list, in µs, as
  ``extra["clat_us"][direction]``); ``p50``/``p99`` are also plain metrics.
- ``--ramp S`` runs S seconds before the totals start (fio ``ramp_time``);
  ``time_s`` then measures that long and the probe ends by itself.
- Writes to a block device need ``confirmed`` (``--yes-destroy-data=TARGET`` or
  the typed name in the dashboard) and are refused whatever the flags for a
  device in use (``blockdev.write_refusals``) or one holding a partition table
  or filesystem. Files are never refused: they are probetop's own test files.
- ``summary()`` is fio-shaped per direction (``iops``, ``bw_bytes``,
  ``io_bytes``, ``total_ios``, ``runtime_ms``, ``clat_ns`` with ``min``,
  ``max``, ``mean``, ``stddev``, ``N``, ``percentile``) plus ``intervals`` and
  the equivalent ``fio_command``.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, MetricSpec, ProbeError, UsageProbeError
from probetop.probes.core.sample import Sample, Status, now_ns
from probetop.probes.core.ticker import Ticker
from probetop.probes.disk.target import Target, format_size, layout_file, resolve
from probetop.probes.disk.workers import (
    DIRECTIONS,
    FIO_PERCENTILES,
    DirectionTotals,
    Engine,
    EnginePlan,
    Snapshot,
    hist_percentiles,
    warm_up_kernels,
)

RW_MODES = ("read", "write", "randread", "randwrite", "randrw", "rw")


def pct_key(p: float) -> str:
    """fio's percentile key spelling: "99.900000"."""
    return f"{p:.6f}"


def fio_direction(d: DirectionTotals, runtime_s: float) -> dict[str, Any]:
    """One direction in fio's JSON shape (bandwidths in bytes/s, latency in ns)."""
    pct = hist_percentiles(d.hist, FIO_PERCENTILES) if d.ios else {}
    return {
        "io_bytes": d.bytes,
        "bw_bytes": round(d.bytes / runtime_s) if runtime_s > 0 else 0,
        "bw": round(d.bytes / 1024 / runtime_s) if runtime_s > 0 else 0,  # KiB/s, as fio
        "iops": d.ios / runtime_s if runtime_s > 0 else 0.0,
        "runtime_ms": round(runtime_s * 1000),
        "total_ios": d.ios,
        "errors": d.errors,
        "clat_ns": {
            "min": d.lat_min_ns or 0,
            "max": d.lat_max_ns or 0,
            "mean": d.lat_mean_ns or 0.0,
            "stddev": d.lat_stddev_ns or 0.0,
            "N": d.ios,
            "percentile": {pct_key(p): round(v) for p, v in pct.items() if v is not None},
        },
    }


class IopsProbe:
    """See the module docstring."""

    kind = "iops"
    metrics = (
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
        MetricSpec("errors", "/s", "failed or short I/Os per second"),
    )

    def __init__(
        self,
        target: str,
        *,
        rw: str = "randread",
        rwmixread: int = 50,
        bs: int = 4096,
        jobs: int = 1,
        iodepth: int = 1,
        size: int | None = None,
        offset: int = 0,
        direct: bool | None = None,
        sync: bool = False,
        time_s: float | None = None,
        ramp_s: float = 0.0,
        rate_iops: int = 0,
        confirmed: bool = False,
        interval_s: float = 1.0,
        probe_id: str | None = None,
    ) -> None:
        if rw not in RW_MODES:
            raise UsageProbeError(f"--rw must be one of {', '.join(RW_MODES)}, got {rw!r}")
        if not 0 <= rwmixread <= 100:
            raise UsageProbeError("--rwmixread must be 0..100")
        if jobs < 1 or jobs > 256:
            raise UsageProbeError("--jobs must be 1..256")
        if iodepth < 1 or iodepth > 1024:
            raise UsageProbeError("--iodepth must be 1..1024")
        if ramp_s < 0:
            raise UsageProbeError("--ramp must be zero or more seconds")
        self.target_path = target
        self.rw = rw
        self.rwmixread = rwmixread
        self.bs = bs
        self.jobs = jobs
        self.iodepth = iodepth
        self.size = size
        self.offset = offset
        self.direct_wanted = direct
        self.sync = sync
        self.time_s = time_s
        self.ramp_s = ramp_s
        self.rate_iops = rate_iops
        self.confirmed = confirmed  # writes to a block device: the user typed its name
        self.interval_s = interval_s
        self.id = probe_id or f"iops:{target}"
        self.target: Target | None = None
        self.intervals: list[dict[str, Any]] = []
        self._base: Snapshot | None = None
        self._last: Snapshot | None = None
        self._measure_start_ns: int | None = None
        self._start_ns = 0
        self._final: tuple[Snapshot, Snapshot] | None = None
        self.notes: list[str] = []
        self.errors: list[str] = []

    # -- derived --
    @property
    def readpct(self) -> int:
        if self.rw in ("read", "randread"):
            return 100
        if self.rw in ("write", "randwrite"):
            return 0
        return self.rwmixread

    @property
    def sequential(self) -> bool:
        return not self.rw.startswith("rand")

    @property
    def writes(self) -> bool:
        return self.readpct < 100

    # -- Probe protocol --
    def prepare(self) -> None:
        from probetop.probes.disk.blockdev import data_signatures, write_refusals

        self.target = resolve(
            self.target_path,
            write=self.writes,
            bs=self.bs,
            size=self.size,
            offset=self.offset,
            direct=self.direct_wanted,
            may_create=True,
        )
        self.notes = list(self.target.notes)
        if self.writes and self.target.kind == "block":
            refusals = write_refusals(self.target_path)
            if refusals:
                raise ProbeError("refusing to write: " + "; ".join(refusals))
            signatures = data_signatures(self.target_path)
            if signatures:
                raise ProbeError(
                    f"refusing to write to {self.target_path}: it holds data "
                    f"({', '.join(signatures)}). The IOPS probe never overwrites a device "
                    "with a partition table or filesystem; wipe it yourself first "
                    "(wipefs -a) if you mean it."
                )
            if not self.confirmed:
                raise ProbeError(
                    f"{self.rw} destroys data on {self.target_path}. Confirm with "
                    f"--yes-destroy-data={self.target_path} (headless) or type the name in "
                    "the dashboard's confirmation dialog."
                )

    def params(self) -> Mapping[str, Any]:
        t = self.target
        return {
            "target": self.target_path,
            "rw": self.rw,
            "rwmixread": self.rwmixread if self.rw in ("randrw", "rw") else None,
            "bs": self.bs,
            "jobs": self.jobs,
            "iodepth": self.iodepth,
            "offset": self.offset,
            "size": t.size if t else self.size,
            "direct": t.direct if t else self.direct_wanted,
            "sync": self.sync,
            "time_s": self.time_s,
            "ramp_s": self.ramp_s,
            "rate_iops": self.rate_iops or None,
            "interval_s": self.interval_s,
            "engine": "libaio" if self.iodepth > 1 else "psync",
            "backing_device": t.backing if t else None,
        }

    def reference_command(self) -> str:
        t = self.target
        args = [
            "fio",
            "--name=probetop",
            f"--filename={self.target_path}",
            f"--rw={self.rw}",
            f"--bs={format_size(self.bs)}",
            f"--ioengine={'libaio' if self.iodepth > 1 else 'psync'}",
            f"--iodepth={self.iodepth}",
            f"--numjobs={self.jobs}",
            f"--direct={int(t.direct if t else self.direct_wanted is not False)}",
        ]
        if self.rw in ("randrw", "rw"):
            args.append(f"--rwmixread={self.rwmixread}")
        if self.sync:
            args.append("--sync=1")
        if self.rate_iops:
            args.append(f"--rate_iops={self.rate_iops}")
        if self.offset:
            args.append(f"--offset={self.offset}")
        size = t.size if t else self.size
        if size:
            args.append(f"--size={size}")
        if self.ramp_s:
            args.append(f"--ramp_time={self.ramp_s:g}")
        if self.time_s:
            args += ["--time_based", f"--runtime={self.time_s:g}"]
        args.append("--group_reporting")
        return shlex.join(args)

    def plan(self) -> EnginePlan:
        assert self.target is not None, "prepare() first"
        return EnginePlan(
            path=self.target_path,
            bs=self.bs,
            extents=[(self.target.start, self.target.end)],
            jobs=self.jobs,
            iodepth=self.iodepth,
            readpct=self.readpct,
            seq=self.sequential,
            wrap=True,
            direct=self.target.direct,
            sync=self.sync,
            rate_iops=self.rate_iops,
        )

    async def run(self, emit: Emit) -> None:
        if self.target is None:
            self.prepare()
        assert self.target is not None
        for note in self.notes:
            emit(Status(self.id, now_ns(), "warning", note))
        if self.target.create:
            emit(Status(self.id, now_ns(), "info", f"laying out {self.target_path}"))
            try:
                await asyncio.to_thread(layout_file, self.target, True)
            except OSError as exc:
                raise ProbeError(f"{self.target_path}: cannot lay out the file: {exc}") from None
        emit(Status(self.id, now_ns(), "info", "compiling the native I/O loop"))
        await asyncio.to_thread(warm_up_kernels)
        engine = Engine(self.plan())
        try:
            engine.start()
        except OSError as exc:
            raise ProbeError(f"{self.target_path}: cannot open for I/O: {exc}") from None
        try:
            await self._measure(engine, emit)
        finally:
            engine.stop()
            engine.join()
            # The last completion, not after the AIO context teardown (~30 ms).
            end = engine.snapshot(engine.finished_ns or now_ns())
            if self._base is not None:
                self._final = (self._base, end)
            if engine.failures:
                self.errors.extend(engine.failures)

    async def _measure(self, engine: Engine, emit: Emit) -> None:
        start = now_ns()
        self._start_ns = start
        ramp_end = start + int(self.ramp_s * 1e9)
        if self.ramp_s <= 0:
            self._base = engine.snapshot(start)
            self._measure_start_ns = start
        prev = engine.snapshot(start)
        ticker = Ticker(self.interval_s)
        while True:
            t = await ticker.tick()
            snap = engine.snapshot(t)
            self._emit_interval(prev, snap, emit, ramping=self._base is None)
            prev = snap
            if self._base is None and t >= ramp_end:
                engine.reset_min_max()
                self._base = engine.snapshot(now_ns())
                self._measure_start_ns = self._base.t_ns
                emit(Status(self.id, now_ns(), "info", "ramp done: totals start now"))
            if (
                self.time_s
                and self._measure_start_ns is not None
                # A tick can land a hair before the deadline: do not run a whole extra interval.
                and t - self._measure_start_ns >= (self.time_s - self.interval_s / 4) * 1e9
            ):
                return
            if engine.finished.is_set():
                if engine.failures:
                    raise ProbeError("I/O worker failed: " + "; ".join(engine.failures))
                return

    def _emit_interval(self, prev: Snapshot, snap: Snapshot, emit: Emit, ramping: bool) -> None:
        seconds = (snap.t_ns - prev.t_ns) / 1e9
        if seconds <= 0:
            return
        values: dict[str, float | None] = {}
        clat: dict[str, dict[str, float]] = {}
        errors = 0
        row: dict[str, Any] = {"t_s": round((snap.t_ns - self._start_ns) / 1e9, 3)}
        for d, name in enumerate(DIRECTIONS):
            delta = snap.dirs[d].minus(prev.dirs[d])
            errors += delta.errors
            active = (name == "read" and self.readpct > 0) or (name == "write" and self.writes)
            if not active:
                continue
            iops = delta.ios / seconds
            values[f"{name}_iops"] = iops
            values[f"{name}_Bps"] = delta.bytes / seconds
            pct = hist_percentiles(delta.hist)
            us = {pct_key(p): v / 1000.0 for p, v in pct.items() if v is not None}
            clat[name] = us
            values[f"{name}_clat_p50_us"] = pct[50] / 1000.0 if pct[50] is not None else None
            values[f"{name}_clat_p99_us"] = pct[99] / 1000.0 if pct[99] is not None else None
            mean = delta.lat_mean_ns
            values[f"{name}_clat_mean_us"] = mean / 1000.0 if mean is not None else None
            row[f"{name}_iops"] = round(iops, 1)
            row[f"{name}_bw_bytes"] = round(delta.bytes / seconds)
            row[f"{name}_clat_p50_us"] = values[f"{name}_clat_p50_us"]
            row[f"{name}_clat_p99_us"] = values[f"{name}_clat_p99_us"]
        values["errors"] = errors / seconds
        row["errors"] = errors
        row["ramp"] = ramping
        self.intervals.append(row)
        emit(
            Sample(
                self.id,
                snap.t_ns,
                seconds,
                values,
                {"clat_us": clat, "ramp": ramping, "percentiles": list(FIO_PERCENTILES)},
            )
        )

    def summary(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {
            "target": self.target_path,
            "params": dict(self.params()),
            "fio_command": self.reference_command(),
            "notes": self.notes,
            "intervals": self.intervals,
        }
        if self._final is not None:
            base, end = self._final
            runtime = (end.t_ns - base.t_ns) / 1e9
            for d, name in enumerate(DIRECTIONS):
                out[name] = fio_direction(end.dirs[d].minus(base.dirs[d]), runtime)
            out["runtime_ms"] = round(runtime * 1000)
        if self.errors:
            out["errors"] = self.errors
        return out
