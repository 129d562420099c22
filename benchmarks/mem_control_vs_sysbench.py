#!/usr/bin/env python3
"""Whose is the last few percent? CPU time per operation of sysbench memory,
of probetop mem's engine, and of a control built by gcc like sysbench.

The control is sysbench 1.0.20's memory hot path written again in C after
its design (globals, ``__thread`` budget and block, a per-thread timer
array with a spinlock, the shared 128-row latency histogram, the event loop
calling the test through function pointers; seq write only) and built with
the distribution's flags (gcc -O2 -fstack-protector-strong -fPIE). It runs
fewer instructions per operation than sysbench (callgrind: 189 vs 193 at
--percentile 0, 288 vs 291 at 95) and misses no more in cachegrind's
simulated caches and branch predictor. The engine is its object code in
the C driver of ``mem_instructions_by_function.py``.

Each figure is CPU time per operation over fixed work, as the slope of two
runs (N1 and N2 operations: start-up and exit cancel out, no subtraction),
the three alternated, median of --rounds. Where the control lands as far
from sysbench as the engine does, or farther, a gap of that size is what
incidental code and data layout costs on this machine, not the engine's
code (docs/mem.md, "Where the last percent goes").

Usage: .venv/bin/python benchmarks/mem_control_vs_sysbench.py [--rounds 5]
Needs gcc and sysbench.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "mem"))
from figures import add_figures_option, between, report
from mem_callgrind import sysbench_fixed_work
from mem_instructions_by_function import build_driver

N1, N2 = 500_000, 2_500_000
CASES = [(8, 0), (8, 95), (1024, 95)]  # (block bytes, percentile), seq write

# The control: argv = mode oper block ops percentile (the engine driver's).
_CONTROL = r"""
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define NSLOTS 128
#define HSIZE 1024
typedef struct { struct timespec start, end; uint64_t events, queue, min, max, sum;
                 unsigned lock; char pad[52]; } timer_t128;
typedef struct { int type; char rest[44]; } event_t;
typedef struct { event_t (*next)(int); int (*execute)(event_t *, int); } ops_t;
static struct { int error, rate, percentile, concurrency; long long max_ns, max_events; } g;
static struct timespec run_start;
static timer_t128 *timers;
static uint64_t (*counters)[8];
static uint64_t **slots;
static double deduct, mult;
static long long total_size;
static long block;
static __thread uint64_t budget __attribute__((aligned(64)));
static __thread size_t *tls_block;
static __thread uint64_t rng[2];

static inline void lock(unsigned *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 1)
    while (__atomic_load_n(l, __ATOMIC_RELAXED) == 1) __builtin_ia32_pause();
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
__attribute__((noinline)) void histogram_add(double ms) {
  uint64_t s0 = rng[0], s1 = rng[1];
  size_t slot = (s0 + s1) % NSLOTS;
  s1 ^= s0; rng[0] = rotl(s0, 55) ^ s1 ^ (s1 << 14); rng[1] = rotl(s1, 36);
  long i = floor((log(ms) - deduct) * mult + 0.5);
  if (__builtin_expect(i < 0, 0)) i = 0;
  else if (__builtin_expect(i >= HSIZE, 0)) i = HSIZE - 1;
  __atomic_add_fetch(&slots[slot][i], 1, __ATOMIC_RELAXED);
}
__attribute__((noinline)) int more_events(int tid) {
  (void)tid;
  if (g.error) return 0;
  if (g.max_ns > 0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long long ns = (t.tv_sec - run_start.tv_sec) * 1000000000LL + (t.tv_nsec - run_start.tv_nsec);
    if (__builtin_expect(ns >= g.max_ns, 0)) return 0;
  }
  if (g.max_events > 0) return 0;
  if (g.rate > 0) { __asm__ volatile("" ::: "rbx", "rbp", "r12", "r13", "r14", "r15"); return 0; }
  return 1;
}
static inline void event_start(int tid) {
  timer_t128 *t = &timers[tid];
  lock(&t->lock);
  clock_gettime(CLOCK_MONOTONIC, &t->start);
  __atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
}
__attribute__((noinline)) void event_stop(int tid) {
  timer_t128 *t = &timers[tid];
  lock(&t->lock);
  clock_gettime(CLOCK_MONOTONIC, &t->end);
  uint64_t ns = (t->end.tv_sec - t->start.tv_sec) * 1000000000LL
                + (t->end.tv_nsec - t->start.tv_nsec) + t->queue;
  t->events++;
  t->sum += ns;
  if (__builtin_expect(ns < t->min, 0)) t->min = ns;
  if (__builtin_expect(ns > t->max, 0)) t->max = ns;
  __atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
  if (g.percentile > 0) histogram_add(ns / 1e6);
  uint64_t n = *(volatile uint64_t *)&counters[tid][3];
  *(volatile uint64_t *)&counters[tid][3] = n + 1;
  if (g.rate > 0) __atomic_sub_fetch(&g.concurrency, 1, __ATOMIC_SEQ_CST);
}
__attribute__((noinline)) event_t next_event(int tid) {
  event_t e;
  (void)tid;
  e.type = (total_size > 0 && !budget--) ? 0 : 2;
  return e;
}
__attribute__((noinline)) int seq_write(event_t *e, int tid) {
  (void)e; (void)tid;
  for (size_t *p = tls_block, *end = p + block / 8; p < end; p++) *(volatile size_t *)p = end - p;
  return 0;
}
static ops_t ops = {next_event, seq_write};
static ops_t *volatile test = &ops;
static size_t *shared_block;
static long per_thread;

