"""The CPU family's options (one declarative spec) and its frozen settings.

Contract:
- ``SPEC`` is what ``probetop cpu`` accepts; the CLI, the add-probe prompt and
  docs/cpu.md all read it.
- ``CpuSettings`` is what one CPU probe runs with. ``from_options`` builds it
  from parsed option values; ``validate`` raises ``UsageProbeError`` for
  anything sysbench would refuse, with a message that names the option.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import (
    WORKER_STACK_BYTES,
    UnitCost,
    check_busy_workers,
    check_capacity,
    check_per_cpu,
    logical_cpus,
)
from probetop.probes.core.options import (
    CommandSpec,
    Option,
    OptionValueError,
)
from probetop.probes.core.ranges import MIN_INTERVAL_S, check_interval, check_seconds, check_whole
from probetop.probes.core.sysbench.options import (
    DEFAULT_PERCENTILE,
    DEFAULT_TIME_S,
    REFUSED_EXIT,
    check_percentile,
    check_rate,
    check_verbosity,
    effective_verbosity,
    events_option,
    forced_shutdown_option,
    head_flag_options,
    histogram_option,
    int_value,
    old_spellings,
    percentile_option,
    rand_seed_option,
    rand_spec_options,
    rand_type_option,
    rate_option,
    report_checkpoints_option,
    report_interval_option,
    run_word_option,
    sampling_period,
    sysbench_forms,
    threads_option,
    time_option,
    verbosity_option,
)

# What one worker thread costs the machine (measured, docs/cpu.md): its
# counters and 1024-bucket histogram (8.3 KiB), the touched part of its
# 256 KiB stack, the kernel's task and stack, and Python's Thread objects.
THREAD_COST = UnitCost(
    "thread",
    tasks=1,
    resident_bytes=96 * 1024,
    reserved_bytes=WORKER_STACK_BYTES + 4096,  # + the guard page
    detail="stack pages, kernel task, counters and latency histogram",
)
# Threads per logical CPU at most (measured on 2 busy CPUs: 1024 threads
# exited within 0.7 s of a signal, 2000 once took 4.9 s; see docs/cpu.md).
MAX_THREADS_PER_CPU = 256
# Per-interval bookkeeping per thread (numpy reads, the sample's per-thread
# counts, the recorder's line): ~1 us measured; budgeted at 2 us and kept
# under TICK_SHARE of the event loop, which sets the interval floor.
TICK_COST_PER_THREAD_S = 2e-6
TICK_SHARE = 0.05


def thread_list(text: str) -> tuple[int, ...]:
    """``--sweep 1,2,4,8``: distinct thread counts of 1 or more, run in the order given."""
    counts: list[int] = []
    for part in text.split(","):
        try:
            n = int(part.strip(), 10)
        except ValueError:
            raise OptionValueError(
                f"not a list of thread counts: {text!r} (e.g. 1,2,4,8)"
            ) from None
        if n < 1:
            raise OptionValueError(f"thread counts must be 1 or more, got {n}")
        if n in counts:
            raise OptionValueError(f"thread count {n} is listed twice")
        counts.append(n)
    return tuple(counts)


def sweep_thread_counts(ncpu: int | None = None) -> list[int]:
    """The cloud benchmarkers' sweep: 1 .. 2 x logical CPUs."""
    return list(range(1, 2 * (ncpu or logical_cpus()) + 1))


def interval_floor_s(threads: int) -> float:
    """The shortest sampling interval a run with ``threads`` threads can keep."""
    return max(MIN_INTERVAL_S, threads * TICK_COST_PER_THREAD_S / TICK_SHARE)


DESCRIPTION = """\
sysbench's `cpu` test, measured the way sysbench 1.0.20 measures it: each of
--threads threads runs events back to back for --time seconds (or until
--events events are done); one event is a trial-division prime search over
3..--cpu-max-prime-1 with 64-bit integers. Reports events/s, latency (ms) from
sysbench's 1024-bucket histogram and thread fairness, with the same names
and meanings as `sysbench cpu run`. The hot loop is native code (LLVM, via
llvmlite) in GIL-free threads; figures agree with sysbench within a few
percent (docs/cpu.md).
"""

