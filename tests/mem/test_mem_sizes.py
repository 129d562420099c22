"""--memory-total-size and --memory-block-size read as sysbench 1.0.20 reads
them, beside the real sysbench: every whole spelling gives the same size; a
fraction, which sysbench silently takes as 0 (no limit for the total, a
refusal for the block), is refused here with the whole number to write."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from privilege import sysbench

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def run(cmd: list[str], argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, "memory", *argv, "--time=1", "--memory-oper=none", "run"],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")),
    )


def total_size_line(out: str) -> str:
    match = re.search(r"^\s*total size: .*$", out, re.MULTILINE)
    assert match, out
    return match.group(0).strip()


@pytest.mark.parametrize("value", ["1G", "1GiB", "1gb", "1048576K", "3m", "2048", "0"])
def test_a_whole_size_is_read_as_sysbench_reads_it(value: str, tmp_path: Path) -> None:
    argv = ["--memory-block-size=1K", f"--memory-total-size={value}"]
    theirs, ours = run([sysbench()], argv, tmp_path), run(PROBETOP, argv, tmp_path)
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr
    assert total_size_line(ours.stdout) == total_size_line(theirs.stdout)


@pytest.mark.parametrize(
    ("value", "write"), [("1.5G", "1536M"), ("2.5k", "2560"), ("0.5T", "512G")]
)
def test_a_fractional_total_is_refused_where_sysbench_reads_no_limit(
    value: str, write: str, tmp_path: Path
) -> None:
    argv = ["--memory-block-size=1K", f"--memory-total-size={value}"]
    theirs = run([sysbench()], argv, tmp_path)
    # What the refusal says sysbench does: no limit, the run ends at --time.
    assert theirs.returncode == 0 and total_size_line(theirs.stdout) == "total size: 0MiB"
    ours = run(PROBETOP, argv, tmp_path)
    assert ours.returncode == 1 and ours.stdout == ""
    assert f"not a whole number: '{value}'" in ours.stderr
    assert "sysbench reads a fraction as 0: no limit" in ours.stderr
    assert ours.stderr.rstrip().endswith(f"write {write}")


def test_a_fractional_block_size_is_refused_as_sysbench_refuses_it(tmp_path: Path) -> None:
    argv = ["--memory-block-size=1.5K", "--memory-total-size=1M"]
    theirs = run([sysbench()], argv, tmp_path)
    assert theirs.returncode == 1
    assert "FATAL: Invalid value for memory-block-size: 1.5K" in theirs.stdout + theirs.stderr
    ours = run(PROBETOP, argv, tmp_path)
    assert (
        ours.returncode == 1 and "not a whole number: '1.5K' (sysbench refuses it)" in ours.stderr
    )