static void *worker(void *arg) {
  (void)arg;
  int tid = 0, rc = 0;
  event_t e;
  budget = per_thread; tls_block = shared_block;
  rng[0] = 0x9E3779B97F4A7C15ULL; rng[1] = 12345;
  while (more_events(tid) && rc == 0) {
    e = test->next(tid);
    if (e.type == 0) break;
    event_start(tid);
    rc = test->execute(&e, tid);
    event_stop(tid);
  }
  return NULL;
}
int main(int argc, char **argv) {
  if (argc < 6) return 2;
  block = atol(argv[3]); per_thread = atol(argv[4]); g.percentile = atoi(argv[5]);
  total_size = per_thread * block;
  g.max_ns = 100000LL * 1000000000LL;  /* never reached: the clock is read every operation */
  if (posix_memalign((void **)&shared_block, 4096, block)) return 1;
  memset(shared_block, 0, block);
  uint64_t *cells = calloc((size_t)HSIZE * (NSLOTS + 2), 8);
  slots = malloc(NSLOTS * sizeof *slots);
  for (int i = 0; i < NSLOTS; i++) slots[i] = cells + (size_t)(2 + i) * HSIZE;
  deduct = log(0.001); mult = (HSIZE - 1) / (log(100000.0) - deduct);
  if (posix_memalign((void **)&timers, 64, 2 * sizeof *timers)) return 1;
  memset(timers, 0, 2 * sizeof *timers);
  timers[0].min = UINT64_MAX;
  counters = calloc(8, 64);
  clock_gettime(CLOCK_MONOTONIC, &run_start);
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 65536);
  pthread_create(&t, &attr, worker, NULL);
  pthread_join(t, NULL);
  return counters[0][3] == (uint64_t)per_thread ? 0 : 1;
}
"""


def build_control(tmp: Path) -> Path:
    (tmp / "control.c").write_text(_CONTROL)
    out = tmp / "control"
    flags = ["-O2", "-fstack-protector-strong", "-fPIE", "-pie"]
    subprocess.run(["gcc", *flags, "-o", out, tmp / "control.c", "-lm", "-lpthread"], check=True)
    return out


def cpu_s(cmd: list[str]) -> float:
    """CPU time (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    add_figures_option(ap)
    args = ap.parse_args()
    missing = [t for t in ("gcc", "sysbench") if shutil.which(t) is None]
    if missing:
        print(f"needs {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"loadavg at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="mem-control-") as name:
        tmp = Path(name)
        tools = {"engine": str(build_driver(tmp)), "control": str(build_control(tmp))}
        print(f"{'case':<22} {'sysbench':>9} {'engine':>9} {'control':>9}  ns/op; ratios")
        for block, pct in CASES:
            runs = {
                "sysbench": lambda n, b=block, p=pct: sysbench_fixed_work(
                    ops=n, block=b, percentile=p
                ),
                **{
                    tool: lambda n, b=block, p=pct, path=path: [
                        path,
                        "seq",
                        "write",
                        str(b),
                        str(n),
                        str(p),
                    ]
                    for tool, path in tools.items()
                },
            }
            per_op: dict[str, list[float]] = {tool: [] for tool in runs}
            for r in range(args.rounds):
                order = list(runs) if r % 2 == 0 else list(reversed(runs))
                for tool in order:
                    spent = cpu_s(runs[tool](N2)) - cpu_s(runs[tool](N1))
                    per_op[tool].append(spent * 1e9 / (N2 - N1))
            ns = {tool: statistics.median(xs) for tool, xs in per_op.items()}
            case = f"seq write {block}B pct{pct}"
            engine, control = ns["sysbench"] / ns["engine"], ns["sysbench"] / ns["control"]
            print(
                f"{case:<22} {ns['sysbench']:>9.2f} {ns['engine']:>9.2f} {ns['control']:>9.2f}"
                f"  engine {engine:.3f}, control {control:.3f} (ops per CPU-second)",
                flush=True,
            )
            report(
                f"{case} engine",
                "ops per CPU-second, fixed work",
                1e9 / ns["engine"],
                1e9 / ns["sysbench"],
                unit="ops/CPU-s",
                reference_tool="sysbench memory",
                ratio=engine,
                goal=between(0.97, 1.03),
                note="the engine's object code in a C driver",
            )
            report(  # no goal: how far a gcc build of the same path lands
                f"{case} control",
                "ops per CPU-second, fixed work",
                1e9 / ns["control"],
                1e9 / ns["sysbench"],
                unit="ops/CPU-s",
                reference_tool="sysbench memory",
                ratio=control,
                note="sysbench's hot path rebuilt by gcc -O2 (see the script)",
            )
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
