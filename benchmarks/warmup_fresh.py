#!/usr/bin/env python3
"""Does a warm-up warm a fresh volume? fio's write speed before and after, side by side.

Usage (root):  .venv/bin/python benchmarks/warmup_fresh.py [--rounds 3] [--size-mb 1024]
               [--dir /tmp]

A fresh volume here is a loop device over a new (sparse) file in --dir,
opened with direct I/O (`losetup --direct-io=on`, so no page cache of the
file sits in between; --buffered-loop to leave it on): its never-written
blocks read as zeros without being allocated, and the first write of each
pays for the filesystem's allocation, as on a fresh cloud volume (the
method in docs/warmup.md). With the buffered loop a read pass fills the
file's page cache with zero pages, which alone speeds up later writes: not
what a cloud volume does. Every round makes a new fresh device per case and
measures fio's sequential write (`--rw=write --bs=1M --iodepth=32
--ioengine=libaio --direct=1`, the article's command) on it:

- before:            nothing done first (the fresh-volume speed);
- after read only:   after `probetop warmup DEV` (a read pass: fast, and
                     it must change nothing; probetop exits 3, "not warmed");
- after probetop:    after `probetop warmup DEV --write --read`;
- after fio:         after the article's warm-up with fio (--rw=write, then
                     --rw=read).

Beside that, probetop's pass rates as a ratio to fio's for the same pass on
equally fresh devices in the same round: the write pass, the read pass after
it, and the read pass over a fresh device (where probetop also counts every
never-written block: the cost of looking must not make it slower than fio;
goal >= 1.0 for each). Who goes first alternates per round. Prints medians
and a Markdown table (docs/warmup.md).
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

from figures import add_figures_option, at_least, report
from iops_vs_fio import PROBETOP, fio_json

BUFFERED_LOOP = False  # --buffered-loop
FIO = ["--bs=1M", "--iodepth=32", "--ioengine=libaio", "--direct=1"]


@contextlib.contextmanager
def fresh_device(directory: str, size: int) -> Iterator[str]:
    """A loop device over a new sparse file in ``directory``; removed after."""
    image = os.path.join(directory, f"probetop-bench-fresh-{uuid.uuid4().hex[:8]}.img")
    with open(image, "wb") as f:
        f.truncate(size)
    dio = [] if BUFFERED_LOOP else ["--direct-io=on"]
    dev = subprocess.run(
        ["losetup", "--find", "--show", *dio, image], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        os.unlink(image)


def fio_pass(dev: str, rw: str) -> float:
    """fio's bytes/s for one full pass."""
    return float(
        fio_json([f"--name=init-{rw}", f"--filename={dev}", f"--rw={rw}", *FIO])[rw]["bw_bytes"]
    )


