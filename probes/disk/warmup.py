"""The volume warm-up: a full, parallel, observable and resumable pass.

Contract:
- Passes: "read" (default; keeps data), "write" (destroys data: needs
  ``confirmed=True`` from the caller, who asked for ``--yes-destroy-data`` or a
  typed confirmation; ``blockdev.write_refusals`` refuse whatever the flags),
  both in that order (write, then read), and the time-based "randwrite"
  pattern (the fresh-SSD curve). ``verify`` makes the read pass check the
  offset stamp every write pass puts in each 512-byte sector.
- Sequential passes keep a ``Checkpoint`` (probes/disk/checkpoint.py) saved at
  least every 0.5 s with the device identity, pass, block size, range and
  done extents; ``resume`` continues from it (refused for another device,
  pass, block size or range). Only completed I/Os count as done, so after
  Ctrl-C, SIGHUP or kill -9 a resume redoes at most the last 0.5 s of work
  plus what was in flight.
- One Sample per interval: MB/s and IOPS of that interval, bytes done and
  total, progress %, ETA, and in ``extra`` a done map (64 cells, fraction
  done each) and the plateau state (probes/disk/steady.py, fio's criteria).
- In-pass I/O errors stop the pass: the checkpoint is saved, then a
  ProbeError says what happened (disk full, I/O error) and what to do.
- ``summary()``: target, pass, bytes, total_bytes, seconds, bw_bytes, iops,
  complete, resumed_from, plateau, intervals, fio_command.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shlex
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import (
    Emit,
    MetricSpec,
    ProbeError,
    TargetProbeError,
    UsageProbeError,
)
from probetop.probes.core.sample import Sample, Status, now_ns
from probetop.probes.disk.target import Target, format_size, resolve
from probetop.probes.disk.workers import (
    READ,
    WRITE,
    DirectionTotals,
    Engine,
    EnginePlan,
    Snapshot,
    warm_up_kernels,
)

PASSES = ("read", "write", "write+read", "randwrite")
MAP_CELLS = 64
CHECKPOINT_EVERY_S = 0.5


def merge(extents: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged copy of [start, end) extents."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(e for e in extents if e[1] > e[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def done_map(
    extents: list[tuple[int, int]], start: int, end: int, cells: int = MAP_CELLS
) -> list[float]:
    """Fraction done of each of ``cells`` equal slices of [start, end)."""
    size = end - start
    out = [0.0] * cells
    if size <= 0:
        return out
    step = size / cells
    for a, b in extents:
        a, b = max(a, start), min(b, end)
        if b <= a:
            continue
        first = int((a - start) // step)
        last = min(cells - 1, int((b - 1 - start) // step))
        for c in range(first, last + 1):
            lo = start + c * step
            hi = lo + step
            out[c] += max(0.0, min(b, hi) - max(a, lo)) / step
    return [min(1.0, round(v, 4)) for v in out]


def _describe_errno(code: int) -> str:
    if code == errno.ENOSPC:
        return "disk full (ENOSPC)"
    if code == errno.EIO:
        return "I/O error (EIO): the device reported a failure"
    if code == 0:
        return "short I/O (end of target)"
    return os.strerror(code) if code > 0 else "AIO setup failed"


class WarmupProbe:
    """See the module docstring."""

    kind = "warmup"
    metrics = (
        MetricSpec("bw_Bps", "B/s", "bytes transferred per second in the interval", True),
        MetricSpec("iops", "IO/s", "I/Os completed per second in the interval", True),
        MetricSpec("progress_pct", "%", "share of the range done (this pass)"),
        MetricSpec("done_bytes", "B", "bytes of the range done (this pass)"),
        MetricSpec("total_bytes", "B", "bytes in the range"),
        MetricSpec("eta_s", "s", "time left at the rate of the last 5 intervals"),
        MetricSpec("elapsed_s", "s", "time since this run started"),
        MetricSpec("errors", "", "failed I/Os in the interval"),
    )

    def __init__(
        self,
        target: str,
        *,
        pass_name: str = "read",
        verify: bool = False,
        bs: int = 1 << 20,
        jobs: int = 1,
        iodepth: int = 32,
        range_start: int | None = None,
        range_end: int | None = None,
        resume: bool = False,
        checkpoint: str | None = None,
        time_s: float | None = None,
        steadystate: str = "iops_slope:0.01%",
        ss_dur: float = 30.0,
        ss_ramp: float = 0.0,
        confirmed: bool = False,
        direct: bool | None = None,
        rate_iops: int = 0,
        interval_s: float = 1.0,
        probe_id: str | None = None,
    ) -> None:
        from probetop.probes.disk.steady import SteadyState

        if pass_name not in PASSES:
            raise UsageProbeError(f"unknown pass {pass_name!r}: one of {', '.join(PASSES)}")
        if jobs < 1 or jobs > 256 or iodepth < 1 or iodepth > 1024:
            raise UsageProbeError("--jobs must be 1..256 and --iodepth 1..1024")
        self.target_path = target
        self.pass_name = pass_name
        self.verify = verify
        self.bs = bs
        self.jobs = jobs
        self.iodepth = iodepth
        self.range_start = range_start
        self.range_end = range_end
        self.resume = resume
        self.checkpoint_path = checkpoint
        self.time_s = time_s
        self.confirmed = confirmed
        self.direct_wanted = direct
        self.rate_iops = rate_iops
        self.interval_s = interval_s
        self.id = probe_id or f"warmup:{target}"
        self.steady_spec = steadystate
        self.ss_dur = ss_dur
        self.ss_ramp = ss_ramp
        # Parse now so a bad spec fails before anything starts.
        self.steady = SteadyState.parse(steadystate, ss_dur, ss_ramp, interval_s)
        self.target: Target | None = None
        self.identity: dict[str, Any] = {}
        self.notes: list[str] = []
        self.intervals: list[dict[str, Any]] = []
        self.passes_done: list[dict[str, Any]] = []
        self.current_pass = self.passes[0]
        self.resumed_from: int | None = None
        self.bytes = 0
        self.ios = 0
        self.seconds = 0.0
        self.done_bytes = 0
        self.complete = False
        self.bad_sectors = 0
        self.first_bad_offset: int | None = None
        self.error: str | None = None
        self._checkpoint: Any = None
        self._t_start = now_ns()
        self._deadline: int | None = None
        self._save_error: str | None = None
        self._last_snap: Snapshot | None = None
        self.io_seconds = 0.0  # time the engine ran, summed over emitted intervals

    # -- derived --
    @property
    def passes(self) -> list[str]:
        if self.pass_name == "write+read":
            return ["write", "read"]
        return [self.pass_name]

    @property
    def writes(self) -> bool:
        return self.pass_name != "read"

    @property
    def sequential(self) -> bool:
        return self.pass_name != "randwrite"

    @property
    def total_bytes(self) -> int:
        return self.target.size if self.target else 0

    def default_checkpoint(self) -> str:
        from probetop.probes.disk.checkpoint import default_path

        return str(default_path(self.target_path))

    # -- Probe protocol --
    def prepare(self) -> None:
        from probetop.probes.disk.blockdev import write_refusals

        self.target = resolve(
            self.target_path,
            write=self.writes,
            bs=self.bs,
            offset=self.range_start or 0,
            end=self.range_end,
            direct=self.direct_wanted,
        )
        assert self.target.identity is not None
        self.identity = self.target.identity.as_dict()
        self.notes = list(self.target.notes)
        if self.writes:
            refusals = write_refusals(self.target_path)
            if refusals:
                raise ProbeError("refusing to write: " + "; ".join(refusals))
            if not self.confirmed:
                raise ProbeError(
                    f"a {self.pass_name} pass destroys every byte of {self.target_path}. "
                    f"Confirm with --yes-destroy-data={self.target_path} (headless) or type "
                    "the name in the dashboard's confirmation dialog."
                )
        if self.sequential:
            self._prepare_checkpoint()

    def _prepare_checkpoint(self) -> None:
        from probetop.probes.disk.checkpoint import Checkpoint

        assert self.target is not None
        path = self.checkpoint_path or self.default_checkpoint()
        self.checkpoint_path = path
        rng = (self.target.start, self.target.end)
        if self.resume:
            if not os.path.exists(path):
                raise TargetProbeError(
                    f"--resume: no checkpoint at {path}. Start without --resume, or give "
                    "the file with --checkpoint."
                )
            try:
                cp = Checkpoint.load(path)
            except (OSError, ValueError) as exc:
                raise TargetProbeError(f"--resume: cannot read checkpoint {path}: {exc}") from None
            passes = self.passes
            cp_pass = getattr(cp, "pass_name", passes[0])
            if cp_pass in passes:
                # Passes before the checkpoint's were complete when it was started.
                self.current_pass = cp_pass
            reason = cp.matches(self.identity, self.current_pass, self.bs, *rng)
            if reason:
                raise TargetProbeError(f"--resume refused: {reason}")
            self._checkpoint = cp
            self.resumed_from = int(cp.done_bytes)
            return
        if os.path.exists(path):
            try:
                old = Checkpoint.load(path)
                unfinished = bool(old.remaining())
            except Exception:
                unfinished = False
            if unfinished:
                raise TargetProbeError(
                    f"an unfinished warm-up checkpoint exists at {path}: add --resume to "
                    "continue it, or delete the file to start over."
                )

    def _new_checkpoint(self, pass_name: str) -> Any:
        from probetop.probes.disk.checkpoint import Checkpoint

        assert self.target is not None and self.checkpoint_path is not None
        return Checkpoint(
            self.checkpoint_path,
            self.identity,
            pass_name,
            self.bs,
            self.target.size,
            self.target.start,
            self.target.end,
        )

    def params(self) -> Mapping[str, Any]:
        t = self.target
        return {
            "target": self.target_path,
            "pass": self.pass_name,
            "verify": self.verify,
            "bs": self.bs,
            "jobs": self.jobs,
            "iodepth": self.iodepth,
            "range": [t.start, t.end] if t else [self.range_start, self.range_end],
            "direct": t.direct if t else self.direct_wanted,
            "resume": self.resume,
            "checkpoint": self.checkpoint_path,
            "time_s": self.time_s,
            "rate_iops": self.rate_iops or None,
            "steadystate": self.steady.spec,
            "ss_dur": self.ss_dur,
            "ss_ramp": self.ss_ramp,
            "interval_s": self.interval_s,
            "backing_device": t.backing if t else None,
        }

    def reference_command(self) -> str:
        t = self.target
        start, end = (t.start, t.end) if t else (self.range_start or 0, self.range_end)
        rw = {"read": "read", "write": "write", "write+read": "write", "randwrite": "randwrite"}
        args = [
            "fio",
            "--name=warmup",
            f"--filename={self.target_path}",
            f"--rw={rw[self.pass_name]}",
            f"--bs={format_size(self.bs)}",
            f"--iodepth={self.iodepth}",
            f"--ioengine={'libaio' if self.iodepth > 1 else 'psync'}",
            f"--direct={int(t.direct if t else True)}",
        ]
        length = (end - start) if end is not None else None
        if self.jobs > 1 and length and self.sequential:
            share = -(-length // self.jobs // self.bs) * self.bs
            args += [f"--numjobs={self.jobs}", f"--size={share}", f"--offset_increment={share}"]
        elif self.jobs > 1:
            args.append(f"--numjobs={self.jobs}")
        if self.rate_iops:
            args.append(f"--rate_iops={self.rate_iops}")
        if start:
            args.append(f"--offset={start}")
        if length and not (self.jobs > 1 and self.sequential):
            args.append(f"--size={length}")
        if self.pass_name == "randwrite":
            if self.time_s:
                args += ["--time_based", f"--runtime={self.time_s:g}"]
            args += [
                f"--steadystate={self.steady.spec}",
                f"--ss_dur={self.ss_dur:g}",
            ]
            if self.ss_ramp:
                args.append(f"--ss_ramp={self.ss_ramp:g}")
        args.append("--group_reporting")
        return shlex.join(args)

    # -- run --
    async def run(self, emit: Emit) -> None:
        from probetop.probes.disk.steady import SteadyState

        if self.target is None:
            self.prepare()
        for note in self.notes:
            emit(Status(self.id, now_ns(), "warning", note))
        emit(Status(self.id, now_ns(), "info", "compiling the native I/O loop"))
        await asyncio.to_thread(warm_up_kernels)
        self._t_start = now_ns()
        self._deadline = self._t_start + int(self.time_s * 1e9) if self.time_s else None
        passes = self.passes
        first = passes.index(self.current_pass) if self.current_pass in passes else 0
        for i, pass_name in enumerate(passes[first:]):
            if i:  # a new pass is a new curve: detect its plateau afresh
                self.steady = SteadyState.parse(
                    self.steady_spec, self.ss_dur, self.ss_ramp, self.interval_s
                )
            self.current_pass = pass_name
            finished = await self._run_pass(pass_name, emit)
            if not finished:
                return

    def _plan(self, pass_name: str, extents: list[tuple[int, int]]) -> EnginePlan:
        assert self.target is not None
        verifying = self.verify and pass_name == "read"
        return EnginePlan(
            path=self.target_path,
            bs=self.bs,
            extents=extents,
            jobs=self.jobs,
            iodepth=self.iodepth,
            readpct=100 if pass_name == "read" else 0,
            seq=pass_name != "randwrite",
            wrap=pass_name == "randwrite",
            direct=self.target.direct,
            stamp=pass_name != "read",
            verify=verifying,
            stop_on_error=pass_name != "randwrite",
            rate_iops=self.rate_iops,
        )

    async def _run_pass(self, pass_name: str, emit: Emit) -> bool:
        """Run one pass; True when it completed (go on to the next pass)."""
        assert self.target is not None
        cp = None
        if pass_name == "randwrite":
            extents = [(self.target.start, self.target.end)]
        else:
            if self._checkpoint is not None and self._checkpoint.pass_name == pass_name:
                cp = self._checkpoint
            else:
                cp = self._new_checkpoint(pass_name)
                cp.save()
            self._checkpoint = cp
            extents = [tuple(e) for e in cp.remaining()]
            if not extents:
                self.complete = True
                self._finish_pass(pass_name, cp)
                return True
        engine = Engine(self._plan(pass_name, extents))  # type: ignore[arg-type]
        try:
            engine.start()
        except OSError as exc:
            msg = f"{self.target_path}: cannot open for the {pass_name} pass: {exc}"
            raise ProbeError(msg) from None
        emit(
            Status(
                self.id,
                now_ns(),
                "info",
                f"{pass_name} pass started"
                + (f", resumed at {self.resumed_from:,} bytes done" if self.resumed_from else ""),
            )
        )
        self._last_snap = None
        try:
            ok = await self._watch(engine, cp, pass_name, emit)
        finally:
            engine.stop()
            engine.join()
            self._account_tail(engine, READ if pass_name == "read" else WRITE)
            bad = engine.first_bad_offset()
            if bad is not None and (self.first_bad_offset is None or bad < self.first_bad_offset):
                self.first_bad_offset = bad
            if cp is not None:
                self._save(cp, engine, emit)
        failure = engine.last_error() if engine.plan.stop_on_error else None
        if failure is not None:
            code, offset, direction = failure
            self.error = (
                f"{direction} failed at byte {offset:,} of {self.target_path}: "
                f"{_describe_errno(code)}. Checkpoint {self.checkpoint_path} keeps the "
                f"{self.done_bytes:,} bytes done: fix the cause, then rerun with --resume."
            )
            if self._save_error:
                self.error += f" (but the last checkpoint save failed: {self._save_error})"
            raise ProbeError(self.error)
        if engine.failures:
            raise ProbeError("I/O worker failed: " + "; ".join(engine.failures))
        if not ok:
            return False
        if cp is not None:
            self.complete = not cp.remaining()
            self._finish_pass(pass_name, cp)
            return self.complete
        return True

    def _account_tail(self, engine: Engine, d: int) -> None:
        """Count I/O done after the last emitted interval (stop, Ctrl-C) in the totals."""
        last = self._last_snap
        base = last.dirs[d] if last is not None else DirectionTotals()
        t0 = last.t_ns if last is not None else engine.started_ns
        end = engine.snapshot(engine.finished_ns or now_ns())
        tail = end.dirs[d].minus(base)
        if tail.ios or tail.bytes:
            self.bytes += tail.bytes
            self.ios += tail.ios
            self.io_seconds += max(0.0, (end.t_ns - t0) / 1e9)

    def _save(self, cp: Any, engine: Engine, emit: Emit) -> None:
        """Mark what completed and save; a failed save is reported, never fatal
        (the previous checkpoint stays intact)."""
        from probetop.probes.disk.checkpoint import CheckpointError

        for start, end in engine.done_extents():
            cp.mark_done(start, end)
        self.done_bytes = int(cp.done_bytes)
        try:
            cp.save()
        except CheckpointError as exc:
            if self._save_error != str(exc):
                self._save_error = str(exc)
                emit(Status(self.id, now_ns(), "error", str(exc)))
        else:
            self._save_error = None

    def _finish_pass(self, pass_name: str, cp: Any) -> None:
        self.passes_done.append(
            {
                "pass": pass_name,
                "complete": not cp.remaining(),
                "done_bytes": int(cp.done_bytes),
                "plateau": self._plateau(),
            }
        )

    def _plateau(self) -> dict[str, Any]:
        return {
            "criterion": self.steady.spec,
            "reached_at_s": self.steady.reached_at_s,
            "reached_at_bytes": self.steady.reached_at_bytes,
            "left_at_s": self.steady.left_at_s,
        }

    async def _watch(self, engine: Engine, cp: Any, pass_name: str, emit: Emit) -> bool:
        """Sample, checkpoint and detect plateaus until the pass ends. False if
        it stopped on --time."""
        loop = asyncio.get_running_loop()
        ended = asyncio.Event()
        engine.on_finish = lambda: loop.call_soon_threadsafe(ended.set)
        if engine.finished.is_set():
            ended.set()
        step_ns = int(min(self.interval_s, CHECKPOINT_EVERY_S) * 1e9)
        d = READ if pass_name == "read" else WRITE
        # Zero counters at the start time: I/O done before this line counts too.
        prev = Snapshot(engine.started_ns, (DirectionTotals(), DirectionTotals()))
        recent: list[tuple[float, int]] = []
        last_emit = prev.t_ns
        next_tick = prev.t_ns + step_ns
        while True:
            # Wake on the next tick, or as soon as the last worker ends.
            delay = max(0.0, (next_tick - now_ns()) / 1e9)
            try:
                await asyncio.wait_for(ended.wait(), delay)
            except asyncio.TimeoutError:
                pass
            t = now_ns()
            while next_tick <= t:
                next_tick += step_ns
            done = ended.is_set()
            if done:
                engine.join()
                t = engine.finished_ns or t
            if cp is not None:
                self._save(cp, engine, emit)
            timed_out = self._deadline is not None and t >= self._deadline
            if done or timed_out or t - last_emit >= self.interval_s * 1e9 - step_ns * 0.25:
                snap = engine.snapshot(t)
                self._emit(prev, snap, d, cp, pass_name, recent, emit)
                self.io_seconds += (snap.t_ns - prev.t_ns) / 1e9
                prev, last_emit = snap, t
                self._last_snap = snap
            if done:
                return True
            if timed_out:
                return False

    def _emit(
        self,
        prev: Snapshot,
        snap: Snapshot,
        d: int,
        cp: Any,
        pass_name: str,
        recent: list[tuple[float, int]],
        emit: Emit,
    ) -> None:
        assert self.target is not None
        seconds = (snap.t_ns - prev.t_ns) / 1e9
        if seconds <= 0:
            return
        delta = snap.dirs[d].minus(prev.dirs[d])
        self.bytes += delta.bytes
        self.ios += delta.ios
        self.seconds = (snap.t_ns - self._t_start) / 1e9  # wall time of this run so far
        cur = snap.dirs[d]
        if cur.bad_sectors != self.bad_sectors:
            self.bad_sectors = cur.bad_sectors
        bw = delta.bytes / seconds
        iops = delta.ios / seconds
        recent.append((seconds, delta.bytes))
        del recent[:-5]
        total = self.total_bytes
        done = self.done_bytes if cp is not None else self.bytes
        rate5 = sum(b for _, b in recent) / max(1e-9, sum(s for s, _ in recent))
        eta = (total - done) / rate5 if cp is not None and rate5 > 0 else None
        event = self.steady.add(self.seconds, iops, bw, done)
        if event == "reached":
            emit(
                Status(
                    self.id,
                    now_ns(),
                    "info",
                    f"plateau reached ({self.steady.spec}) at {self.seconds:.0f} s, "
                    f"after {done:,} bytes",
                )
            )
        elif event == "left":
            emit(Status(self.id, now_ns(), "warning", f"left the plateau at {self.seconds:.0f} s"))
        values: dict[str, float | None] = {
            "bw_Bps": bw,
            "iops": iops,
            "progress_pct": 100.0 * done / total if cp is not None and total else None,
            "done_bytes": float(done),
            "total_bytes": float(total),
            "eta_s": eta,
            "elapsed_s": self.seconds,
            "errors": float(delta.errors),
        }
        extents = merge([tuple(e) for e in cp.done]) if cp is not None else []  # type: ignore[misc]
        extra = {
            "pass": pass_name,
            "map": done_map(extents, self.target.start, self.target.end) if cp else None,
            "plateau": self.steady.as_dict(),
            "plateau_state": self.steady.state,
            "bad_sectors": self.bad_sectors,
        }
        self.intervals.append(
            {
                "t_s": round(self.seconds, 3),
                "pass": pass_name,
                "bw_bytes": round(bw),
                "iops": round(iops, 1),
                "done_bytes": done,
                "errors": delta.errors,
            }
        )
        emit(Sample(self.id, snap.t_ns, seconds, values, extra))

    def summary(self) -> Mapping[str, Any]:
        seconds = self.io_seconds
        out: dict[str, Any] = {
            "target": self.target_path,
            "pass": self.pass_name,
            "bytes": self.bytes,
            "done_bytes": self.done_bytes,
            "total_bytes": self.total_bytes,
            "seconds": round(seconds, 6),
            "bw_bytes": round(self.bytes / seconds) if seconds > 0 else 0,
            "iops": self.ios / seconds if seconds > 0 else 0.0,
            "total_ios": self.ios,
            "complete": self.complete,
            "resumed_from": self.resumed_from,
            "plateau": self._plateau(),
            "checkpoint": self.checkpoint_path,
            "passes": self.passes_done,
            "notes": self.notes,
            "intervals": self.intervals,
            "fio_command": self.reference_command(),
        }
        if self.verify:
            out["verify"] = {
                "bad_sectors": self.bad_sectors,
                "first_bad_offset": self.first_bad_offset,
                "ok": self.bad_sectors == 0 and self.complete,
            }
        if self.error:
            out["error"] = self.error
        return out
