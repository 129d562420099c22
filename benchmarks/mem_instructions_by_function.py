#!/usr/bin/env python3
"""Instructions per operation, function by function: probetop mem's engine vs
sysbench memory, counted by valgrind's callgrind (exact, load-independent).

The engine's LLVM module is built as the JIT builds it (same target machine)
into an object file and linked into a small C driver (needs gcc), so
callgrind can name its functions; sysbench's exported functions are named,
its static memory events shown by address. Each figure is the difference of
two time-limited fixed-work runs (N1 and N2 operations: start-up cancels out)
divided by N2 - N1.

Usage: .venv/bin/python benchmarks/mem_instructions_by_function.py
       [--only TEXT]   (cases whose name contains TEXT)
Needs valgrind, gcc and sysbench.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "mem"))
from figures import add_figures_option, between, report
from mem_callgrind import (
    FIXED_WORK_TIME_S,
    busiest,
    per_operation,
    run_callgrind,
    sysbench_fixed_work,
)

CASES = [  # (access mode, oper, block bytes, percentile)
    ("seq", "write", 1024, 95),
    ("seq", "read", 1024, 95),
    ("seq", "none", 1024, 95),
    ("rnd", "write", 1024, 95),
    ("rnd", "read", 1024, 95),
    ("rnd", "none", 1024, 95),
    ("seq", "write", 8, 95),
    ("seq", "write", 1024, 0),
    ("seq", "write", 1 << 20, 95),
    ("seq", "read", 1 << 20, 95),
]

_DRIVER = r"""
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "consts.h"
extern int64_t thread_run(int64_t *ctx, int64_t *row, int tid);
extern char memory_next_event[], event_seq_write[], event_seq_read[], event_seq_none[],
    event_rnd_write[], event_rnd_read[], event_rnd_none[];
