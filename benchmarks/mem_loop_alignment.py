#!/usr/bin/env python3
"""Does the 1 MiB seq figure follow the loop's address? The engine's seq
loop shifted by 0-63 bytes, each alternated with sysbench over fixed work.

The engine's seq read/write loop is sysbench 1.0.20's instruction for
instruction (``--show-asm`` prints both: 8 one-word ``mov``s a trip, ``add
$0x40``, ``cmp``, ``jb``/``ja``; the same remainder chain), and the engine
puts its head where sysbench's is in its 64-byte line
(``engine.SEQ_LOOP_HEAD``: shift 0). This builds the engine once per
--shifts, each with the head that many bytes further on (mod 64), and
prints the head's offset (address mod 64) of each build.

Each figure is CPU time per operation (the worker's thread CPU clock,
``STAT_CPU_NS``, the engine running in this process, pinned with --cpu)
of a 1 MiB block, and sysbench's (``taskset``, ``--memory-total-size`` =
that many blocks, the process's CPU time), each the slope of two runs
(--ops/4 and --ops operations: start-up and the first, cold operations
cancel out), the builds and sysbench alternated in rotating order, median
and spread of --rounds. "undisturbed" is the mean latency of the operations
within 1.25x of the latency histogram's mode (mem_oplatency_vs_sysbench.py),
"best" its smallest over the rounds: the run the other jobs disturbed least
(a 1 MiB block is twice this machine's 512 KiB L2, so every operation reads
it from the L3 the other CPU shares). Where the builds spread as widely
as the gap to sysbench, the gap is layout, not work.

Usage: .venv/bin/python benchmarks/mem_loop_alignment.py [--rounds 6] [--ops 3000]
       [--shifts 0,16,32,48] [--oper read,write] [--cpu 1] [--show-asm]
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "mem"))
from figures import add_figures_option, report
from mem_callgrind import sysbench_fixed_work
from mem_objdump import disassemble, loop_head, sysbench_event, trip
from mem_oplatency_vs_sysbench import sysbench_histogram, undisturbed
from probetop.probes.core.sysbench.counters import STAT_CPU_NS
from probetop.probes.mem import engine as eng

BLOCK = 1 << 20


def build(oper: str, head: int) -> eng.MemEngine:
    """The engine with event_seq_<oper>'s loop head at ``head`` mod 64."""
    saved = dict(eng.SEQ_LOOP_HEAD)
    eng.SEQ_LOOP_HEAD[oper] = head
    try:
        return eng.MemEngine()
    finally:
        eng.SEQ_LOOP_HEAD.clear()
        eng.SEQ_LOOP_HEAD.update(saved)


def sysbench_loop(oper: str) -> tuple[int, list[tuple[int, str]]]:
    rows = sysbench_event(oper)
    if rows is None:
        raise SystemExit("needs sysbench 1.0.20 as Debian builds it (its seq events by address)")
    return loop_head(rows), rows


