#!/usr/bin/env python3
"""probetop mem vs sysbench memory, side by side in one run: the ratios.

For each configuration (seq write/read/none 1K, rnd write/read/none 1K, 8-byte
blocks, seq write/read 1M, 2 threads global and local, --percentile 0) it
runs ``sysbench memory ... run`` and ``probetop mem ... --headless --json``
alternately (ABBA order, so a drift in the machine's load hits both alike),
--rounds pairs each, --time seconds per run, and prints the median of the
paired ratios probetop / sysbench, with their spread:

- ops/s (MiB/s is ops/s x block size in both tools, so its ratio is the same;
  the issue's target: 0.97-1.03);
- ops per CPU-second: operations / CPU time of the worker threads (sysbench:
  the process's user + system time from wait4; probetop: each worker's
  CLOCK_THREAD_CPUTIME_ID over its run, the JSON's per_thread cpu_time_s;
  sysbench's start-up and exit, measured with a one-operation run, are
  subtracted).
  On a machine loaded by other processes the wall-clock rate follows the
  share of CPU each run happened to get; the rate per CPU-second compares
  the work per operation.
- with --instructions: instructions per operation of each tool and their
  ratio, a count that does not depend on the load: ``perf stat -e
  instructions:u`` where the CPU exposes hardware counters, else valgrind's
  callgrind over the worker threads (exact counts; this VM has no PMU). Two runs of fixed work per
  tool (--memory-total-size N1 and N2 operations, a --time never reached so
  the clock is checked as in real runs), so start-up cancels out:
  (I(N2) - I(N1)) / (N2 - N1). tests/mem/test_mem_instructions.py checks
  the same counts (engine in-process) within 3 %.

Where each run executes: every 1-thread run of either tool is pinned, the
whole process, to one CPU (``taskset``), by default the one that took the
fewest device interrupts in a second before the runs (``--cpu auto``; both
CPUs' rates are printed). Unpinned, the scheduler puts each run's worker on
either CPU, and here the other CPU takes the virtio disk's interrupts:
sysbench on it ran 0.92-0.94 of its own rate per CPU-second (docs/mem.md),
so a pair's ratio said which CPU each run landed on. Pinned, probetop's main
thread (its 10 Hz poll, about 0.3 % of a CPU) shares the worker's CPU;
sysbench's main thread sleeps in pthread_join. Runs of 2 threads need both
CPUs and are never pinned. Under each case, each tool's own rounds are
printed: a bimodal ratio comes from one tool's runs or both.

sysbench's report is read with ``probetop.probes.mem.parse_report`` (the
tests check that it reads our text report to the same figures as --json).

Usage: .venv/bin/python benchmarks/mem_vs_sysbench.py [--time 3] [--rounds 7] [--only NAME]
       [--cpu auto|none|N]
       [--instructions]   (--rounds 0 --instructions: the counts only)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "mem"))
from cpu_sched import quietest_cpu
from figures import add_figures_option, between, report
from mem_callgrind import (
    FIXED_WORK_TIME_S,
    busiest,
    per_operation,
    run_callgrind,
    sysbench_fixed_work,
)
from probetop.probes.mem import parse_report

CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("seq write 1K t1", {"memory-oper": "write", "memory-block-size": "1K", "threads": "1"}),
    ("seq read 1K t1", {"memory-oper": "read", "memory-block-size": "1K", "threads": "1"}),
    (
        "rnd write 1K t1",
        {
            "memory-oper": "write",
            "memory-block-size": "1K",
            "memory-access-mode": "rnd",
            "threads": "1",
        },
    ),
    ("seq none 1K t1", {"memory-oper": "none", "memory-block-size": "1K", "threads": "1"}),
    (
        "rnd read 1K t1",
        {"memory-oper": "read", "memory-block-size": "1K", "memory-access-mode": "rnd"},
    ),
    (
        "rnd none 1K t1",
        {"memory-oper": "none", "memory-block-size": "1K", "memory-access-mode": "rnd"},
    ),
    ("seq write 8B t1", {"memory-oper": "write", "memory-block-size": "8", "threads": "1"}),
    (
        "seq write 1K pct0",
        {"memory-oper": "write", "memory-block-size": "1K", "percentile": "0"},
    ),
    ("seq write 1M t1", {"memory-oper": "write", "memory-block-size": "1M", "threads": "1"}),
    ("seq read 1M t1", {"memory-oper": "read", "memory-block-size": "1M", "threads": "1"}),
    ("seq write 1K t2", {"memory-oper": "write", "memory-block-size": "1K", "threads": "2"}),
    (
        "seq write 1K t2 local",
        {
            "memory-oper": "write",
            "memory-block-size": "1K",
            "threads": "2",
            "memory-scope": "local",
        },
    ),
]


def probetop_bin() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "probetop")
    return here if os.path.exists(here) else "probetop"


def pinned(cpu: int | None) -> list[str]:
    """The prefix that runs a whole process on ``cpu`` (nothing when None)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def run(tool: str, opts: dict[str, str], seconds: float, cpu: int | None) -> dict[str, float]:
    """One run (the whole process on ``cpu`` unless None): ops/s and
    operations per CPU-second of the workers."""
    if tool == "sysbench":
        cmd = [*pinned(cpu), "sysbench", "memory", f"--time={seconds:g}"]
        cmd += [f"--{k}={v}" for k, v in opts.items()]
        cmd.append("run")
    else:
        cmd = [*pinned(cpu), probetop_bin(), "mem", "--headless", "--json"]
        cmd += ["--time", f"{seconds:g}"]
        for k, v in opts.items():
            cmd += [f"--{k}", v]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    if tool == "sysbench":
        doc = parse_report(proc.stdout)
        # sysbench's main thread sleeps while the workers run: its CPU is
        # theirs, less what starting and ending the process costs
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu_s -= SYSBENCH_OVERHEAD_S
    else:
        doc = json.loads(proc.stdout)
        cpu_s = sum(t["cpu_time_s"] for t in doc["per_thread"])
    threads = int(opts.get("threads", "1"))
    return {
        "ops": float(doc["ops_per_second"]),
        "per_cpu": doc["total_events"] / cpu_s,
        # the share of its threads' wall time the workers ran: what the load left them
        "share": cpu_s / (threads * float(doc["total_time"])),
    }