EPILOG = """\
--time defaults to 10 s here, as in sysbench; --time 0 means no time limit
(then give --events). With --sweep, --time is per thread count.

examples:
  probetop cpu                          1 thread, 10 s, cpu-max-prime 10000 (sysbench defaults)
  probetop cpu --threads 2 --headless --report-interval 1
  probetop cpu --events 10000 --time 0 --json
  probetop cpu --sweep --cpu-max-prime 64000 --time 5 --headless   threads 1..2 x CPUs
  probetop cpu --sweep 1,2,4,8 --time 5 --headless                  these thread counts
  probetop cpu --rate=1000 --threads=2 --report-interval=1 run      Poisson arrivals, 1000/s
  probetop cpu --cpu-max-prime=20000 --threads=2 --time=5 --report-interval=1 run
                                                sysbench's own command line, as is
  probetop --threads=2 --time=5 cpu run         sysbench's options-first form
  probetop --test=cpu --cpu-max-prime=20000 run sysbench 0.4's form
"""

# Range rules live in CpuSettings.validate (they need the other options);
# the parsers only check what sysbench's do (an INT: a whole number in an int).
SPEC = CommandSpec(
    name="cpu",
    help="sysbench-compatible CPU events/s (prime trial division), thread sweeps",
    description=DESCRIPTION,
    epilog=EPILOG + "\n" + sysbench_forms("cpu", "cpu"),
    options=(
        threads_option(),
        time_option(),
        events_option("stop after N events in total (default 0: no limit; --time still applies)"),
        Option(
            ("--cpu-max-prime", "--max-prime"),
            "search primes in 3..N-1 per event (sysbench's name; default 10000)",
            int_value("cpu_max_prime"),
            10000,
            "N",
            dest="max_prime",
        ),
        report_interval_option("cpu"),
        rate_option(),
        percentile_option(),
        histogram_option(),
        rand_seed_option(),
        rand_type_option(),
        *rand_spec_options(),
        report_checkpoints_option(),
        forced_shutdown_option(),
        verbosity_option(),
        *head_flag_options(),
        Option(
            ("--sweep",),
            "one run per thread count (--time each) and report events/s and scaling "
            "efficiency: bare, 1..2 x logical CPUs; or a list, e.g. --sweep 1,2,4,8",
            parse=thread_list,
            default=None,
            metavar="LIST",
            nargs="?",
            const=(),
        ),
        run_word_option("cpu"),
        Option(
            ("--engine",),
            "event engine: llvm (native, comparable with sysbench) or python "
            "(fallback, not comparable); default auto",
            choices=("auto", "llvm", "python"),
            default="auto",
        ),
    ),
    spellings=old_spellings("cpu", events=True),
    refused_exit=REFUSED_EXIT,  # sysbench exits 1 for a refused value or option
)


