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

from figures import at_least, report
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


def figures(job: dict) -> tuple[float, float]:
    """(IOPS, CPU microseconds per I/O of the job's thread: fio's usr_cpu and
    sys_cpu are % of its runtime). The second holds up better on a loaded
    machine: a worker waiting for a CPU spends no CPU."""
    read = job["read"]
    cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * read["runtime"] / 1000
    return float(read["iops"]), 1e6 * cpu_s / max(1, read["total_ios"])


def probetop_iops(
    dev: str, seconds: float, engine: str, env: dict[str, str] | None
) -> tuple[float, float]:
    proc = subprocess.run(
        [*PROBETOP, "iops", dev, "--rw", "randread", "--bs", "4k", "--iodepth", "1",
         "--ioengine", engine, "--direct", "--time", str(seconds), "--json"],
        capture_output=True, text=True, env=env, cwd="/", check=True,
    )  # fmt: skip
    return figures(json.loads(proc.stdout)["jobs"][0])


def fio_iops(dev: str, seconds: float, engine: str) -> tuple[float, float]:
    proc = subprocess.run(
        ["fio", f"--filename={dev}", "--rw=randread", "--bs=4k", "--iodepth=1",
         f"--ioengine={engine}", "--direct=1", "--time_based", f"--runtime={seconds}",
         "--name=probetop", "--output-format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return figures(json.loads(proc.stdout)["jobs"][0])


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
            got: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
            names = list(runs)
            for r in range(args.rounds):
                for name in names[r % 3 :] + names[: r % 3]:
                    got[name].append(runs[name]())
                last = {n: got[n][-1] for n in names}
                line = "  ".join(f"{n} {v[0]:,.0f}/s {v[1]:.2f} us" for n, v in last.items())
                print(f"round {r + 1}: {line}", flush=True)
    print(f"{args.engine} iodepth 1, {args.rounds} rounds of {args.seconds:g} s (median ratio)")
    for k, what in ((0, "IOPS"), (1, "CPU us per I/O")):
        rounds = list(zip(got["new"], got["old"], got["fio"], strict=True))
        vs_old = statistics.median(n[k] / o[k] for n, o, _ in rounds)
        vs_fio = statistics.median(n[k] / f[k] for n, _, f in rounds)
        old_fio = statistics.median(o[k] / f[k] for _, o, f in rounds)
        print(f"  {what}: new/old {vs_old:.3f}  new/fio {vs_fio:.3f}  old/fio {old_fio:.3f}")
        if k == 0:
            case = f"{args.engine} iodepth 1, {args.rounds} rounds"
            new_iops = statistics.median(n[0] for n, _, _ in rounds)
            report(case, "IOPS vs before the deadline check", new_iops,
                   statistics.median(o[0] for _, o, _ in rounds), unit="IO/s",
                   reference_tool=f"probetop at {args.old}", ratio=vs_old,
                   goal=at_least(0.97))  # fmt: skip
            report(case, "IOPS vs fio", new_iops, statistics.median(f[0] for _, _, f in rounds),
                   unit="IO/s", reference_tool="fio", ratio=vs_fio)  # fmt: skip


if __name__ == "__main__":
    main()
