"""Warm-up job: layout. How a pass covers the range.

``PassLayout(settings, target)``:

- ``engine_plan(pass_name, extents)``: what the I/O workers run. A sequential
  pass walks the extents still to do in chunks handed out in order (writes
  stamp every sector, a ``--verify`` read checks the stamps; a failed I/O is
  counted and the pass goes on, the ``blockmap`` keeps where); "randwrite"
  writes random blocks over the whole range until stopped.
- ``done_map(extents)``: the fraction done of each of 64 equal slices of the
  range, for the pane's map.
- ``fio_command(steady_spec)``: the same coverage as an fio command line
  (``--numjobs/--size/--offset_increment`` for several jobs); for write then
  read, the method's two commands, the write's then the read's, joined by
  ``&&`` (the read runs only after the write succeeded). Works before
  ``prepare`` too (``target`` None: the settings' range).
"""

from __future__ import annotations

import shlex

from probetop.probes.disk.blockmap import BlockMap
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.sizes import format_size
from probetop.probes.disk.target import Target
from probetop.probes.disk.units import fio_time
from probetop.probes.disk.warmup.settings import WarmupSettings
from probetop.probes.disk.workers import FIO_BUFFER_ALIGNMENT

MAP_CELLS = 64
FIO_RW = {"read": "read", "write": "write", "randwrite": "randwrite"}


class PassLayout:
    """See the module docstring."""

    def __init__(
        self, settings: WarmupSettings, target: Target | None = None, engine: str | None = None
    ) -> None:
        self.settings = settings
        self.target = target
        # The resolved engine (ioengines.resolve, in prepare); before that what
        # was asked for, or the default.
        self.engine = (
            engine or settings.ioengine or ("psync" if settings.iodepth == 1 else "libaio")
        )

    def engine_plan(
        self, pass_name: str, extents: list[tuple[int, int]], blockmap: BlockMap | None = None
    ) -> EnginePlan:
        assert self.target is not None, "prepare() first"
        s = self.settings
        return EnginePlan(
            path=s.target,
            bs=s.bs,
            extents=extents,
            jobs=s.jobs,
            iodepth=s.iodepth,
            readpct=100 if pass_name == "read" else 0,
            seq=pass_name != "randwrite",
            wrap=pass_name == "randwrite",
            direct=self.target.direct,
            stamp=pass_name != "read",
            verify=s.verify and pass_name == "read",
            # A failing sector is data: the pass goes on past it (the block
            # map keeps the bad ranges); the target full, gone or shorter
            # still ends it (native.halts).
            stop_on_error=False,
            rate_iops=s.rate_iops,
            cpus_allowed=frozenset(s.cpus_allowed),
            ioengine=self.engine,
            blockmap=blockmap,
        )

    def done_map(self, extents: list[tuple[int, int]]) -> tuple[float, ...]:
        assert self.target is not None, "prepare() first"
        return tuple(_done_map(_merge(extents), self.target.start, self.target.end))

    def fio_command(self, steady_spec: str) -> str:
        passes = self.settings.passes
        return " && ".join(self._fio_one(FIO_RW[p], steady_spec) for p in passes)

    def _fio_one(self, rw: str, steady_spec: str) -> str:
        s, t = self.settings, self.target
        start, end = (t.start, t.end) if t else (s.range_start or 0, s.range_end)
        args = [
            "fio",
            f"--name={s.job_name}",
            f"--filename={s.target}",
            f"--rw={rw}",
            f"--bs={format_size(s.bs)}",
            f"--iodepth={s.iodepth}",
            f"--ioengine={self.engine}",
            f"--direct={int(t.direct if t else True)}",
        ]
        if not (t.direct if t else True):
            args.append(FIO_BUFFER_ALIGNMENT)
        length = (end - start) if end is not None else None
        if s.jobs > 1 and length and s.sequential:
            share = -(-length // s.jobs // s.bs) * s.bs
            args += [f"--numjobs={s.jobs}", f"--size={share}", f"--offset_increment={share}"]
        elif s.jobs > 1:
            args.append(f"--numjobs={s.jobs}")
        if s.rate_iops:
            args.append(f"--rate_iops={s.rate_iops}")
        if s.cpus_allowed:
            args.append(f"--cpus_allowed={','.join(map(str, s.cpus_allowed))}")
        if start:
            args.append(f"--offset={start}")
        if length and not (s.jobs > 1 and s.sequential):
            args.append(f"--size={length}")
        if s.pass_name == "randwrite":
            if s.time_s:
                args += ["--time_based", f"--runtime={fio_time(s.time_s)}"]
            args += [f"--steadystate={steady_spec}", f"--ss_dur={fio_time(s.ss_dur)}"]
            if s.ss_ramp:
                args.append(f"--ss_ramp={fio_time(s.ss_ramp)}")
        args.append("--group_reporting")
        return shlex.join(args)


def _merge(extents: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged copy of [start, end) extents."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(e for e in extents if e[1] > e[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _done_map(
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
