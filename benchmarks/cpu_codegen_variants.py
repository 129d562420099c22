#!/usr/bin/env python3
"""Where a JIT's gap to sysbench comes from: codegen variants vs sysbench, one run.

Builds the event four ways (LLVM's 64->32-bit divide bypass on/off x the
first divisor l = 2 peeled into a bit test or not, as gcc -O2 does) and
measures each against ``sysbench cpu --threads=1`` in alternation, as events
per CPU-second the thread got (robust on a busy machine; wall figures are in
cpu_vs_sysbench.py). Then the per-event bookkeeping cost (two clock reads,
histogram update) of both tools from --max-prime 3, where an event is empty.

Usage: .venv/bin/python benchmarks/cpu_codegen_variants.py [--time 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time

from probetop.probes.cpu.engine import NativeEngine, SharedRun, ThreadJob

VARIANTS = {
    "naive JIT (bypass on, no peel)": {"feature_overrides": ("+idivq-to-divl",), "peel": False},
    "bypass off, no peel": {"feature_overrides": ("-idivq-to-divl",), "peel": False},
    "bypass on, peeled": {"feature_overrides": ("+idivq-to-divl",), "peel": True},
    "shipped: bypass off, peeled": {"feature_overrides": ("-idivq-to-divl",), "peel": True},
}


def sysbench_per_cpu_s(max_prime: int, seconds: float) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            "sysbench",
            "cpu",
            "--threads=1",
            f"--time={seconds:g}",
            f"--cpu-max-prime={max_prime}",
            "run",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    events = int(re.search(r"total number of events:\s+(\d+)", out).group(1))  # type: ignore[union-attr]
    return events / cpu


def engine_per_cpu_s(engine: NativeEngine, max_prime: int, seconds: float) -> float:
    shared = SharedRun(max_prime=max_prime)
    job = ThreadJob(shared)
    box: dict[str, int] = {}

    def work() -> None:
        c0 = time.thread_time_ns()
        engine.run_events(job)
        box["cpu"] = time.thread_time_ns() - c0

    shared.deadline_ns = time.monotonic_ns() + int(seconds * 1e9)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return job.stats[0] / (box["cpu"] / 1e9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-prime", type=int, nargs="*", default=[10000, 64000])
    args = parser.parse_args()
    if shutil.which("sysbench") is None:
        print("sysbench is not installed", file=sys.stderr)
        return 2
    engines = {
        name: NativeEngine(feature_overrides=v["feature_overrides"], peel_first_divisor=v["peel"])  # type: ignore[arg-type]
        for name, v in VARIANTS.items()
    }
    for name, engine in engines.items():
        asm = engine.asm()
        body = asm[asm.index("prime_event:") : asm.index(".Lfunc_end0")]
        divs = sorted({m for m in re.findall(r"\bdiv[lq]\b", body)})
        print(f"# {name}: divides in prime_event: {', '.join(divs)}")
    print(f"{'max-prime':>9}  {'variant':<32} {'ratio vs sysbench (events per CPU-s)':>36}")
    for max_prime in args.max_prime:
        ratios: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.rounds):
            for name, engine in engines.items():
                ref = sysbench_per_cpu_s(max_prime, args.time)
                ours = engine_per_cpu_s(engine, max_prime, args.time)
                ratios[name].append(ours / ref)
        for name, values in ratios.items():
            pairs = " ".join(f"{x:.3f}" for x in values)
            print(f"{max_prime:>9}  {name:<32} {statistics.median(values):>8.3f}   ({pairs})")
    # Per-event bookkeeping: at --max-prime 3 the event does no work at all.
    shipped = engines["shipped: bypass off, peeled"]
    ours = statistics.median(engine_per_cpu_s(shipped, 3, 1.0) for _ in range(3))
    ref = statistics.median(sysbench_per_cpu_s(3, 1.0) for _ in range(3))
    print(
        f"# per-event overhead (max-prime 3): probetop {1e9 / ours:.0f} ns, "
        f"sysbench {1e9 / ref:.0f} ns per event"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
