"""`probetop cpu`: sysbench 1.0.20 ``cpu`` events/s, latency and fairness, live."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from probetop.probes.core.base import Probe
from probetop.tui.argtypes import number, whole_number

NAME = "cpu"
HELP = "sysbench-compatible CPU events/s (prime trial division), thread sweeps"
DESCRIPTION = """\
sysbench's `cpu` test, measured the way sysbench 1.0.20 measures it: each of
--threads threads runs events back to back for --time seconds (or until
--events events are done); one event is a trial-division prime search over
3..--max-prime-1 with 64-bit integers. Reports events/s, latency (ms) from
sysbench's 1024-bucket histogram and thread fairness, with the same names
and meanings as `sysbench cpu run`. The hot loop is native code (LLVM, via
llvmlite) in GIL-free threads; figures agree with sysbench within a few
percent (docs/cpu.md).
"""
EPILOG = """\
--time defaults to 10 s here, as in sysbench; --time 0 means no time limit
(then give --events). With --sweep, --time is per thread count.

examples:
  probetop cpu                                  1 thread, 10 s, max-prime 10000 (sysbench defaults)
  probetop cpu --threads 2 --headless --report-interval 1
  probetop cpu --events 10000 --time 0 --json
  probetop cpu --sweep --max-prime 64000 --time 5 --headless   threads 1..2 x CPUs
"""
FOCUS = "cpu"
DEFAULT_TIME_S = 10.0


# Range checks are the probe's (clear message, exit 2); here only "a number".
_int_arg = whole_number()
_float_arg = number()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads", type=_int_arg, default=1, metavar="N", help="worker threads (default 1)"
    )
    parser.add_argument(
        "--events",
        type=_int_arg,
        default=0,
        metavar="N",
        help="stop after N events in total (default 0: no limit; --time still applies)",
    )
    parser.add_argument(
        "--max-prime",
        type=_int_arg,
        default=10000,
        metavar="N",
        help="search primes in 3..N-1 per event (sysbench --cpu-max-prime, default 10000)",
    )
    parser.add_argument(
        "--report-interval",
        type=_float_arg,
        default=None,
        metavar="S",
        help="print per-interval lines every S seconds in the headless report "
        "(per-interval, not cumulative; default: none, samples every --interval)",
    )
    parser.add_argument(
        "--percentile",
        type=_float_arg,
        default=95.0,
        metavar="P",
        help="latency percentile to report (default 95)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="run once per thread count 1..2 x logical CPUs (--time each) and "
        "report events/s and scaling efficiency",
    )
    parser.add_argument(
        "--engine",
        choices=("auto", "llvm", "python"),
        default="auto",
        help="event engine: llvm (native, comparable with sysbench) or python "
        "(fallback, not comparable); default auto",
    )


def build_probes(args: argparse.Namespace) -> list[Probe]:
    """One CpuProbe from the options; bad values raise UsageProbeError (exit 2)."""
    from probetop.probes.cpu.probe import CpuProbe

    time_s = getattr(args, "time", None)
    interval = args.report_interval or getattr(args, "interval", 1.0) or 1.0
    probe = CpuProbe(
        threads=args.threads,
        time_s=DEFAULT_TIME_S if time_s is None else float(time_s),
        events=args.events,
        max_prime=args.max_prime,
        interval_s=interval,
        percentile=args.percentile,
        sweep=args.sweep,
        engine=args.engine,
    )
    probe.validate()
    if args.report_interval is not None and args.report_interval <= 0:
        from probetop.probes.core.base import UsageProbeError

        raise UsageProbeError(f"--report-interval must be positive, got {args.report_interval}")
    # The probe ends itself after --time (per thread count with --sweep) or
    # --events; the generic deadline must not cut a sweep or an event run short.
    args.time = None
    return [probe]


def demo_probes(ctx: Any) -> list[Probe]:
    """One thread, no end, so the machine stays usable while the demo runs."""
    from probetop.probes.cpu.probe import CpuProbe

    return [
        CpuProbe(
            threads=1,
            time_s=0,
            events=0,
            interval_s=getattr(ctx, "interval_s", 1.0),
            unbounded_ok=True,
        )
    ]


def report(args: argparse.Namespace, result: Any) -> int:
    """sysbench-style text, or one JSON document with --json. Exit 1 on probe errors."""
    from probetop.probes.cpu.report import format_report, json_document

    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if getattr(args, "json", False):
        doc = json_document(summary, reason=result.reason)
        if error:
            doc["error"] = error
        json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(
            format_report(
                summary,
                show_intervals=args.report_interval is not None,
                reason=result.reason,
            )
        )
        if error:
            sys.stdout.write(f"probetop: error: {error}\n")
    if error or summary.get("worker_errors"):
        return 1
    return 130 if result.interrupted else 0
