"""Headless probes: measurement code with no UI imports.

Everything under ``probetop.probes`` runs without Textual, Rich or plotext, so
``--headless`` runs, cron jobs and CI stay light. A test and an import-linter
contract hold this line.
"""

from __future__ import annotations

from functools import cache


@cache
def version() -> str:
    """The installed distribution's version ("0+unknown" from a bare source
    tree). Looked up on first use: importlib.metadata costs ~25 ms at start-up."""
    from importlib import metadata

    try:
        return metadata.version("probetop")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
