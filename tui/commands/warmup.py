"""`probetop warmup TARGET`: a full, resumable read (or write) pass over a volume."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from probetop.probes.core.base import Probe, ProbeError, UsageProbeError
from probetop.tui.argtypes import number
from probetop.tui.commands.iops import names_target, positive_int_arg, size_arg

NAME = "warmup"
HELP = "warm up (initialize) a volume: a full, resumable, observable read or write pass"
DESCRIPTION = """\
A full pass over TARGET like `fio --rw=read --bs=1M --iodepth=32
--ioengine=libaio --direct=1` (the documented way to initialize a volume
restored from a snapshot), but parallel, observable and resumable: progress,
MB/s, IOPS, ETA, a map of done regions and plateau detection with fio's
steady-state criteria. Default: a read pass, which keeps the data.

--write DESTROYS every byte in the range. It needs a typed confirmation of
the target's name in the dashboard, or --yes-destroy-data=TARGET headless,
and is refused whatever the flags for a mounted device (or one with a mounted
partition), a device held by LVM/RAID/dm, active swap, or the device holding /.
"""
EPILOG = """\
examples:
  probetop warmup /dev/nvme1n1                         read pass (keeps data)
  probetop warmup /dev/nvme1n1 --resume                continue after Ctrl-C / kill / SSH drop
  probetop warmup /dev/nvme1n1 --write --yes-destroy-data=/dev/nvme1n1 --json
  probetop warmup /dev/nvme1n1 --pattern randwrite --time 600 --yes-destroy-data=/dev/nvme1n1
