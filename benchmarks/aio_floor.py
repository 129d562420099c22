#!/usr/bin/env python3
"""fio, probetop and the smallest possible engine loop in C, side by side.

Usage (root):  .venv/bin/python benchmarks/aio_floor.py [--ioengine libaio|io_uring]
               [--rw randread|randwrite] [--iodepth 1] [--rounds 6] [--seconds 3]
               [--size-mb 512] [--pin CPU]

Why: on the loop device at iodepth 1 and 8, probetop ran below fio
(docs/iops.md). This separates the engine from the machine: a C loop
(compiled here with gcc -O2) makes exactly the system calls our loop and fio
make, with nothing else around them. libaio: ``io_submit`` of one 4k O_DIRECT
random I/O per call, then ``io_getevents(ctx, 1, 1)``. io_uring: a ring set
up with fio 3.33's flags (``CQSIZE | COOP_TASKRUN | SINGLE_ISSUER |
DEFER_TASKRUN``, seen with strace), ``io_uring_enter(fd, 1, 0, GETEVENTS)``
per I/O and ``io_uring_enter(fd, 0, 1, GETEVENTS)`` when the completion
ring is empty, one completion reaped per step, as fio does. If probetop runs
at the C loop's rate, no engine change can gain more; what fio has over both
comes from elsewhere (how the scheduler places its process against the loop
device's worker; ``--pin`` runs all three on one CPU). The libaio C loop also
prints the share of I/Os already complete when ``io_submit`` returned.

Each round runs the three in turn (the order rotates per round) on one loop
device over a /dev/shm file; ratios are medians over per-round ratios.
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
from figures import add_figures_option, report
from iops_vs_fio import PROBETOP, fio_json, shm_loop_device

C_LOOP_AIO = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* argv: device, size in bytes, run time in ns, iodepth, 1 to write */
int main(int argc, char **argv) {
    int wr = atoi(argv[5]);
    int fd = open(argv[1], (wr ? O_RDWR : O_RDONLY) | O_DIRECT);
    uint64_t blocks = strtoull(argv[2], 0, 10) / 4096, ns = strtoull(argv[3], 0, 10);
    unsigned depth = (unsigned)atoi(argv[4]);
    aio_context_t ctx = 0;
    if (fd < 0 || depth < 1 || depth > 256 || syscall(SYS_io_setup, depth, &ctx) != 0) {
        perror("setup");
        return 1;
    }
    char *buf = mmap(0, 4096ul * depth, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(buf, 0x5a, 4096ul * depth);
    struct iocb cbs[256] = {0};
    unsigned freel[256], nfree = depth;
    for (unsigned i = 0; i < depth; i++) freel[i] = i;
    struct io_event ev;
    uint64_t x = 0x9E3779B97F4A7C15ull, n = 0, ready = 0, subs = 0, t0 = now_ns(), end = t0 + ns;
    for (;;) {
        while (nfree) {
            unsigned s = freel[--nfree];
            struct iocb *cb = &cbs[s];
            x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
            cb->aio_data = s;
            cb->aio_fildes = fd;
            cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
            cb->aio_buf = (uint64_t)(buf + 4096ul * s);
            cb->aio_nbytes = 4096;
            cb->aio_offset = (int64_t)((x * 2685821657736338717ull) % blocks) * 4096;
            if (syscall(SYS_io_submit, ctx, 1, &cb) != 1) { perror("io_submit"); return 1; }
            subs++;
            if (((struct ring *)ctx)->head != ((struct ring *)ctx)->tail) ready++;
        }
        if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1) {
            perror("io_getevents");
            return 1;
        }
        if (ev.res != 4096) { fprintf(stderr, "I/O result %lld\n", (long long)ev.res); return 1; }
        freel[nfree++] = (unsigned)ev.data;
        if ((++n & 255) == 0 && now_ns() > end) break;
    }
    printf("{\"iops\": %.1f, \"ready_at_submit\": %.3f}\n",
           n * 1e9 / (now_ns() - t0), (double)ready / subs);
    return 0;
}
"""

