"""Sub-command registry.

Each command is a module here exposing:

- ``NAME`` and ``HELP`` (one line), optional ``DESCRIPTION`` and ``EPILOG``.
- ``add_arguments(parser)``: its own options (the common ones -- ``--record``,
  ``--headless``, ``--json``, ``--time``, ``--interval``, ``--theme`` -- are
  added by cli.py).
- ``build_probes(args) -> list[Probe]``: validate and construct; raise
  ``ProbeError`` (exit 2, message shown as is) on bad input.
- optional ``run(args) -> int | None``: take over completely (one-off modes,
  e.g. a single HTTP request); return None to fall through to the generic
  path (dashboard, or headless run + ``report``).
- optional ``report(args, result) -> int``: print the headless report (text or
  ``--json``) from a ``runner.RunResult``; the generic report is used otherwise.
- optional ``demo_probes(ctx) -> list[Probe]``: what ``probetop demo`` runs
  for this probe against the embedded targets (``probes.demo_targets``).
- optional ``FOCUS``: the probe kind whose pane the dashboard focuses.

Modules are imported lazily, so ``probetop --version`` stays fast.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Order = order in --help and in the demo.
PROBE_COMMANDS = ("cpu", "iops", "warmup", "icmp", "http")
OTHER_COMMANDS = ("demo", "replay", "report")


def load(name: str) -> ModuleType | None:
    """The command module, or None if that probe has not been built yet."""
    modname = f"probetop.tui.commands.{name}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return None
        raise


def available() -> list[tuple[str, ModuleType]]:
    """Every command module that exists, probe commands first."""
    out = []
    for name in PROBE_COMMANDS + OTHER_COMMANDS:
        module = load(name)
        if module is not None:
            out.append((name, module))
    return out