"""
FOCUS = "warmup"


def _range(text: str) -> tuple[int | None, int | None]:
    from probetop.probes.disk.target import parse_range

    try:
        return parse_range(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="TARGET", help="block device or regular file")
    parser.add_argument("--read", action="store_true", help="read pass (the default)")
    parser.add_argument(
        "--write", action="store_true", help="write pass: DESTROYS DATA (with --read: write, read)"
    )
    parser.add_argument(
        "--pattern",
        choices=("seq", "randwrite"),
        default="seq",
        help="seq: one pass over the range (default); randwrite: random writes for --time "
        "seconds, the fresh-SSD curve (destroys data)",
    )
    parser.add_argument(
        "--bs",
        type=size_arg,
        default=None,
        metavar="SIZE",
        help="block size (1M; 4k for randwrite)",
    )
    parser.add_argument(
        "--jobs", type=positive_int_arg, default=1, metavar="N", help="parallel jobs"
    )
    parser.add_argument(
        "--iodepth", type=positive_int_arg, default=32, metavar="N", help="I/Os in flight per job"
    )
    parser.add_argument(
        "--range", type=_range, default=(None, None), metavar="START-END", help="bytes to cover"
    )
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="read pass checks the offset stamp a probetop write pass left in every sector",
    )
    parser.add_argument(
        "--checkpoint", metavar="FILE", default=None, help="checkpoint file (default: beside it)"
    )
    parser.add_argument(
        "--steadystate",
        default="iops_slope:0.01%",
        metavar="CRIT:LIMIT",
        help="plateau criterion as fio's: iops, bw, iops_slope, bw_slope "
        "(default iops_slope:0.01%%)",
    )
    parser.add_argument(
        "--ss-dur", type=number(), default=30.0, metavar="S", help="plateau window in seconds"
    )
    parser.add_argument(
        "--ss-ramp", type=number(), default=0.0, metavar="S", help="ignore the first S seconds"
    )
    parser.add_argument(
        "--rate-iops",
        type=positive_int_arg,
        default=None,
        metavar="N",
        help="cap each job at N I/Os per second (fio --rate_iops)",
    )
    parser.add_argument(
        "--buffered", action="store_true", help="use the page cache instead of O_DIRECT"
    )
    parser.add_argument(
        "--yes-destroy-data",
        metavar="TARGET",
        default=None,
        help="confirm a write pass without the dashboard; must name TARGET exactly",
    )


def pass_name(args: argparse.Namespace) -> str:
    if args.pattern == "randwrite":
        return "randwrite"
    if args.write and args.read:
        return "write+read"
    return "write" if args.write else "read"


def _confirmation_matches(args: argparse.Namespace) -> bool:
    return names_target(args.yes_destroy_data, args.target)


def make_probe(args: argparse.Namespace, confirmed: bool) -> Probe:
    from probetop.probes.disk.warmup import WarmupProbe

    name = pass_name(args)
    bs = args.bs or (4096 if name == "randwrite" else 1 << 20)
    start, end = args.range
    return WarmupProbe(
        args.target,
        pass_name=name,
        verify=args.verify,
        bs=bs,
        jobs=args.jobs,
        iodepth=args.iodepth,
        range_start=start,
        range_end=end,
        resume=args.resume,
        checkpoint=args.checkpoint,
        time_s=getattr(args, "time", None) or None,
        steadystate=args.steadystate,
        ss_dur=args.ss_dur,
        ss_ramp=args.ss_ramp,
        confirmed=confirmed,
        direct=False if args.buffered else None,
        rate_iops=args.rate_iops or 0,
        interval_s=getattr(args, "interval", 1.0) or 1.0,
    )


def build_probes(args: argparse.Namespace) -> list[Probe]:
    name = pass_name(args)
    if args.yes_destroy_data and not _confirmation_matches(args):
        raise UsageProbeError(
            f"--yes-destroy-data={args.yes_destroy_data} does not name the target "
            f"{args.target}: it must name it exactly"
        )
    if args.yes_destroy_data and name == "read":
        raise UsageProbeError("--yes-destroy-data is only for a write pass: add --write")
    probe = make_probe(args, confirmed=_confirmation_matches(args))
    args.time = None  # the probe stops itself on --time and saves its checkpoint
    return [probe]


def run(args: argparse.Namespace) -> int | None:
    """A write pass in the dashboard without --yes-destroy-data asks for the typed
    name first; everything else goes the generic way (return None)."""
    from probetop.tui.launch import fail, launch, wants_headless

    if pass_name(args) == "read" or args.yes_destroy_data or wants_headless(args):
        return None
    probe = make_probe(args, confirmed=False)
    try:
        probe.prepare()  # refusals (mounted, holders, ...) come before any question
    except ProbeError as exc:
        if "destroys every byte" not in str(exc):
            return fail(str(exc), exc.exit_code)
    from probetop.probes.disk.blockdev import data_signatures
    from probetop.tui.screens.confirm import ask_destroy_confirmation

    signatures = data_signatures(args.target)
    if not ask_destroy_confirmation(args.target, pass_name(args), signatures):
        return fail("write pass not confirmed: nothing was written", 1)
    probe = make_probe(args, confirmed=True)
    args.time = None
    return launch(args, [probe], sys.modules[__name__])


def demo_probes(ctx: Any) -> list[Probe]:
    """A read warm-up of a 128 MiB scratch file the demo creates and fills (never a
    device); 4 KiB blocks, one in flight, capped at 250 IOPS (1 MB/s) so the pass
    lasts about two minutes and leaves the shared disk alone."""
    from probetop.probes.disk.target import Target, layout_file
    from probetop.probes.disk.warmup import WarmupProbe

    path = ctx.scratch / "warmup.img"
    layout_file(Target(str(path), None, "file", 0, 128 << 20, False, create=True), fill=True)
    return [
        WarmupProbe(
            str(path),
            bs=4096,
            iodepth=1,
            rate_iops=250,
            checkpoint=str(ctx.scratch / "warmup.ckpt.json"),
            interval_s=getattr(ctx, "interval_s", 1.0),
        )
    ]


def _text(summary: dict[str, Any], reason: str) -> str:
    total = summary.get("total_bytes") or 0
    done = summary.get("done_bytes") or 0
    pct = 100.0 * done / total if total else 0.0
    plateau = summary.get("plateau", {})
    lines = [
        f"probetop warmup {summary.get('target')}: {summary.get('pass')} pass, {reason}",
        f"  done: {done:,} of {total:,} bytes ({pct:.1f} %), complete: {summary.get('complete')}",
        f"  this run: {summary.get('bytes', 0):,} bytes in {summary.get('seconds', 0):.1f} s, "
        f"{summary.get('bw_bytes', 0) / 1e6:,.1f} MB/s, {summary.get('iops', 0):,.0f} IOPS",
    ]
    if summary.get("resumed_from") is not None:
        lines.append(f"  resumed from {summary['resumed_from']:,} bytes done")
    if plateau.get("reached_at_s") is not None:
        lines.append(
            f"  plateau ({plateau['criterion']}): reached at {plateau['reached_at_s']:.0f} s "
            f"after {plateau['reached_at_bytes']:,} bytes"
            + (f", left at {plateau['left_at_s']:.0f} s" if plateau.get("left_at_s") else "")
        )
    else:
        lines.append(f"  plateau ({plateau.get('criterion')}): not reached")
    if "verify" in summary:
        v = summary["verify"]
        lines.append(f"  verify: {v['bad_sectors']} bad sectors" + (" (ok)" if v["ok"] else ""))
    for note in summary.get("notes", []):
        lines.append(f"  note: {note}")
    if summary.get("checkpoint"):
        lines.append(f"  checkpoint: {summary['checkpoint']}")
    lines.append(f"  same pass in fio: {summary.get('fio_command')}")
    if summary.get("error"):
        lines.append(f"  error: {summary['error']}")
    return "\n".join(lines)


def report(args: argparse.Namespace, result: Any) -> int:
    """JSON (--json) or text. Exit 2 when the pass failed."""
    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if error and not summary.get("error"):
        summary["error"] = error
    if getattr(args, "json", False):
        json.dump(summary, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(_text(summary, result.reason))
    if error:
        print(f"probetop: error: {error}", file=sys.stderr)
        return 2
    verify = summary.get("verify")
    return 1 if verify and verify["bad_sectors"] else 0
