"""probetop mem does sysbench memory's per-operation work: instructions per
operation, counted by valgrind's callgrind (exact and independent of the
machine's load), within 3 % of the installed sysbench's.

Each count is a difference of two fixed-work runs (N1 and N2 operations,
time-limited as real runs are, so ``sb_more_events`` reads the clock), so
start-up and exit cancel out. probetop's side runs the engine in-process,
one worker thread per run, all cases in one valgrind run (a Python start
under valgrind costs ~20 s counted: it runs uninstrumented, and counting
starts once every run's thread waits for its go, by callgrind's client
request, so the start-up costs a few CPU-s); sysbench's side is two runs
per case.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from mem_callgrind import (
    FIXED_WORK_TIME_S,
    START_INSTRUMENTATION_SRC,
    busiest,
    per_operation,
    run_callgrind,
    sysbench_fixed_work,
)

pytestmark = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("sysbench") is None,
    reason="needs valgrind and sysbench",
)

N1, N2 = 2_000, 12_000
CASES = [  # (access mode, oper, block bytes, percentile)
    ("seq", "write", 8, 95),  # all bookkeeping: the event loop, timer, histogram
    ("seq", "write", 1024, 0),  # no histogram
    ("seq", "read", 1024, 95),
    ("seq", "none", 1024, 95),
    ("rnd", "write", 1024, 95),
    ("rnd", "none", 1024, 95),
]

# Runs each case's engine twice (N1, then N2 operations), each in a thread
# of its own, one at a time. Every thread exists from the start (valgrind
# reuses a finished thread's number): threads 2, 3 are the first case's
# runs, 4, 5 the next one's, ...
_SCRIPT = """
import ctypes, mmap, threading, time
from probetop.probes.mem.engine import (
    SharedHistogram, SharedRun, ThreadJob, load_engine, new_rows, setup_row)
engine = load_engine()
keep, runs = [], []
for mode, oper, block, pct in {cases!r}:
    for n in ({n1}, {n2}):
        m = mmap.mmap(-1, block)
        rows, hist, shared = new_rows(1), SharedHistogram(), SharedRun()
        engine.setup(shared, mode=mode, oper=oper, block_size=block, total_size=n * block,
                     percentile=pct, hist=hist, rows=rows)
        setup_row(rows[0], buffer_address=ctypes.addressof(ctypes.c_char.from_buffer(m)),
                  budget=n, rng=(0x9E3779B97F4A7C15, 12345))
        go = threading.Event()
        def work(go=go, shared=shared, row=rows[0]):
            go.wait()
            shared.set_clock(time.clock_gettime_ns(time.CLOCK_MONOTONIC), {limit} * 10**9)
            engine.run(ThreadJob(shared, 0, row))
        thread = threading.Thread(target=work)
        thread.start()
        keep.append(m)
        runs.append((go, thread, rows, n))
start_instrumentation()  # counted from here: every run's thread is waiting on its go
for go, thread, rows, n in runs:
    go.set()
    thread.join()
    assert rows[0][0] == n, (rows[0][0], n)
"""


def _sysbench_per_op(mode: str, oper: str, block: int, pct: int, tmp: Path) -> float:
    counts = []
    for n in (N1, N2):
        cmd = sysbench_fixed_work(ops=n, block=block, oper=oper, mode=mode, percentile=pct)
        threads = run_callgrind(cmd, tmp / f"sb-{mode}-{oper}-{block}-{pct}-{n}.out", timeout=900)
        counts.append(busiest(threads, 1)[0].instructions)  # thread 1 starts and waits
    return per_operation(*counts, N1, N2)


def test_instructions_per_operation_are_sysbenchs(tmp_path: Path) -> None:
    script = START_INSTRUMENTATION_SRC + _SCRIPT.format(
        cases=CASES, n1=N1, n2=N2, limit=FIXED_WORK_TIME_S
    )
    threads = run_callgrind(
        [sys.executable, "-c", script], tmp_path / "probetop.out", timeout=900, instr_atstart=False
    )
    ours = {t.number: t.instructions for t in threads}
    rows = []
    for i, (mode, oper, block, pct) in enumerate(CASES):
        per_op = per_operation(ours[2 + 2 * i], ours[3 + 2 * i], N1, N2)
        theirs = _sysbench_per_op(mode, oper, block, pct, tmp_path)
        rows.append((f"{mode} {oper} {block}B pct{pct}", per_op, theirs, per_op / theirs))
    report = "\n".join(f"{n}: {a:.1f} vs {b:.1f} ({r:.3f})" for n, a, b, r in rows)
    print(report)  # pytest -s shows the figures
    assert all(0.97 <= r <= 1.03 for *_, r in rows), report
