#!/usr/bin/env python3
"""probetop iops vs fio per I/O engine and queue depth, side by side in one run.

Usage (root):  .venv/bin/python benchmarks/ioengines_vs_fio.py [--rounds 1] [--seconds 3]
               [--engines libaio,io_uring] [--depths 1,8,32,128]
               [--workloads randread,randwrite,read,write] [--targets loop,file]
               [--pin CPU]

For every target x workload x engine x depth, fio and probetop run the same
job (same device or file, same engine name, O_DIRECT, 1 job, time-based);
who goes first alternates per round so both see the same machine state. The
ratio is probetop IOPS / fio IOPS, median over rounds. Targets: ``loop`` is a
loop device over a /dev/shm file (filled with random data, so probetop's
data-signature check lets it write); ``file`` is a regular file on /dev/shm
(tmpfs takes O_DIRECT since Linux 6.6). Workloads: 4k randread, 4k randwrite,
1M sequential read and write. Prints a Markdown table (docs/iops.md).

``--pin CPU`` runs both tools' whole process on that one CPU. On a small VM
the scheduler's placement of the submitting thread against the loop
device's worker moves depth-1 results by 20-40 % from run to run; pinned,
both tools get the same placement and the ratio is the engines' own.

``--control`` also runs fio a second time in each round (the three runs in
rotating order) and prints fio / fio beside probetop / fio: the spread one
tool has against itself on this machine at this load, so a probetop ratio
inside it is placement and load, not the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from figures import add_figures_option, at_least, report
from iops_vs_fio import PROBETOP, fio_json, shm_loop_device

WORKLOADS = {  # name: (fio --rw, block size)
    "randread": ("randread", "4k"),
    "randwrite": ("randwrite", "4k"),
    "read": ("read", "1M"),
    "write": ("write", "1M"),
}


PIN: set[int] | None = None  # --pin: the CPU both tools run on


def _pinned() -> None:
    if PIN is not None:
        os.sched_setaffinity(0, PIN)


def probetop_iops(args: list[str]) -> float:
    proc = subprocess.run(
        PROBETOP + args + ["--json"], capture_output=True, text=True, preexec_fn=_pinned
    )
    if proc.returncode != 0:
        sys.exit(f"probetop failed ({' '.join(args)}): {proc.stderr.strip()}")
    out = json.loads(proc.stdout)["jobs"][0]  # --json: the document fio writes
    return float(out.get("read", {}).get("iops", 0) or 0) + float(
        out.get("write", {}).get("iops", 0) or 0
    )


def fio_iops(args: list[str]) -> float:
    job = fio_json(args, preexec_fn=_pinned)
    return float(job["read"]["iops"]) + float(job["write"]["iops"])


def _spread(ratios: list[float]) -> str:
    """Each round's ratio, then the median and the middle half's range."""
    each = " ".join(f"{r:.2f}" for r in ratios)
    if len(ratios) < 4:
        return f"{each}  median {statistics.median(ratios):.2f}"
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return f"{each}  median {q2:.2f} (middle half {q1:.2f}-{q3:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--engines", default="libaio,io_uring")
    parser.add_argument("--depths", default="1,8,32,128")
    parser.add_argument("--workloads", default="randread,randwrite,read,write")
    parser.add_argument("--targets", default="loop,file")
    parser.add_argument("--pin", type=int, help="run both tools on this one CPU")
    parser.add_argument(
        "--control", action="store_true", help="also fio against fio: the noise floor"
    )
    add_figures_option(parser)
    args = parser.parse_args()
    global PIN
    PIN = None if args.pin is None else {args.pin}
    engines = args.engines.split(",")
    depths = [int(d) for d in args.depths.split(",")]
    workloads = args.workloads.split(",")
    targets = args.targets.split(",")
    rows: list[tuple[str, str, str, int, float, float, float]] = []
    with shm_loop_device(args.size_mb << 20) as dev:
        image = f"/dev/shm/probetop-bench-file-{uuid.uuid4().hex[:8]}.img"
        with open(image, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(args.size_mb):
                f.write(block)
        try:
            paths = {"loop": dev, "file": image}
            print(
                f"loop device {dev}, file {image}, {args.size_mb} MiB, {args.seconds:g} s per run"
                + ("" if PIN is None else f", both tools pinned to CPU {args.pin}")
            )
            for target in targets:
                path = paths[target]
                for workload in workloads:
                    rw, bs = WORKLOADS[workload]
                    for engine in engines:
                        for depth in depths:
                            ratios, fios, ours, controls = [], [], [], []
                            for rnd in range(args.rounds):
                                fio_args = [
                                    "--name=bench", f"--filename={path}", f"--rw={rw}",
                                    f"--bs={bs}", "--direct=1", f"--ioengine={engine}",
                                    f"--iodepth={depth}", "--numjobs=1", "--time_based",
                                    f"--runtime={args.seconds:g}", f"--size={args.size_mb}M",
                                ]  # fmt: skip
                                our_args = [
                                    "iops", path, "--rw", rw, "--bs", bs, "--direct",
                                    "--ioengine", engine, "--iodepth", str(depth),
                                    "--time", f"{args.seconds:g}",
                                ]  # fmt: skip
                                if "write" in rw and target == "loop":
                                    our_args.append(f"--yes-destroy-data={path}")
                                if args.control:
                                    # fio, probetop, fio again: rotated per round
                                    runs: dict[str, float] = {}
                                    order = ["fio", "probetop", "fio2"]
                                    for who in order[rnd % 3 :] + order[: rnd % 3]:
                                        runs[who] = (
                                            probetop_iops(our_args)
                                            if who == "probetop"
                                            else fio_iops(fio_args)
                                        )
                                    f_iops, o_iops = runs["fio"], runs["probetop"]
                                    controls.append(runs["fio2"] / f_iops if f_iops else 0.0)
                                elif rnd % 2 == 0:
                                    f_iops = fio_iops(fio_args)
                                    o_iops = probetop_iops(our_args)
                                else:
                                    o_iops = probetop_iops(our_args)
                                    f_iops = fio_iops(fio_args)
                                fios.append(f_iops)
                                ours.append(o_iops)
                                ratios.append(o_iops / f_iops if f_iops else 0.0)
                            row = (
                                target, workload, engine, depth,
                                statistics.median(fios), statistics.median(ours),
                                statistics.median(ratios),
                            )  # fmt: skip
                            rows.append(row)
                            report(
                                f"{target}, {bs} {rw}, {engine}, iodepth {depth}"
                                + ("" if PIN is None else ", pinned"),
                                "IOPS",
                                row[5],
                                row[4],
                                unit="IOPS",
                                reference_tool="fio",
                                ratio=row[6],
                                goal=at_least(1.0),
                            )
                            print(
                                f"  {target:<4} {workload:<9} {engine:<8} depth {depth:>3}: fio "
                                f"{row[4]:>10,.0f}  probetop {row[5]:>10,.0f}  ratio {row[6]:.2f}",
                                flush=True,
                            )
                            if controls:
                                print(
                                    f"    probetop/fio per round {_spread(ratios)}\n"
                                    f"    fio/fio      per round {_spread(controls)}",
                                    flush=True,
                                )
        finally:
            os.unlink(image)
    print("\n| target | workload | engine | iodepth | fio IOPS | probetop IOPS | ratio |")
    print("|---|---|---|---|---|---|---|")
    for target, workload, engine, depth, f_iops, o_iops, ratio in rows:
        rw, bs = WORKLOADS[workload]
        print(
            f"| {target} | {bs} {rw} | {engine} | {depth} | {f_iops:,.0f} | {o_iops:,.0f} "
            f"| {ratio:.2f} |"
        )
    below = [r for r in rows if r[6] < 1.0]
    print(f"\n{len(rows) - len(below)} of {len(rows)} cases at or above 1.0 x fio")


if __name__ == "__main__":
    main()
