#!/usr/bin/env python3
"""Undisturbed operations/s: sysbench memory's worker against probetop mem's,
both read from outside the process while they run, the same way.

A small C sampler (built with gcc) reads the worker's event counter from
the other process's memory (``process_vm_readv``) every --interval-us
microseconds for --secs seconds and keeps the rate of each interval:
sysbench's ``sb_counters[0][SB_CNT_EVENT]`` (its exported ``sb_counters``
pointer), probetop's thread row (``STAT_EVENTS``, the row of the probe's
own ``run()``, in a child process that prints its address). The fastest
intervals are the ones nothing interrupted (no timer tick, no other
process, no cache refill after one): their rate is the cost of the
operation itself. Unlike ops/s or ops per CPU-second of whole runs, it
does not move with the machine's load, as long as some intervals stay
undisturbed (a few percent of them are enough): the ``max`` and ``p99``
columns. The tools alternate (ABBA), --rounds each; the ratios are
probetop / sysbench of the medians over rounds, and of the best round
(``best``: at a high load only some rounds have clean intervals, and a
disturbed round reads low; every round's max is printed).

This is how the 2 % per operation of 2026-11-29 (docs/mem.md) was found:
whole-run ratios on the loaded machine swung more than the gap.

Both tools' runs are pinned to one CPU (``--cpu auto``: the one taking the
fewest device interrupts, as mem_vs_sysbench.py; ``none``: unpinned), the
sampler to another. A round whose sampler the machine starved is reported
lost and left out.

Usage: .venv/bin/python benchmarks/mem_undisturbed_vs_sysbench.py [--rounds 4]
       [--only TEXT] [--secs 3] [--interval-us 3000] [--cpu auto|none|N]
Needs gcc, nm and sysbench (1.0.20); Linux (process_vm_readv, as root or
with ptrace rights over the children: the default Yama scope 1 allows it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_sched import quietest_cpu
from figures import add_figures_option, between, report

CASES: list[tuple[str, dict[str, str]]] = [
    ("seq none 1K", {"memory-oper": "none"}),
    ("seq write 1K", {"memory-oper": "write"}),
    ("seq read 1K", {"memory-oper": "read"}),
    ("seq write 8B", {"memory-oper": "write", "memory-block-size": "8"}),
    ("seq write 1K pct0", {"memory-oper": "write", "percentile": "0"}),
    ("rnd write 1K", {"memory-oper": "write", "memory-access-mode": "rnd"}),
    ("rnd read 1K", {"memory-oper": "read", "memory-access-mode": "rnd"}),
    ("seq read 1M", {"memory-oper": "read", "memory-block-size": "1048576"}),
    ("seq write 1M", {"memory-oper": "write", "memory-block-size": "1048576"}),
]

SB_CNT_EVENT = 3  # sysbench 1.0.20's sb_counter_type_t: the per-thread event count

_SAMPLER = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
/* pid address offset interval_us seconds: address is a pointer read once,
   the counter is at its value + offset (offset -1: address is the counter) */
int main(int argc, char **argv) {
  if (argc < 6) return 2;
  pid_t pid = atoi(argv[1]);
  uint64_t addr = strtoull(argv[2], 0, 16), v;
  long off = atol(argv[3]), us = atol(argv[4]);
  double secs = atof(argv[5]);
  struct iovec l = {&v, 8}, r = {(void *)addr, 8};
  if (off >= 0) {
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != 8) { perror("process_vm_readv"); return 1; }
    r.iov_base = (void *)(v + off);
  }
  int cap = (int)(secs * 1e6 / us) + 16, n = 0;
  double *rate = malloc(cap * sizeof *rate), t0 = 0, e0 = 0, start = now();
  struct timespec nap = {0, us * 1000};
  while (now() - start < secs && n < cap) {
    double t = now();
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != 8) break;
    if (t0 > 0 && (double)v > e0) rate[n++] = ((double)v - e0) / (t - t0);
    t0 = t;
    e0 = (double)v;
    nanosleep(&nap, 0);
  }
  if (n < 20) { fprintf(stderr, "only %d intervals\n", n); return 1; }
  qsort(rate, n, sizeof *rate, cmp);
  printf("%d %.0f %.0f %.0f\n", n, rate[n - 1], rate[n * 99 / 100], rate[n / 2]);
  return 0;
}
"""