@dataclass(frozen=True, slots=True)
class CpuSettings:
    """What one CPU probe runs with (sysbench's names in brackets).

    ``time_s`` 0 and ``events`` 0 mean "no limit" as in sysbench; both 0
    runs until stopped, as sysbench does (and the demo's endless probe).
    ``interval_s`` is the sample (and report line) interval.
    ``sweep_counts`` are the sweep's thread counts (``--sweep 1,2,4,8``;
    None: 1..2 x logical CPUs). ``percentile`` 0 disables it, as in sysbench.
    """

    threads: int = 1  # --threads
    time_s: float = DEFAULT_TIME_S  # --time
    events: int = 0  # --events
    max_prime: int = 10000  # --cpu-max-prime
    interval_s: float = 1.0
    percentile: float = 95.0  # --percentile
    sweep: bool = False
    engine: str = "auto"
    report_intervals: bool = False  # print [ 1s ] lines in the text report
    histogram: bool = False  # --histogram: print the latency histogram in the text report
    rand_seed: int = 0  # --rand-seed: printed in the report's head (sysbench's)
    verbosity: int = 3  # --verbosity: below 3 no text report (sysbench's); 5 with --debug
    debug: bool = False  # --debug: its head line (and --verbosity 5, as sysbench)
    validation: bool = False  # --validate: its head line; no checks to run
    rate: int = 0  # --rate: mean events/s of the Poisson arrivals; 0 = back to back
    sweep_counts: tuple[int, ...] | None = None

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        time_s: float | None,
        interval_s: float,
        interval_given: bool = False,
    ) -> CpuSettings:
        """Settings from parsed ``SPEC`` values plus the common --time and
        --sample-interval (``interval_given``: it was on the command line);
        validated. ``--report-interval`` is cpu's (sysbench's) name for the
        sampling period, which also prints the [ Ns ] lines: given with a
        different --sample-interval it is refused, never silently overridden."""
        period, report_intervals = sampling_period(
            values, interval_s=interval_s, interval_given=interval_given, command="cpu"
        )
        sweep = values.get("sweep")  # None: no sweep; (): the full sweep; else a list
        settings = cls(
            threads=values.get("threads", 1),
            time_s=DEFAULT_TIME_S if time_s is None else float(time_s),
            events=values.get("events", 0),
            max_prime=values.get("max_prime", 10000),
            interval_s=period,
            percentile=float(values.get("percentile", DEFAULT_PERCENTILE)),
            sweep=sweep is not None,
            engine=values.get("engine", "auto"),
            report_intervals=report_intervals,
            histogram=bool(values.get("histogram", False)),
            rand_seed=values.get("rand_seed", 0),
            verbosity=effective_verbosity(values),
            debug=bool(values.get("debug", False)),
            validation=bool(values.get("validate", False)),
            rate=values.get("rate", 0),
            sweep_counts=tuple(sweep) if sweep else None,
        )
        settings.validate()
        return settings

    def max_threads(self) -> int:
        """The most threads any phase runs (the sweep's last count)."""
        if self.sweep:
            return max(self.sweep_counts or sweep_thread_counts())
        return self.threads

    def validate(self) -> None:
        """Raise UsageProbeError for parameters sysbench would refuse, and
        LimitProbeError (exit 2) for what this machine or the event loop
        cannot hold: more threads than fit, an interval below the floor."""
        check_verbosity(self.verbosity)
        if not isinstance(self.threads, int) or self.threads < 1:
            raise UsageProbeError(f"--threads must be 1 or more, got {self.threads}")
        if not isinstance(self.max_prime, int) or self.max_prime < 3:
            raise UsageProbeError(
                "--cpu-max-prime must be 3 or more (primes are counted from 3), "
                f"got {self.max_prime}"
            )
        if self.max_prime > 2**31 - 1:
            raise UsageProbeError("--cpu-max-prime must fit in 31 bits, as in sysbench")
        if self.time_s < 0 or not math.isfinite(self.time_s):
            raise UsageProbeError(f"--time must be 0 (no limit) or more seconds, got {self.time_s}")
        if self.events < 0:
            raise UsageProbeError(f"--events must be 0 (no limit) or more, got {self.events}")
        check_whole("--events", self.events)
        check_seconds("--time", self.time_s, zero_means="no limit")
        check_percentile(self.percentile, histogram=self.histogram)
        check_rate(self.rate)
        if self.rate and self.engine == "python":
            raise UsageProbeError("--rate needs the native engine (--engine llvm or auto)")
        threads = self.max_threads()
        # What the machine can hold first: the count itself may be the problem.
        check_per_cpu(
            "--threads",
            threads,
            "thread",
            per_cpu=MAX_THREADS_PER_CPU,
            why=(
                "each busy thread needs a CPU turn to see a stop, and beyond that the "
                "turns take longer than the 2 s a stop may take when other load is running"
            ),
        )
        check_capacity("--threads", threads, THREAD_COST)
        if self.engine == "python":
            check_python_threads(threads)
        floor = interval_floor_s(threads)
        check_interval(
            "--sample-interval" if not self.report_intervals else "--report-interval",
            self.interval_s,
            floor_s=floor,
            why=(
                "every interval reads and records each thread's counters"
                if floor <= MIN_INTERVAL_S
                else f"every interval reads and records the counters of all {threads} threads,"
                f" ~{TICK_COST_PER_THREAD_S * 1e6:g} us each, kept under"
                f" {TICK_SHARE:.0%} of the event loop"
            ),
        )


def check_python_threads(threads: int) -> None:
    """The Python engine's workers hold the GIL while they compute: at most
    OVERSUBSCRIBED_PER_CPU per CPU, or the event loop (and Ctrl-C) would wait
    behind them for seconds."""
    check_busy_workers(
        "--threads",
        threads,
        "python-engine thread",
        why="each holds the GIL while it computes",
    )
