"""Real recordings for the compare and --assert tests: the cpu probe run
twice the same way, and once with a heavier event (--max-prime 30000)."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_helpers import probetop

# 2 s at 0.2 s intervals: 10 intervals a side, enough for Mann-Whitney to
# reach p < 0.001 when the runs differ.
CPU_RUN = ["cpu", "--time", "2", "--interval", "0.2", "--headless"]


def _record(path: Path, *extra: str) -> Path:
    out = probetop(*CPU_RUN, *extra, "--record", str(path))
    assert out.returncode == 0, out.stderr
    return path


@pytest.fixture(scope="session")
def cpu_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("compare")
    return {
        "a": _record(d / "a.jsonl"),
        "b": _record(d / "b.jsonl"),
        "heavy": _record(d / "heavy.jsonl", "--max-prime", "30000"),
    }