def probetop_warmup(dev: str, *extra: str) -> dict:
    """One `probetop warmup DEV --json` run; its document (exit 0 or 3 expected)."""
    checkpoint = f"/dev/shm/probetop-bench-{uuid.uuid4().hex[:8]}.ckpt.json"
    try:
        proc = subprocess.run(
            [*PROBETOP, "warmup", dev, "--checkpoint", checkpoint, "--json", *extra],
            capture_output=True,
            text=True,
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(checkpoint)
    if proc.returncode not in (0, 3):
        sys.exit(f"probetop warmup failed ({proc.returncode}): {proc.stderr}")
    doc = json.loads(proc.stdout)
    doc["exit"] = proc.returncode
    return doc


def pass_bw(doc: dict, name: str) -> float:
    return float(next(p["bw_bytes"] for p in doc["passes"] if p["pass"] == name))


def one_round(directory: str, size: int, fio_first: bool) -> dict[str, float]:
    out: dict[str, float] = {}

    def fresh() -> contextlib.AbstractContextManager[str]:
        return fresh_device(directory, size)

    # Fresh read pass: probetop (counting never-written blocks) vs fio.
    def ours_read() -> None:
        with fresh() as dev:
            doc = probetop_warmup(dev)
            assert doc["exit"] == 3 and doc["case"] == "fresh", doc
            out["probetop read of a fresh device"] = pass_bw(doc, "read")
            out["fio write after probetop read only"] = fio_pass(dev, "write")

    def fio_read() -> None:
        with fresh() as dev:
            out["fio read of a fresh device"] = fio_pass(dev, "read")

    def before() -> None:
        with fresh() as dev:
            out["fio write before"] = fio_pass(dev, "write")

    def ours_warm() -> None:
        with fresh() as dev:
            doc = probetop_warmup(dev, "--write", "--read", f"--yes-destroy-data={dev}")
            assert doc["verdict"] == "warmed", doc
            out["probetop write pass"] = pass_bw(doc, "write")
            out["probetop read pass after it"] = pass_bw(doc, "read")
            out["fio write after probetop warm-up"] = fio_pass(dev, "write")

    def fio_warm() -> None:
        with fresh() as dev:
            out["fio write pass"] = fio_pass(dev, "write")
            out["fio read pass after it"] = fio_pass(dev, "read")
            out["fio write after fio warm-up"] = fio_pass(dev, "write")

    steps = [(fio_read, ours_read), (before, None), (fio_warm, ours_warm)]
    for fio_step, ours_step in steps:
        order = [fio_step, ours_step] if fio_first else [ours_step, fio_step]
        for step in order:
            if step is not None:
                step()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--dir", default="/tmp", help="where the fresh devices' files live")
    parser.add_argument("--buffered-loop", action="store_true", help="losetup without direct I/O")
    add_figures_option(parser)
    args = parser.parse_args()
    global BUFFERED_LOOP
    BUFFERED_LOOP = args.buffered_loop
    if os.geteuid() != 0:
        sys.exit("needs root: it creates loop devices")
    if shutil.which("fio") is None:
        sys.exit("needs fio (apt-get install fio)")
    size = args.size_mb << 20
    rounds = []
    for rnd in range(args.rounds):
        figures = one_round(args.dir, size, fio_first=rnd % 2 == 0)
        rounds.append(figures)
        print(
            f"round {rnd + 1}: " + ", ".join(f"{k} {v / 1e6:,.0f} MB/s" for k, v in figures.items())
        )
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratio = {
        "write pass": statistics.median(
            r["probetop write pass"] / r["fio write pass"] for r in rounds
        ),
        "read pass after the write": statistics.median(
            r["probetop read pass after it"] / r["fio read pass after it"] for r in rounds
        ),
        "read pass of a fresh device": statistics.median(
            r["probetop read of a fresh device"] / r["fio read of a fresh device"] for r in rounds
        ),
    }
    print(
        f"\nfresh loop devices over {args.dir}, {args.size_mb} MiB, "
        f"medians over {args.rounds} rounds"
    )
    print("\n| fio --rw=write on a fresh device | MB/s |\n|---|---|")
    for key in (
        "fio write before",
        "fio write after probetop read only",
        "fio write after probetop warm-up",
        "fio write after fio warm-up",
    ):
        print(f"| {key.removeprefix('fio write ')} | {med[key] / 1e6:,.0f} |")
    print("\n| pass (same round, equally fresh devices) | fio MB/s | probetop MB/s | ratio |")
    print("|---|---|---|---|")
    pairs = {
        "write pass": ("fio write pass", "probetop write pass"),
        "read pass after the write": ("fio read pass after it", "probetop read pass after it"),
        "read pass of a fresh device": (
            "fio read of a fresh device",
            "probetop read of a fresh device",
        ),
    }
    for label, (f, o) in pairs.items():
        print(f"| {label} | {med[f] / 1e6:,.0f} | {med[o] / 1e6:,.0f} | {ratio[label]:.2f} |")
        report(
            f"{label}, fresh loop device ({args.size_mb} MiB)",
            "pass rate",
            med[o] / 1e6,
            med[f] / 1e6,
            unit="MB/s",
            reference_tool="fio",
            ratio=ratio[label],
            goal=at_least(1.0),
        )
    before = med["fio write before"]
    for key in (
        "fio write after probetop warm-up",
        "fio write after fio warm-up",
        "fio write after probetop read only",
    ):
        report(
            f"fio --rw=write on a fresh device, {key.removeprefix('fio write ')}",
            "fio's write rate",
            med[key] / 1e6,
            before / 1e6,
            unit="MB/s",
            reference_tool="fio's write before any pass",
            note="fio in the probetop column: the effect of each pass",
        )
    sys.exit(0 if all(v >= 1.0 for v in ratio.values()) else 1)


if __name__ == "__main__":
    main()
