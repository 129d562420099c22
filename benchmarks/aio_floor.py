#!/usr/bin/env python3
"""fio, probetop and the smallest possible AIO loop, side by side at iodepth 1.

Usage (root):  .venv/bin/python benchmarks/aio_floor.py [--rounds 6] [--seconds 3]
               [--size-mb 512] [--pin CPU]

Why: on the loop device at iodepth 1 probetop's libaio runs below fio
(docs/iops.md). This separates the engine from the machine: a 40-line C loop
(compiled here with gcc -O2) makes exactly the system calls our loop makes
(``io_submit`` of one 4k O_DIRECT random read, then ``io_getevents(ctx, 1,
1)``), with nothing else around them. If probetop runs at the C loop's rate,
no engine change can gain more; whatever fio has over both comes from how the
scheduler places its thread against the loop device's worker (``--pin`` runs
all three on one CPU: then the three agree). The C loop also prints the share
of I/Os already complete when ``io_submit`` returned (the loop device's worker
ran on the submitting CPU inside the call).

Each round runs the three in turn (the order rotates per round) on one loop
device over a /dev/shm file; ratios are medians over rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from iops_vs_fio import PROBETOP, fio_json, shm_loop_device

C_LOOP = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct ring { unsigned id, nr, head, tail; };  /* the AIO completion ring's start */

int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY | O_DIRECT);
    uint64_t blocks = strtoull(argv[2], 0, 10) / 4096, ns = strtoull(argv[3], 0, 10);
    aio_context_t ctx = 0;
    if (fd < 0 || syscall(SYS_io_setup, 1, &ctx) != 0) { perror("setup"); return 1; }
    void *buf = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct iocb cb = {0}, *cbs = &cb;
    struct io_event ev;
    uint64_t x = 0x9E3779B97F4A7C15ull, n = 0, ready = 0, t0 = now_ns(), end = t0 + ns;
    cb.aio_fildes = fd; cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_buf = (uint64_t)buf; cb.aio_nbytes = 4096;
    for (;;) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        cb.aio_offset = (int64_t)((x * 2685821657736338717ull) % blocks) * 4096;
        if (syscall(SYS_io_submit, ctx, 1, &cbs) != 1) { perror("io_submit"); return 1; }
        if (((struct ring *)ctx)->head != ((struct ring *)ctx)->tail) ready++;
        if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1) {
            perror("io_getevents");
            return 1;
        }
        if ((++n & 255) == 0 && now_ns() > end) break;
    }
    printf("{\"iops\": %.1f, \"ready_at_submit\": %.3f}\n",
           n * 1e9 / (now_ns() - t0), (double)ready / n);
    return 0;
}
"""


def build_c_loop(directory: str) -> str:
    if shutil.which("gcc") is None:
        sys.exit("needs gcc to build the C loop (apt-get install gcc)")
    source, binary = Path(directory) / "aio_floor.c", Path(directory) / "aio_floor"
    source.write_text(C_LOOP)
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
    return str(binary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--pin", type=int, help="run all three on this one CPU")
    args = parser.parse_args()
    pin = None if args.pin is None else {args.pin}

    def pinned() -> None:
        if pin is not None:
            os.sched_setaffinity(0, pin)

    size = args.size_mb << 20
    with tempfile.TemporaryDirectory() as tmp, shm_loop_device(size) as dev:
        c_loop = build_c_loop(tmp)

        def fio() -> float:
            fio_args = [
                "--name=floor", f"--filename={dev}", "--rw=randread", "--bs=4k",
                "--direct=1", "--ioengine=libaio", "--iodepth=1", "--time_based",
                f"--runtime={args.seconds:g}", f"--size={args.size_mb}M",
            ]  # fmt: skip
            return float(fio_json(fio_args, preexec_fn=pinned)["read"]["iops"])

        def ours() -> float:
            our_args = [
                "iops", dev, "--rw", "randread", "--bs", "4k", "--direct",
                "--ioengine", "libaio", "--iodepth", "1", "--time", f"{args.seconds:g}", "--json",
            ]  # fmt: skip
            proc = subprocess.run(
                [*PROBETOP, *our_args],
                capture_output=True,
                text=True,
                preexec_fn=pinned,
                check=True,
            )
            return float(json.loads(proc.stdout)["read"]["iops"])

        ready: list[float] = []

        def c() -> float:
            proc = subprocess.run(
                [c_loop, dev, str(size), str(int(args.seconds * 1e9))],
                capture_output=True, text=True, preexec_fn=pinned, check=True,
            )  # fmt: skip
            out = json.loads(proc.stdout)
            ready.append(float(out["ready_at_submit"]))
            return float(out["iops"])

        tools = [("fio", fio), ("probetop", ours), ("C loop", c)]
        got: dict[str, list[float]] = {name: [] for name, _ in tools}
        print(f"loop device {dev}, {args.size_mb} MiB, libaio 4k randread iodepth 1"
              + ("" if pin is None else f", all pinned to CPU {args.pin}"))  # fmt: skip
        for rnd in range(args.rounds):
            order = tools[rnd % 3 :] + tools[: rnd % 3]
            for name, run in order:
                got[name].append(run())
            print(f"  round {rnd + 1}: " + "  ".join(f"{n} {got[n][-1]:,.0f}" for n, _ in tools),
                  flush=True)  # fmt: skip
        med = {name: statistics.median(values) for name, values in got.items()}

        def per_round(a: str, b: str) -> float:
            return statistics.median(x / y for x, y in zip(got[a], got[b], strict=True))

        print(f"\nmedian IOPS: fio {med['fio']:,.0f}  probetop {med['probetop']:,.0f}  "
              f"C loop {med['C loop']:,.0f}")  # fmt: skip
        print(f"probetop / C loop: {per_round('probetop', 'C loop'):.2f}   "
              f"fio / C loop: {per_round('fio', 'C loop'):.2f}   "
              f"probetop / fio: {per_round('probetop', 'fio'):.2f}")  # fmt: skip
        print(f"C loop: I/Os complete when io_submit returned: {statistics.median(ready):.0%}")


if __name__ == "__main__":
    main()