C_LOOP_URING = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* argv: device, size in bytes, run time in ns, iodepth, 1 to write */
int main(int argc, char **argv) {
    int wr = atoi(argv[5]);
    int fd = open(argv[1], (wr ? O_RDWR : O_RDONLY) | O_DIRECT);
    uint64_t blocks = strtoull(argv[2], 0, 10) / 4096, ns = strtoull(argv[3], 0, 10);
    unsigned depth = (unsigned)atoi(argv[4]);
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    /* fio 3.33's ring (strace): CQSIZE, COOP_TASKRUN, SINGLE_ISSUER, DEFER_TASKRUN */
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | (1u << 12) | (1u << 13);
    p.cq_entries = depth;
    if (fd < 0 || depth < 1 || depth > 256) { perror("open"); return 1; }
    int ring = (int)syscall(__NR_io_uring_setup, depth, &p);
    if (ring < 0) { perror("io_uring_setup"); return 1; }
    size_t sq_len = p.sq_off.array + p.sq_entries * 4;
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_len > cq_len ? sq_len : cq_len, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);  /* one map: 5.4+ */
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe),
                                     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                                     IORING_OFF_SQES);
    unsigned *sq_tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned sq_mask = *(unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *sq_array = (unsigned *)(sq + p.sq_off.array);
    unsigned *cq_head = (unsigned *)(sq + p.cq_off.head);
    unsigned *cq_tail = (unsigned *)(sq + p.cq_off.tail);
    unsigned cq_mask = *(unsigned *)(sq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
    char *buf = mmap(0, 4096ul * depth, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(buf, 0x5a, 4096ul * depth);
    unsigned freel[256], nfree = depth, tail = *sq_tail;
    for (unsigned i = 0; i < depth; i++) freel[i] = i;
    uint64_t x = 0x9E3779B97F4A7C15ull, n = 0, t0 = now_ns(), end = t0 + ns;
    for (;;) {
        while (nfree) {
            unsigned s = freel[--nfree];
            struct io_uring_sqe *e = &sqes[s];
            x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
            memset(e, 0, sizeof *e);
            e->opcode = wr ? IORING_OP_WRITE : IORING_OP_READ;
            e->fd = fd;
            e->off = ((x * 2685821657736338717ull) % blocks) * 4096;
            e->addr = (uint64_t)(buf + 4096ul * s);
            e->len = 4096;
            e->user_data = s;
            sq_array[tail & sq_mask] = s;
            __atomic_store_n(sq_tail, ++tail, __ATOMIC_RELEASE);
            if (syscall(__NR_io_uring_enter, ring, 1, 0, IORING_ENTER_GETEVENTS, 0, 0) != 1) {
                perror("io_uring_enter");
                return 1;
            }
        }
        unsigned head = *cq_head;
        if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE))
            syscall(__NR_io_uring_enter, ring, 0, 1, IORING_ENTER_GETEVENTS, 0, 0);
        if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) continue;  /* EINTR */
        struct io_uring_cqe *c = &cqes[head & cq_mask];
        if (c->res != 4096) { fprintf(stderr, "I/O result %d\n", c->res); return 1; }
        freel[nfree++] = (unsigned)c->user_data;
        __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
        if ((++n & 255) == 0 && now_ns() > end) break;
    }
    printf("{\"iops\": %.1f}\n", n * 1e9 / (now_ns() - t0));
    return 0;
}
"""


def build_c_loop(directory: str, engine: str) -> str:
    if shutil.which("gcc") is None:
        sys.exit("needs gcc to build the C loop (apt-get install gcc)")
    source, binary = Path(directory) / "floor.c", Path(directory) / "floor"
    source.write_text(C_LOOP_URING if engine == "io_uring" else C_LOOP_AIO)
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
    return str(binary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--pin", type=int, help="run all three on this one CPU")
    parser.add_argument("--ioengine", choices=("libaio", "io_uring"), default="libaio")
    parser.add_argument("--rw", choices=("randread", "randwrite"), default="randread")
    parser.add_argument("--iodepth", type=int, default=1, help="1-256 (default 1)")
    add_figures_option(parser)
    args = parser.parse_args()
    if not 1 <= args.iodepth <= 256:
        parser.error("--iodepth: 1-256")
    direction = "write" if args.rw == "randwrite" else "read"
    pin = None if args.pin is None else {args.pin}

    def pinned() -> None:
        if pin is not None:
            os.sched_setaffinity(0, pin)

    size = args.size_mb << 20
    with tempfile.TemporaryDirectory() as tmp, shm_loop_device(size) as dev:
        c_loop = build_c_loop(tmp, args.ioengine)

        def fio() -> float:
            fio_args = [
                "--name=floor", f"--filename={dev}", f"--rw={args.rw}", "--bs=4k",
                "--direct=1", f"--ioengine={args.ioengine}", f"--iodepth={args.iodepth}",
                "--time_based",
                f"--runtime={args.seconds:g}", f"--size={args.size_mb}M",
            ]  # fmt: skip
            return float(fio_json(fio_args, preexec_fn=pinned)[direction]["iops"])

        def ours() -> float:
            our_args = [
                "iops", dev, "--rw", args.rw, "--bs", "4k", "--direct",
                "--ioengine", args.ioengine, "--iodepth", str(args.iodepth),
                "--time", f"{args.seconds:g}", "--json",
            ]  # fmt: skip
            if direction == "write":
                our_args.append(f"--yes-destroy-data={dev}")
            proc = subprocess.run(
                [*PROBETOP, *our_args],
                capture_output=True,
                text=True,
                preexec_fn=pinned,
                check=True,
            )
            return float(json.loads(proc.stdout)["jobs"][0][direction]["iops"])

        ready: list[float] = []

        def c() -> float:
            proc = subprocess.run(
                [c_loop, dev, str(size), str(int(args.seconds * 1e9)), str(args.iodepth),
                 "1" if direction == "write" else "0"],
                capture_output=True, text=True, preexec_fn=pinned, check=True,
            )  # fmt: skip
            out = json.loads(proc.stdout)
            if "ready_at_submit" in out:
                ready.append(float(out["ready_at_submit"]))
            return float(out["iops"])

        tools = [("fio", fio), ("probetop", ours), ("C loop", c)]
        got: dict[str, list[float]] = {name: [] for name, _ in tools}
        print(f"loop device {dev}, {args.size_mb} MiB, {args.ioengine} 4k {args.rw} "
              f"iodepth {args.iodepth}"
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
        case = f"loop device, {args.ioengine} 4k {args.rw} iodepth {args.iodepth}" + (
            "" if pin is None else ", pinned"
        )
        report(
            case,
            "IOPS",
            med["probetop"],
            med["fio"],
            unit="IOPS",
            reference_tool="fio",
            ratio=per_round("probetop", "fio"),
        )
        report(
            case,
            "IOPS",
            med["probetop"],
            med["C loop"],
            unit="IOPS",
            reference_tool="C loop making the same calls",
            ratio=per_round("probetop", "C loop"),
        )
        report(
            case,
            "IOPS",
            med["fio"],
            med["C loop"],
            unit="IOPS",
            reference_tool="C loop making the same calls",
            ratio=per_round("fio", "C loop"),
            note="fio in the probetop column: fio's own gap to the loop",
        )
        if ready:
            print(f"C loop: I/Os complete when io_submit returned: {statistics.median(ready):.0%}")


if __name__ == "__main__":
    main()
