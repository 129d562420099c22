"""Standard streams the parent closed: ``>&-``, ``2>&-``, ``<&-``.

Found by a hostile review: ``probetop cpu --time 0.5 --headless >&-`` ran
the whole test, then died in a traceback (AttributeError: 'NoneType' object
has no attribute 'write', exit 1); with ``2>&-`` a normal run exited 1 and
its notes went to stdout. Real processes under bash, real recordings.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PROBETOP = shlex.join([sys.executable, "-m", "probetop.tui.main"])


def sh(line: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )


def test_a_closed_stdout_is_said_and_exits_74_with_the_recording_whole(tmp_path: Path) -> None:
    out = sh(f"{PROBETOP} cpu --time 0.3 --headless --record r.jsonl >&-", tmp_path)
    assert out.returncode == 74, out.stderr
    assert "stdout was closed" in out.stderr and "Traceback" not in out.stderr
    assert '"type":"footer"' in (tmp_path / "r.jsonl").read_text().splitlines()[-1]


def test_a_closed_stderr_changes_nothing_else(tmp_path: Path) -> None:
    out = sh(f"{PROBETOP} cpu --time 0.3 --headless 2>&-", tmp_path)
    assert out.returncode == 0
    assert "events per second" in out.stdout and "probetop:" not in out.stdout


@pytest.mark.parametrize("redirect", ["<&-", ">&- 2>&-"])
def test_other_closed_streams(tmp_path: Path, redirect: str) -> None:
    out = sh(f"{PROBETOP} cpu --time 0.3 --json --record r.jsonl {redirect}", tmp_path)
    assert out.returncode == (0 if redirect == "<&-" else 74), out.stderr
    assert "Traceback" not in out.stderr
    assert (tmp_path / "r.jsonl").stat().st_size > 0
