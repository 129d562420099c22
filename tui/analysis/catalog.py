"""What ``--assert`` can check and how ``compare`` reads a change: the
families' ``Checks`` (``core.checks``, one per probe kind, each read from
its family's typed summary), gathered here by name and kind.

Contract:
- ``CHECKS``: the families' checks, one per probe kind; ``CATALOG``: name ->
  ``Entry`` (a family's ``Assertable`` bound to its probe kind: its unit,
  how to read it from one summary as stored, why that summary's
  observations are too few to decide a threshold (``Assertable.undecided``),
  a line of help), in this order.
- ``assertables(kinds)``: the entries for a set of probe kinds, in catalog
  order (what an unknown-metric error lists).
- ``COMMAND_KINDS``: the probe kinds each command runs (``demo``: all).
- ``direction(kind, metric, unit)``: +1 when a larger per-interval value is
  better (rates), -1 when smaller is better (latencies, losses, errors),
  0 when neither (the kind's neutral metrics: progress, thread counts; the
  passive ``system.*`` load): what ``probetop compare`` calls a regression.
- ``TARGET_PARAMS``, ``ENTITY_PARAMS``: per kind, the parameters that name
  a target ``probetop demo`` creates afresh for every run, and the one
  listing a probe's entities (``Checks.target_params`` / ``entity_param``).

A value the summary does not have (an older recording, a probe that never
ran) reads as None, which fails an assertion rather than passing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes import registry
from probetop.probes.core import checks
from probetop.probes.core.family import checks_of
from probetop.probes.core.units import Unit

# Every family's checks (probes/registry.py), in registry order.
CHECKS: tuple[checks.Checks[Any], ...] = tuple(
    c for f in registry.all_families() for c in checks_of(f)
)
_BY_KIND: dict[str, checks.Checks[Any]] = {c.kind: c for c in CHECKS}


@dataclass(frozen=True, slots=True)
class Entry:
    """One metric ``--assert`` can check, bound to the probe kind it reads."""

    name: str
    kind: str
    unit: Unit
    read: Callable[[Mapping[str, Any]], float | None]
    help: str
    undecided: Callable[[Mapping[str, Any], str, float], str | None]


CATALOG: dict[str, Entry] = {
    a.name: Entry(a.name, c.kind, a.unit, c.reader(a), a.help, c.judge(a))
    for c in CHECKS
    for a in c.assertables
}

COMMAND_KINDS: dict[str, tuple[str, ...]] = {
    f.name: tuple(k for k in f.kinds if k in _BY_KIND) for f in registry.families()
}
"""The kinds each command runs that --assert can check (probes/registry.py)."""
ALL_KINDS: tuple[str, ...] = tuple(k for kinds in COMMAND_KINDS.values() for k in kinds)


def assertables(kinds: Iterable[str]) -> list[Entry]:
    """The catalog entries for these probe kinds, in catalog order."""
    wanted = set(kinds)
    return [a for a in CATALOG.values() if a.kind in wanted]


TARGET_PARAMS: dict[str, tuple[str, ...]] = {c.kind: c.target_params for c in CHECKS}

ENTITY_PARAMS: dict[str, str] = {c.kind: c.entity_param for c in CHECKS if c.entity_param}
"""Per kind, the parameter listing a probe's entities in order (http's URL
labels): two runs against fresh targets pair their entities by position."""


def direction(kind: str, metric: str, unit: str) -> int:
    """+1 if larger is better, -1 if smaller is better, 0 if neither (see above)."""
    if kind.startswith("system."):
        return 0
    found = _BY_KIND.get(kind)
    return found.direction(metric, unit) if found else checks.direction(metric, unit)
