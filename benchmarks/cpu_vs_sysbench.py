#!/usr/bin/env python3
"""probetop cpu vs sysbench cpu, side by side in one run: the four ratios.

For each (threads, max-prime) in {1, nproc} x {10000, 64000} it runs
``sysbench cpu`` and ``probetop cpu --json`` alternately (ABBA order, so a
drift in machine load hits both the same), --rounds times each, --time
seconds per run, and prints:

- the CPU model, and the divide loop of both (objdump: the same instructions
  on x86-64, see docs/cpu.md);
- wall ratio: probetop events/s / sysbench events/s (median of the paired
  ratios) -- the figure the issue asks to be within 0.97-1.03;
- CPU ratio: the same per CPU-second each tool's threads actually got
  (sysbench: its rusage; probetop: its worker threads' CPU clocks). On a
  shared or noisy machine the wall figures swing run to run while this one
  stays put, so it shows whether a gap is codegen or noise.

Usage: .venv/bin/python benchmarks/cpu_vs_sysbench.py [--time 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys

from cpu_sched import (
    autogroup_line,
    claim_session,
    cpu_model,
    own_session_with_nice,
    probetop_cpu_json,
)
from figures import add_figures_option, between, report


def run_sysbench_rusage(threads: int, max_prime: int, seconds: float) -> tuple[float, float]:
    """sysbench with its CPU time from wait4 (communicate() would reap it first)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [
        "sysbench",
        "cpu",
        f"--threads={threads}",
        f"--time={seconds:g}",
        f"--cpu-max-prime={max_prime}",
        "run",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    eps = float(re.search(r"events per second:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    events = int(re.search(r"total number of events:\s+(\d+)", out).group(1))  # type: ignore[union-attr]
    return eps, events / cpu if cpu > 0 else float("nan")


def run_probetop(threads: int, max_prime: int, seconds: float) -> tuple[float, float, str]:
    """(events/s, events per worker CPU-second, engine) of one probetop run."""
    cmd = probetop_cpu_json(threads, max_prime, seconds)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    cpu = sum(t["cpu_time_s"] or 0.0 for t in doc["per_thread"])
    per_cpu = doc["total_events"] / cpu if cpu > 0 else float("nan")
    return float(doc["events_per_second"]), per_cpu, str(doc["engine"])


def print_loops() -> None:
    """The divide loop of sysbench's binary and of probetop's event, as objdump reads them."""
    try:
        from probetop.probes.cpu.engine import NativeEngine
        from probetop.probes.cpu.machine_code import (
            describe,
            engine_event_loop,
            sysbench_event_loop,
        )

        theirs, ours = sysbench_event_loop(), engine_event_loop(NativeEngine())
        same = "the same instructions" if ours.shapes == theirs.shapes else "DIFFERENT loops"
        print(f"# divide loop, sysbench: {describe(theirs)}")
        print(f"# divide loop, probetop: {describe(ours)}")
        print(f"# -> {same}")
    except Exception as exc:  # a benchmark: say why and measure anyway
        print(f"# (no machine code comparison: {exc})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=5.0, help="seconds per run (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="pairs per configuration")
    parser.add_argument("--threads", type=int, nargs="*", help="thread counts (default 1 nproc)")
    parser.add_argument("--max-prime", type=int, nargs="*", default=[10000, 64000])
    parser.add_argument(
        "--nice",
        type=int,
        default=None,
        help="run both tools in a session of this autogroup nice (e.g. -10; root): "
        "steadier wall figures on a shared machine (see cpu_sched.py)",
    )
    add_figures_option(parser)
    args = parser.parse_args()
    claim_session()
    own_session_with_nice(args.nice)
    if shutil.which("sysbench") is None:
        print("sysbench is not installed: apt-get install sysbench", file=sys.stderr)
        return 2
    nproc = len(os.sched_getaffinity(0))
    thread_counts = args.threads or sorted({1, nproc})
    load = os.getloadavg()[0]
    print(f"# CPU: {cpu_model()} ({platform.machine()})")
    print_loops()
    print(f"# {nproc} CPUs, load average {load:.2f} before start; {args.rounds} ABBA pairs")
    print(f"# scheduling: {autogroup_line()}")
    print(f"# of {args.time:g} s runs per configuration")
    if load > 0.5:
        print("# WARNING: the machine is busy; wall figures will be noisy, see the CPU ratio")
    header = (
        f"{'threads':>7} {'max-prime':>9} {'sysbench eps':>13} {'probetop eps':>13} "
        f"{'wall ratio':>10} {'CPU ratio':>9}  paired wall ratios"
    )
    print(header)
    worst = 0.0
    for threads in thread_counts:
        for max_prime in args.max_prime:
            sb_eps, pt_eps, wall, cpu = [], [], [], []
            engine = "?"
            for r in range(args.rounds):
                order = ("sb", "pt") if r % 2 == 0 else ("pt", "sb")
                got: dict[str, tuple[float, float]] = {}
                for who in order:
                    if who == "sb":
                        got["sb"] = run_sysbench_rusage(threads, max_prime, args.time)
                    else:
                        eps, per_cpu, engine = run_probetop(threads, max_prime, args.time)
                        got["pt"] = (eps, per_cpu)
                sb_eps.append(got["sb"][0])
                pt_eps.append(got["pt"][0])
                wall.append(got["pt"][0] / got["sb"][0])
                cpu.append(got["pt"][1] / got["sb"][1])
            w, c = statistics.median(wall), statistics.median(cpu)
            worst = max(worst, abs(w - 1.0))
            pairs = " ".join(f"{x:.3f}" for x in wall)
            print(
                f"{threads:>7} {max_prime:>9} {statistics.median(sb_eps):>13.2f} "
                f"{statistics.median(pt_eps):>13.2f} {w:>10.3f} {c:>9.3f}  {pairs}"
                + ("" if engine == "llvm" else f"  (engine {engine}: not comparable)")
            )
            report(
                f"{threads} thread(s), max-prime {max_prime}",
                "events/s (wall)",
                statistics.median(pt_eps),
                statistics.median(sb_eps),
                unit="events/s",
                reference_tool="sysbench cpu",
                ratio=w,
                goal=between(0.97, 1.03),
                note=f"per CPU-second {c:.3f}"
                + ("" if engine == "llvm" else f"; engine {engine}: not comparable"),
            )
    print(f"# worst wall-ratio deviation from 1: {100 * worst:.1f} % (target: within 3 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
