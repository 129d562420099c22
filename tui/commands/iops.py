"""`probetop iops TARGET`: fio-style IOPS and latency on a file or block device."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import Any

from probetop.probes.core.base import Probe, ProbeError, UsageProbeError
from probetop.tui.argtypes import number, whole_number

NAME = "iops"
HELP = "fio-style IOPS, bandwidth and latency percentiles on a file or block device"
DESCRIPTION = """\
Random or sequential I/O on TARGET (a regular file, created at --size for
writes, or a block device), measured the way fio measures it: per-interval
IOPS and bytes/s per direction and completion-latency percentiles, beside the
kernel's own counters for the same disk. O_DIRECT unless --buffered.
"""
EPILOG = """\
examples:
  probetop iops /dev/nvme0n1                     4k random reads, 1 job, queue depth 1
  probetop iops /dev/nvme0n1 --jobs 4 --iodepth 32 --time 30 --json
  probetop iops ./test.img --size 1G --rw randwrite
  probetop iops /mnt/efs/f --size 1M --rw write --bs 1 --buffered --sync --jobs 20
"""
FOCUS = "iops"


def size_arg(text: str) -> int:
    """argparse type: a fio-style size ("4k", "1M")."""
    from probetop.probes.disk.target import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


positive_int_arg = whole_number(minimum=1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="regular file or block device")
    parser.add_argument(
        "--rw",
        default="randread",
        choices=("read", "write", "randread", "randwrite", "randrw", "rw"),
        help="I/O pattern, as fio's --rw (default randread)",
    )
    parser.add_argument(
        "--rwmixread",
        type=whole_number(),
        default=50,
        metavar="PCT",
        help="reads in %% for randrw/rw",
    )
    parser.add_argument(
        "--bs", type=size_arg, default=4096, metavar="SIZE", help="block size: 1, 512, 4k, 1M..."
    )
    parser.add_argument(
        "--jobs", type=positive_int_arg, default=1, metavar="N", help="parallel jobs"
    )
    parser.add_argument(
        "--iodepth",
        type=positive_int_arg,
        default=1,
        metavar="N",
        help="I/Os in flight per job (1 = psync, more = kernel AIO like fio's libaio)",
    )
    parser.add_argument(
        "--size", type=size_arg, default=None, metavar="SIZE", help="area to use (file: create it)"
    )
    parser.add_argument(
        "--offset", type=size_arg, default=0, metavar="OFF", help="start of the area"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--direct", dest="direct", action="store_true", default=None, help="force O_DIRECT"
    )
    mode.add_argument(
        "--buffered", dest="direct", action="store_false", help="use the page cache (no O_DIRECT)"
    )
    parser.add_argument("--sync", action="store_true", help="open with O_SYNC (fio --sync=1)")
    parser.add_argument(
        "--rate-iops",
        type=positive_int_arg,
        default=None,
        metavar="N",
        help="cap each job at N I/Os per second (fio --rate_iops)",
    )
    parser.add_argument(
        "--yes-destroy-data",
        metavar="TARGET",
        default=None,
        help="confirm writes to a block device without the dashboard; must name TARGET",
    )
    parser.add_argument(
        "--ramp", type=number(), default=0.0, metavar="S", help="run S seconds before totals start"
    )


def names_target(given: str | None, target: str) -> bool:
    """True if a --yes-destroy-data value names ``target`` (same path or same file)."""
    if not given:
        return False
    return given == target or os.path.realpath(given) == os.path.realpath(target)


def make_probe(args: argparse.Namespace, confirmed: bool) -> Probe:
    from probetop.probes.disk.iops import IopsProbe

    return IopsProbe(
        args.target,
        rw=args.rw,
        rwmixread=args.rwmixread,
        bs=args.bs,
        jobs=args.jobs,
        iodepth=args.iodepth,
        size=args.size,
        offset=args.offset,
        direct=args.direct,
        sync=args.sync,
        time_s=getattr(args, "time", None) or None,
        ramp_s=args.ramp,
        rate_iops=args.rate_iops or 0,
        confirmed=confirmed,
        interval_s=getattr(args, "interval", 1.0) or 1.0,
    )


def build_probes(args: argparse.Namespace) -> list[Probe]:
    if args.ramp < 0:
        raise UsageProbeError("--ramp must be zero or more seconds")
    if args.yes_destroy_data and not names_target(args.yes_destroy_data, args.target):
        raise UsageProbeError(
            f"--yes-destroy-data={args.yes_destroy_data} does not name the target "
            f"{args.target}: it must name it exactly"
        )
    probe = make_probe(args, names_target(args.yes_destroy_data, args.target))
    # The probe stops itself after --ramp + --time (fio's runtime excludes the
    # ramp), so the generic deadline must not cut it short.
    args.time = None
    return [probe]


def run(args: argparse.Namespace) -> int | None:
    """Writes to a block device in the dashboard ask for the typed name first;
    everything else goes the generic way (return None)."""
    from probetop.tui.launch import fail, launch, wants_headless

    writes = args.rw not in ("read", "randread")
    if not writes or args.yes_destroy_data or wants_headless(args):
        return None
    if not os.path.exists(args.target) or not stat.S_ISBLK(os.stat(args.target).st_mode):
        return None
    probe = make_probe(args, confirmed=False)
    try:
        probe.prepare()
    except ProbeError as exc:
        if "destroys data" not in str(exc):
            return fail(str(exc), exc.exit_code)
    from probetop.tui.screens.confirm import ask_destroy_confirmation

    if not ask_destroy_confirmation(args.target, args.rw, []):
        return fail("writes not confirmed: nothing was written", 1)
    confirmed = make_probe(args, confirmed=True)
    args.time = None  # the probe stops itself after --ramp + --time
    return launch(args, [confirmed], sys.modules[__name__])


def demo_probes(ctx: Any) -> list[Probe]:
    """4k random reads on a 64 MiB scratch file the demo creates and removes,
    capped at 2000 IOPS so the demo never saturates the disk it shares."""
    from probetop.probes.disk.iops import IopsProbe

    path = str(ctx.scratch / "iops.img")
    interval = getattr(ctx, "interval_s", 1.0)
    return [IopsProbe(path, size=64 << 20, rate_iops=2000, interval_s=interval)]


def _direction_lines(name: str, d: dict[str, Any]) -> list[str]:
    clat = d["clat_ns"]
    pct = clat["percentile"]
    lines = [
        f"  {name}: IOPS={d['iops']:,.0f}, BW={d['bw_bytes'] / 1e6:,.1f}MB/s "
        f"({d['io_bytes'] / 1e6:,.1f}MB/{d['runtime_ms']}msec), ios={d['total_ios']}"
        + (f", errors={d['errors']}" if d.get("errors") else ""),
        f"    clat (usec): min={clat['min'] / 1e3:.2f}, max={clat['max'] / 1e3:.2f}, "
        f"avg={clat['mean'] / 1e3:.2f}, stdev={clat['stddev'] / 1e3:.2f}",
    ]
    if pct:
        cells = [f"{float(k):g}th={v / 1e3:.1f}" for k, v in pct.items()]
        lines.append("    clat percentiles (usec): " + ", ".join(cells[:9]))
        lines.append("                             " + ", ".join(cells[9:]))
    return lines


def report(args: argparse.Namespace, result: Any) -> int:
    """fio-shaped JSON with --json; fio-like text otherwise. Exit 2 if it failed."""
    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if error:
        summary["error"] = error
    if getattr(args, "json", False):
        json.dump(summary, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        out = [f"probetop iops {probe.target_path}: {result.reason}, {result.duration_s:.1f} s"]
        out += [f"  note: {n}" for n in summary.get("notes", [])]
        params = summary.get("params", {})
        if params.get("rw") not in ("write", "randwrite") and "read" in summary:
            out += _direction_lines("read", summary["read"])
        if params.get("rw") not in ("read", "randread") and "write" in summary:
            out += _direction_lines("write", summary["write"])
        out.append(f"  same job in fio: {summary.get('fio_command')}")
        if error:
            out.append(f"  error: {error}")
        print("\n".join(out))
    return 2 if error else 0
