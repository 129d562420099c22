#!/usr/bin/env python3
"""probetop warmup vs fio: full read and write passes, side by side in one run.

Usage (root):  .venv/bin/python benchmarks/warmup_vs_fio.py [--rounds 3] [--size-mb 2048]
               [--ioengines libaio,io_uring] [--depths 32] [--bs 1M] [--targets loop]

Each round runs, on the same loop device over /dev/shm (and/or a regular
file on /dev/shm: --targets), fio's volume initialization command
(`--bs=1M --iodepth=32 --ioengine=libaio --direct=1`, `--rw=read` then
`--rw=write`) and `probetop warmup` (read pass, then write pass) with the
same block size and queue depth, and compares bytes/s as each
tool reports it (fio bw_bytes; probetop bw_bytes = bytes / I/O time).
Both tools run each engine of --ioengines (fio's names; probetop --ioengine)
at each queue depth of --depths. Targets: each pass >= 0.95 x fio (issue 6),
>= 1.0 x per engine and depth (issue 15). Prints the median ratio per engine,
depth and pass, and a Markdown table (docs/warmup.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator

from figures import add_figures_option, at_least, report
from iops_vs_fio import PROBETOP, fio_json, shm_loop_device


@contextlib.contextmanager
def filled_file(path: str, size_mb: int) -> Iterator[None]:
    """A regular file of ``size_mb`` MiB of random data (the file target), removed after."""
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(block)
    try:
        yield
    finally:
        os.unlink(path)


def warmup_json(args: list[str]) -> dict:
    """`probetop warmup ... --json`: its own document (not fio's jobs[0])."""
    proc = subprocess.run([*PROBETOP, *args, "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"probetop failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size-mb", type=int, default=2048)
    parser.add_argument("--ioengines", default="libaio,io_uring")
    parser.add_argument("--depths", default="32")
    parser.add_argument("--bs", default="1M")
    parser.add_argument("--targets", default="loop", help="loop, file or both (loop,file)")
    add_figures_option(parser)
    args = parser.parse_args()
    engines = args.ioengines.split(",")
    depths = [int(d) for d in args.depths.split(",")]
    targets = args.targets.split(",")
    results: dict[tuple[str, str, int, str], list[tuple[float, float]]] = {
        (t, e, d, rw): []
        for t in targets
        for e in engines
        for d in depths
        for rw in ("read", "write")
    }
    image = f"/dev/shm/probetop-bench-file-{os.getpid()}.img"
    with shm_loop_device(args.size_mb << 20) as dev, filled_file(image, args.size_mb):
        paths = {"loop": dev, "file": image}
        checkpoint = f"/dev/shm/probetop-bench-{os.getpid()}.ckpt.json"
        print(f"device {dev} over /dev/shm and file {image}, {args.size_mb} MiB per pass")
        for rnd in range(args.rounds):
            for target, engine, depth, rw in results:
                path = paths[target]
                extra = ["--write", f"--yes-destroy-data={path}"] if rw == "write" else []

                def run_fio(
                    rw: str = rw, engine: str = engine, depth: int = depth, path: str = path
                ) -> float:
                    return fio_json(
                        [f"--name=init-{rw}", f"--filename={path}", f"--rw={rw}", f"--bs={args.bs}",
                         f"--iodepth={depth}", f"--ioengine={engine}", "--direct=1"]
                    )[rw]["bw_bytes"]  # fmt: skip

                def run_ours(
                    rw: str = rw,
                    extra: list[str] = extra,
                    engine: str = engine,
                    depth: int = depth,
                    path: str = path,
                ) -> float:
                    doc = warmup_json(
                        ["warmup", path, *extra, "--bs", args.bs, "--iodepth", str(depth),
                         "--ioengine", engine, "--checkpoint", checkpoint]
                    )  # fmt: skip
                    os.unlink(checkpoint)
                    if not doc["complete"]:
                        sys.exit(f"probetop {rw} pass did not complete: {doc}")
                    return float(doc["bw_bytes"])

                # Alternate who goes first, so neither always inherits the other's state.
                if rnd % 2 == 0:
                    fio, bw = run_fio(), run_ours()
                else:
                    bw, fio = run_ours(), run_fio()
                results[target, engine, depth, rw].append((fio, bw))
                print(f"  round {rnd + 1} {target:<4} {engine:<8} depth {depth:<3} {rw:<5} "
                      f"fio {fio / 1e9:6.2f} GB/s  probetop {bw / 1e9:6.2f} GB/s  "
                      f"ratio {bw / fio:.2f}")  # fmt: skip
    print("\nmedian over rounds (probetop / fio bytes/s):")
    failed = False
    rows = []
    for (target, engine, depth, rw), pairs in results.items():
        med = statistics.median(o / f for f, o in pairs)
        ok = med >= 0.95
        failed |= not ok
        fio_med = statistics.median(f for f, _ in pairs) / 1e9
        ours_med = statistics.median(o for _, o in pairs) / 1e9
        print(f"  {target:<4} {engine:<8} depth {depth:<3} full {rw} pass  fio {fio_med:.2f} GB/s  "
              f"probetop {ours_med:.2f} GB/s  ratio {med:.2f}"
              f" (target >= 0.95) {'ok' if ok else 'BELOW TARGET'}")  # fmt: skip
        report(
            f"{target}, full {rw} pass, {args.bs} {engine} iodepth {depth}",
            "bytes/s",
            ours_med,
            fio_med,
            unit="GB/s",
            reference_tool="fio",
            ratio=med,
            goal=at_least(0.95),
        )
        rows.append(
            f"| {target} | {rw} | {engine} | {depth} | {fio_med:.2f} | {ours_med:.2f} | {med:.2f} |"
        )
    print(f"\n| target | pass ({args.bs}) | engine | iodepth | fio GB/s | probetop GB/s | ratio |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
