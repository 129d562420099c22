"""`--time 0` means no time limit in every command, as in sysbench: `cpu
--time 0` (events 0) and `mem --time 0 --memory-total-size 0` run until
stopped, as `sysbench cpu --time=0 run` does, and Ctrl-C ends them with the
report and exit status 130 (they were refused, "would run forever",
against docs/usage.md)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


@pytest.mark.parametrize(
    ("args", "done"),
    [
        (["cpu", "--time", "0"], "total number of events:"),
        (["mem", "--time", "0", "--memory-total-size", "0"], "Total operations:"),
    ],
    ids=["cpu", "mem"],
)
def test_time_0_runs_until_ctrl_c_then_reports(args: list[str], done: str) -> None:
    proc = subprocess.Popen(
        [*PROBETOP, *args, "--headless", "--report-interval", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        # Running, not refused: interval lines come (the start-up may take
        # a while on a loaded machine; the run itself has no end).
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 3:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            seen += line.startswith("[ ")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert done in out, out
