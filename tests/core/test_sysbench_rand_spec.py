"""sysbench's --rand-spec-iter/-pct/-res and --rand-pareto-h in `probetop
cpu` and `probetop mem`, beside sysbench 1.0.20: the values sysbench takes
run (they shape --rand-type's distributions, which change nothing in either
tool's cpu or memory test), and the ones it refuses get its message and exit
1. Before, any of them was an unknown option in probetop: a sysbench line
carrying one did not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from privilege import sysbench

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
# the shortest runs of each test: one event, one 1 KiB block
QUICK = {"cpu": ["--events=1", "--time=0"], "memory": ["--memory-total-size=1K"]}


def both(argv: list[str], tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    return [
        subprocess.run(
            [*cmd, *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        for cmd in ([sysbench()], PROBETOP)
    ]


@pytest.mark.parametrize("test", ["cpu", "memory"])
def test_accepted_values_run(test: str, tmp_path: Path) -> None:
    argv = [
        test,
        "--rand-spec-iter=+3",
        "--rand-spec-pct=200",  # sysbench checks none of the ranges
        "--rand-spec-res=-1",
        "--rand-pareto-h=abc",  # a DOUBLE sysbench reads with atof: any text
        "--rand-type=pareto",
        *QUICK[test],
        "run",
    ]
    for done in both(argv, tmp_path):
        assert done.returncode == 0, done
        assert "total number of events:              1" in done.stdout or test == "memory", done
        assert "Threads fairness:" in done.stdout, done


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--rand-spec-iter", "1.5"), ("--rand-spec-pct", "abc"), ("--rand-spec-res", "99999999999")],
)
def test_refused_values_get_sysbenchs_words(flag: str, value: str, tmp_path: Path) -> None:
    name = flag.removeprefix("--").replace("-", "_")
    message = f"Invalid value for the '{name}' option: '{value}'"
    for done in both(["memory", f"{flag}={value}", *QUICK["memory"], "run"], tmp_path):
        assert done.returncode == 1, done
        assert message in done.stdout + done.stderr, done
        assert "Total operations" not in done.stdout


def test_read_from_a_config_file(tmp_path: Path) -> None:
    """sysbench reads them from --config-file as general options; so does probetop."""
    conf = tmp_path / "sb.conf"
    conf.write_text("rand-spec-iter=4\nrand-spec-pct=5\nrand-spec-res=50\nrand-pareto-h=0.5\n")
    for done in both(["memory", f"--config-file={conf}", *QUICK["memory"], "run"], tmp_path):
        assert done.returncode == 0, done
        assert "Total operations: 1 " in done.stdout, done
    conf.write_text("rand-spec-iter=x\n")
    for done in both(["memory", f"--config-file={conf}", *QUICK["memory"], "run"], tmp_path):
        assert done.returncode == 1, done
        assert "Invalid value for the 'rand_spec_iter' option: 'x'" in done.stdout + done.stderr
