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
- On NFS, each interval carries the client's per-op view (``nfsstats``:
  nfsiostat's ops/s, kB/op, avg RTT and exe ms) and the summary the whole
  window's under ``nfs``; ``disk_util`` (fio's kernel view) and the worker
  threads' CPU use are in the summary for ``fiodoc``.
- ``summary()`` is fio-shaped per direction (``iops``, ``bw_bytes``,
  ``io_bytes``, ``total_ios``, ``runtime_ms``, ``slat_ns``, ``clat_ns`` with
  ``min``, ``max``, ``mean``, ``stddev``, ``N``, ``percentile``, ``lat_ns``:
  fio's three latencies, clat from the end of the submitting call) plus
  ``intervals`` and the equivalent ``fio_command``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import stat
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from probetop.probes.core.base import (
    ConfirmationRequired,
    Emit,
    ProbeError,
    TargetProbeError,
    UsageProbeError,
)
from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.stats import RunningStats
from probetop.probes.core.targetlock import TargetLock
from probetop.probes.disk import capacity, inflight, ioengines
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
from probetop.probes.disk.diskutil import DiskStat, disk_util, read_diskstats
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.filelayout import Layout
from probetop.probes.disk.freespace import allocation_needed, check_room
from probetop.probes.disk.holes import find_holes
from probetop.probes.disk.inflight import held_end, stop_grace
from probetop.probes.disk.jobusage import ThreadUsage
from probetop.probes.disk.kernelview import KernelView, buffered_note, rate_note, zeros_note
from probetop.probes.disk.mounts import filesystem_of
from probetop.probes.disk.nfsstats import NFS_TYPES, NfsMount, nfs_view, read_mount
from probetop.probes.disk.pending import InFlight
from probetop.probes.disk.ratewindows import SLACK_NS, RateWindows, counter_copy
from probetop.probes.disk.records import (
    DIRECTIONS,
    FIO_PERCENTILES,
    IOPS_KIND,
    IOPS_METRICS,
    DirectionRates,
    IopsInterval,
    IopsParams,
    active_directions,
    pct_key,
)
from probetop.probes.disk.refusals import lock_devices
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.settings import IopsSettings
from probetop.probes.disk.sizes import format_size
from probetop.probes.disk.steps import run_step
from probetop.probes.disk.target import Target, resolve
from probetop.probes.disk.targeterrors import describe_os_error, target_errors
from probetop.probes.disk.targetwatch import TargetWatch
from probetop.probes.disk.units import fio_time
from probetop.probes.disk.workers import FIO_BUFFER_ALIGNMENT, Engine, kernel_notes


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


def fio_runtime_ms(seconds: float) -> int:
    """fio's ``runtime`` of a window: its whole microseconds rounded up to ms."""
    return (int(seconds * 1e6) + 999) // 1000


def fio_direction(d: DirectionTotals, runtime_s: float) -> dict[str, Any]:
    """One direction in fio's JSON shape: fio's field names, types and units
    (``io_bytes``, ``io_kbytes``, ``bw_bytes`` B/s, ``bw`` KiB/s, ``iops``,
    ``runtime`` ms, ``total_ios``, ``slat_ns``, ``clat_ns`` with fio's
    percentile keys, ``lat_ns``, in ns); ``runtime_ms`` and ``errors`` are
    probetop's own."""
    pct = hist_percentiles(d.hist, FIO_PERCENTILES) if d.ios else {}
    # fio's runtime of a direction: its job's measured window rounded up to
    # whole ms (update_runtime), 0 for a direction that moved no byte.
    runtime_ms = fio_runtime_ms(runtime_s) if d.bytes else 0
    # fio's arithmetic (add_ddir_status_json): integer B/s over the whole-ms
    # runtime, KiB/s from that, IOPS as a float over the same runtime.
    bw_bytes = 1000 * d.bytes // runtime_ms if runtime_ms > 0 else 0
    return {
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes >> 10,  # KiB, as fio
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,  # KiB/s, as fio
        "iops": 1000.0 * d.ios / runtime_ms if runtime_ms > 0 else 0.0,
        "runtime": runtime_ms,  # fio's name (ms)
        "runtime_ms": runtime_ms,  # probetop 0.1's name, kept for old readers
        "total_ios": d.ios,
        "short_ios": 0,  # the loops count a short transfer as an error, never short
        "drop_ios": 0,
        "errors": d.errors,
        "slat_ns": fio_latency(d.slat),
        "clat_ns": {
            **fio_latency(d.clat),
            "percentile": {pct_key(p): round(v) for p, v in pct.items() if v is not None},
        },
        "lat_ns": fio_latency(d.lat),
    }


# The per-interval row fields fio summarises per job (bw_min .. iops_stddev).
INTERVAL_STAT_KEYS = ("iops", "bw_bytes")


def interval_stats_table(stats: Mapping[str, RunningStats]) -> dict[str, dict[str, Any]]:
    """fio's per-interval figures (samples, min, max, mean, dev) of each field,
    for the group and for each job alike."""
    return {
        field: {
            "samples": st.count,
            "min": st.min,
            "max": st.max,
            "mean": st.mean,
            "dev": st.sample_stddev,
        }
        for field, st in stats.items()
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
        self.target: Target | None = None  # the first of ``targets``
        self.targets: list[Target] = []  # one, or one file per job (fio's --directory)
        # Bounded: a run of any length keeps its newest rows; fio's per-interval
        # figures (bw_min, iops_mean, ...) come from running stats over every row.
        self.intervals: IntervalLog[dict[str, Any]] = IntervalLog()
        self._interval_stats: dict[str, RunningStats] = {}
        # fio without --group_reporting reports each of --numjobs N jobs on
        # its own: each job's counters, interval stats and CPU use are kept.
        self._per_job = s.jobs > 1 and not s.group_reporting
        self._job_stats: list[dict[str, RunningStats]] = [{} for _ in range(s.jobs)]
        # fio's bw/iops samples: one per --bwavgtime/--iopsavgtime window of
        # the measured time, whatever the dashboard's interval (_sample_windows).
        self._windows: RateWindows | None = None
        self._window_base: np.ndarray | None = None
        self._measuring = asyncio.Event()
        self._base: Snapshot | None = None
        self._last: Snapshot | None = None
        self._measure_start_ns: int | None = None
        self._end_ns: int | None = None  # --time's end: the loops' deadline
        self._prev: Snapshot | None = None  # the last interval's end, once measuring
        self.in_flight: list[InFlight] = []  # the I/Os a device never answered
        self._job_ends_ns: list[int] = []  # when each job's loop returned
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
        # fio's per-job and kernel views over the measured window (fiodoc.py)
        self._usage_base: ThreadUsage | None = None
        self._usage: ThreadUsage | None = None
        self._job_usage_base: list[ThreadUsage] = []
        self._job_usage: list[ThreadUsage] = []
        self._disk_base: DiskStat | None = None
        self._disk_util: list[dict[str, Any]] = []
        # A target on NFS: the client's per-op view (/proc/self/mountstats)
        self._nfs_point: str | None = None
        self._nfs_prev: NfsMount | None = None
        self._nfs_base: NfsMount | None = None
        self._nfs: dict[str, Any] | None = None
        self._run_began_ns = 0

    # -- Probe protocol --
    def prepare(self) -> None:
        """Check everything before anything starts (see the module docstring)."""
        with target_errors(self.settings.target):
            self._prepare()

    def _prepare(self) -> None:
        from probetop.probes.disk.refusals import refusal_message, write_refusals
        from probetop.probes.disk.signatures import data_signatures

        s = self.settings
        capacity.check(jobs=s.jobs, iodepth=s.iodepth, bs=s.bs)
        self.engine, engine_note = ioengines.resolve(s.ioengine, s.iodepth)
        # Another probetop on this target is named by PID before anything about
        # the target itself (its size while the other run grows it, its O_EXCL,
        # which would show up below as "the kernel reports it busy").
        self._lock = TargetLock.for_target(s.target, self.kind, lock_devices)
        self._lock.check()
        if s.per_job_files and not s.size and not all(map(os.path.exists, s.job_paths())):
            raise UsageProbeError(
                f"{s.target} is a directory: probetop makes one file per job in it "
                "(fio's --directory); give --size for each job's file"
                + (f" (split between its --nrfiles {s.nrfiles} files)" if s.nrfiles > 1 else "")
            )
        if s.per_job_files:
            _check_job_files(s.job_paths())
        paths = s.job_paths() if s.per_job_files else [s.target]
        # What holds a device (a mount, the root filesystem, a holder) is read
        # from the kernel's state before any open: opening a device the system
        # uses may fail first, with an errno that names none of it (EPERM).
        for path in paths if s.writes else []:
            refusals = write_refusals(path) if os.path.exists(path) else []
            if refusals:
                raise ProbeError(refusal_message(refusals))
        # One target, or each job's files (fio's --directory, --nrfiles): each checked alike.
        jobs = s.job_files() if s.per_job_files else [[s.target]]
        self.targets = [self._resolve(path, f) for files in jobs for f, path in enumerate(files)]
        self.target = self.targets[0]
        self.notes = list(self.target.notes) + kernel_notes()
        where = s.target if os.path.exists(s.target) else os.path.dirname(os.path.abspath(s.target))
        mount = filesystem_of(where)
        self._nfs_point = mount.point if mount and mount.fstype in NFS_TYPES else None
        if engine_note:
            self.notes.append(engine_note)
        if s.direct is False:
            dirs = active_directions(s.rw)
            self.notes.append(buffered_note(dirs[0] if len(dirs) == 1 else "both"))
        for t in self.targets:
            if t.identity is not None and (s.writes or t.create):
                refusals = write_refusals(t.path)
                if refusals:
                    what = "write" if s.writes else "lay out (extend)"
                    raise ProbeError(f"refusing to {what}: " + "; ".join(refusals))
        growing = [t for t in self.targets if t.kind == "file" and (s.writes or t.create)]
        if growing:
            need = sum(allocation_needed(t.path, t.start, t.file_end) for t in growing)
            creates = any(t.create for t in growing)
            check_room(growing[0].path, need, "laying out" if creates else "writing")
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

    def _resolve(self, path: str, filenum: int) -> Target:
        """A job's file ``filenum`` (or TARGET) checked. With --nrfiles, --size
        is split as fio splits it: the file is laid out at its share, I/O
        goes to its whole blocks (fio issues no partial block)."""
        s = self.settings
        sizes = s.file_sizes() if s.nrfiles > 1 else None
        share = sizes[filenum] if sizes else s.size
        size = share - share % s.bs if sizes and share else share
        target = resolve(
            path,
            write=s.writes,
            bs=s.bs,
            size=size,
            offset=s.offset,
            direct=s.direct,
            may_create=True,
        )
        if target.create and share:
            target.layout_end = s.offset + share
        return target

    def job_targets(self) -> list[list[Target]]:
        """``targets`` job by job (each job's --nrfiles files)."""
        n = self.settings.nrfiles if self.settings.per_job_files else 1
        return [self.targets[i : i + n] for i in range(0, len(self.targets), n)]

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
            nrfiles=s.nrfiles,
            file_service_type=s.file_service_type,
        )

    def params(self) -> Mapping[str, Any]:
        return self.run_params().as_dict()

    def target_locks(self) -> list[TargetLock]:
        """The target's lock (``targetlock.UsesFiles``); empty before ``prepare``."""
        return [self._lock] if self._lock is not None else []

    def reference_command(self) -> str:
        s, t = self.settings, self.target
        # Everything but the job's name is a global option (before --name), so
        # fio's JSON has the "global options" the --output-format json one has.
        args = [
            "fio",
            f"--directory={s.target}" if s.per_job_files else f"--filename={s.target}",
            f"--rw={s.rw}",
            f"--bs={format_size(s.bs)}",
            f"--ioengine={self.engine}",
            f"--iodepth={s.iodepth}",
            f"--numjobs={s.jobs}",
            f"--direct={int(t.direct if t else s.direct is not False)}",
        ]
        if not (t.direct if t else s.direct is not False):
            args.append(FIO_BUFFER_ALIGNMENT)
        if s.filename_format:
            args.append(f"--filename_format={s.filename_format}")
        if s.nrfiles > 1:
            args.append(f"--nrfiles={s.nrfiles}")
        if s.file_service_type != "roundrobin":
            args.append(f"--file_service_type={s.file_service_type}")
        if s.rw in ("randrw", "rw"):
            args.append(f"--rwmixread={s.rwmixread}")
        if s.sync:
            args.append("--sync=1")
        if s.cpus_allowed:
            args.append(f"--cpus_allowed={','.join(map(str, s.cpus_allowed))}")
        if s.rate_iops and s.rw in ("randrw", "rw"):
            # fio caps each direction at a single rate_iops value; probetop caps
            # the job: split the cap by the mix (reads, writes).
            reads = round(s.rate_iops * s.readpct / 100)
            args.append(f"--rate_iops={reads},{s.rate_iops - reads}")
        elif s.rate_iops:
            args.append(f"--rate_iops={s.rate_iops}")
        if s.offset:
            args.append(f"--offset={s.offset}")
        # --nrfiles: fio splits --size between a job's files itself.
        size = s.size if s.nrfiles > 1 or not t else t.size
        if size:
            args.append(f"--size={size}")
        if s.ramp_s:
            args.append(f"--ramp_time={fio_time(s.ramp_s)}")
        if s.time_s:
            args += ["--time_based", f"--runtime={fio_time(s.time_s)}"]
        if s.group_reporting:
            args.append("--group_reporting")
        if s.bw_avg_ms != 500:
            args.append(f"--bwavgtime={s.bw_avg_ms}")
        if s.iops_avg_ms != 500:
            args.append(f"--iopsavgtime={s.iops_avg_ms}")
        args.append(f"--name={s.job_name}")
        return shlex.join(args)

    def plan(self) -> EnginePlan:
        assert self.target is not None, "prepare() first"
        s = self.settings
        return EnginePlan(
            path=s.target,
            bs=s.bs,
            extents=[(self.target.start, self.target.end)],
            files=tuple(tuple(t.path for t in job) for job in self.job_targets())
            if s.per_job_files
            else (),
            file_ends=tuple(tuple(t.end for t in job) for job in self.job_targets())
            if s.per_job_files
            else (),
            file_service=s.file_service[0],
            file_service_nr=s.file_service[1],
            cpus_allowed=frozenset(s.cpus_allowed),
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
        # Per-job files may end apart: the map covers the longest.
        blockmap = BlockMap(t.start, max(x.end for x in self.targets), self.settings.bs)
        # One file per job: the jobs share the map's offsets, so no file's
        # holes may stand for the others' (every block is looked at instead).
        holes = None if self.settings.per_job_files else find_holes(t.path, t.start, t.end)
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
        # fio's "elapsed" runs from its jobs' start, their file layout included;
        # probetop's own JIT warm-up is not the job's: its time is left out.
        # (The JIT comes after the layout: a layout --time cuts short never pays it.)
        self._run_began_ns = now_ns()
        for target in self.targets:
            if target.create:
                await self._lay_out(emit, target)
        emit(Status(self.id, now_ns(), "info", "compiling the native I/O loop"))
        jit_began = now_ns()
        await run_step(_warm_up, name="probetop-jit", grace_s=0)
        self._run_began_ns += now_ns() - jit_began
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
            stopped_ns = now_ns()  # the run's end, unless its deadline came first
            engine.stop()  # first: a stop's 2 s budget is not spent on /proc reads
            self._mark_end(engine)  # before the join: a thread's counters go with it
            engine.join_stopped(stop_grace(engine))
            # Workers the device holds, or a close held by the writeback of
            # buffered writes the device never took (the warm-up's rule too).
            hung, self.in_flight = held_end(self.target_path, engine)
            if hung is not None:
                self.errors.append(hung)
            # The last completion, not after the AIO context teardown (~30 ms).
            end = engine.snapshot(engine.finished_ns or now_ns(), per_job=self._per_job)
            self._job_ends_ns = [t or end.t_ns for t in engine.loop_ends_ns]
            if self._prev is not None:
                # The last interval, whatever ended the run (the deadline, a
                # signal, the dashboard's stop, an error): it ends at the last
                # completion, so the rows add up to the totals. A job is
                # sampled in it if its loop ran until the run was ended.
                self._emit_interval(
                    self._prev,
                    end,
                    emit,
                    ramping=self._base is None,
                    job_ends_ns=engine.loop_ends_ns,
                    ended_ns=min(stopped_ns, self._end_ns or stopped_ns),
                )
                self._prev = None
            if self._base is not None:
                self._final = (self._base, end)
                self._too_good_notes(end.dirs, self._base.dirs, end.t_ns - self._base.t_ns, view)
            if engine.failures:
                self.errors.extend(engine.failures)
        if hung is not None:
            raise ProbeError(hung)  # exit 2; a signal's stop keeps its own status

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
            zeros = read.zero_bytes if name == "read" else None
            note = rate_note(name, ours, ns / 1e9, view.device, kernel, zeros)
            if note:
                self.notes.append(note)

    async def _lay_out(self, emit: Emit, target: Target) -> None:
        """Lay a file out in a stoppable step, bounded by --time; undo a
        layout that does not finish."""
        assert self._lock is not None
        layout = self.layout = Layout(target, fill=True)
        size = human(target.end)
        emit(Status(self.id, now_ns(), "info", f"laying out {target.path} ({size})"))
        try:
            await asyncio.wait_for(
                run_step(layout.run, name="probetop-layout"), timeout=self.time_s
            )
        except asyncio.TimeoutError:
            self._layout_undone = layout.undo()
            raise ProbeError(
                f"--time {self.time_s:g} s ran out while laying out {target.path} "
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
                f"{target.path}: cannot lay out the file: {describe_os_error(exc)}"
                + (f" ({self._layout_undone})" if self._layout_undone else "")
            ) from None
        # The file exists now: hold its inode too (hard links are the same file).
        from probetop.probes.core.targetlock import target_keys

        self._lock.add(target_keys(target.path, lock_devices))

    async def _measure(self, engine: Engine, emit: Emit) -> None:
        """Emit an interval every tick until the run ends: ``--time`` after
        the ramp (the loops stop issuing at that instant themselves, see
        ``Engine.end_at``), the loops' own end (a fatal errno), a failure or
        a problem with the target. The ramp's end and the run's end are
        looked at when they come, not at the next tick; a tick that would
        leave less than a quarter interval before one of them is skipped,
        so no interval is a sliver. The last interval ends when the last I/O
        completed and counts every I/O issued: the summary's totals are the
        sum of the measured intervals."""
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        engine.on_finish = lambda: loop.call_soon_threadsafe(ended.set)
        if engine.finished.is_set():
            ended.set()
        # The workers' start, with zero counts: their first I/O counts (fio's
        # job starts its clock when its I/O loop starts).
        start = engine.started_ns or now_ns()
        self._start_ns = start
        prev = self._prev = Snapshot(start, (DirectionTotals(), DirectionTotals()))
        ramp_end = start + int(self.ramp_s * 1e9)
        if self.ramp_s <= 0:
            self._start_measuring(engine, prev)
        self._nfs_prev = read_mount(self._nfs_point) if self._nfs_point else None
        step = int(self.interval_s * 1e9)
        next_tick = start + step
        sampler = asyncio.create_task(self._sample_windows(engine, ended))
        try:
            await self._tick(engine, emit, ended, prev, ramp_end, step, next_tick)
        finally:
            sampler.cancel()
            # Awaited, so an error in the window sampler is the probe's error
            # (reported, exit 2), never an asyncio "never retrieved" warning.
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    async def _tick(
        self,
        engine: Engine,
        emit: Emit,
        ended: asyncio.Event,
        prev: Snapshot,
        ramp_end: int,
        step: int,
        next_tick: int,
    ) -> None:
        """``_measure``'s loop: an interval every tick until the run ends."""
        while True:
            boundary = ramp_end if self._base is None else self._end_ns
            wake = next_tick
            if boundary is not None and next_tick > boundary - step // 4:
                wake = boundary
            await _sleep_until(wake, ended)
            t = now_ns()
            if engine.finished.is_set():
                # The loops ended (--time's deadline, a fatal errno): the
                # interval ends when the last I/O did, and counts them all.
                await inflight.drain(engine, ended)
                self._check(engine)
                return
            if t < wake:
                continue  # woken a hair early: that moment has not come
            while next_tick <= t:
                next_tick += step
            if self._base is None and t >= ramp_end:
                engine.reset_min_max()
                snap = engine.snapshot(t, per_job=self._per_job)
                self._emit_interval(prev, snap, emit, ramping=True, job_ends_ns=engine.loop_ends_ns)
                prev = self._prev = snap
                self._start_measuring(engine, snap)
                next_tick = t + step  # measured intervals run from the ramp's end
                emit(Status(self.id, now_ns(), "info", "ramp done: totals start now"))
            elif self._end_ns is not None and t >= self._end_ns:
                # The loops stop issuing at the deadline by themselves (a
                # paced one sleeps no later): collect what was in flight.
                await inflight.drain(engine, ended)
                self._check(engine)
                return
            else:
                snap = engine.snapshot(t, per_job=self._per_job)
                self._emit_interval(
                    prev, snap, emit, ramping=self._base is None, job_ends_ns=engine.loop_ends_ns
                )
                prev = self._prev = snap
            self._check(engine)

    def _start_measuring(self, engine: Engine, base: Snapshot) -> None:
        """The totals start at ``base`` (the ramp's end, or the workers'
        start); --time from there is the loops' deadline."""
        self._base = base
        # The windows' start: the workers' start counts nothing yet; the
        # ramp's end counts what the ramp did (read with ``base``).
        counts = counter_copy(engine.cnt)
        self._window_base = counts if self.ramp_s > 0 else np.zeros_like(counts)
        self._measure_start_ns = base.t_ns
        self._mark_base(engine)
        if self.time_s:
            self._end_ns = base.t_ns + int(self.time_s * 1e9)
            engine.end_at(self._end_ns)
        self._measuring.set()

    async def _sample_windows(self, engine: Engine, ended: asyncio.Event) -> None:
        """fio's bw and iops samples (stat.c's add_bw_samples and
        add_iops_samples): from the measurement's start (the ramp's end),
        each job's bytes and I/Os over every --bwavgtime / --iopsavgtime
        window become one rate sample (whole KiB/s, whole IO/s, over the
        time the window really took). A direction that moved nothing in a
        window has no sample for it; a job whose loop ended is no longer
        sampled; the window that the run's end cuts short (or ends at
        once with it, as --time's last one does) is not sampled: fio
        samples only running jobs, and its job is done by then. One timer
        per window on the event loop; the counters are read, never locked."""
        await self._measuring.wait()
        base, counts = self._base, self._window_base
        assert base is not None and counts is not None
        s = self.settings
        windows = self._windows = RateWindows(
            directions=[n for n in DIRECTIONS if n in active_directions(s.rw)],
            windows_ms={"bw_bytes": s.bw_avg_ms, "iops": s.iops_avg_ms},
            start_ns=base.t_ns,
            counts=counts,
        )
        while True:
            wake = windows.next_due_ns()
            await _sleep_until(wake, ended)
            t = now_ns()
            if ended.is_set() or engine.finished.is_set():
                return
            if t < wake:
                continue
            if self._end_ns is not None and t >= self._end_ns - SLACK_NS:
                return  # the job ends now: fio's last window is not sampled
            running = [not end for end in engine.loop_ends_ns]
            windows.sample(t, counter_copy(engine.cnt), running)

    def _check(self, engine: Engine) -> None:
        """Raise what ends the run with an error: a worker's failure, the
        target gone or changed, an errno that makes going on pointless."""
        if engine.finished.is_set() and engine.failures:
            raise ProbeError("I/O worker failed: " + "; ".join(engine.failures))
        problem = (self._watch.problem() if self._watch else None) or engine.fatal_error()
        if problem:
            raise ProbeError(problem)

    def _nfs_interval(self, seconds: float) -> dict[str, dict[str, Any]] | None:
        """This interval's NFS client view (nfsiostat's figures), or None."""
        if not self._nfs_point:
            return None
        now = read_mount(self._nfs_point)
        prev, self._nfs_prev = self._nfs_prev, now
        if now is None or prev is None:
            return {} if now is not None else None
        return {op: r.as_dict() for op, r in nfs_view(prev, now, seconds).items()}

    def _mark_base(self, engine: Engine) -> None:
        """Where fio's job usage and disk_util start: the measured window."""
        self._usage_base = engine.usage()
        self._job_usage_base = engine.job_usage()
        backing = self.target.backing if self.target else None
        self._disk_base = read_diskstats(backing) if backing else None
        self._nfs_base = read_mount(self._nfs_point) if self._nfs_point else None

    def _mark_end(self, engine: Engine) -> None:
        if self._usage_base is None:
            return
        # engine.usage: a worker that ended at the deadline is gone from /proc by now
        self._usage = engine.usage().minus(self._usage_base)
        self._job_usage = [
            end.minus(base)
            for end, base in zip(engine.job_usage(), self._job_usage_base, strict=True)
        ]
        backing = self.target.backing if self.target else None
        end = read_diskstats(backing) if backing and self._disk_base else None
        if backing and end is not None and self._disk_base is not None:
            msec = max(1, (now_ns() - (self._measure_start_ns or now_ns())) // 1_000_000)
            self._disk_util = [disk_util(backing, self._disk_base, end, msec)]
        if self._nfs_point and self._nfs_base is not None:
            now = read_mount(self._nfs_point)
            if now is not None:
                seconds = (now_ns() - (self._measure_start_ns or now_ns())) / 1e9
                self._nfs = {
                    "mount": self._nfs_point,
                    "export": now.export,
                    "ops": {
                        op: r.as_dict() for op, r in nfs_view(self._nfs_base, now, seconds).items()
                    },
                }

    def _emit_interval(
        self,
        prev: Snapshot,
        snap: Snapshot,
        emit: Emit,
        ramping: bool,
        *,
        job_ends_ns: Sequence[int] = (),
        ended_ns: int | None = None,
    ) -> None:
        """One interval's row and sample; ``job_ends_ns``: when each job's loop
        returned (0: running), ``ended_ns``: when the run was ended (the
        last interval; else the snapshot's time), for the per-job stats."""
        seconds = (snap.t_ns - prev.t_ns) / 1e9
        if seconds <= 0:
            return
        rates: dict[str, DirectionRates] = {}
        errors = 0
        row: dict[str, Any] = {
            "t_s": round((snap.t_ns - self._start_ns) / 1e9, 3),
            "seconds": round(seconds, 6),
        }
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
            row[f"{name}_io_bytes"] = delta.bytes  # exact: the rows add up to the totals
            row[f"{name}_total_ios"] = delta.ios
            row[f"{name}_clat_p50_us"] = r.clat_p50_us
            row[f"{name}_clat_p99_us"] = r.clat_p99_us
        row["errors"] = errors
        row["ramp"] = ramping
        self.intervals.append(row)
        if not ramping:
            for name in rates:
                for key in INTERVAL_STAT_KEYS:
                    field = f"{name}_{key}"
                    self._interval_stats.setdefault(field, RunningStats()).add(float(row[field]))
            alive_at = snap.t_ns if ended_ns is None else ended_ns
            self._job_interval_stats(prev, snap, seconds, tuple(rates), job_ends_ns, alive_at)
        interval = IopsInterval(
            read=rates.get("read"),
            write=rates.get("write"),
            errors_per_s=errors / seconds,
            ramp=ramping,
            percentiles=FIO_PERCENTILES,
            nfs=self._nfs_interval(seconds),
        )
        emit(interval.to_sample(self.id, snap.t_ns, seconds))

    def _job_interval_stats(
        self,
        prev: Snapshot,
        snap: Snapshot,
        seconds: float,
        names: tuple[str, ...],
        job_ends_ns: Sequence[int],
        alive_at: int,
    ) -> None:
        """Each job's share of an interval into its own running stats (fio's
        per-job bw_*/iops_* without --group_reporting). A job whose loop had
        returned before ``alive_at`` (an error or a short transfer ended it
        while the run went on) is not sampled: fio samples only the jobs
        still running (``calc_log_samples``), so a job that ended early has
        samples of its own time, not zeros that make its bw_min 0."""
        if not self._per_job or not snap.jobs:
            return
        for j, now in enumerate(snap.jobs):
            ended = job_ends_ns[j] if j < len(job_ends_ns) else 0
            if 0 < ended < alive_at:
                continue
            before = prev.jobs[j] if prev.jobs else (DirectionTotals(), DirectionTotals())
            for name in names:
                d = DIRECTIONS.index(name)
                delta = now[d].minus(before[d])
                stats = self._job_stats[j]
                for key, value in (("iops", delta.ios), ("bw_bytes", delta.bytes)):
                    stats.setdefault(f"{name}_{key}", RunningStats()).add(value / seconds)

    def _job_summaries(self, base: Snapshot, end: Snapshot) -> list[dict[str, Any]]:
        """fio's per-job figures (``summary()["per_job"]``), one per job: its
        directions in fio's shape over its own window (the measurement's
        start to its loop's last completion), clat histogram, job_runtime_ms,
        CPU use and interval stats (fiodoc.py reads them as a job's)."""
        out = []
        for j, dirs in enumerate(end.jobs):
            before = base.jobs[j] if base.jobs else (DirectionTotals(), DirectionTotals())
            job_end = self._job_ends_ns[j] if j < len(self._job_ends_ns) else end.t_ns
            runtime = max(0, min(job_end, end.t_ns) - base.t_ns) / 1e9 or (
                (end.t_ns - base.t_ns) / 1e9
            )
            entry: dict[str, Any] = {"clat_hist": {}}
            for d, name in enumerate(DIRECTIONS):
                delta = dirs[d].minus(before[d])
                entry[name] = fio_direction(delta, runtime)
                entry["clat_hist"][name] = [
                    [int(i), int(delta.hist[i])] for i in delta.hist.nonzero()[0]
                ]
            entry["runtime_ms"] = fio_runtime_ms(runtime)
            entry["job_runtime_ms"] = int(runtime * 1000)
            usage = self._job_usage[j] if j < len(self._job_usage) else ThreadUsage()
            entry["job_usage"] = {
                "usr_ms": usage.usr_ms,
                "sys_ms": usage.sys_ms,
                "ctx": usage.ctx,
                "majf": usage.majf,
                "minf": usage.minf,
            }
            entry["interval_stats"] = interval_stats_table(self._job_stats[j])
            if self._windows is not None:
                entry["window_stats"] = self._windows.job_table(j)
            out.append(entry)
        return out

    def summary(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {
            "target": self.settings.target,
            "params": dict(self.params()),
            "fio_command": self.reference_command(),
            "notes": self.notes,
            "intervals": self.intervals.rows(),
        }
        if self.intervals.dropped:
            # fio's per-interval figures then cover rows no longer kept.
            out["intervals_dropped"] = self.intervals.dropped
            out["interval_stats"] = interval_stats_table(self._interval_stats)
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
            hists: dict[str, list[list[int]]] = {}
            for d, name in enumerate(DIRECTIONS):
                delta = end.dirs[d].minus(base.dirs[d])
                out[name] = fio_direction(delta, runtime)
                hists[name] = [[int(i), int(delta.hist[i])] for i in delta.hist.nonzero()[0]]
            out["runtime_ms"] = fio_runtime_ms(runtime)
            # fio's job_runtime: each job's window in whole ms, summed over the jobs.
            out["job_runtime_ms"] = sum(
                max(0, t - base.t_ns) // 1_000_000 for t in self._job_ends_ns
            )
            # fio's raw material for --output-format (fiodoc.py)
            out["clat_hist"] = hists
            usage = self._usage or ThreadUsage()
            out["job_usage"] = {
                "usr_ms": usage.usr_ms,
                "sys_ms": usage.sys_ms,
                "ctx": usage.ctx,
                "majf": usage.majf,
                "minf": usage.minf,
            }
            out["disk_util"] = self._disk_util
            # fio's bw_*/iops_* figures: its averaging windows (_sample_windows)
            if self._windows is not None:
                out["window_stats"] = self._windows.group_table()
            out["avg_time_ms"] = {
                "bw": self.settings.bw_avg_ms,
                "iops": self.settings.iops_avg_ms,
            }
            if self._per_job and end.jobs:
                out["per_job"] = self._job_summaries(base, end)
            if self._nfs is not None:
                out["nfs"] = self._nfs
            out["elapsed_s"] = round((end.t_ns - self._run_began_ns) / 1e9, 3)
            out["finished_unix_ms"] = int(time.time() * 1000)
        if self.errors:
            out["errors"] = self.errors
        if self.in_flight:
            out["in_flight"] = [io.as_dict() for io in self.in_flight]
        return out


def _check_job_files(paths: Sequence[str]) -> None:
    """A directory TARGET holds regular files, one per job and file (fio's
    --directory, --nrfiles). A job file that is a symlink, a device or a hard
    link is refused and named: writing there would reach whatever it points
    to or is also, not a file of the directory's own."""
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # laid out at --size
        if stat.S_ISLNK(st.st_mode):
            to = os.readlink(path)
            raise TargetProbeError(
                f"job file {path} is a symlink (to {to}): in a directory TARGET each job's "
                "file must be a regular file; remove the link, or give the device or file "
                "itself as TARGET"
            )
        if not stat.S_ISREG(st.st_mode):
            kind = "a block device" if stat.S_ISBLK(st.st_mode) else "not a regular file"
            raise TargetProbeError(
                f"job file {path} is {kind}: in a directory TARGET each job's file must be "
                "a regular file; give a device itself as TARGET"
            )
        if st.st_nlink > 1:
            # A hard link is the same file under another name, maybe outside
            # TARGET: probetop never made one, so the file is not its own.
            raise TargetProbeError(
                f"job file {path} has {st.st_nlink} hard links: it is also a file elsewhere, "
                "which a run would write or extend; remove that name from the directory "
                "TARGET, or give the file itself as TARGET"
            )


async def _sleep_until(wake_ns: int, event: asyncio.Event) -> None:
    """Sleep until the monotonic ``wake_ns`` or until ``event`` is set; always
    yields to the event loop, even when that moment has passed."""
    try:
        await asyncio.wait_for(event.wait(), max(0.0, (wake_ns - now_ns()) / 1e9))
    except asyncio.TimeoutError:
        pass


def _warm_up(stop: object) -> None:
    """The JIT warm-up as a step (compilation cannot be interrupted: a stop
    leaves it behind in its daemon thread, see ``steps.run_step``)."""
    warm_up_kernels()
