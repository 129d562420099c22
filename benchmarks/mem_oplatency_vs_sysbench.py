#!/usr/bin/env python3
"""The undisturbed operation's own time: probetop mem vs sysbench memory.

A measure the machine's load cannot move much: both tools file every
operation's latency (the clock read before and after the block) in
sysbench's 1024-bucket logarithmic histogram (1.8 % a bucket). Operations
that were preempted or refilled the caches afterwards land in the tail; the
operations within 1.25x of the histogram's mode did not. Per run, this
prints the mode and the mean latency of those undisturbed operations, and
per configuration the median over --rounds alternating (ABBA) pairs and the
ratio probetop / sysbench (a ratio of times: above 1 = probetop slower).

Where this ratio matches the ops per CPU-second ratio of
``mem_vs_sysbench.py`` (inverted), the gap is in the operation itself (the
loop over the block), not in CPU accounting, start-up or preemption.

Only 1 MiB blocks: the histogram starts at 1 us, where every 1 KiB operation
lands, so smaller blocks cannot be resolved this way.

sysbench prints bucket values to 3 decimals (several buckets read alike);
the rows are mapped to bucket indices in order, the smallest index that
prints as the row's value and follows the previous row's.

Usage: .venv/bin/python benchmarks/mem_oplatency_vs_sysbench.py [--rounds 4] [--time 2]
       [--only "seq read 1M"]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from figures import add_figures_option, report
from probetop.probes.core.sysbench.hist import HIST_SIZE, bucket_value_ms

CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("seq read 1M", {"memory-oper": "read", "memory-block-size": "1M"}),
    ("seq write 1M", {"memory-oper": "write", "memory-block-size": "1M"}),
]
_ROW = re.compile(r"^\s+(\d+\.\d+) \|[* ]*\s(\d+)$", re.M)


def sysbench_histogram(text: str) -> dict[int, int]:
    """Bucket index -> count from ``sysbench --histogram=on`` text."""
    out: dict[int, int] = {}
    prev = -1
    for value, count in _ROW.findall(text):
        index = next(i for i in range(prev + 1, HIST_SIZE) if f"{bucket_value_ms(i):.3f}" == value)
        out[index] = int(count)
        prev = index
    return out


def undisturbed(hist: dict[int, int]) -> tuple[float, float]:
    """(mode, mean of operations within 1.25x of the mode), in microseconds."""
    mode = max(hist, key=lambda i: hist[i])
    cut = bucket_value_ms(mode) * 1.25
    core = {i: c for i, c in hist.items() if bucket_value_ms(i) <= cut}
    mean = sum(bucket_value_ms(i) * c for i, c in core.items()) / sum(core.values())
    return bucket_value_ms(mode) * 1e3, mean * 1e3


def probetop_bin() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "probetop")
    return here if os.path.exists(here) else "probetop"


def run(tool: str, opts: dict[str, str], seconds: float) -> dict[int, int]:
    if tool == "sysbench":
        cmd = ["sysbench", "memory", f"--time={seconds:g}", "--histogram=on"]
        cmd += [f"--{k}={v}" for k, v in opts.items()] + ["run"]
    else:
        cmd = [probetop_bin(), "mem", "--headless", "--json", "--time", f"{seconds:g}"]
        for k, v in opts.items():
            cmd += [f"--{k}", v]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    if tool == "sysbench":
        return sysbench_histogram(proc.stdout)
    return {int(k): v for k, v in json.loads(proc.stdout)["histogram"].items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--time", type=float, default=2.0)
    ap.add_argument("--only", help="run only configurations whose name contains this")
    add_figures_option(ap)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("needs sysbench", file=sys.stderr)
        return 2
    print(f"loadavg at start: {os.getloadavg()}")
    print(f"{'configuration':<14} {'sysbench us':>12} {'probetop us':>12} {'ratio':>7}  (mode)")
    for name, opts in CONFIGS:
        if args.only and args.only not in name:
            continue
        means: dict[str, list[float]] = {"sysbench": [], "probetop": []}
        modes: dict[str, list[float]] = {"sysbench": [], "probetop": []}
        for r in range(args.rounds):
            for tool in ("sysbench", "probetop") if r % 2 == 0 else ("probetop", "sysbench"):
                mode, mean = undisturbed(run(tool, opts, args.time))
                modes[tool].append(mode)
                means[tool].append(mean)
        s, p = statistics.median(means["sysbench"]), statistics.median(means["probetop"])
        ms, mp = statistics.median(modes["sysbench"]), statistics.median(modes["probetop"])
        print(f"{name:<14} {s:>12.3f} {p:>12.3f} {p / s:>7.3f}  ({ms:.2f} vs {mp:.2f})", flush=True)
        report(  # no goal: it says where a gap of mem_vs_sysbench is
            name,
            "undisturbed operation latency",
            p,
            s,
            unit="us",
            reference_tool="sysbench memory",
            ratio=p / s,
            note="mean of operations within 1.25x of the histogram's mode; time ratio",
        )
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
