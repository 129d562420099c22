"""The one list of probe families (probes/core/family.py describes a family).

Adding a family is one line in ``COMMANDS`` (its command, its front door,
the descriptor's name there). Everything that needs the families reads them
here: the CLI (commands, in this order in ``--help``), the dashboard (a
probe kind's pane), ``probetop demo``, the docs test and the contracts'
tests (tests/core/test_families.py fails when a family lacks a part).

Contract:
- ``NAMES``: the probe commands, in order, known without importing any
  family: building the parser for one command, or starting the passive
  dashboard, loads no other family's front door (each costs start-up).
  ``DEMO_NAMES``: those with demo probes, known alike.
- ``family(name)``: that command's ``Family``, its front door imported on
  first use; None for a name that is no probe command.
- ``families()`` / ``passive_families()`` / ``all_families()``: every
  descriptor, loaded, in order.
- ``for_kind(kind)``: the family announcing a probe kind (a kind starts with
  its family's name), or None when no family claims it (an old recording).
- A front door that does not export the descriptor named here raises
  ``RegistryError``: a wrong line fails loudly, never falls back.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.family import AnyFamily, Family, PassiveFamily


class RegistryError(RuntimeError):
    """A registry line names no descriptor of the right type."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One family: its name (the command), its front door
    (``probetop.probes.<door>``) and the descriptor's name there."""

    name: str
    door: str = ""  # default: the name
    attr: str = "FAMILY"
    # Whether the family has demo probes (``Family.demo_probes``), known
    # without its import: the dashboard's demo imports no front door it has
    # nothing to run from (mem's: ~30-50 ms of the interpreter lock while
    # the other panes join). tests/tui/test_demo_scratch.py holds it true.
    demo: bool = False

    @property
    def module(self) -> str:
        return f"probetop.probes.{self.door or self.name}"


# Order = order in --help and in the demo.
COMMANDS: tuple[Listed, ...] = (
    Listed("cpu", demo=True),
    Listed("mem"),
    Listed("iops", door="disk", attr="IOPS", demo=True),
    Listed("warmup", door="disk", attr="WARMUP", demo=True),
    Listed("icmp", demo=True),
    Listed("http", demo=True),
)
PASSIVE: tuple[Listed, ...] = (Listed("system"),)

NAMES: tuple[str, ...] = tuple(listed.name for listed in COMMANDS)
#: The families ``probetop demo`` runs probes of, in ``NAMES`` order.
DEMO_NAMES: tuple[str, ...] = tuple(listed.name for listed in COMMANDS if listed.demo)


def _load(listed: Listed, kind: type[Any]) -> Any:
    descriptor = getattr(importlib.import_module(listed.module), listed.attr, None)
    if not isinstance(descriptor, kind):
        raise RegistryError(f"{listed.module}.{listed.attr} is not a {kind.__name__}")
    if descriptor.name != listed.name:
        raise RegistryError(
            f"{listed.module}.{listed.attr} is the {descriptor.name!r} family, "
            f"listed as {listed.name!r}"
        )
    return descriptor


def family(name: str) -> Family[Any] | None:
    """The probe command ``name``'s family (None: no such probe command)."""
    for listed in COMMANDS:
        if listed.name == name:
            loaded: Family[Any] = _load(listed, Family)
            return loaded
    return None


def families() -> tuple[Family[Any], ...]:
    """Every probe command's family, in ``NAMES`` order."""
    return tuple(_load(listed, Family) for listed in COMMANDS)


def passive_families() -> tuple[PassiveFamily, ...]:
    """The passive collectors' families (system)."""
    return tuple(_load(listed, PassiveFamily) for listed in PASSIVE)


def all_families() -> tuple[AnyFamily, ...]:
    return (*families(), *passive_families())


def for_kind(kind: str) -> AnyFamily | None:
    """The family that announces probes of ``kind``, or None. The family
    named by the kind's first word is asked first, so a lookup loads one
    front door."""
    head = kind.split(".", 1)[0]
    for listed in COMMANDS + PASSIVE:
        if listed.name == head:
            found: AnyFamily = _load(listed, Family if listed in COMMANDS else PassiveFamily)
            if kind in found.kinds:
                return found
    return next((f for f in all_families() if kind in f.kinds), None)
