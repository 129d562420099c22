"""Running the CLI from the analysis tests."""

from __future__ import annotations

import subprocess
import sys

from forkserver import RUN_PRELOAD, run_probetop

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
# The cpu runs that make the recordings, and compare and report (the
# statistics and every family's catalogue: ~0.25 s of imports of their own).
PRELOAD = (*RUN_PRELOAD, "probetop.tui.analysis.comparison")


def probetop(
    *args: str, timeout: float = 60, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """``probetop ARGS``, output captured as text: forked from an interpreter
    that has imported the CLI, the cpu family and compare
    (tests/forkserver.py: a process of its own with this argv, stdio,
    environment, threads and exit status; 0.4-0.7 CPU-s of start-up spared a
    run), or with ``fresh`` the whole `python -m` (one case in each file)."""
    if not fresh:
        return run_probetop(list(args), timeout=timeout, preload=PRELOAD)
    return subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=timeout)
