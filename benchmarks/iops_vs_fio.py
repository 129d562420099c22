#!/usr/bin/env python3
"""probetop iops vs fio, side by side in one run, on a loop device over /dev/shm.

Usage (root):  .venv/bin/python benchmarks/iops_vs_fio.py [--rounds 3] [--seconds 5]
               [--cpus-allowed CPU]

Jobs (4k random reads, O_DIRECT): 1 job psync, 4 jobs psync, 1 job iodepth 8
and 32 (fio libaio; probetop's kernel AIO). Each round runs fio then probetop
on the same device with the same parameters (who goes first alternates), so
both see the same machine load; the printed ratio is the median over rounds
of probetop IOPS / fio IOPS. Targets (issue 6): >= 0.9 at 1 and 4 jobs, >= 0.8
at iodepth 8 and 32.

``--cpus-allowed CPU`` adds, in the same rounds, each job pinned with the
tools' own option (fio ``--cpus_allowed=CPU``, probetop ``--cpus-allowed
CPU``: the I/O threads only) and prints unpinned and pinned side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

from figures import add_figures_option, at_least, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
CASES = [  # (label, jobs, iodepth, target ratio)
    ("4k randread psync 1 job", 1, 1, 0.9),
    ("4k randread psync 4 jobs", 4, 1, 0.9),
    ("4k randread iodepth 8", 1, 8, 0.8),
    ("4k randread iodepth 32", 1, 32, 0.8),
]


@contextlib.contextmanager
def shm_loop_device(size: int) -> Iterator[str]:
    """Yield /dev/loopN over a /dev/shm file of ``size`` bytes filled with data."""
    if os.geteuid() != 0:
        sys.exit("needs root: it creates a loop device over a file in /dev/shm")
    if shutil.which("fio") is None:
        sys.exit("needs fio (apt-get install fio)")
    image = f"/dev/shm/probetop-bench-{uuid.uuid4().hex[:8]}.img"
    with open(image, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)
    dev = subprocess.run(
        ["losetup", "--find", "--show", image], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        os.unlink(image)


def fio_json(args: list[str], preexec_fn: Callable[[], None] | None = None) -> dict:
    out = subprocess.run(
        ["fio", *args, "--output-format=json"],
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=preexec_fn,
    ).stdout
    return json.loads(out[out.index("{") :])["jobs"][0]


def probetop_json(args: list[str]) -> dict:
    proc = subprocess.run(PROBETOP + args + ["--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"probetop failed: {proc.stderr}")
    return json.loads(proc.stdout)["jobs"][0]  # --json: the document fio writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument(
        "--cpus-allowed", type=int, help="also run every job pinned to this CPU (both tools)"
    )
    add_figures_option(parser)
    args = parser.parse_args()
    modes = ["unpinned"] + (["pinned"] if args.cpus_allowed is not None else [])
    results: dict[tuple[str, str], list[tuple[float, float]]] = {
        (c[0], m): [] for c in CASES for m in modes
    }
    with shm_loop_device(args.size_mb << 20) as dev:
        print(f"device {dev} over /dev/shm, {args.size_mb} MiB, {args.seconds:g} s per run, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")  # fmt: skip
        for rnd in range(args.rounds):
            for label, jobs, depth, _target in CASES:
                for mode in modes:
                    engine = "libaio" if depth > 1 else "psync"
                    fio_args = [
                        "--name=bench", f"--filename={dev}", "--rw=randread", "--bs=4k",
                        "--direct=1", f"--ioengine={engine}", f"--iodepth={depth}",
                        f"--numjobs={jobs}", "--time_based", f"--runtime={args.seconds:g}",
                        "--group_reporting",
                    ]  # fmt: skip
                    our_args = [
                        "iops", dev, "--rw", "randread", "--bs", "4k", "--jobs", str(jobs),
                        "--iodepth", str(depth), "--ioengine", engine,
                        "--time", f"{args.seconds:g}",
                    ]  # fmt: skip
                    if mode == "pinned":
                        fio_args.append(f"--cpus_allowed={args.cpus_allowed}")
                        our_args += ["--cpus-allowed", str(args.cpus_allowed)]
                    # Alternate who goes first, so neither always inherits the other's state.
                    if rnd % 2 == 0:
                        fio = fio_json(fio_args)["read"]["iops"]
                        ours = probetop_json(our_args)["read"]["iops"]
                    else:
                        ours = probetop_json(our_args)["read"]["iops"]
                        fio = fio_json(fio_args)["read"]["iops"]
                    results[(label, mode)].append((fio, ours))
                    print(f"  round {rnd + 1} {label:<26} {mode:<8} fio {fio:>10,.0f}  "
                          f"probetop {ours:>10,.0f}  ratio {ours / fio:.2f}")  # fmt: skip
    print("\nmedian over rounds (probetop / fio IOPS):")
    failed = False
    head = f"  {'job':<26}" + "".join(
        f" {m + ' fio':>14} {'probetop':>10} {'ratio':>6}" for m in modes
    )
    print(head)
    for label, _jobs, _depth, target in CASES:
        line = f"  {label:<26}"
        for mode in modes:
            pairs = results[(label, mode)]
            med = statistics.median(o / f for f, o in pairs)
            if mode == "unpinned":
                failed |= med < target
            report(
                f"{label}, loop device"
                + (f", pinned to CPU {args.cpus_allowed}" if mode == "pinned" else ""),
                "IOPS",
                statistics.median(o for _, o in pairs),
                statistics.median(f for f, _ in pairs),
                unit="IOPS",
                reference_tool="fio",
                ratio=med,
                goal=at_least(target) if mode == "unpinned" else None,
            )
            line += (
                f" {statistics.median(f for f, _ in pairs):>14,.0f}"
                f" {statistics.median(o for _, o in pairs):>10,.0f} {med:>6.2f}"
            )
        print(line + f"  (target >= {target} unpinned)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