# The probe's own run() in a child: the row's address on stdout once it runs
# (the probe keeps its rows in _stats: read here, outside the product, only).
_PROBE = r"""
import asyncio, sys, threading
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.settings import MemSettings
from probetop.probes.mem.engine import address_of
opts = dict(zip(sys.argv[1::2], sys.argv[2::2]))
settings = MemSettings(time_s=float(opts.pop("time")), oper=opts.get("memory-oper", "write"),
                       block_size=int(opts.get("memory-block-size", "1024")),
                       percentile=float(opts.get("percentile", "95")),
                       access_mode=opts.get("memory-access-mode", "seq"))
probe = MemProbe(settings)
probe.prepare()
async def main():
    task = asyncio.ensure_future(probe.run(lambda sample: None))
    while probe._stats is None:
        await asyncio.sleep(0.01)
    print(f"{address_of(probe._stats[0]):x}", flush=True)
    await task
asyncio.run(main())
"""


def build_sampler(tmp: Path) -> Path:
    (tmp / "sampler.c").write_text(_SAMPLER)
    out = tmp / "sampler"
    subprocess.run(["gcc", "-O2", "-o", out, tmp / "sampler.c"], check=True)
    return out


def sysbench_counters_offset() -> int:
    """The file offset of sysbench's exported ``sb_counters`` pointer."""
    nm = subprocess.run(
        ["nm", "-D", str(shutil.which("sysbench"))], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"^([0-9a-f]+) B sb_counters$", nm, re.M)
    if m is None:
        raise SystemExit("this sysbench exports no sb_counters symbol (not 1.0.20?)")
    return int(m.group(1), 16)


def with_defaults(opts: dict[str, str]) -> dict[str, str]:
    return {"memory-block-size": "1K", "percentile": "95", "memory-access-mode": "seq", **opts}


