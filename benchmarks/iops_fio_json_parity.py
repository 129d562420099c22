#!/usr/bin/env python3
"""probetop iops --json vs fio --output-format=json: the same job, the same run.

Usage:  .venv/bin/python benchmarks/iops_fio_json_parity.py [--rounds 3] [--seconds 3]

As root the target is a loop device over a file in /dev/shm (O_DIRECT, as
fio's and probetop's defaults); otherwise a file on /dev/shm with buffered
I/O (tmpfs has no O_DIRECT). Each round runs fio and probetop on the same
target with the same job, alternating who goes first, and checks both
direction blocks against fio's JSON contract (probes/disk/fio_parity.py:
field names, JSON types, units). It prints probetop / fio per field
(``read.iops``, ``read.bw_bytes``, the means of ``read.slat_ns``,
``read.clat_ns`` and ``read.lat_ns``, ``read.clat_ns.percentile.P``, and
the write equivalents; psync has no slat) per round and the
median over rounds. Exit 1 if a block breaks the contract; the ratios are
reported, not judged (the machine may be shared).
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
from collections.abc import Iterator

from figures import add_figures_option, report
from probetop.probes.disk.fio_parity import compared_paths, ratios, shape_problems

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
JOBS = [  # (label, rw, jobs, iodepth, ioengine)
    ("4k randread psync", "randread", 1, 1, "psync"),
    ("4k randwrite psync", "randwrite", 1, 1, "psync"),
    ("4k randrw psync", "randrw", 1, 1, "psync"),
    # Asynchronous engines: slat, clat and lat each mean what fio's do.
    ("4k randread libaio iodepth 1", "randread", 1, 1, "libaio"),
    ("4k randread io_uring iodepth 1", "randread", 1, 1, "io_uring"),
    ("4k randread libaio iodepth 32", "randread", 1, 32, "libaio"),
    ("4k randread io_uring iodepth 32", "randread", 1, 32, "io_uring"),
]


# The fields docs/figures.md shows (every compared field is printed).
FIGURE_PATHS = ("iops", "lat_ns.mean")


@contextlib.contextmanager
def target(size: int) -> Iterator[tuple[str, bool]]:
    """(path, direct): a loop device over /dev/shm as root, else a tmpfs file."""
    image = f"/dev/shm/probetop-parity-{uuid.uuid4().hex[:8]}.img"
    with open(image, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)
    try:
        if os.geteuid() != 0:
            yield image, False
            return
        dev = subprocess.run(
            ["losetup", "--find", "--show", image], check=True, capture_output=True, text=True
        ).stdout.strip()
        try:
            yield dev, True
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    finally:
        os.unlink(image)


def run_fio(
    path: str, rw: str, jobs: int, depth: int, engine: str, seconds: float, direct: bool
) -> dict:
    args = [
        "fio", "--name=parity", f"--filename={path}", f"--rw={rw}", "--bs=4k",
        f"--ioengine={engine}", f"--iodepth={depth}",
        f"--numjobs={jobs}", f"--direct={int(direct)}", "--time_based",
        f"--runtime={seconds:g}", "--group_reporting", "--output-format=json",
    ]  # fmt: skip
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{") :])["jobs"][0]


def run_probetop(
    path: str, rw: str, jobs: int, depth: int, engine: str, seconds: float, direct: bool
) -> dict:
    args = [
        "iops", path, "--rw", rw, "--bs", "4k", "--jobs", str(jobs), "--iodepth", str(depth),
        "--ioengine", engine,
        "--time", f"{seconds:g}", "--direct" if direct else "--buffered",
        *([f"--yes-destroy-data={path}"] if "write" in rw or "rw" in rw else []), "--json",
    ]  # fmt: skip
    proc = subprocess.run(PROBETOP + args, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"probetop failed: {proc.stderr}")
    return json.loads(proc.stdout)["jobs"][0]  # --json: the document fio writes


def directions(rw: str) -> list[str]:
    if rw in ("read", "randread"):
        return ["read"]
    if rw in ("write", "randwrite"):
        return ["write"]
    return ["read", "write"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size-mb", type=int, default=256)
    add_figures_option(parser)
    args = parser.parse_args()
    if shutil.which("fio") is None:
        sys.exit("needs fio (apt-get install fio)")
    broken = False
    medians: dict[str, dict[str, list[float]]] = {label: {} for label, *_ in JOBS}
    with target(args.size_mb << 20) as (path, direct):
        print(f"target {path} ({'O_DIRECT' if direct else 'buffered, tmpfs'}), "
              f"{args.seconds:g} s per run, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
        for rnd in range(args.rounds):
            for label, rw, jobs, depth, engine in JOBS:
                job = (path, rw, jobs, depth, engine, args.seconds, direct)
                if rnd % 2 == 0:
                    fio, ours = run_fio(*job), run_probetop(*job)
                else:
                    ours = run_probetop(*job)
                    fio = run_fio(*job)
                for d in directions(rw):
                    for who, block in (("fio", fio[d]), ("probetop", ours[d])):
                        problems = shape_problems(block)
                        if problems:
                            broken = True
                            print(f"  {label} {d}: {who} breaks the contract: {problems}")
                    for path_, r in ratios(fio[d], ours[d]).items():
                        if r is not None:
                            medians[label].setdefault(f"{d}.{path_}", []).append(r)
            print(f"  round {rnd + 1} done")
    print("\nmedian probetop / fio per field:")
    for label, fields in medians.items():
        print(f"  {label}")
        for d in ("read", "write"):
            for p in compared_paths():
                values = fields.get(f"{d}.{p}")
                if values:
                    spread = f"{min(values):.2f}-{max(values):.2f}"
                    print(f"    {d}.{p:<32} {statistics.median(values):5.2f}  (rounds {spread})")
                    if p in FIGURE_PATHS:
                        report(
                            label,
                            f"{d}.{p}",
                            None,
                            ratio=statistics.median(values),
                            reference_tool="fio, the same job",
                            note=f"rounds {spread}",
                        )
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
