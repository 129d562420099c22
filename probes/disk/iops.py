"""The IOPS probe: fio-style random/sequential I/O on a file or block device.

Contract:
- Measures what ``fio`` measures for the same job (``reference_command``):
  ``--ioengine`` psync (one pread/pwrite at a time per job), libaio or
  io_uring, as fio's engines (default: probes/disk/ioengines.py); O_DIRECT
  unless buffered I/O is asked for or impossible (then a status says so).
- One Sample per interval with per-interval (not cumulative) IOPS and bytes/s
  per direction and completion-latency percentiles (fio's list, in µs, as
  ``extra["clat_us"][direction]``); ``p50``/``p99`` are also plain metrics.
- ``--ramp S`` runs S seconds before the totals start (fio ``ramp_time``);
  ``time_s`` then measures that long and the probe ends by itself.
- ``IopsProbe(settings)`` takes its ``IopsSettings`` (probes/disk/settings.py).
- Writes to a block device are refused whatever the flags for a device in use
  (``refusals.write_refusals``) or one holding a partition table or
  filesystem; past those refusals they need ``settings.confirmed``
  (``--yes-destroy-data=TARGET`` or the typed name in the dashboard), else
  ``prepare`` raises ``ConfirmationRequired``. A file needs no confirmation
  (it is probetop's own test file) but a write or a layout is refused for a
  file that backs a loop device or is an active swap file.
- One run per target (``lock.TargetLock``): ``prepare`` reports a target
  another probetop holds, ``run`` holds the lock until it ends.
- Before anything starts: what the machine can hold (``capacity.check``:
  threads, memory, kernel AIO) and, for a file that grows, free space
  (``target.check_room``: refused with the numbers).
- A new or short file is laid out first (``target.Layout``) in a stoppable
  step: it stops within ~0.1 s on a signal or the dashboard's stop (the
  partial file is removed, or an extended one cut back), and --time bounds
  it too: a layout that does not finish within --time ends the run (exit 2,
  nothing measured). Measuring then runs ``ramp_s + time_s`` as fio does.
- Every tick the target is watched (removed, replaced, shrunk: stop with
  the reason) and an I/O error that makes going on pointless (disk full,
  read-only, device gone) ends the run with that message; the report of what
  was measured so far is kept.
- ``summary()`` is fio-shaped per direction (``iops``, ``bw_bytes``,
  ``io_bytes``, ``total_ios``, ``runtime_ms``, ``slat_ns``, ``clat_ns`` with
  ``min``, ``max``, ``mean``, ``stddev``, ``N``, ``percentile``, ``lat_ns``:
  fio's three latencies, clat from the end of the submitting call) plus
  ``intervals`` and the equivalent ``fio_command``.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from probetop.probes.core.base import ConfirmationRequired, Emit, ProbeError
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.targetlock import TargetLock
from probetop.probes.core.ticker import Ticker
from probetop.probes.disk import capacity, ioengines
from probetop.probes.disk.blockmap import BlockMap
from probetop.probes.disk.capacity import human
from probetop.probes.disk.counters import (
    B_HOLE,
    READ,
    DirectionTotals,
    LatencyStats,
    Snapshot,
    hist_percentiles,
)
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.filelayout import Layout
from probetop.probes.disk.freespace import allocation_needed, check_room
from probetop.probes.disk.holes import find_holes
from probetop.probes.disk.kernelview import KernelView, buffered_note, rate_note, zeros_note
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
from probetop.probes.disk.refusals import lock_devices
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.settings import IopsSettings
from probetop.probes.disk.sizes import format_size
from probetop.probes.disk.steps import GRACE_S, run_step
from probetop.probes.disk.target import Target, resolve
from probetop.probes.disk.targeterrors import describe_os_error, target_errors
from probetop.probes.disk.targetwatch import TargetWatch
from probetop.probes.disk.workers import Engine, kernel_notes


def fio_latency(stats: LatencyStats) -> dict[str, Any]:
    """fio's ``slat_ns``/``clat_ns``/``lat_ns`` figures (no percentiles); all
    zero with no samples, as fio writes ``slat_ns`` for psync."""
    return {
        "min": stats.min_ns or 0,
        "max": stats.max_ns or 0,
        "mean": stats.mean_ns or 0.0,
        "stddev": stats.stddev_ns or 0.0,
        "N": stats.n,
    }


def fio_direction(d: DirectionTotals, runtime_s: float) -> dict[str, Any]:
    """One direction in fio's JSON shape: fio's field names, types and units
    (``io_bytes``, ``io_kbytes``, ``bw_bytes`` B/s, ``bw`` KiB/s, ``iops``,
    ``runtime`` ms, ``total_ios``, ``slat_ns``, ``clat_ns`` with fio's
    percentile keys, ``lat_ns``, in ns); ``runtime_ms`` and ``errors`` are
    probetop's own."""
    pct = hist_percentiles(d.hist, FIO_PERCENTILES) if d.ios else {}
    runtime_ms = round(runtime_s * 1000)
    return {
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes >> 10,  # KiB, as fio
        "bw_bytes": round(d.bytes / runtime_s) if runtime_s > 0 else 0,
        "bw": round(d.bytes / 1024 / runtime_s) if runtime_s > 0 else 0,  # KiB/s, as fio
        "iops": d.ios / runtime_s if runtime_s > 0 else 0.0,
        "runtime": runtime_ms,  # fio's name (ms)
        "runtime_ms": runtime_ms,  # probetop 0.1's name, kept for old readers
        "total_ios": d.ios,
        "errors": d.errors,
        "slat_ns": fio_latency(d.slat),
        "clat_ns": {
            **fio_latency(d.clat),
            "percentile": {pct_key(p): round(v) for p, v in pct.items() if v is not None},
        },
        "lat_ns": fio_latency(d.lat),
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
        # What runs: settled by prepare (ioengines.resolve, which checks that
        # io_uring works here); until then what was asked for, or the default.
        self.engine = settings.ioengine or ("psync" if settings.iodepth == 1 else "libaio")
        self.layout: Layout | None = None
        self._layout_undone: str | None = None
        self._lock: TargetLock | None = None
        self._watch: TargetWatch | None = None

    # -- Probe protocol --
    def prepare(self) -> None:
        """Check everything before anything starts (see the module docstring)."""
        with target_errors(self.settings.target):
            self._prepare()

    def _prepare(self) -> None:
        from probetop.probes.disk.refusals import write_refusals
        from probetop.probes.disk.signatures import data_signatures

        s = self.settings
        capacity.check(jobs=s.jobs, iodepth=s.iodepth, bs=s.bs)
        self.engine, engine_note = ioengines.resolve(s.ioengine, s.iodepth)
        # Another probetop on this target is named by PID before anything about
        # the target itself (its size while the other run grows it, its O_EXCL,
        # which would show up below as "the kernel reports it busy").
        self._lock = TargetLock.for_target(s.target, self.kind, lock_devices)
        self._lock.check()
        self.target = resolve(
            s.target,
            write=s.writes,
            bs=s.bs,
            size=s.size,
            offset=s.offset,
            direct=s.direct,
            may_create=True,
        )
        self.notes = list(self.target.notes) + kernel_notes()
        if engine_note:
            self.notes.append(engine_note)
        if s.direct is False:
            self.notes.append(buffered_note())
        exists = self.target.identity is not None
        if exists and (s.writes or self.target.create):
            refusals = write_refusals(s.target)
            if refusals:
                what = "write" if s.writes else "lay out (extend)"
                raise ProbeError(f"refusing to {what}: " + "; ".join(refusals))
        if self.target.kind == "file" and (s.writes or self.target.create):
            need = allocation_needed(s.target, self.target.start, self.target.end)
            check_room(s.target, need, "laying out" if self.target.create else "writing")
        if s.writes and self.target.kind == "block":
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
            engine=self.engine,
            backing_device=t.backing if t else None,
        )

    def params(self) -> Mapping[str, Any]:
        return self.run_params().as_dict()

    def target_locks(self) -> list[TargetLock]:
        """The target's lock (``targetlock.UsesFiles``); empty before ``prepare``."""
        return [self._lock] if self._lock is not None else []

    def reference_command(self) -> str:
        s, t = self.settings, self.target
        args = [
            "fio",
            "--name=probetop",
            f"--filename={s.target}",
            f"--rw={s.rw}",
            f"--bs={format_size(s.bs)}",
            f"--ioengine={self.engine}",
            f"--iodepth={s.iodepth}",
            f"--numjobs={s.jobs}",
            f"--direct={int(t.direct if t else s.direct is not False)}",
        ]
        if s.rw in ("randrw", "rw"):
            args.append(f"--rwmixread={s.rwmixread}")
        if s.sync:
            args.append("--sync=1")
        if s.rate_iops and s.rw in ("randrw", "rw"):
            # fio caps each direction at a single rate_iops value; probetop caps
            # the job: split the cap by the mix (reads, writes).
            reads = round(s.rate_iops * s.readpct / 100)
            args.append(f"--rate_iops={reads},{s.rate_iops - reads}")
        elif s.rate_iops:
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
            exclusive=s.writes and self.target.kind == "block",
            ioengine=self.engine,
            blockmap=self._zero_map(),
        )

    def _zero_map(self) -> BlockMap | None:
        """For reads: the map the loops count all-zero reads in (the file's
        holes marked first, read without a scan), for the "too good to be
        true" note."""
        assert self.target is not None
        if self.settings.readpct <= 0:
            return None
        t = self.target
        blockmap = BlockMap(t.start, t.end, self.settings.bs)
        holes = find_holes(self.settings.target, t.start, t.end)
        if holes is not None:
            blockmap.put_within(holes.extents, B_HOLE)
        return blockmap

    async def run(self, emit: Emit) -> None:
        if self.target is None or self._lock is None:
            self.prepare()
        assert self.target is not None and self._lock is not None
        self._lock.acquire()  # TargetBusy if another run took the target since prepare
        try:
            await self._run(emit)
        finally:
            self._lock.release()

    async def _run(self, emit: Emit) -> None:
        assert self.target is not None and self._lock is not None
        for note in self.notes:
            emit(Status(self.id, now_ns(), "warning", note))
        if self.target.create:
            await self._lay_out(emit)
        emit(Status(self.id, now_ns(), "info", "compiling the native I/O loop"))
        await run_step(_warm_up, name="probetop-jit", grace_s=0)
        self._watch = TargetWatch(self.target)
        engine = Engine(self.plan())
        view = KernelView(self.target_path)
        try:
            try:
                await run_step(
                    lambda stop: engine.start(), name="probetop-start", on_stop=engine.stop
                )
            except OSError as exc:
                raise ProbeError(
                    f"{self.target_path}: cannot open for I/O: {describe_os_error(exc)}"
                ) from None
            await self._measure(engine, emit)
        finally:
            engine.stop()
            if not engine.join_stopped(GRACE_S):
                self.errors.append(
                    f"{engine.stuck} I/O worker(s) still blocked in the kernel after the stop "
                    "(the device is not answering); they end with the process"
                )
            # The last completion, not after the AIO context teardown (~30 ms).
            end = engine.snapshot(engine.finished_ns or now_ns())
            if self._base is not None:
                self._final = (self._base, end)
                self._too_good_notes(end.dirs, self._base.dirs, end.t_ns - self._base.t_ns, view)
            if engine.failures:
                self.errors.extend(engine.failures)

    def _too_good_notes(
        self,
        end: Sequence[DirectionTotals],
        base: Sequence[DirectionTotals],
        ns: int,
        view: KernelView,
    ) -> None:
        """Too good to be true: reads that came back all zero, and a rate far
        above what the disk under the target did (whole run, kernel counters)."""
        read = end[READ].minus(base[READ])
        note = zeros_note(read.zero_bytes, read.bytes)
        if note:
            self.notes.append(note)
        delta = view.delta()
        for d, name in enumerate(DIRECTIONS):
            ours = end[d].bytes - base[d].bytes
            kernel = None if delta is None else delta[d]
            note = rate_note(name, ours, ns / 1e9, view.device, kernel)
            if note:
                self.notes.append(note)

    async def _lay_out(self, emit: Emit) -> None:
        """Lay the file out in a stoppable step, bounded by --time; undo a
        layout that does not finish."""
        assert self.target is not None and self._lock is not None
        layout = self.layout = Layout(self.target, fill=True)
        size = human(self.target.end)
        emit(Status(self.id, now_ns(), "info", f"laying out {self.target_path} ({size})"))
        try:
            await asyncio.wait_for(
                run_step(layout.run, name="probetop-layout"), timeout=self.time_s
            )
        except asyncio.TimeoutError:
            self._layout_undone = layout.undo()
            raise ProbeError(
                f"--time {self.time_s:g} s ran out while laying out {self.target_path} "
                f"({human(layout.done)} of {human(layout.total)} written; "
                f"{self._layout_undone or 'nothing to undo'}): nothing was measured. "
                "Give a longer --time, a smaller --size, or lay the file out first."
            ) from None
        except asyncio.CancelledError:
            self._layout_undone = layout.undo()
            raise
        except OSError as exc:
            self._layout_undone = layout.undo()
            raise ProbeError(
                f"{self.target_path}: cannot lay out the file: {describe_os_error(exc)}"
                + (f" ({self._layout_undone})" if self._layout_undone else "")
            ) from None
        # The file exists now: hold its inode too (hard links are the same file).
        from probetop.probes.core.targetlock import target_keys

        self._lock.add(target_keys(self.target_path, lock_devices))

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
            if engine.finished.is_set() and engine.finished_ns:
                # The loops stopped on their own (a fatal errno): the run
                # ends when its last I/O did, not at this tick, so the time
                # after it is not runtime (fio's runtime ends at the error).
                t = min(t, engine.finished_ns)
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
            if engine.finished.is_set() and engine.failures:
                raise ProbeError("I/O worker failed: " + "; ".join(engine.failures))
            problem = (self._watch.problem() if self._watch else None) or engine.fatal_error()
            if problem:
                raise ProbeError(problem)
            if engine.finished.is_set():
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
            mean = delta.clat.mean_ns
            r = rates[name] = DirectionRates(
                iops=iops,
                bps=delta.bytes / seconds,
                clat_p50_us=pct[50] / 1000.0 if pct[50] is not None else None,
                clat_p99_us=pct[99] / 1000.0 if pct[99] is not None else None,
                clat_mean_us=mean / 1000.0 if mean is not None else None,
                clat_us={pct_key(p): v / 1000.0 for p, v in pct.items() if v is not None},
                clat_hist=tuple((int(i), int(delta.hist[i])) for i in delta.hist.nonzero()[0]),
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
        if self.layout is not None and self.layout.state != "complete":
            out["layout"] = {
                "state": self.layout.state,
                "bytes": self.layout.done,
                "total_bytes": self.layout.total,
                "undone": self._layout_undone,
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


def _warm_up(stop: object) -> None:
    """The JIT warm-up as a step (compilation cannot be interrupted: a stop
    leaves it behind in its daemon thread, see ``steps.run_step``)."""
    warm_up_kernels()
