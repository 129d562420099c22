"""Headless probes: measurement code with no UI imports.

Everything under ``probetop.probes`` runs without Textual, Rich or plotext, so
``--headless`` runs, cron jobs and CI stay light. A test and an import-linter
contract hold this line.
"""

from __future__ import annotations

__version__ = "0.1.0"
"""probetop's version: pyproject.toml reads it from here (``dynamic``), so
the code never asks importlib.metadata (15-25 ms of every start)."""


def version() -> str:
    """probetop's version (the recording header, ``--version``)."""
    return __version__
