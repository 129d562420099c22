"""`probetop demo`: every probe that exists, against embedded local targets.

Nothing leaves the machine: an HTTP server on 127.0.0.1, a scratch file in a
temporary directory (removed on exit), ICMP to 127.0.0.1 only when this
process may send it, a one-thread CPU probe.
"""

from __future__ import annotations

import argparse

from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.system.collectors import passive_probes
from probetop.tui import commands
from probetop.tui.demo_targets import DemoTargets

NAME = "demo"
HELP = "every probe live at once, against embedded local targets"
DESCRIPTION = """\
Start every probe against targets probetop creates itself: an HTTP server on
127.0.0.1, a scratch file in a temporary directory (removed on exit), ICMP to
127.0.0.1 when privileged, and a one-thread CPU probe, beside the passive CPU,
disk and network panes. Nothing is sent off this machine and no device is
written.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only",
        metavar="KIND",
        action="append",
        choices=commands.PROBE_COMMANDS,
        help="run only this probe kind (repeatable)",
    )


def demo_probe_set(
    ctx: DemoTargets, only: list[str] | None = None
) -> tuple[list[Probe], list[str]]:
    """Passive probes plus each probe command's demo probes; and notes on any skipped."""
    probes: list[Probe] = list(passive_probes(ctx.interval_s))
    notes: list[str] = []
    for name in commands.PROBE_COMMANDS:
        if only and name not in only:
            continue
        module = commands.load(name)
        make = getattr(module, "demo_probes", None)
        if make is None:
            continue
        try:
            probes.extend(make(ctx))
        except ProbeError as exc:
            notes.append(f"{name}: {exc}")
    return probes, notes


def run(args: argparse.Namespace) -> int:
    from probetop.tui.launch import launch

    with DemoTargets(interval_s=args.interval) as ctx:
        probes, notes = demo_probe_set(ctx, args.only)
        for note in notes:
            print(f"probetop demo: skipped {note}")
        return launch(args, probes, None, with_passive=False)


def build_probes(args: argparse.Namespace) -> list[Probe]:  # pragma: no cover - run() handles demo
    raise ProbeError("demo builds its probes in run()")
