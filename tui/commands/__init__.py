"""Sub-commands and the contract of a command.

A probe command (``probetop cpu``) is a probe family listed in
``probes/registry.py``, run by the one generic ``ProbeCommand``
(``tui/commands/probe.py``); the other commands (``demo``, ``replay``,
``compare`` ...) are one module each here. Either exposes:

- ``SPEC``: its ``CommandSpec`` (name, help, options); the CLI renders it
  into argparse, the add-probe prompt and the docs test read it.
- ``settings(values, common) -> Settings``: the command's frozen settings from
  the parsed option values (a mapping, read once) and the ``CommonOptions``;
  raise ``ProbeError`` (exit 2, message shown as is) on bad input.
- ``build_probes(plan) -> list[Probe]``: construct the probes of a ``RunPlan``.
  May raise ``ConfirmationRequired`` when the run would destroy data and the
  settings carry no confirmation; then ``confirmed(plan) -> RunPlan`` must
  return the plan with the confirmation (``tui.main`` asks, once, for every
  command).
- optional ``open_probes(plan)``: a context manager yielding the probes, for
  commands whose targets live as long as the run (``demo``).
- optional ``run(plan) -> int | AppConfig | None``: take over (one-off modes,
  ``replay``, ``report``): an exit code, a dashboard to show, or None to fall
  through to the generic path (dashboard, or headless run + ``report``).
- optional ``headless_only(plan) -> bool``: True when the plan runs headless
  even on a terminal (http's repeated mode without --watch).
- optional ``report(plan, result) -> int``: print the headless report (text or
  ``--json``) from a ``runner.RunResult``; the generic report otherwise.
- optional ``live_text(plan, probes)``: for a headless text report printed as
  the run goes, its banner (a function, called once the probes started) and
  a per-sample line reader; None otherwise (``--json``, or no ``LiveText``).
- optional ``deadline_s(plan)``: when the runner stops the probes (default
  ``--time``; None when the probe ends itself).
- optional ``switched(plan)``: the plan a pane's switch request runs next.
- optional ``FOCUS`` (the pane kind focused first), ``WITH_PASSIVE`` (False
  when the command brings the passive probes itself).

Modules are imported lazily, so ``probetop --version`` stays fast.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TypeAlias

from probetop.probes import registry
from probetop.tui.commands.probe import ProbeCommand

Command: TypeAlias = ModuleType | ProbeCommand
"""A command: a probe family's ``ProbeCommand`` or another command's module."""

# Order = order in --help and in the demo: the registry's.
PROBE_COMMANDS: tuple[str, ...] = registry.NAMES
OTHER_COMMANDS = (
    "demo",
    "replay",
    "report",
    "compare",
    "export",
    "ls",
    "attach",
    "stop",
    "rm",
    "follow",
    "compile",
)


def load(name: str) -> Command | None:
    """The command, or None if there is no such command."""
    if name in PROBE_COMMANDS:
        family = registry.family(name)
        return ProbeCommand(family) if family is not None else None
    modname = f"probetop.tui.commands.{name}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return None
        raise


def available(only: set[str] | None = None) -> list[tuple[str, Command]]:
    """Every command that exists (or those of ``only``), probe commands first."""
    out: list[tuple[str, Command]] = []
    for name in PROBE_COMMANDS + OTHER_COMMANDS:
        if only is not None and name not in only:
            continue
        module = load(name)
        if module is not None:
            out.append((name, module))
    return out
