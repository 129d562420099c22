"""The memory family's options (one declarative spec) and its frozen settings.

Contract:
- ``SPEC`` is what ``probetop mem`` accepts, under sysbench's option names;
  the CLI, the add-probe prompt and docs/mem.md read it.
- ``MemSettings`` is what one memory probe runs with; ``validate`` raises
  ``UsageProbeError`` for anything sysbench 1.0.20 would refuse (a block size
  that is not a power of two of at least 8 bytes, ...), naming the option.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import check_per_cpu
from probetop.probes.core.options import CommandSpec, Option
from probetop.probes.core.ranges import MIN_INTERVAL_S, check_interval, check_seconds
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
    old_spellings,
    on_off_spelling,
    percentile_option,
    rand_seed_option,
    rand_spec_options,
    rand_type_option,
    rate_option,
    report_checkpoints_option,
    report_interval_option,
    run_word_option,
    sampling_period,
    size_value,
    sysbench_forms,
    threads_option,
    time_option,
    verbosity_option,
)

DEFAULT_BLOCK = 1024  # --memory-block-size 1K
DEFAULT_TOTAL = 100 << 30  # --memory-total-size 100G
WORD = 8  # sysbench's SIZEOF_SIZE_T on 64-bit machines
# Threads per logical CPU at most: each is a busy native loop; more than this
# only queue for the same CPUs (and a stop must reach every one of them).
MAX_THREADS_PER_CPU = 64
# All buffers together (local scope: one per thread) at most this much memory.
MAX_BUFFER_BYTES = 1 << 30

DESCRIPTION = """\
sysbench's `memory` test, measured the way sysbench 1.0.20 measures it: each
of --threads threads runs operations back to back for --time seconds or until
its share of --memory-total-size is done. One operation touches one block of
--memory-block-size bytes word by word (8-byte words): in order (seq) or at
uniformly random words (rnd), storing (write), loading (read) or neither
(none). --memory-scope global shares one block among all threads, local gives
each thread its own. Reports operations/s, MiB/s, latency (ms) and thread
fairness with the same names and meanings as `sysbench memory run`. The loop
is native code (LLVM, via llvmlite) in GIL-free threads (docs/mem.md).
"""

EPILOG = """\
Sizes take K, M, G, T suffixes (powers of 1024), as in sysbench. sysbench's
memory test ignores --events (accepted, as there): the run ends at --time or
when every thread has done its share (--memory-total-size / block size /
threads operations).

examples:
  probetop mem                                     1 thread, seq write of 1 KiB blocks, 10 s
  probetop mem --memory-oper read --threads 2 --headless --report-interval 1
  probetop mem --memory-block-size 1M --memory-access-mode rnd --time 5 --json
  probetop memory --memory-block-size=1M --time=5 run   sysbench's own command line
  probetop --threads=2 --test=memory run               sysbench 0.4's form
