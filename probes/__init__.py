"""Headless probes: measurement code with no UI imports.

Everything under ``probetop.probes`` runs without Textual, Rich or plotext, so
``--headless`` runs, cron jobs and CI stay light. A test and an import-linter
contract hold this line.
"""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("probetop")
except metadata.PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"