class Runner:
    """The engine run in this thread over a fixed number of 1 MiB operations."""

    def __init__(self, engine: eng.MemEngine, oper: str) -> None:
        self.engine = engine
        self.map = mmap.mmap(-1, BLOCK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.map.write(b"\0" * BLOCK)
        self.address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        self.oper = oper

    def cpu_ns(self, ops: int) -> tuple[float, dict[int, int]]:
        """The worker's CPU time over ``ops`` operations (one engine run) and
        its latency histogram (bucket index -> operations)."""
        rows = eng.new_rows(1)
        hist = eng.SharedHistogram()
        shared = eng.SharedRun()
        self.engine.setup(
            shared,
            mode="seq",
            oper=self.oper,
            block_size=BLOCK,
            total_size=ops * BLOCK,
            percentile=95,
            hist=hist,
            rows=rows,
        )
        eng.setup_row(rows[0], buffer_address=self.address, budget=ops, rng=(12345, 67890))
        shared.set_clock(time.monotonic_ns(), 0)
        self.engine.run(eng.ThreadJob(shared, 0, rows[0]))
        counts = hist.counts.sum(axis=0)
        return float(rows[0][STAT_CPU_NS]), {int(i): int(counts[i]) for i in counts.nonzero()[0]}


def sysbench_run(cmd: list[str]) -> tuple[float, dict[int, int]]:
    """sysbench's CPU time (ns) and its latency histogram (``--histogram=on``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return spent * 1e9, sysbench_histogram(proc.stdout)


def spread(xs: list[float], scale: float = 1e3) -> str:
    """min-max of ``xs``, in us (ns / ``scale``)."""
    return f"{min(xs) / scale:.2f}-{max(xs) / scale:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--ops", type=int, default=4000, help="1 MiB operations of the longer run")
    ap.add_argument("--shifts", default="0,16,32,48", help="bytes past sysbench's loop head")
    ap.add_argument("--oper", default="read,write")
    ap.add_argument("--cpu", type=int, default=None, help="pin both tools to this CPU")
    ap.add_argument("--show-asm", action="store_true", help="print both tools' loop trips")
    add_figures_option(ap)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("needs sysbench", file=sys.stderr)
        return 2
    pin: list[str] = []
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
        pin = ["taskset", "-c", str(args.cpu)]
    shifts = [int(p) for p in args.shifts.split(",")]
    print(f"loadavg at start: {os.getloadavg()}")
    for oper in args.oper.split(","):
        sb_head, sb_rows = sysbench_loop(oper)
        runners: dict[str, Runner] = {}
        heads: dict[str, int] = {}
        for shift in shifts:
            engine = build(oper, (eng.SEQ_LOOP_HEAD[oper] + shift) % 64)
            address = engine.function_address(f"event_seq_{oper}")
            rows = disassemble(address)
            head = loop_head(rows)
            name = f"+{shift}"
            runners[name], heads[name] = Runner(engine, oper), head % 64
            if head != engine.loop_head(oper):
                raise RuntimeError(f"the label is not at the loop head ({name})")
            if args.show_asm and shift == shifts[0]:
                print(f"seq {oper}: sysbench's trip (head {sb_head:#x}, mod 64 = {sb_head % 64}):")
                print("   " + "; ".join(trip(sb_rows, sb_head)))
                print(f"seq {oper}: the engine's trip (head mod 64 = {head % 64}):")
                print("   " + "; ".join(trip(rows, head)))
        n1, n2 = args.ops // 4, args.ops
        per_op: dict[str, list[float]] = {"sysbench": [], **{n: [] for n in runners}}
        calm: dict[str, list[float]] = {tool: [] for tool in per_op}
        tools = list(per_op)
        for r in range(args.rounds):
            order = tools[r % len(tools) :] + tools[: r % len(tools)]
            for tool in order:
                if tool == "sysbench":
                    extra = ("--histogram=on",)
                    runs = [
                        sysbench_run(
                            [*pin, *sysbench_fixed_work(ops=n, block=BLOCK, oper=oper, extra=extra)]
                        )
                        for n in (n1, n2)
                    ]
                else:
                    runs = [runners[tool].cpu_ns(n) for n in (n1, n2)]
                per_op[tool].append((runs[1][0] - runs[0][0]) / (n2 - n1))
                calm[tool].append(undisturbed(runs[1][1])[1])  # us
        sb, sb_calm = statistics.median(per_op["sysbench"]), statistics.median(calm["sysbench"])
        print(
            f"seq {oper} 1M: sysbench loop head mod 64 = {sb_head % 64}:"
            f" CPU {sb / 1e3:.2f} us/op ({spread(per_op['sysbench'])}),"
            f" undisturbed {sb_calm:.2f} us ({spread(calm['sysbench'], 1)})"
        )
        sb_best = min(calm["sysbench"])
        for name in runners:
            med, med_calm = statistics.median(per_op[name]), statistics.median(calm[name])
            print(
                f"  engine {name:<7} head mod 64 = {heads[name]:>2}:"
                f" CPU {med / 1e3:.2f} us/op ({spread(per_op[name])}),"
                f" ops per CPU-s vs sysbench {sb / med:.3f};"
                f" undisturbed {med_calm:.2f} us ({spread(calm[name], 1)}), vs sysbench"
                f" {sb_calm / med_calm:.3f}; best vs sysbench's best"
                f" {sb_best / min(calm[name]):.3f}",
                flush=True,
            )
            for what, ours, theirs in (
                ("ops per CPU-second, fixed work", med, sb),
                ("undisturbed operation rate", med_calm * 1e3, sb_calm * 1e3),
            ):
                report(  # no goal: it says whether the gap follows the loop's address
                    f"seq {oper} 1M {name}",
                    what,
                    1e9 / ours,
                    1e9 / theirs,
                    unit="ops/s",
                    reference_tool="sysbench memory",
                    ratio=theirs / ours,
                    note=f"engine's loop head at {heads[name]} mod 64 (sysbench's {sb_head % 64})",
                )
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