"""

SPEC = CommandSpec(
    name="mem",
    help="sysbench-compatible memory operations/s and MiB/s (seq/rnd read/write)",
    description=DESCRIPTION,
    epilog=EPILOG + "\n" + sysbench_forms("memory", "mem"),
    options=(
        threads_option(),
        time_option(),
        Option(
            ("--memory-block-size",),
            "bytes one operation touches: a power of two, at least 8 (default 1K)",
            size_value("memory-block-size", sysbench_reads="sysbench refuses it"),
            DEFAULT_BLOCK,
            "SIZE",
        ),
        Option(
            ("--memory-total-size",),
            "total bytes to transfer; each thread does its share, then stops "
            "(default 100G; 0: no limit)",
            size_value(
                "memory-total-size", sysbench_reads="sysbench reads a fraction as 0: no limit"
            ),
            DEFAULT_TOTAL,
            "SIZE",
        ),
        Option(
            ("--memory-scope",),
            "global: one block shared by all threads; local: one per thread (default global)",
            choices=("global", "local"),
            default="global",
        ),
        Option(
            ("--memory-oper",),
            "what an operation does to each word (default write)",
            choices=("read", "write", "none"),
            default="write",
        ),
        Option(
            ("--memory-access-mode",),
            "words in order (seq) or at random (rnd) (default seq)",
            choices=("seq", "rnd"),
            default="seq",
        ),
        Option(
            ("--memory-hugetlb",),
            "take the blocks from the HugeTLB pool, as sysbench (a System V "
            "segment of huge pages; reserve them first: sysctl vm.nr_hugepages=N; "
            "sysbench's --memory-hugetlb[=on|off]; default off)",
            action="store_true",
            default=False,
        ),
        events_option(
            "sysbench's --events, read as sysbench's memory test reads it: checked as a "
            "whole number, then ignored (the test sets its own event limit to 0; the run "
            "ends at --time or --memory-total-size)"
        ),
        report_interval_option("mem"),
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
        run_word_option("memory"),
    ),
    spellings=(*old_spellings("memory", events=True), on_off_spelling("--memory-hugetlb")),
    refused_exit=REFUSED_EXIT,  # sysbench exits 1 for a refused value or option
)


@dataclass(frozen=True, slots=True)
class MemSettings:
    """What one memory probe runs with (sysbench's names in comments).

    ``time_s`` 0 means no time limit and ``total_size`` 0 no size limit,
    as in sysbench; both 0 runs until stopped, as sysbench does.
    """

    threads: int = 1  # --threads
    time_s: float = DEFAULT_TIME_S  # --time
    block_size: int = DEFAULT_BLOCK  # --memory-block-size
    total_size: int = DEFAULT_TOTAL  # --memory-total-size
    scope: str = "global"  # --memory-scope
    oper: str = "write"  # --memory-oper
    access_mode: str = "seq"  # --memory-access-mode
    hugetlb: bool = False  # --memory-hugetlb: the blocks from the HugeTLB pool
    interval_s: float = 1.0
    percentile: float = 95.0
    report_intervals: bool = False
    histogram: bool = False  # --histogram: print the latency histogram in the text report
    rand_seed: int = 0  # --rand-seed: printed in the report's head (sysbench's)
    verbosity: int = 3  # --verbosity: below 3 no text report (sysbench's); 5 with --debug
    debug: bool = False  # --debug: its head line (and --verbosity 5, as sysbench)
    validation: bool = False  # --validate: its head line; no checks to run
    events: int = 0  # --events: read and ignored, as sysbench's memory test (its warning reads it)
    rate: int = 0  # --rate: mean operations/s of the Poisson arrivals; 0 = back to back

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        time_s: float | None,
        interval_s: float,
        interval_given: bool = False,
    ) -> MemSettings:
        """Settings from parsed ``SPEC`` values plus the common --time and
        --sample-interval (``interval_given``: it was on the command line).
        ``--report-interval`` is sysbench's name for the sampling period, as
        in ``probetop cpu``: given with a different --sample-interval it is
        refused, never silently overridden."""
        period, report_intervals = sampling_period(
            values, interval_s=interval_s, interval_given=interval_given, command="mem"
        )
        percentile = float(values.get("percentile", DEFAULT_PERCENTILE))
        settings = cls(
            threads=values.get("threads", 1),
            time_s=DEFAULT_TIME_S if time_s is None else float(time_s),
            block_size=values.get("memory_block_size", DEFAULT_BLOCK),
            total_size=values.get("memory_total_size", DEFAULT_TOTAL),
            scope=values.get("memory_scope", "global"),
            oper=values.get("memory_oper", "write"),
            access_mode=values.get("memory_access_mode", "seq"),
            hugetlb=bool(values.get("memory_hugetlb", False)),
            interval_s=period,
            percentile=percentile,
            report_intervals=report_intervals,
            histogram=bool(values.get("histogram", False)),
            rand_seed=values.get("rand_seed", 0),
            verbosity=effective_verbosity(values),
            debug=bool(values.get("debug", False)),
            validation=bool(values.get("validate", False)),
            events=values.get("events", 0),
            rate=values.get("rate", 0),
        )
        settings.validate()
        return settings

    @property
    def words(self) -> int:
        return self.block_size // WORD

    def ops_per_thread(self) -> int:
        """sysbench's per-thread budget: total / block / threads (-1: none)."""
        if self.total_size <= 0:
            return -1
        return self.total_size // self.block_size // self.threads

    def validate(self) -> None:
        check_verbosity(self.verbosity)
        if not isinstance(self.threads, int) or self.threads < 1:
            raise UsageProbeError(f"--threads must be 1 or more, got {self.threads}")
        b = self.block_size
        if b < WORD or b & (b - 1):
            raise UsageProbeError(
                f"--memory-block-size must be a power of two of at least {WORD} bytes "
                f"(as in sysbench), got {b}"
            )
        if self.total_size < 0:
            raise UsageProbeError(f"--memory-total-size must be 0 or more, got {self.total_size}")
        if self.scope not in ("global", "local"):
            raise UsageProbeError(f"--memory-scope must be global or local, got {self.scope!r}")
        if self.oper not in ("read", "write", "none"):
            raise UsageProbeError(f"--memory-oper must be read, write or none, got {self.oper!r}")
        if self.access_mode not in ("seq", "rnd"):
            raise UsageProbeError(
                f"--memory-access-mode must be seq or rnd, got {self.access_mode!r}"
            )
        if self.time_s < 0 or not math.isfinite(self.time_s):
            raise UsageProbeError(f"--time must be 0 (no limit) or more seconds, got {self.time_s}")
        check_seconds("--time", self.time_s, zero_means="no limit")
        check_percentile(self.percentile, histogram=self.histogram)
        check_rate(self.rate)
        buffers = self.threads if self.scope == "local" else 1
        if buffers * b > MAX_BUFFER_BYTES:
            raise UsageProbeError(
                f"--memory-block-size {b} x {buffers} buffer(s) needs more than "
                f"{MAX_BUFFER_BYTES >> 20} MiB: use a smaller block or --memory-scope global"
            )
        check_per_cpu(
            "--threads",
            self.threads,
            "thread",
            per_cpu=MAX_THREADS_PER_CPU,
            why="each is a busy loop; more only queue for the same CPUs",
        )
        check_interval(
            "--interval" if not self.report_intervals else "--report-interval",
            self.interval_s,
            floor_s=MIN_INTERVAL_S,
            why="every interval reads and records each thread's counters",
        )
