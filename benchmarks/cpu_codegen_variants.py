#!/usr/bin/env python3
"""Where a JIT's gap to sysbench comes from: codegen variants vs sysbench, one run.

First, without running anything: the divide loop of sysbench's binary beside
the loop LLVM makes of the event's IR for each x86-64 CPU model (cross-
compiled, read back with objdump): the IR's loop changes with the CPU,
sysbench's never does (the reason the shipped x86-64 event is sysbench's own
loop). Then it builds the event several ways (sysbench's x86-64 loop, as
shipped; the IR for this CPU with LLVM's 64->32-bit divide bypass on/off and
the first divisor l = 2 peeled into a bit test or not, as gcc -O2 does) and
measures each against ``sysbench cpu --threads=1`` in alternation, as events
per CPU-second the thread got (robust on a busy machine; wall figures are in
cpu_vs_sysbench.py). Then the per-event bookkeeping cost (two clock reads,
histogram update) of both tools from --max-prime 3, where an event is empty.

Usage: .venv/bin/python benchmarks/cpu_codegen_variants.py [--time 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time

from cpu_sched import cpu_model
from figures import add_figures_option, report
from probetop.probes.cpu.engine import (
    NativeEngine,
    SharedRun,
    ThreadJob,
)
from probetop.probes.cpu.event_code import (
    EVENT_IR,
    EVENT_SYSBENCH_X86_64,
    event_ir,
)
from probetop.probes.cpu.machine_code import (
    MachineCodeUnavailable,
    describe,
    engine_event_loop,
    object_event_loop,
    sysbench_event_loop,
)

SHIPPED = "shipped: sysbench's x86-64 loop"
VARIANTS: dict[str, dict[str, object]] = {
    SHIPPED: {"event_code": EVENT_SYSBENCH_X86_64},
    "IR, host CPU, bypass off, peeled": {"event_code": EVENT_IR},
    "IR, host CPU, bypass off, no peel": {"event_code": EVENT_IR, "peel": False},
    "IR, host CPU, bypass on (numba)": {
        "event_code": EVENT_IR,
        "feature_overrides": ("+idivq-to-divl",),
        "peel": False,
    },
}

# x86-64 CPU models LLVM knows (Intel, AMD), for the cross-compiled table.
TARGETS = (
    "x86-64",
    "haswell",
    "skylake",
    "cascadelake",
    "icelake-server",
    "sapphirerapids",
    "znver1",
    "znver2",
    "znver3",
    "znver4",
    "znver5",
)


def ir_loop_for(cpu: str) -> str:
    """The IR's divide loop as LLVM compiles it for ``cpu`` (not run)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    triple = "x86_64-unknown-linux-gnu"
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features="-idivq-to-divl", opt=2, jit=True
    )
    module = llvm.parse_assembly(event_ir(True, EVENT_IR))
    module.triple = triple
    module.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(module, pb)
    return describe(object_event_loop(bytes(tm.emit_object(module))))


def print_loops(engines: dict[str, NativeEngine]) -> None:
    try:
        print(f"# sysbench ({shutil.which('sysbench')}): {describe(sysbench_event_loop())}")
        for name, engine in engines.items():
            print(f"# {name}: {describe(engine_event_loop(engine))}")
        print("# the event's IR as LLVM compiles it for each CPU model (bypass off; not run):")
        for cpu in TARGETS:
            print(f"#   {cpu:<15} {ir_loop_for(cpu)}")
    except MachineCodeUnavailable as exc:
        print(f"# (no machine code comparison: {exc})")


def sysbench_per_cpu_s(max_prime: int, seconds: float) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            "sysbench",
            "cpu",
            "--threads=1",
            f"--time={seconds:g}",
            f"--cpu-max-prime={max_prime}",
            "run",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    events = int(re.search(r"total number of events:\s+(\d+)", out).group(1))  # type: ignore[union-attr]
    return events / cpu


def engine_per_cpu_s(engine: NativeEngine, max_prime: int, seconds: float) -> float:
    shared = SharedRun(max_prime=max_prime)
    job = ThreadJob(shared)
    box: dict[str, int] = {}

    def work() -> None:
        c0 = time.thread_time_ns()
        engine.run_events(job)
        box["cpu"] = time.thread_time_ns() - c0

    shared.deadline_ns = time.monotonic_ns() + int(seconds * 1e9)
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return job.stats[0] / (box["cpu"] / 1e9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-prime", type=int, nargs="*", default=[10000, 64000])
    add_figures_option(parser)
    args = parser.parse_args()
    if shutil.which("sysbench") is None:
        print("sysbench is not installed", file=sys.stderr)
        return 2
    engines = {
        name: NativeEngine(
            event_code=str(v["event_code"]),
            feature_overrides=v.get("feature_overrides", ("-idivq-to-divl",)),  # type: ignore[arg-type]
            peel_first_divisor=bool(v.get("peel", True)),
        )
        for name, v in VARIANTS.items()
        if v["event_code"] == EVENT_IR or platform.machine() == "x86_64"
    }
    print(f"# CPU: {cpu_model()} ({platform.machine()}, {os.cpu_count()} CPUs)")
    print_loops(engines)
    print(f"{'max-prime':>9}  {'variant':<34} {'ratio vs sysbench (events per CPU-s)':>36}")
    for max_prime in args.max_prime:
        ratios: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.rounds):
            for name, engine in engines.items():
                ref = sysbench_per_cpu_s(max_prime, args.time)
                ours = engine_per_cpu_s(engine, max_prime, args.time)
                ratios[name].append(ours / ref)
        for name, values in ratios.items():
            pairs = " ".join(f"{x:.3f}" for x in values)
            print(f"{max_prime:>9}  {name:<34} {statistics.median(values):>8.3f}   ({pairs})")
            report(
                f"variant {name}, max-prime {max_prime}",
                "events per CPU-second",
                None,
                None,
                reference_tool="sysbench cpu",
                ratio=statistics.median(values),
            )
    # Per-event bookkeeping: at --max-prime 3 the event does no work at all.
    shipped = NativeEngine()
    ours = statistics.median(engine_per_cpu_s(shipped, 3, 1.0) for _ in range(3))
    ref = statistics.median(sysbench_per_cpu_s(3, 1.0) for _ in range(3))
    print(
        f"# per-event overhead (max-prime 3): probetop {1e9 / ours:.0f} ns, "
        f"sysbench {1e9 / ref:.0f} ns per event"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
