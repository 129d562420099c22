"""``WarmupProbe``: the coordinator of the warm-up's jobs (see the package
docstring for the contract and the split).

It checks the target (``safety``), opens the checkpoint (``checkpointing``),
then runs each pass: the ``layout`` gives the engine plan, the
``pass_engine`` runs it and hands back intervals, which the coordinator
counts (``summary.RunTotals``), feeds to the plateau detector (``plateau``)
and emits as ``records.WarmupInterval`` samples.

While it runs it holds the target's lock and the checkpoint's, and every
tick it saves the checkpoint (in the background, at most every 0.5 s),
watches the target (removed, replaced, shrunk: stop with the reason) and
stops on an I/O error that makes going on pointless (disk full, device
gone). A stop (signal, --time, the dashboard) ends the workers within
``steps.GRACE_S`` and waits as long for the last checkpoint save.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, ProbeError
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.core.targetlock import TargetLock
from probetop.probes.disk import ioengines
from probetop.probes.disk.blockmap import BlockMap
from probetop.probes.disk.counters import B_BAD, B_DATA, B_HOLE, B_ZERO
from probetop.probes.disk.holes import Holes, find_holes
from probetop.probes.disk.kernelview import (
    KernelView,
    buffered_note,
    implausible,
    rate_note,
    zeros_note,
)
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.steps import GRACE_S, run_step
from probetop.probes.disk.target import Target
from probetop.probes.disk.targeterrors import target_errors
from probetop.probes.disk.targetwatch import TargetWatch
from probetop.probes.disk.warmup.checkpoint import Checkpoint
from probetop.probes.disk.warmup.checkpointing import CheckpointKeeper
from probetop.probes.disk.warmup.layout import MAP_CELLS, PassLayout
from probetop.probes.disk.warmup.pass_engine import PassEngine, Step
from probetop.probes.disk.warmup.passes import PassTotals, WarmupSummary
from probetop.probes.disk.warmup.plateau import PlateauWatch
from probetop.probes.disk.warmup.records import (
    WARMUP_KIND,
    WARMUP_METRICS,
    WarmupInterval,
    WarmupParams,
)
from probetop.probes.disk.warmup.safety import check_target
from probetop.probes.disk.warmup.settings import WarmupSettings
from probetop.probes.disk.warmup.summary import RunTotals
from probetop.probes.disk.warmup.verdict import (
    FRESH_FRACTION,
    bad_ranges_of,
    judge,
)
from probetop.probes.disk.workers import kernel_notes

MIN_FRESH_BYTES = 16 << 20  # read this much before calling a volume fresh


class WarmupProbe:
    """A warm-up of one target. See the package docstring."""

    kind = WARMUP_KIND
    metrics = WARMUP_METRICS

    def __init__(self, settings: WarmupSettings, *, probe_id: str | None = None) -> None:
        settings.validate()
        self.settings = settings
        self.id = probe_id or f"warmup:{settings.target}"
        self.plateau = PlateauWatch(settings)
        self.layout = PassLayout(settings)
        self.totals = RunTotals()
        self.target: Target | None = None
        self.notes: list[str] = []
        self.checkpoints: CheckpointKeeper | None = None  # sequential passes only
        self.current_pass = settings.passes[0]
        self._t_start = now_ns()
        self._deadline: int | None = None
        self._lock: TargetLock | None = None
        self._watch: TargetWatch | None = None
        # What each sequential pass found (data, zeros, holes, failures), by
        # pass name; the holes of the file under the target after the run.
        self.maps: dict[str, BlockMap] = {}
        self.holes_after: Holes | None = None
        self._hung = False  # a pass's device stopped answering (I/O or a close held)
        self._fresh_said = False
        self._rate_said = False
        self._read_zero = (0, 0)  # (zero bytes, bytes) read so far by the read pass

    def target_locks(self) -> list[TargetLock]:
        """The target's and the checkpoint's locks (``targetlock.UsesFiles``);
        empty before ``prepare``."""
        locks = [self._lock] if self._lock is not None else []
        if self.checkpoints is not None:
            locks.append(self.checkpoints.lock)
        return locks

    @property
    def total_bytes(self) -> int:
        return self.target.size if self.target else 0

    @property
    def checkpoint_path(self) -> str | None:
        return self.checkpoints.path if self.checkpoints else self.settings.checkpoint

    # -- Probe protocol --
    def prepare(self) -> None:
        with target_errors(self.settings.target):
            self._prepare()

    def _prepare(self) -> None:
        engine, engine_note = ioengines.resolve(self.settings.ioengine, self.settings.iodepth)
        self.target, self._lock = check_target(self.settings)
        assert self.target.identity is not None
        self.notes = list(self.target.notes) + kernel_notes()
        if engine_note:
            self.notes.append(engine_note)
        if self.settings.direct is False:
            name = self.settings.pass_name
            said = {"read": "read", "write+read": "both"}.get(name, "write")
            self.notes.append(buffered_note(said))
        self.layout = PassLayout(self.settings, self.target, engine)
        if self.settings.sequential:
            identity = self.target.identity.as_dict()
            self.checkpoints = CheckpointKeeper(self.settings, self.target, identity)
            self.current_pass = self.checkpoints.open()

    def run_params(self) -> WarmupParams:
        s, t = self.settings, self.target
        return WarmupParams(
            target=s.target,
            pass_name=s.pass_name,
            verify=s.verify,
            bs=s.bs,
            jobs=s.jobs,
            iodepth=s.iodepth,
            engine=self.layout.engine,
            range=(t.start, t.end) if t else (s.range_start, s.range_end),
            direct=t.direct if t else s.direct,
            resume=s.resume,
            checkpoint=self.checkpoint_path,
            time_s=s.time_s,
            rate_iops=s.rate_iops or None,
            steadystate=self.plateau.spec,
            ss_dur=s.ss_dur,
            ss_ramp=s.ss_ramp,
            interval_s=s.interval_s,
            backing_device=t.backing if t else None,
        )

    def params(self) -> Mapping[str, Any]:
        return self.run_params().as_dict()

    def reference_command(self) -> str:
        return self.layout.fio_command(self.plateau.spec)

    async def run(self, emit: Emit) -> None:
        if self.target is None or self._lock is None:
            self.prepare()
        assert self.target is not None and self._lock is not None
        self._lock.acquire()  # TargetBusy if another run took the target since prepare
        try:
            if self.checkpoints is not None:
                self.checkpoints.hold()
            await self._run(emit)
        finally:
            if self.checkpoints is not None:
                problem = self.checkpoints.close(GRACE_S)
                if problem:
                    self.notes.append(problem)
                    emit(Status(self.id, now_ns(), "error", problem))
            # Not after a device stopped answering: on a file (or a loop
            # device's backing file) the hole search waits for the I/O held.
            if self.settings.sequential and not self._hung:
                self.holes_after = find_holes(self.settings.target, *self._range())
            self._lock.release()

    def _range(self) -> tuple[int, int]:
        assert self.target is not None
        return self.target.start, self.target.end

    async def _run(self, emit: Emit) -> None:
        assert self.target is not None
        for note in self.notes:
            emit(Status(self.id, now_ns(), "warning", note))
        emit(Status(self.id, now_ns(), "info", "compiling the native I/O loop"))
        await run_step(_warm_up, name="probetop-jit", grace_s=0)
        with target_errors(self.settings.target):
            self._watch = TargetWatch(self.target)
        self._t_start = now_ns()
        time_s = self.settings.time_s
        self._deadline = self._t_start + int(time_s * 1e9) if time_s else None
        passes = self.settings.passes
        first = passes.index(self.current_pass) if self.current_pass in passes else 0
        for pass_name in passes[:first]:  # the checkpoint moved past it: done before
            self.totals.skip_pass(pass_name, self.total_bytes, "completed", "in an earlier run")
        for i, pass_name in enumerate(passes[first:]):
            if i:  # a new pass is a new curve: detect its plateau afresh
                self.plateau.restart()
            self.current_pass = pass_name
            if not await self._run_pass(pass_name, emit):
                return

    def summary(self) -> Mapping[str, Any]:
        return self.run_summary().as_dict()

    def run_summary(self) -> WarmupSummary:
        """The typed summary; passes the run never reached are "not started"."""
        keeper = self.checkpoints
        summary = self.totals.summary(
            self.settings,
            done_bytes=keeper.done_bytes if keeper else 0,
            total_bytes=self.total_bytes,
            resumed_from=keeper.resumed_from if keeper else None,
            plateau=self.plateau.summary(),
            checkpoint=self.checkpoint_path,
            notes=self.notes,
            fio_command=self.reference_command(),
        )
        seen = {row.pass_name for row in summary.passes}
        summary.passes += [
            PassTotals(name, range_bytes=self.total_bytes, outcome="not started")
            for name in self.settings.passes
            if name not in seen
        ]
        if self.target is not None:
            summary.findings = judge(
                self.settings,
                summary.passes,
                range_bytes=self.total_bytes,
                read_map=self.maps.get("read"),
                holes=self.holes_after,
                bad_ranges=bad_ranges_of(list(self.maps.values())),
                checkpoint=self.checkpoint_path if self.checkpoints is not None else None,
            )
        return summary

    # -- one pass --
    async def _run_pass(self, pass_name: str, emit: Emit) -> bool:
        """Run one pass; True when it completed (go on to the next pass). The
        pass's row in the totals is closed whatever happens (its outcome
        comes from the bytes done, see ``passes.PassTotals.finish``)."""
        self.totals.start_pass(pass_name, self.total_bytes)
        cp: Checkpoint | None = None
        if pass_name != "randwrite":
            assert self.checkpoints is not None
            cp = self.checkpoints.for_pass(pass_name)
        ran_to_end = False
        error: str | None = None
        try:
            ran_to_end = await self._drive_pass(pass_name, cp, emit)
        except ProbeError as exc:
            error = str(exc)
            raise
        finally:
            row = self.totals.finish_pass(
                done_bytes=int(cp.done_bytes) if cp is not None else None,
                ran_to_end=ran_to_end,
                plateau=self.plateau.summary(),
                error=error,
            )
        return row.completed

    async def _drive_pass(self, pass_name: str, cp: Checkpoint | None, emit: Emit) -> bool:
        """The pass's I/O; True when it ran to its end (the whole range, or
        randwrite's --time), False when the deadline or a stop came first."""
        assert self.target is not None
        if cp is None:
            extents = [(self.target.start, self.target.end)]
        else:
            extents = list(cp.remaining())
            if not extents:
                return True
        blockmap = self._blockmap(pass_name, cp)
        engine = PassEngine(self.layout.engine_plan(pass_name, extents, blockmap), pass_name)
        view = KernelView(self.settings.target)
        try:
            await engine.start()
        except BaseException:
            engine.stop()  # a stop while the workers started: none is left behind
            raise
        resumed = self.checkpoints.resumed_from if self.checkpoints else None
        emit(
            Status(
                self.id,
                now_ns(),
                "info",
                f"{pass_name} pass started"
                + (f", resumed at {resumed:,} bytes done" if resumed else ""),
            )
        )
        saving = cp

        def on_tick() -> None:
            if saving is not None:
                self._save(saving, engine, emit)
                if engine.failure() is not None:
                    engine.engine.stop()  # full, gone, shrunk: the other jobs stop too
            problem = (self._watch.problem() if self._watch else None) or (
                engine.fatal_error() if saving is None else None  # a pass stops by itself
            )
            if problem:
                raise ProbeError(problem)

        try:
            finished = await engine.watch(
                interval_s=self.settings.interval_s,
                deadline_ns=self._deadline,
                on_tick=on_tick,
                on_interval=lambda step: self._interval(pass_name, step, cp, emit, view),
            )
        finally:
            # What completed after the last interval (a stop, a signal, a hung
            # device) is the last interval: a pass's rows add up to its bytes.
            self._interval(pass_name, engine.stop(), cp, emit, view)
            self.totals.note_bad_offset(engine.first_bad_offset())
            self._pass_notes(pass_name, view)
            if cp is not None:
                self._save(cp, engine, emit, force=True)
            hung = engine.held_end(self.settings.target)
            if hung is not None:
                self._hung = True
                self.notes.append(hung)
        if hung is not None:
            raise ProbeError(hung)  # exit 2; a signal's stop keeps its own status
        failure = engine.failure()
        if failure is not None:
            assert self.checkpoints is not None  # only sequential passes stop on errors
            self.totals.error = self.checkpoints.after_failure(
                failure.describe(self.settings.target)
            )
            raise ProbeError(self.totals.error)
        if engine.failures:
            raise ProbeError("I/O worker failed: " + "; ".join(engine.failures))
        if cp is None:
            # randwrite has no end but --time: reaching the deadline is its end.
            return not finished
        return finished

    def _interval(
        self, pass_name: str, step: Step, cp: Checkpoint | None, emit: Emit, view: KernelView
    ) -> None:
        """Count one interval, feed the plateau detector, emit the sample."""
        assert self.target is not None
        total = self.total_bytes
        figures = self.totals.add_interval(
            pass_name,
            step,
            elapsed_s=(step.t_ns - self._t_start) / 1e9,
            total=total,
            checkpoint_done=(
                self.checkpoints.done_bytes if cp is not None and self.checkpoints else None
            ),
        )
        if figures is None:
            return
        done = figures.done
        kernel_bytes: int | None = None
        if pass_name == "read":
            zeros, read = self._read_zero
            self._read_zero = (zeros + step.delta.zero_bytes, read + step.delta.bytes)
            delta = view.delta()
            kernel_bytes = delta[0] if delta is not None else None
            self._say_if_fresh(emit, kernel_bytes, view.device)
        status = self.plateau.add(self.totals.seconds, figures.iops, figures.bw_bytes, done)
        if status is not None:
            emit(Status(self.id, now_ns(), *status))
        plateau, state = self.plateau.detector()
        interval = WarmupInterval(
            bw_bps=figures.bw_bytes,
            iops=figures.iops,
            progress_pct=100.0 * done / total if cp is not None and total else None,
            done_bytes=float(done),
            total_bytes=float(total),
            eta_s=figures.eta_s,
            elapsed_s=self.totals.seconds,
            errors=float(step.delta.errors),
            pass_name=pass_name,
            done_map=self.layout.done_map(cp.done) if cp is not None else None,
            plateau=plateau,
            plateau_state=state,
            bad_sectors=self.totals.bad_sectors,
            zero_bytes=self._read_zero[0] if pass_name == "read" else None,
            read_bytes=self._read_zero[1] if pass_name == "read" else None,
            never_map=self._never_map(pass_name),
            bad_map=self._cells(pass_name, B_BAD),
            kernel_bytes=kernel_bytes,
            kernel_device=view.device if kernel_bytes is not None else None,
        )
        emit(interval.to_sample(self.id, step.t_ns, step.seconds))

    def _cells(self, pass_name: str, state: int) -> tuple[float, ...] | None:
        blockmap = self.maps.get(pass_name)
        return blockmap.cells(MAP_CELLS, state) if blockmap is not None else None

    def _never_map(self, pass_name: str) -> tuple[float, ...] | None:
        """Per map cell, the share never written: blocks the read pass got
        back all zero, and the file's holes (known before they are read)."""
        if pass_name != "read" or "read" not in self.maps:
            return None
        zero = self._cells("read", B_ZERO) or ()
        hole = self._cells("read", B_HOLE) or ()
        return tuple(min(1.0, round(z + h, 4)) for z, h in zip(zero, hole, strict=True))

    def _say_if_fresh(self, emit: Emit, kernel_bytes: int | None, device: str | None) -> None:
        """Say at once (a warning status, the pane shows it) when the read so far
        is mostly never-written blocks: a fresh volume, which a read pass
        cannot warm; or, once, when it is far above what the disk under the
        target read (``kernelview.implausible``): too good to be true."""
        zeros, read = self._read_zero
        if not self._rate_said and device is not None and implausible(read, kernel_bytes):
            self._rate_said = True
            emit(
                Status(
                    self.id,
                    now_ns(),
                    "warning",
                    f"too good to be true: {read:,} bytes read so far, but the disk under the "
                    f"target ({device}) read only {max(0, kernel_bytes or 0):,}: these reads do "
                    "not reach the device (never-written blocks of a fresh volume answered "
                    "with zeros, or a cache)",
                )
            )
        if self._fresh_said or read < MIN_FRESH_BYTES or zeros <= read * FRESH_FRACTION:
            return
        self._fresh_said = True
        pct = 100.0 * zeros / read
        emit(
            Status(
                self.id,
                now_ns(),
                "warning",
                f"fresh volume: {pct:.0f} % of what the read pass read so far was never "
                "written (holes or all-zero blocks): a read pass cannot warm it; write then "
                "read does (--write --read, destroys data)",
            )
        )

    def _blockmap(self, pass_name: str, cp: Checkpoint | None) -> BlockMap | None:
        """The block map a sequential pass fills: a resumed pass starts from
        what its checkpoint found; a read pass knows the file's holes first
        (their reads are counted as never written without being looked at)."""
        if cp is None:
            return None
        start, end = self._range()
        blockmap = BlockMap(start, end, self.settings.bs)
        blockmap.put(cp.done, B_DATA)
        if pass_name == "read":
            holes = find_holes(self.settings.target, start, end)
            if holes is not None:
                blockmap.put_within(holes.extents, B_HOLE)
        blockmap.put(cp.found.get("zero", []), B_ZERO)
        blockmap.put(cp.found.get("bad", []), B_BAD)
        self.maps[pass_name] = blockmap
        return blockmap

    def _pass_notes(self, pass_name: str, view: KernelView) -> None:
        """Too good to be true: what this pass read back as zeros, and a rate
        far above what the disk under the target did."""
        row = self.totals.current
        if row is None or row.pass_name != pass_name:
            return
        if pass_name == "read":
            note = zeros_note(*self._read_zero)
            if note:
                self.notes.append(note)
        delta = view.delta()
        direction = "read" if pass_name == "read" else "write"
        kernel = None if delta is None else delta[0 if direction == "read" else 1]
        zeros = self._read_zero[0] if direction == "read" else None
        note = rate_note(direction, row.bytes, row.seconds, view.device, kernel, zeros)
        if note:
            self.notes.append(note)

    def _save(self, cp: Checkpoint, engine: PassEngine, emit: Emit, *, force: bool = False) -> None:
        assert self.checkpoints is not None
        blockmap = self.maps.get(cp.pass_name)
        if blockmap is not None:
            cp.found = {"zero": blockmap.extents(B_ZERO), "bad": blockmap.extents(B_BAD)}
        problem = self.checkpoints.save(cp, engine.done_extents(), force=force)
        if problem:
            emit(Status(self.id, now_ns(), "error", problem))


def _warm_up(stop: object) -> None:
    """The JIT warm-up as a step (compilation cannot be interrupted: a stop
    leaves it behind in its daemon thread, see ``steps.run_step``)."""
    warm_up_kernels()
