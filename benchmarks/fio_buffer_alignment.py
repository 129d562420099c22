"""Why a buffered job's equivalent fio command names ``--iomem_align``.

probetop's I/O buffers are page aligned (one anonymous mapping per job); a
buffered fio job mallocs its buffers with no alignment unless told
``--iomem_align``. The copy out of the page cache into an unaligned buffer
can be several times slower, so fio without the option measures its buffer
as much as the page cache. This runs, alternating, in one run: fio's
default, fio with ``--iomem_align=4096`` (what probetop's ``fio_command``
says) and probetop, the same 1 MiB buffered sequential reads of a file in
/dev/shm, and prints probetop / each fio.

Usage: .venv/bin/python benchmarks/fio_buffer_alignment.py [--rounds 3] [--seconds 2]
       [--size-mb 256] [--bs 1M]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from figures import add_figures_option, between, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def fio_bw(path: str, seconds: int, bs: str, align: bool) -> float:
    args = ["fio", "--name=align", f"--filename={path}", "--rw=read", f"--bs={bs}",
            "--ioengine=psync", "--direct=0", "--time_based", f"--runtime={seconds}",
            "--output-format=json"]  # fmt: skip
    if align:
        args.append("--iomem_align=4096")
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    return float(json.loads(out[out.index("{") :])["jobs"][0]["read"]["bw_bytes"])


def probetop_bw(path: str, seconds: int, bs: str) -> tuple[float, str]:
    out = subprocess.run(
        [*PROBETOP, "iops", path, "--rw", "read", "--bs", bs, "--buffered", "--time",
         str(seconds), "--json"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    doc = json.loads(out)
    return float(doc["jobs"][0]["read"]["bw_bytes"]), doc["probetop"]["fio_command"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2, help="whole seconds (fio's --runtime)")
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--bs", default="1M")
    add_figures_option(ap)
    a = ap.parse_args()
    fd, path = tempfile.mkstemp(prefix="probetop-align-", dir="/dev/shm")
    try:
        with os.fdopen(fd, "wb") as f:
            chunk = os.urandom(1 << 20)
            for _ in range(a.size_mb):
                f.write(chunk)
        vs_default, vs_aligned = [], []
        command = ""
        for r in range(a.rounds):
            order = ["default", "aligned", "probetop"]
            if r % 2:
                order.reverse()
            got: dict[str, float] = {}
            for who in order:
                if who == "probetop":
                    got[who], command = probetop_bw(path, a.seconds, a.bs)
                else:
                    got[who] = fio_bw(path, a.seconds, a.bs, align=who == "aligned")
            vs_default.append(got["probetop"] / got["default"])
            vs_aligned.append(got["probetop"] / got["aligned"])
            print(f"round {r + 1}: MB/s  fio {got['default'] / 1e6:,.0f}  "
                  f"fio --iomem_align=4096 {got['aligned'] / 1e6:,.0f}  "
                  f"probetop {got['probetop'] / 1e6:,.0f}")  # fmt: skip
        print(f"probetop's fio_command: {command}")
        d, al = statistics.median(vs_default), statistics.median(vs_aligned)
        print(
            f"probetop / fio (default buffers): {d:.2f}   "
            f"probetop / fio --iomem_align=4096: {al:.2f}"
        )
        case = f"{a.bs} buffered seq read, /dev/shm"
        report(case, "bytes/s vs fio, default (unaligned) buffers", None,
               reference_tool="fio", ratio=d)  # fmt: skip
        report(case, "bytes/s vs fio --iomem_align=4096 (probetop's fio_command)", None,
               reference_tool="fio", ratio=al, goal=between(0.9, 1.1))  # fmt: skip
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
