"""`probetop demo`: every probe that exists, against embedded local targets.

Nothing leaves the machine: an HTTP server on 127.0.0.1, a scratch file in a
temporary directory (removed on exit), ICMP to 127.0.0.1 only when this
process may send it, a one-thread CPU probe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probetop.probes import registry
from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.core.options import CommandSpec, Option
from probetop.probes.system import passive_probes
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.demo_targets import DemoTargets

SPEC = CommandSpec(
    name="demo",
    help="every probe live at once, against embedded local targets",
    description="""\
Start every probe against targets probetop creates itself: an HTTP server on
127.0.0.1, a scratch file in a temporary directory (removed on exit), ICMP to
127.0.0.1 when privileged, and a one-thread CPU probe, beside the passive CPU,
disk and network panes. Nothing is sent off this machine and no device is
written.
""",
    options=(
        Option(
            ("--only",),
            "run only this probe kind (repeatable)",
            metavar="KIND",
            action="append",
            choices=registry.NAMES,
        ),
    ),
)
WITH_PASSIVE = False  # the demo's probe set already holds them


@dataclass(frozen=True, slots=True)
class DemoSettings:
    only: tuple[str, ...] = ()


def settings(values: Mapping[str, Any], common: CommonOptions) -> DemoSettings:
    return DemoSettings(only=tuple(values.get("only") or ()))


def demo_probe_set(
    targets: DemoTargets, only: Sequence[str] | None = None
) -> tuple[list[Probe], list[str]]:
    """Passive probes plus each probe family's demo probes (registry order);
    and notes on any skipped."""
    ctx = targets.context()
    probes: list[Probe] = list(passive_probes(ctx.interval_s))
    notes: list[str] = []
    for family in registry.families():
        if (only and family.name not in only) or family.demo_probes is None:
            continue
        try:
            probes.extend(family.demo_probes(ctx))
        except ProbeError as exc:
            notes.append(f"{family.name}: {exc}")
    return probes, notes


def join_probes(
    plan: RunPlan[DemoSettings], stack: contextlib.ExitStack
) -> tuple[list[Probe], list[str]]:
    """The dashboard's way in (tui/main.py, after the first frame): the demo's
    probes with their targets entered on ``stack`` (alive until it closes),
    and notes on any probe skipped."""
    ctx = stack.enter_context(DemoTargets(interval_s=plan.common.interval_s))
    return demo_probe_set(ctx, plan.settings.only)


@contextlib.contextmanager
def open_probes(plan: RunPlan[DemoSettings]) -> Iterator[list[Probe]]:
    """The demo's probes, with their targets alive until the run ends (headless)."""
    with DemoTargets(interval_s=plan.common.interval_s) as ctx:
        probes, notes = demo_probe_set(ctx, plan.settings.only)
        for note in notes:
            print(f"probetop demo: skipped {note}")
        yield probes