SYSBENCH_OVERHEAD_S = 0.0  # measured by main(): a one-operation run's CPU time


def fixed_work_cmd(tool: str, opts: dict[str, str], ops: int) -> list[str]:
    """A run of exactly ``ops`` operations per thread (time limit never reached)."""
    threads = int(opts.get("threads", "1"))
    block = parse_size(opts.get("memory-block-size", "1K"))
    if tool == "sysbench":
        scope = opts.get("memory-scope", "global")
        return sysbench_fixed_work(
            ops=ops,
            block=block,
            oper=opts.get("memory-oper", "write"),
            mode=opts.get("memory-access-mode", "seq"),
            percentile=float(opts.get("percentile", "95")),
            threads=threads,
            extra=(f"--memory-scope={scope}",),
        )
    opts = {**opts, "memory-total-size": str(ops * block * threads)}
    cmd = [probetop_bin(), "mem", "--headless", "--json", "--time", str(FIXED_WORK_TIME_S)]
    for k, v in opts.items():
        cmd += [f"--{k}", v]
    return cmd


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def count_instructions(cmd: list[str], threads: int) -> int:
    """User-space instructions the ``threads`` worker threads of a command
    execute: perf if the CPU counts them (every thread: at full speed the
    rest is noise), else callgrind per thread, the ``threads`` busiest but
    the main thread (under valgrind probetop's event loop polls for far
    longer than the run takes at full speed; sysbench's main only waits)."""
    if shutil.which("perf"):
        # the same start-up each run; no OpenBLAS worker threads (numpy's)
        env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
        perf = subprocess.run(
            ["perf", "stat", "-x,", "-e", "instructions:u", *cmd],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        for line in perf.stderr.splitlines() if perf.returncode == 0 else []:
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
                return int(fields[0])
    with tempfile.TemporaryDirectory(prefix="memparity-") as tmp:
        counts = run_callgrind(cmd, Path(tmp) / "cg.out")
    return sum(c.instructions for c in busiest(counts, threads))


def instructions_per_op(
    tool: str, opts: dict[str, str], n1: int = 20_000, n2: int = 220_000
) -> float:
    threads = int(opts.get("threads", "1"))
    counts = [count_instructions(fixed_work_cmd(tool, opts, n), threads) for n in (n1, n2)]
    return per_operation(*counts, n1, n2) / threads


def sysbench_overhead_s(cpu: int | None) -> float:
    """CPU time of a sysbench memory run that does one operation (median of 5)."""
    spent = []
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [*pinned(cpu), "sysbench", "memory", "--memory-total-size=1K", "run"],
            capture_output=True,
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(spent)


def main() -> int:
    global SYSBENCH_OVERHEAD_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--cpu",
        default="auto",
        help="the CPU every 1-thread run of either tool is pinned to (taskset, the whole"
        " process): auto (default) the one that takes the fewest device interrupts;"
        " none: unpinned. Runs of more threads are never pinned",
    )
    ap.add_argument("--only", help="run only configurations whose name contains this")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per operation (perf, else valgrind; slow: ~2 min a case)",
    )
    add_figures_option(ap)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("sysbench is not installed", file=sys.stderr)
        return 2
    cpu: int | None = None
    if args.cpu != "none":
        quiet, rates = quietest_cpu()
        cpu = quiet if args.cpu == "auto" else int(args.cpu)
        per_cpu = ", ".join(f"CPU {i} {r:,.0f}/s" for i, r in enumerate(rates))
        # Where the worker runs moves its rate more than either tool does:
        # a CPU taking a disk's interrupts ran sysbench at 0.92 of its rate on
        # the other (docs/mem.md). Unpinned, each run lands where the
        # scheduler puts it, and a ratio carries whose run landed where.
        print(
            f"1-thread runs of both tools pinned to CPU {cpu} (taskset); device"
            f" interrupts over 1 s: {per_cpu}; runs of 2 threads unpinned"
        )
    else:
        print("no run pinned (--cpu none): each lands where the scheduler puts it")
    SYSBENCH_OVERHEAD_S = sysbench_overhead_s(cpu)
    print(f"loadavg at start: {os.getloadavg()}  (ratios are paired, ABBA)")
    print(f"sysbench start-up and exit: {SYSBENCH_OVERHEAD_S * 1e3:.1f} ms CPU (subtracted)")
    print(
        f"{'configuration':<22} {'ops/s ratio':>11} {'spread':>14}"
        f" {'ops/CPU-s ratio':>15} {'spread':>14}  sysbench ops/s"
    )
    for name, opts in CONFIGS:
        if (args.only and args.only not in name) or args.rounds < 1:
            continue  # --rounds 0: instructions only
        ratios: list[float] = []
        cpu_ratios: list[float] = []
        share_ratios: list[float] = []
        sb_ops: list[float] = []
        pt_ops: list[float] = []
        where = cpu if opts.get("threads", "1") == "1" else None
        for r in range(args.rounds):
            order = ("sysbench", "probetop") if r % 2 == 0 else ("probetop", "sysbench")
            got = {tool: run(tool, opts, args.time, where) for tool in order}
            ratios.append(got["probetop"]["ops"] / got["sysbench"]["ops"])
            cpu_ratios.append(got["probetop"]["per_cpu"] / got["sysbench"]["per_cpu"])
            share_ratios.append(got["probetop"]["share"] / got["sysbench"]["share"])
            sb_ops.append(got["sysbench"]["ops"])
            pt_ops.append(got["probetop"]["ops"])
        print(
            f"{name:<22} {statistics.median(ratios):>11.3f} "
            f"{min(ratios):>6.3f}..{max(ratios):<6.3f}"
            f" {statistics.median(cpu_ratios):>15.3f} "
            f"{min(cpu_ratios):>6.3f}..{max(cpu_ratios):<6.3f}"
            f"  {statistics.median(sb_ops):,.0f}",
            flush=True,
        )
        # Systematic or noise: a gap every round shows on the same side of 1;
        # ops/s ratio = (ops/CPU-s ratio) x (CPU share ratio), the share being
        # what the machine's other load left each run.
        print(
            f"{'':<22} rounds above 1: ops/s {sum(r > 1 for r in ratios)}/{len(ratios)},"
            f" ops/CPU-s {sum(r > 1 for r in cpu_ratios)}/{len(cpu_ratios)};"
            f" CPU share ratio {statistics.median(share_ratios):.3f}"
            f" ({min(share_ratios):.3f}..{max(share_ratios):.3f});"
            f" ops/s rounds {' '.join(f'{r:.3f}' for r in ratios)}",
            flush=True,
        )
        # Each tool's own rounds: a bimodal ratio comes from one tool or both.
        for tool, ops in (("sysbench", sb_ops), ("probetop", pt_ops)):
            mid = statistics.median(ops)
            print(
                f"{'':<22} {tool} M ops/s by round: {' '.join(f'{x / 1e6:.3f}' for x in ops)}"
                f" (median {mid / 1e6:.3f}, rounds {min(ops) / mid:.3f}..{max(ops) / mid:.3f}"
                " of it)",
                flush=True,
            )
        report(
            name,
            "operations/s",
            statistics.median(pt_ops),
            statistics.median(sb_ops),
            unit="ops/s",
            reference_tool="sysbench memory",
            ratio=statistics.median(ratios),
            goal=between(0.97, 1.03),
            note=f"ops per CPU-second ratio {statistics.median(cpu_ratios):.3f} "
            f"({min(cpu_ratios):.3f}-{max(cpu_ratios):.3f}); "
            f"rounds {min(ratios):.3f}-{max(ratios):.3f}, {sum(r > 1 for r in ratios)} of "
            f"{len(ratios)} above 1; CPU share ratio {statistics.median(share_ratios):.3f}; "
            "MiB/s ratio = ops ratio",
        )
    if args.instructions:
        if shutil.which("valgrind") is None and shutil.which("perf") is None:
            print("--instructions needs perf (with hardware counters) or valgrind", file=sys.stderr)
            return 2
        print(f"{'configuration':<22} {'probetop':>10} {'sysbench':>10}  instructions/op ratio")
        for name, opts in CONFIGS:
            if (args.only and args.only not in name) or "1M" in name:
                continue  # 1M blocks: the loop, counted by the others; too slow under valgrind
            ours, theirs = (instructions_per_op(t, opts) for t in ("probetop", "sysbench"))
            print(f"{name:<22} {ours:>10.1f} {theirs:>10.1f}  {ours / theirs:.3f}", flush=True)
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
