"""Sub-command registry and the contract of a command module.

A command module (``tui/commands/<name>.py``) is the CLI glue between a
family's front door and the runner. It exposes:

- ``SPEC``: its ``CommandSpec`` (name, help, options). A probe command takes
  it from its family (``SPEC = cpu.SPEC``); the CLI renders it into argparse,
  the add-probe prompt and the docs test read it.
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
- optional ``report(plan, result) -> int``: print the headless report (text or
  ``--json``) from a ``runner.RunResult``; the generic report otherwise.
- optional ``deadline_s(plan)``: when the runner stops the probes (default
  ``--time``; None when the probe ends itself).
- optional ``demo_probes(ctx) -> list[Probe]``: what ``probetop demo`` runs
  for this probe against the embedded targets (``tui/run/demo_targets.py``).
- optional ``FOCUS`` (the pane kind focused first), ``WITH_PASSIVE`` (False
  when the command brings the passive probes itself).

Modules are imported lazily, so ``probetop --version`` stays fast.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Order = order in --help and in the demo.
PROBE_COMMANDS = ("cpu", "mem", "iops", "warmup", "icmp", "http")
OTHER_COMMANDS = (
    "demo",
    "replay",
    "report",
    "compare",
    "export",
    "ls",
    "attach",
    "stop",
    "follow",
    "compile",
)


def load(name: str) -> ModuleType | None:
    """The command module, or None if that probe has not been built yet."""
    modname = f"probetop.tui.commands.{name}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return None
        raise


def available(only: set[str] | None = None) -> list[tuple[str, ModuleType]]:
    """Every command module that exists (or those of ``only``), probe commands first."""
    out = []
    for name in PROBE_COMMANDS + OTHER_COMMANDS:
        if only is not None and name not in only:
            continue
        module = load(name)
        if module is not None:
            out.append((name, module))
    return out
