"""Running the CLI from the analysis tests."""

from __future__ import annotations

import subprocess
import sys

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def probetop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``probetop ARGS`` in a subprocess, output captured as text."""
    return subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=timeout)
