#!/usr/bin/env python3
"""The EFS/NFS method, probetop and fio side by side: 1-byte O_DIRECT + O_SYNC
writes at offset 0, 1 writer against 20, one file each (or, with --files N,
the same N files spread over the writers: fio's --nrfiles N/writers).

Usage:  .venv/bin/python benchmarks/efs_method.py [DIR] [--rounds 2] [--seconds 3]
        [--writers 1,20] [--files 40]

DIR is where each run makes its files (an NFS mount to measure NFS; default
a fresh directory on /dev/shm: tmpfs takes 1-byte O_DIRECT as NFS does). Each
round runs probetop, then the fio command it prints (``fio_command``), in
fresh empty directories under DIR, alternating who goes first; both JSON
documents are read with the same reader (fio's layout). Prints IOPS and clat
p50 per run, and per writer count the median probetop / fio IOPS and the
20-vs-1 scaling of each tool. On NFS, also the client's WRITE ops/s, avg RTT
and avg exe (ms) over probetop's run (its summary's ``nfs``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

from figures import add_figures_option, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def run_probetop(directory: str, writers: int, seconds: float, nrfiles: int = 1) -> dict:
    """One run: ``writers`` jobs, each writing byte 0 of its ``nrfiles`` 1-byte
    files in turn (fio's roundrobin: the next file after each write). Several
    files: randwrite (offset 0 all the same), because fio closes and reopens
    each of several files at the end of each sequential pass (io_u.c), which
    for a 1-byte file is an open and a close per write: fio would measure those."""
    rw = "randwrite" if nrfiles > 1 else "write"
    proc = subprocess.run(
        [*PROBETOP, "iops", directory, "--jobs", str(writers), "--nrfiles", str(nrfiles),
         "--size", str(nrfiles), "--rw", rw, "--bs", "1", "--direct", "--sync",
         "--time", f"{seconds:g}", "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"probetop failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def run_fio(command: str) -> dict:
    proc = subprocess.run(
        [*shlex.split(command), "--output-format=json"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"fio failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout[proc.stdout.index("{") :])


def figures(doc: dict) -> tuple[float, int]:
    write = doc["jobs"][0]["write"]
    return float(write["iops"]), int(write["clat_ns"].get("percentile", {}).get("50.000000", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", help="where the files go (default: /dev/shm)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--writers", default="1,20")
    parser.add_argument(
        "--files",
        type=int,
        default=0,
        help="the same N files at every writer count (each writer: N/writers of them, "
        "fio's --nrfiles); default: one file per writer",
    )
    add_figures_option(parser)
    args = parser.parse_args()
    if shutil.which("fio") is None:
        sys.exit("needs fio (apt-get install fio)")
    base = args.dir or tempfile.mkdtemp(prefix="probetop-efs-", dir="/dev/shm")
    writers = [int(w) for w in args.writers.split(",")]
    if args.files and any(args.files % n for n in writers):
        sys.exit(f"--files {args.files} must be a multiple of every writer count ({args.writers})")
    nrfiles = {n: args.files // n if args.files else 1 for n in writers}
    got: dict[tuple[str, int], list[float]] = {}
    print(f"{base}: {args.seconds:g} s per run, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    try:
        for rnd in range(args.rounds):
            for n in writers:
                work = tempfile.mkdtemp(prefix="efs-", dir=base)
                try:
                    order = ["probetop", "fio"] if rnd % 2 == 0 else ["fio", "probetop"]
                    docs: dict[str, dict] = {}
                    # fio's command is probetop's, so probetop runs once first to print it
                    ours = run_probetop(work, n, args.seconds, nrfiles[n])
                    command = ours["probetop"]["fio_command"]
                    for who in order:
                        for name in os.listdir(work):
                            os.unlink(os.path.join(work, name))
                        docs[who] = (
                            run_probetop(work, n, args.seconds, nrfiles[n]) if who == "probetop"
                            else run_fio(command)
                        )  # fmt: skip
                    line = f"  round {rnd + 1} {n:>3} writers x {nrfiles[n]:>2} files"
                    for who in ("probetop", "fio"):
                        iops, p50 = figures(docs[who])
                        got.setdefault((who, n), []).append(iops)
                        line += f"  {who} {iops:>11,.0f} IOPS p50 {p50:>8,} ns"
                    nfs = docs["probetop"]["probetop"].get("nfs")
                    if nfs and "WRITE" in nfs["ops"]:
                        w = nfs["ops"]["WRITE"]
                        line += (f"  NFS WRITE {w['ops_per_s']:,.0f}/s RTT {w['avg_rtt_ms']:.3f}"
                                 f" ms exe {w['avg_exe_ms']:.3f} ms")  # fmt: skip
                    print(line)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print("\nmedians:")
    for n in writers:
        ours, fio = (statistics.median(got[(w, n)]) for w in ("probetop", "fio"))
        print(f"  {n:>3} writers  probetop {ours:>11,.0f}  fio {fio:>11,.0f}  "
              f"probetop / fio {ours / fio:.2f}")  # fmt: skip
        files = f", {nrfiles[n]} files each" if args.files else ""
        report(
            f"{n} writer(s){files}, files on {'/dev/shm' if args.dir is None else args.dir}",
            "IOPS",
            ours,
            fio,
            unit="IOPS",
            reference_tool="fio, the same job",
        )
    if len(writers) >= 2:
        lo, hi = writers[0], writers[-1]
        for who in ("probetop", "fio"):
            scale = statistics.median(got[(who, hi)]) / statistics.median(got[(who, lo)])
            print(f"  {who:<8} {hi} vs {lo} writers: {scale:.2f}x")


if __name__ == "__main__":
    main()
