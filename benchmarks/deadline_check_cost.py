#!/usr/bin/env python3
"""What the loops' deadline check costs: probetop now vs probetop before it, and fio.

Usage (root):  .venv/bin/python benchmarks/deadline_check_cost.py [--rounds 7]
               [--seconds 3] [--old 5ef4c96^] [--engine psync]

The native loops look at the run's deadline (``K_DEADLINE``: one compare per
I/O in the sync loop, per submitting call in the asynchronous ones) since
commit 5ef4c96. This runs ``iops --time S`` at iodepth 1 (4k random reads,
O_DIRECT) on a loop device over /dev/shm with this tree's probetop, with the
probetop of ``--old`` (its probes/, tui/ and themes/ taken with git archive,
imported through PYTHONPATH with this venv's packages) and with fio, in
rounds whose order rotates, so all three see the same load. It prints the
median over rounds of new/old and new/fio IOPS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iops_vs_fio import shm_loop_device

ROOT = Path(__file__).resolve().parent.parent
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def old_tree(commit: str, into: Path) -> dict[str, str]:
    """The environment that imports probetop from ``commit``."""
    tree, src = into / "tree", into / "src" / "probetop"
    tree.mkdir()
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "probes", "tui", "themes"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for name in ("probes", "tui", "themes"):
        (src / name).symlink_to(tree / name)
    return dict(os.environ, PYTHONPATH=str(into / "src"))


def probetop_iops(dev: str, seconds: float, engine: str, env: dict[str, str] | None) -> float:
    proc = subprocess.run(
        [*PROBETOP, "iops", dev, "--rw", "randread", "--bs", "4k", "--iodepth", "1",
         "--ioengine", engine, "--direct", "--time", str(seconds), "--json"],
        capture_output=True, text=True, env=env, cwd="/", check=True,
    )  # fmt: skip
    return float(json.loads(proc.stdout)["jobs"][0]["read"]["iops"])


def fio_iops(dev: str, seconds: float, engine: str) -> float:
    proc = subprocess.run(
        ["fio", f"--filename={dev}", "--rw=randread", "--bs=4k", "--iodepth=1",
         f"--ioengine={engine}", "--direct=1", "--time_based", f"--runtime={seconds}",
         "--name=probetop", "--output-format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(proc.stdout)["jobs"][0]["read"]["iops"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--old", default="5ef4c96^", help="the commit before the deadline check")
    ap.add_argument("--engine", default="psync", choices=["psync", "libaio", "io_uring"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="probetop-bench-old-") as tmp:
        old_env = old_tree(args.old, Path(tmp))
        with shm_loop_device(256 << 20) as dev:
            runs = {
                "new": lambda: probetop_iops(dev, args.seconds, args.engine, None),
                "old": lambda: probetop_iops(dev, args.seconds, args.engine, old_env),
                "fio": lambda: fio_iops(dev, args.seconds, args.engine),
            }
            for run in runs.values():  # compile and cache the loops before any timing
                run()
            got: dict[str, list[float]] = {name: [] for name in runs}
            names = list(runs)
            for r in range(args.rounds):
                for name in names[r % 3 :] + names[: r % 3]:
                    got[name].append(runs[name]())
                new, old, fio = (got[n][-1] for n in names)
                print(
                    f"round {r + 1}: new {new:,.0f}  old {old:,.0f}  fio {fio:,.0f} IOPS",
                    flush=True,
                )
    per_round = list(zip(got["new"], got["old"], got["fio"], strict=True))
    vs_old = statistics.median(n / o for n, o, _ in per_round)
    vs_fio = statistics.median(n / f for n, _, f in per_round)
    old_fio = statistics.median(o / f for _, o, f in per_round)
    print(f"{args.engine} iodepth 1, {args.rounds} rounds of {args.seconds:g} s (median ratio)")
    print(f"  new / old (deadline check's cost): {vs_old:.3f}")
    print(f"  new / fio: {vs_fio:.3f}   old / fio: {old_fio:.3f}")


if __name__ == "__main__":
    main()
