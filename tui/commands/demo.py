"""`probetop demo`: every probe that exists, against embedded local targets.

Nothing leaves the machine: an HTTP server on 127.0.0.1, a scratch file in a
temporary directory (removed on exit), ICMP to 127.0.0.1 only when this
process may send it, a one-thread CPU probe.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probetop.probes import registry
from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.core.family import DemoContext, Family
from probetop.probes.core.options import CommandSpec, Option
from probetop.probes.system import passive_probes
from probetop.tui.cli.plan import CommonOptions, RunPlan

if TYPE_CHECKING:
    from probetop.tui.run.demo_scratch import Scratch
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
    for family in _demo_families(only):
        made, skipped = _family_probes(family, ctx)
        probes.extend(made)
        notes.extend(skipped)
    return probes, notes


def _demo_families(only: Sequence[str] | None) -> list[Family[Any]]:
    return [
        family
        for family in registry.families()
        if not (only and family.name not in only) and family.demo_probes is not None
    ]


def _family_probes(family: Family[Any], ctx: DemoContext) -> tuple[list[Probe], list[str]]:
    """One family's demo probes, or a note saying why it was skipped."""
    assert family.demo_probes is not None
    try:
        return list(family.demo_probes(ctx)), []
    except ProbeError as exc:
        return [], [f"{family.name}: {exc}"]


def _warm_native() -> tuple[list[Probe], list[str]]:
    """Load the disk family's native I/O loops now (from the per-user cache
    ``probetop compile`` filled), beside the scratch files being written,
    rather than after them when the IOPS probe gets to its own warm-up: the
    same loops, the same engine, sooner. A failure is left for the probes'
    own warm-up to report."""
    from probetop.probes import disk

    with contextlib.suppress(Exception):
        disk.load_native()
    return [], []


def _named_family_probes(name: str, ctx: DemoContext) -> tuple[list[Probe], list[str]]:
    """``_family_probes`` of the family called ``name``, its front door
    imported here (in the maker's thread): no maker waits for the other
    families' imports (a few hundred ms together)."""
    family = registry.family(name)
    if family is None or family.demo_probes is None:
        return [], []
    return _family_probes(family, ctx)


#: The data files the demo's disk panes read (``DemoContext.data_file``: the
#: IOPS and warm-up families' ``demo_probes`` ask for these names and sizes;
#: tests/tui/test_demo_scratch.py holds them equal), by the family that reads
#: each. Not read from probes/disk: importing it takes ~55 ms of CPU, and
#: this list is read before the first frame.
EARLY_DATA_FILES = (("iops", "iops.img", 64 << 20), ("warmup", "warmup.img", 128 << 20))


def start_early(plan: RunPlan[DemoSettings]) -> Scratch:
    """The dashboard's way in, at the process's start (tui/main.py, before
    Textual's import): the scratch directory, and its data files laid out
    in a thread meanwhile (``tui/run/demo_scratch.py``), for the families
    this demo runs. ``join_probes`` takes it; it is closed with the targets."""
    from probetop.tui.run.demo_scratch import Scratch

    only = plan.settings.only
    return Scratch(
        {name: size for family, name, size in EARLY_DATA_FILES if not only or family in only}
    )


def join_probes(
    plan: RunPlan[DemoSettings], stack: contextlib.ExitStack, early: Scratch | None = None
) -> list[Callable[[], tuple[list[Probe], list[str]]]]:
    """The dashboard's way in (tui/main.py, after the first frame): the demo's
    targets entered on ``stack`` (alive until it closes), and one maker per
    family, each importing that family and giving its probes and notes on
    any skipped. The dashboard calls each maker in a worker thread of its
    own, so a family whose targets take seconds (the warm-up's 128 MiB file,
    the native loops' load) delays no other family's pane; the native loops
    are loaded first, beside the others (their load is the longest).
    The targets' module (http.server, email, html: ~10 ms of CPU) is
    imported here, in the worker thread, not before the first frame.
    ``early``: ``start_early``'s scratch directory, owned from here on."""
    from probetop.tui.run.demo_targets import DemoTargets

    targets = DemoTargets(interval_s=plan.common.interval_s, scratch=early)
    ctx = stack.enter_context(targets).context()
    only = plan.settings.only
    names = [name for name in registry.DEMO_NAMES if not (only and name not in only)]
    makers: list[Callable[[], tuple[list[Probe], list[str]]]] = [
        functools.partial(_named_family_probes, name, ctx) for name in names
    ]
    if any(name in ("iops", "warmup") for name in names):
        makers.insert(0, _warm_native)
    return makers


@contextlib.contextmanager
def open_probes(plan: RunPlan[DemoSettings]) -> Iterator[list[Probe]]:
    """The demo's probes, with their targets alive until the run ends (headless)."""
    from probetop.tui.run.demo_targets import DemoTargets

    with DemoTargets(interval_s=plan.common.interval_s) as ctx:
        probes, notes = demo_probe_set(ctx, plan.settings.only)
        for note in notes:
            print(f"probetop demo: skipped {note}")
        yield probes
