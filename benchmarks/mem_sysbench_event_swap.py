#!/usr/bin/env python3
"""seq read 1M: which part of sysbench's own process makes its operation slower.

``sysbench memory --memory-block-size=1M --memory-oper=read`` runs each
operation from 1 to 9 % slower than ``probetop mem`` (docs/mem.md, "seq
read 1M: the peel into the loop"). This runs sysbench with an
``LD_PRELOAD`` shim (built here with gcc) that, just before the worker
starts, swaps the test's ``execute_event`` pointer (Debian's 1.0.20 build:
the slot at 0x35b98 holding ``event_seq_read`` at 0x1a860; any other build
is refused) for one of:

- ``asis``: sysbench's own ``event_seq_read`` (the slot left alone);
- ``inloop``: a call into sysbench's own loop at its head (0x1a90a, in
  place), the block from its first word: the same 8-loads-a-trip loop,
  without the peel before it;
- ``intail``: a call into sysbench's own code at 0x1a8d4, where its peel
  of the first words (7 one-word loads, each with ``add $0x8``) falls
  through into the loop, as it does for every 1 MiB block;
- ``copy``: the same loop compiled into the shim (its head 10 bytes into
  its line, as sysbench's), entered at its head.

and ``probetop mem`` beside them, alternated, the whole process pinned to
``--cpu``. Each run's figure is the undisturbed operation's latency (the
mean of the operations within 1.25x of the latency histogram's mode, as
``mem_oplatency_vs_sysbench.py``); the table gives the median over rounds.

Usage: .venv/bin/python benchmarks/mem_sysbench_event_swap.py [--rounds 8] [--time 2] [--cpu 0]
Needs gcc and sysbench 1.0.20 as Debian builds it.
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

from figures import add_figures_option, report
from mem_oplatency_vs_sysbench import probetop_bin, sysbench_histogram, undisturbed

_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
static char *blk;
static uintptr_t base;
int posix_memalign(void **p, size_t al, size_t sz) {
  static int (*real)(void **, size_t, size_t);
  if (!real) real = dlsym(RTLD_NEXT, "posix_memalign");
  int r = real(p, al, sz);
  if (sz == (1u << 20)) blk = *p;
  return r;
}
__attribute__((noinline, aligned(64))) static int ev_copy(void *e, int tid) {
  const char *p = blk, *end = blk + (1u << 20);
  __asm__ volatile(".p2align 6\n\t.skip 10, 0x90\n\t"
    "1: mov (%0),%%rcx\n\t mov 0x8(%0),%%rcx\n\t mov 0x10(%0),%%rcx\n\t mov 0x18(%0),%%rcx\n\t"
    "mov 0x20(%0),%%rcx\n\t mov 0x28(%0),%%rcx\n\t mov 0x30(%0),%%rcx\n\t mov 0x38(%0),%%rcx\n\t"
    "add $0x40,%0\n\t cmp %0,%1\n\t ja 1b\n\t" : "+r"(p) : "r"(end) : "rcx", "memory");
  return 0;
}
/* into sysbench's own code: rsi = block, rdi = the next word, rdx = end */
static void into(uintptr_t at, const char *next) {
  register const char *rdi __asm__("rdi") = next;
  register const char *rdx __asm__("rdx") = blk + (1u << 20);
  register const char *rsi __asm__("rsi") = blk;
  __asm__ volatile("call *%3" : "+r"(rdi), "+r"(rdx), "+r"(rsi) : "r"(base + at)
                   : "rax", "rcx", "r8", "memory", "cc");
}
__attribute__((noinline)) static int ev_inloop(void *e, int tid) {
  into(0x1a90a, blk);
  return 0;
}
__attribute__((noinline)) static int ev_intail(void *e, int tid) {
  into(0x1a8d4, blk + 8);
  return 0;
}
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  if (!real) real = dlsym(RTLD_NEXT, "pthread_create");
  const char *m = getenv("SWAP_EVENT");
  if (m && blk) {
    base = getauxval(AT_PHDR) - 0x40;
    void **slot = (void **)(base + 0x35b98);
    if ((uintptr_t)*slot != base + 0x1a860) { fprintf(stderr, "SWAP not this build\n"); exit(3); }
    if (!strcmp(m, "copy")) *slot = (void *)ev_copy;
    else if (!strcmp(m, "inloop")) *slot = (void *)ev_inloop;
    else if (!strcmp(m, "intail")) *slot = (void *)ev_intail;
    fprintf(stderr, "SWAP %s\n", m);
  }
  return real(t, a, f, arg);
}
"""

VARIANTS = ("asis", "inloop", "intail", "copy", "probetop")


def run(variant: str, shim: Path, seconds: float, cpu: str) -> float:
    """The undisturbed operation's latency (us) of one run."""
    opts = ["--memory-block-size", "1M", "--memory-oper", "read"]
    if variant == "probetop":
        cmd = ["taskset", "-c", cpu, probetop_bin(), "mem", "--headless", "--json"]
        out = subprocess.run(
            [*cmd, "--time", f"{seconds:g}", *opts], capture_output=True, text=True, check=True
        ).stdout
        return undisturbed({int(k): v for k, v in json.loads(out)["histogram"].items()})[1]
    env = {**os.environ, "LD_PRELOAD": str(shim), "SWAP_EVENT": variant}
    cmd = ["taskset", "-c", cpu, "sysbench", "memory", f"--time={seconds:g}", "--histogram=on"]
    cmd += ["--memory-block-size=1M", "--memory-oper=read", "run"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode or f"SWAP {variant}" not in proc.stderr:
        raise SystemExit(f"sysbench with the shim failed: {proc.stderr.strip()}")
    return undisturbed(sysbench_histogram(proc.stdout))[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--time", type=float, default=2.0)
    ap.add_argument("--cpu", default="0", help="the CPU every run is pinned to (taskset)")
    add_figures_option(ap)
    args = ap.parse_args()
    if not (shutil.which("sysbench") and shutil.which("gcc")):
        print("needs sysbench and gcc", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        src, shim = Path(tmp) / "swap.c", Path(tmp) / "swap.so"
        src.write_text(_SHIM)
        subprocess.run(
            ["gcc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(src), "-ldl"], check=True
        )
        print(f"loadavg at start: {os.getloadavg()}; every run pinned to CPU {args.cpu}")
        res: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(args.rounds):
            for v in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                res[v].append(run(v, shim, args.time, args.cpu))
            print(f"round {r}: " + "  ".join(f"{v} {res[v][-1]:.2f}" for v in VARIANTS), flush=True)
    print("undisturbed latency, us (median over rounds, range):")
    asis = statistics.median(res["asis"])
    for v in VARIANTS:
        med = statistics.median(res[v])
        print(f"  {v:<9} {med:7.3f}  ({min(res[v]):.2f}-{max(res[v]):.2f})")
        report(  # no goal: it says where sysbench's own operation spends its time
            f"seq read 1M {v}",
            "undisturbed operation latency",
            med,
            asis,
            unit="us",
            reference_tool="sysbench memory (its own event)",
            note="sysbench with its event swapped by a shim, or probetop; time ratio to as is",
        )
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