def pinned(cpu: int | None) -> list[str]:
    """The prefix that runs a command on ``cpu`` (nothing when None)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def sample(
    tool: str, opts: dict[str, str], sampler: Path, args: argparse.Namespace
) -> list[float] | None:
    """(max, p99, median) events/s of one run's intervals; None when the
    sampler got too few (the machine too busy to run it on time)."""
    seconds = int(args.secs + 2)
    opts = with_defaults(opts)
    if tool == "sysbench":
        cmd = [*pinned(args.cpu), "sysbench", "memory", f"--time={seconds}"]
        cmd += [f"--{k}={v}" for k, v in opts.items()] + ["run"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        for _ in range(500):  # the worker thread is up
            if len(os.listdir(f"/proc/{proc.pid}/task")) >= 2:
                break
            time.sleep(0.01)
        base = next(
            int(line.split("-")[0], 16)
            for line in Path(f"/proc/{proc.pid}/maps").read_text().splitlines()
            if line.endswith("/sysbench")
        )
        where = [f"{base + COUNTERS:x}", str(8 * SB_CNT_EVENT)]
    else:
        block = opts["memory-block-size"]
        block = str(int(block[:-1]) * 1024) if block.endswith("K") else block
        argv = ["time", str(seconds), "memory-block-size", block]
        argv += [
            x for k in ("memory-oper", "percentile", "memory-access-mode") for x in (k, opts[k])
        ]
        proc = subprocess.Popen(
            [*pinned(args.cpu), sys.executable, "-c", _PROBE, *argv],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        where = [proc.stdout.readline().strip(), "-1"]
    time.sleep(0.5)  # past the first operations
    sampled = subprocess.run(
        [
            *pinned(args.sampler_cpu),
            str(sampler),
            str(proc.pid),
            *where,
            str(args.interval_us),
            str(args.secs),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    proc.wait(timeout=60)
    if sampled.returncode:
        print(f"  a {tool} round lost: {sampled.stderr.strip()}", flush=True)
        return None
    return [float(x) for x in sampled.stdout.split()[1:]]


COUNTERS = 0  # sb_counters' offset in sysbench's file: set by main()


def main() -> int:
    global COUNTERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--secs", type=float, default=3.0, help="sampled seconds a run")
    ap.add_argument("--interval-us", type=int, default=3000)
    ap.add_argument("--only", help="cases whose name contains this")
    ap.add_argument(
        "--cpu",
        default="auto",
        help="the CPU both tools' runs are pinned to (taskset), the sampler on another:"
        " auto (default) the one that takes the fewest device interrupts, none: unpinned",
    )
    add_figures_option(ap)
    args = ap.parse_args()
    args.sampler_cpu = None
    if args.cpu == "none":
        args.cpu = None
    else:
        quiet, rates = quietest_cpu()
        args.cpu = quiet if args.cpu == "auto" else int(args.cpu)
        others = sorted(os.sched_getaffinity(0) - {args.cpu})
        args.sampler_cpu = others[0] if others else None
        per_cpu = ", ".join(f"CPU {i} {r:,.0f}/s" for i, r in enumerate(rates))
        print(f"both tools pinned to CPU {args.cpu}; device interrupts: {per_cpu}")
    missing = [t for t in ("gcc", "nm", "sysbench") if shutil.which(t) is None]
    if missing:
        print(f"needs {', '.join(missing)}", file=sys.stderr)
        return 2
    COUNTERS = sysbench_counters_offset()
    print(f"loadavg at start: {os.getloadavg()}")
    head = f"{'case':<20} {'sysbench max':>13} {'probetop max':>13} {'ratio':>6}"
    print(head + "  p99 ratio  median ratio  best ratio")
    with tempfile.TemporaryDirectory(prefix="mem-undisturbed-") as name:
        sampler = build_sampler(Path(name))
        for case, opts in CASES:
            if args.only and args.only not in case:
                continue
            got: dict[str, list[list[float]]] = {"sysbench": [], "probetop": []}
            for r in range(args.rounds):
                for tool in ("sysbench", "probetop") if r % 2 == 0 else ("probetop", "sysbench"):
                    rates = sample(tool, opts, sampler, args)
                    if rates is not None:
                        got[tool].append(rates)
            if not got["sysbench"] or not got["probetop"]:
                print(f"{case:<20} every round of a tool lost", flush=True)
                continue
            med = {
                t: [statistics.median(x[i] for x in runs) for i in range(3)]
                for t, runs in got.items()
            }
            s, p = med["sysbench"], med["probetop"]
            best = {t: max(x[0] for x in runs) for t, runs in got.items()}
            print(
                f"{case:<20} {s[0]:>13,.0f} {p[0]:>13,.0f} {p[0] / s[0]:>6.3f}  "
                f"{p[1] / s[1]:>9.3f}  {p[2] / s[2]:>12.3f}  "
                f"{best['probetop'] / best['sysbench']:>10.3f}",
                flush=True,
            )
            report(
                case,
                "undisturbed ops/s (the fastest 3 ms intervals, median over rounds)",
                p[0],
                s[0],
                unit="ops/s",
                reference_tool="sysbench memory",
                goal=between(0.97, 1.03),
                note="best round " + f"{best['probetop'] / best['sysbench']:.3f}",
            )
            for tool, runs in got.items():  # a disturbed round reads low: look at them all
                maxima = " ".join(f"{x[0] / 1e6:.3f}" for x in runs)
                print(f"{'':<20} {tool} max M/s by round: {maxima}", flush=True)
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
