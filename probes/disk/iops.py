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
- ``IopsProbe(settings)`` takes its ``IopsSettings`` (probes/disk/settings.py).
- Writes to a block device are refused whatever the flags for a device in use
  (``blockdev.write_refusals``) or one holding a partition table or
  filesystem; past those refusals they need ``settings.confirmed``
  (``--yes-destroy-data=TARGET`` or the typed name in the dashboard), else
  ``prepare`` raises ``ConfirmationRequired``. Files are never refused: they
  are probetop's own test files.
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

from probetop.probes.core.base import ConfirmationRequired, Emit, ProbeError
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.ticker import Ticker
from probetop.probes.disk.records import (
    DIRECTIONS,
    FIO_PERCENTILES,
    IOPS_KIND,
    IOPS_METRICS,
    DirectionRates,
    IopsInterval,
    IopsParams,
    pct_key,
)
from probetop.probes.disk.settings import IopsSettings
from probetop.probes.disk.target import Target, format_size, layout_file, resolve
from probetop.probes.disk.workers import (
    DirectionTotals,
    Engine,
    EnginePlan,
    Snapshot,
    hist_percentiles,
    warm_up_kernels,
)


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

    kind = IOPS_KIND
    metrics = IOPS_METRICS

    def __init__(self, settings: IopsSettings, *, probe_id: str | None = None) -> None:
        settings.validate()
        self.settings = settings
        s = settings
        self.target_path = s.target
        # Read often in the measuring code; the settings object stays the record.
        self.rw = s.rw
        self.bs = s.bs
        self.time_s = s.time_s
        self.ramp_s = s.ramp_s
        self.interval_s = s.interval_s
        self.id = probe_id or f"iops:{s.target}"
        self.target: Target | None = None
        self.intervals: list[dict[str, Any]] = []
        self._base: Snapshot | None = None
        self._last: Snapshot | None = None
        self._measure_start_ns: int | None = None
        self._start_ns = 0
        self._final: tuple[Snapshot, Snapshot] | None = None
        self.notes: list[str] = []
        self.errors: list[str] = []

    # -- Probe protocol --
    def prepare(self) -> None:
        from probetop.probes.disk.blockdev import data_signatures, write_refusals

        s = self.settings
        self.target = resolve(
            s.target,
            write=s.writes,
            bs=s.bs,
            size=s.size,
            offset=s.offset,
            direct=s.direct,
            may_create=True,
        )
        self.notes = list(self.target.notes)
        if s.writes and self.target.kind == "block":
            refusals = write_refusals(s.target)
            if refusals:
                raise ProbeError("refusing to write: " + "; ".join(refusals))
            signatures = data_signatures(s.target)
            if signatures:
                raise ProbeError(
                    f"refusing to write to {s.target}: it holds data "
                    f"({', '.join(signatures)}). The IOPS probe never overwrites a device "
                    "with a partition table or filesystem; wipe it yourself first "
                    "(wipefs -a) if you mean it."
                )
            if not s.confirmed:
                raise ConfirmationRequired(
                    f"{s.rw} destroys data on {s.target}. Confirm with "
                    f"--yes-destroy-data={s.target} (headless) or type the name in "
                    "the dashboard's confirmation dialog.",
                    target=s.target,
                    action="writes",
                )

    def run_params(self) -> IopsParams:
        s, t = self.settings, self.target
        return IopsParams(
            target=s.target,
            rw=s.rw,
            rwmixread=s.rwmixread if s.rw in ("randrw", "rw") else None,
            bs=s.bs,
            jobs=s.jobs,
            iodepth=s.iodepth,
            offset=s.offset,
            size=t.size if t else s.size,
            direct=t.direct if t else s.direct,
            sync=s.sync,
            time_s=s.time_s,
            ramp_s=s.ramp_s,
            rate_iops=s.rate_iops or None,
            interval_s=s.interval_s,
            engine="libaio" if s.iodepth > 1 else "psync",
            backing_device=t.backing if t else None,
        )

    def params(self) -> Mapping[str, Any]:
        return self.run_params().as_dict()

    def reference_command(self) -> str:
        s, t = self.settings, self.target
        args = [
            "fio",
            "--name=probetop",
            f"--filename={s.target}",
            f"--rw={s.rw}",
            f"--bs={format_size(s.bs)}",
            f"--ioengine={'libaio' if s.iodepth > 1 else 'psync'}",
            f"--iodepth={s.iodepth}",
            f"--numjobs={s.jobs}",
            f"--direct={int(t.direct if t else s.direct is not False)}",
        ]
        if s.rw in ("randrw", "rw"):
            args.append(f"--rwmixread={s.rwmixread}")
        if s.sync:
            args.append("--sync=1")
        if s.rate_iops:
            args.append(f"--rate_iops={s.rate_iops}")
        if s.offset:
            args.append(f"--offset={s.offset}")
        size = t.size if t else s.size
        if size:
            args.append(f"--size={size}")
        if s.ramp_s:
            args.append(f"--ramp_time={s.ramp_s:g}")
        if s.time_s:
            args += ["--time_based", f"--runtime={s.time_s:g}"]
        args.append("--group_reporting")
        return shlex.join(args)

    def plan(self) -> EnginePlan:
        assert self.target is not None, "prepare() first"
        s = self.settings
        return EnginePlan(
            path=s.target,
            bs=s.bs,
            extents=[(self.target.start, self.target.end)],
            jobs=s.jobs,
            iodepth=s.iodepth,
            readpct=s.readpct,
            seq=s.sequential,
            wrap=True,
            direct=self.target.direct,
            sync=s.sync,
            rate_iops=s.rate_iops,
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
        rates: dict[str, DirectionRates] = {}
        errors = 0
        row: dict[str, Any] = {"t_s": round((snap.t_ns - self._start_ns) / 1e9, 3)}
        s = self.settings
        for d, name in enumerate(DIRECTIONS):
            delta = snap.dirs[d].minus(prev.dirs[d])
            errors += delta.errors
            active = (name == "read" and s.readpct > 0) or (name == "write" and s.writes)
            if not active:
                continue
            iops = delta.ios / seconds
            pct = hist_percentiles(delta.hist)
            mean = delta.lat_mean_ns
            r = rates[name] = DirectionRates(
                iops=iops,
                bps=delta.bytes / seconds,
                clat_p50_us=pct[50] / 1000.0 if pct[50] is not None else None,
                clat_p99_us=pct[99] / 1000.0 if pct[99] is not None else None,
                clat_mean_us=mean / 1000.0 if mean is not None else None,
                clat_us={pct_key(p): v / 1000.0 for p, v in pct.items() if v is not None},
            )
            row[f"{name}_iops"] = round(iops, 1)
            row[f"{name}_bw_bytes"] = round(delta.bytes / seconds)
            row[f"{name}_clat_p50_us"] = r.clat_p50_us
            row[f"{name}_clat_p99_us"] = r.clat_p99_us
        row["errors"] = errors
        row["ramp"] = ramping
        self.intervals.append(row)
        interval = IopsInterval(
            read=rates.get("read"),
            write=rates.get("write"),
            errors_per_s=errors / seconds,
            ramp=ramping,
            percentiles=FIO_PERCENTILES,
        )
        emit(interval.to_sample(self.id, snap.t_ns, seconds))

    def summary(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {
            "target": self.settings.target,
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