static int64_t ctx[CTX_SLOTS] __attribute__((aligned(64)));
static int64_t rows[ROW_SLOTS] __attribute__((aligned(64)));
static int64_t slots[HIST_SLOTS];
static void *worker(void *arg) { (void)arg; thread_run(ctx, rows, 0); return NULL; }
int main(int argc, char **argv) {
  const char *mode = argv[1], *oper = argv[2];
  long block = atol(argv[3]), ops = atol(argv[4]);
  int rnd = !strcmp(mode, "rnd");
  char *events[2][3] = {{event_seq_write, event_seq_read, event_seq_none},
                        {event_rnd_write, event_rnd_read, event_rnd_none}};
  int op = !strcmp(oper, "write") ? 0 : !strcmp(oper, "read") ? 1 : 2;
  void *buf = aligned_alloc(4096, block < 4096 ? 4096 : block);
  int64_t *hist = calloc(HIST_SLOTS * HIST_SIZE, 8);
  struct timespec ts;
  memset(buf, 0, block);
  for (int i = 0; i < HIST_SLOTS; i++) slots[i] = (int64_t)(hist + i * HIST_SIZE);
  ctx[CTX_CLOCK_GETTIME] = (int64_t)clock_gettime;
  ctx[CTX_LOG] = (int64_t)(double (*)(double))log;
  ctx[CTX_FLOOR] = (int64_t)(double (*)(double))floor;
  ctx[CTX_NEXT_EVENT] = (int64_t)memory_next_event;
  ctx[CTX_EXECUTE_EVENT] = (int64_t)events[rnd][op];
  ctx[CTX_BLOCK_SIZE] = block;
  ctx[CTX_TOTAL_SIZE] = ops * block;
  ctx[CTX_PERCENTILE] = atoi(argv[5]) > 0;
  ctx[CTX_HIST_SLOTS] = (int64_t)slots;
  ctx[CTX_DEDUCT] = DEDUCT_BITS;
  ctx[CTX_MULT] = MULT_BITS;
  ctx[CTX_HIST_SIZE] = HIST_SIZE;
  ctx[CTX_ROWS] = (int64_t)rows;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ctx[CTX_START_S] = ts.tv_sec;
  ctx[CTX_START_S + 1] = ts.tv_nsec;
  ctx[CTX_MAX_TIME_NS] = TIME_LIMIT_NS;
  rows[STAT_LAT_MIN] = INT64_MAX;
  rows[ROW_BUF] = (int64_t)buf;
  rows[ROW_BUDGET] = ops;
  rows[ROW_RNG] = (int64_t)0x9E3779B97F4A7C15ULL;
  rows[ROW_RNG + 1] = 12345;
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  if (rows[0] != ops) { fprintf(stderr, "ran %ld of %ld\n", (long)rows[0], ops); return 1; }
  return 0;
}
"""

# sysbench 1.0.20 (Debian's build): its static memory events, by address
SYSBENCH_EVENTS = {
    ("seq", "write"): "0x000000000001a940",
    ("seq", "read"): "0x000000000001a860",
    ("seq", "none"): "0x000000000001a7c0",
    ("rnd", "write"): "0x000000000001a6e0",
    ("rnd", "read"): "0x000000000001b540",
    ("rnd", "none"): "0x000000000001b300",
}
SYSBENCH_NAMES = {
    "0x000000000000c600": "thread_run",  # worker_thread, thread_run inlined
    "0x000000000001a6a0": "memory_next_event",
}


def build_driver(tmp: Path) -> Path:
    import llvmlite.binding as llvm
    from probetop.probes.core.sysbench.counters import STAT_LAT_MIN
    from probetop.probes.mem import engine as E

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
    machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        opt=2, jit=True
    )
    module = llvm.parse_assembly(E._ir(E._loop_skips(llvm)))  # the loops placed as the JIT's
    module.triple = llvm.get_process_triple()
    module.data_layout = str(machine.target_data)
    pb = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(module, pb)
    (tmp / "engine.o").write_bytes(machine.emit_object(module))
    consts = {n: getattr(E, n) for n in dir(E) if n.startswith(("CTX_", "ROW_"))}
    consts |= {"HIST_SLOTS": E.HIST_SLOTS, "HIST_SIZE": E.HIST_SIZE, "STAT_LAT_MIN": STAT_LAT_MIN}
    lines = [f"#define {k} {v}" for k, v in consts.items() if isinstance(v, int)]
    lines += [
        f"#define DEDUCT_BITS {E._double_bits(E.HIST_DEDUCT)}LL",
        f"#define MULT_BITS {E._double_bits(E.HIST_MULT)}LL",
        f"#define TIME_LIMIT_NS {FIXED_WORK_TIME_S * 10**9}LL",
    ]
    (tmp / "consts.h").write_text("\n".join(lines) + "\n")
    (tmp / "driver.c").write_text(_DRIVER)
    out = tmp / "driver"
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-no-pie",
            "-o",
            out,
            tmp / "driver.c",
            tmp / "engine.o",
            "-lm",
            "-lpthread",
        ],
        check=True,
        cwd=tmp,
    )
    return out


def per_function(cmd: list[str], tmp: Path) -> tuple[int, collections.Counter[str]]:
    """The worker thread's total and self cost per function."""
    worker = busiest(run_callgrind(cmd, tmp / "cg.out"), 1)[0]
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(worker.path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    funcs: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+) \([ \d.]+%\)\s+(\S+)", line)
        if m and "PROGRAM" not in line:
            funcs[m.group(2).split(":", 1)[-1].split("@")[0]] += int(m.group(1).replace(",", ""))
    return worker.instructions, funcs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run only cases whose name contains this")
    add_figures_option(ap)
    args = ap.parse_args()
    missing = [t for t in ("valgrind", "gcc", "sysbench") if shutil.which(t) is None]
    if missing:
        print(f"needs {', '.join(missing)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mem-instr-") as name:
        tmp = Path(name)
        driver = build_driver(tmp)
        for mode, oper, block, pct in CASES:
            case = f"{mode} {oper} {block}B pct{pct}"
            if args.only and args.only not in case:
                continue
            n1, n2 = (2_000, 12_000) if block <= 65536 else (10, 60)
            rows = {}
            for tool in ("probetop", "sysbench"):
                counts = []
                for n in (n1, n2):
                    if tool == "probetop":
                        cmd = [str(driver), mode, oper, str(block), str(n), str(pct)]
                    else:
                        cmd = sysbench_fixed_work(
                            ops=n, block=block, oper=oper, mode=mode, percentile=pct
                        )
                    counts.append(per_function(cmd, tmp))
                (t1, f1), (t2, f2) = counts
                names = {SYSBENCH_EVENTS[(mode, oper)]: f"event_{mode}_{oper}", **SYSBENCH_NAMES}
                funcs = {names.get(k, k): (f2[k] - f1.get(k, 0)) / (n2 - n1) for k in f2}
                rows[tool] = (per_operation(t1, t2, n1, n2), funcs)
            ours, theirs = rows["probetop"][0], rows["sysbench"][0]
            print(f"{case}: probetop {ours:.1f}  sysbench {theirs:.1f}  ratio {ours / theirs:.3f}")
            report(
                case,
                "instructions per operation",
                ours,
                theirs,
                unit="instructions",
                reference_tool="sysbench memory",
                ratio=ours / theirs,
                goal=between(0.97, 1.03),
                note="callgrind; the engine's object code in a C driver",
            )
            keys = sorted(set(rows["probetop"][1]) | set(rows["sysbench"][1]))
            for key in sorted(keys, key=lambda k: -rows["sysbench"][1].get(k, 0)):
                a, b = rows["probetop"][1].get(key, 0.0), rows["sysbench"][1].get(key, 0.0)
                if max(a, b) >= 0.5:
                    print(f"  {key:<28} {a:10.1f} {b:10.1f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
