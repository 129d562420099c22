#!/usr/bin/env python3
"""probetop mem vs sysbench memory, side by side in one run: the ratios.

For each configuration (seq write 1K, seq read 1K, rnd write 1K, seq write
1M, seq write 1K with 2 threads, ...) it runs ``sysbench memory ... run`` and
``probetop mem ... --headless`` alternately (ABBA order, so a drift in the
machine's load hits both alike), --rounds pairs each, --time seconds per run,
reads both reports with the same parser (``probetop.probes.mem.parse_report``)
and prints the median of the paired ratios probetop / sysbench for
operations/s and MiB/s (the issue's target: 0.97-1.03), with their spread.

On a shared, loaded machine the absolute figures swing run to run; only the
paired ratios mean anything, and their spread says how much.

Usage: .venv/bin/python benchmarks/mem_vs_sysbench.py [--time 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

from figures import add_figures_option, between, report
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


def run(tool: str, opts: dict[str, str], seconds: float) -> dict[str, float]:
    if tool == "sysbench":
        cmd = ["sysbench", "memory", f"--time={seconds:g}"]
        cmd += [f"--{k}={v}" for k, v in opts.items()]
        cmd.append("run")
    else:
        cmd = [probetop_bin(), "mem", "--headless", "--time", f"{seconds:g}"]
        for k, v in opts.items():
            cmd += [f"--{k}", v]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 60)
    doc = parse_report(out.stdout)
    return {"ops": float(doc["ops_per_second"]), "mibs": float(doc["mib_per_second"] or 0.0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="run only configurations whose name contains this")
    add_figures_option(ap)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("sysbench is not installed", file=sys.stderr)
        return 2
    print(f"loadavg: {os.getloadavg()}  (ratios are paired, ABBA)")
    head = f"{'configuration':<24} {'ops ratio':>10} {'MiB/s ratio':>12} {'spread':>16}"
    print(f"{head}  sysbench ops/s")
    for name, opts in CONFIGS:
        if args.only and args.only not in name:
            continue
        ratios: list[float] = []
        mib_ratios: list[float] = []
        sb_ops: list[float] = []
        pt_ops: list[float] = []
        for r in range(args.rounds):
            order = ("sysbench", "probetop") if r % 2 == 0 else ("probetop", "sysbench")
            got = {tool: run(tool, opts, args.time) for tool in order}
            ratios.append(got["probetop"]["ops"] / got["sysbench"]["ops"])
            mib_ratios.append(got["probetop"]["mibs"] / got["sysbench"]["mibs"])
            sb_ops.append(got["sysbench"]["ops"])
            pt_ops.append(got["probetop"]["ops"])
        print(
            f"{name:<24} {statistics.median(ratios):>10.3f} {statistics.median(mib_ratios):>12.3f}"
            f" {min(ratios):>7.3f}..{max(ratios):<7.3f}  {statistics.median(sb_ops):,.0f}",
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
            note=f"MiB/s ratio {statistics.median(mib_ratios):.3f}; "
            f"rounds {min(ratios):.3f}-{max(ratios):.3f}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
