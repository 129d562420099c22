"""sysbench families print their text report as the run goes (``LiveText``).

sysbench prints its banner at start and each ``[ Ns ]`` line as its interval
ends (``sysbench ... | tee log`` shows them live); ``probetop cpu`` and
``probetop mem`` in headless text mode do the same. The real console script
runs with stdout to a pipe: the ``[ 1s ]`` line must come while the process
still runs, well before its end, and the whole output must equal the report
the family prints at the end (``format_report`` of the run's own summary,
read from its recording's footer), byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from probetop.probes.cpu.report import format_report as cpu_report
from probetop.probes.mem.report import format_report as mem_report

PROBETOP = Path(sys.executable).with_name("probetop")  # the installed console script
REPORTS = {"cpu": cpu_report, "mem": mem_report}
RUN_S = 3  # --time: the [ 1s ] line comes ~2 s before the end


def footer_summary(recording: Path, probe: str) -> tuple[dict[str, Any], str]:
    """The run's summary and end reason, from the recording's last line."""
    footer = json.loads(recording.read_text().splitlines()[-1])
    assert footer["type"] == "footer"
    return footer["summaries"][probe], footer["reason"]


@pytest.mark.parametrize("family", ["cpu", "mem"])
def test_interval_lines_arrive_live_and_the_whole_is_the_end_report(
    family: str, tmp_path: Path
) -> None:
    if not PROBETOP.exists():
        pytest.skip(f"no console script at {PROBETOP} (pip install -e .)")
    recording = tmp_path / "run.jsonl"
    cmd = [str(PROBETOP), family, "--time", str(RUN_S), "--report-interval", "1"]
    proc = subprocess.Popen(
        [*cmd, "--record", str(recording)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    first_at: float | None = None
    running_then: int | None = -1
    try:
        for line in proc.stdout:
            lines.append(line)
            if first_at is None and line.startswith("[ 1s ]"):
                first_at = time.monotonic()
                running_then = proc.poll()
        eof_at = time.monotonic()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    out = "".join(lines)
    assert first_at is not None, out
    assert running_then is None, "the [ 1s ] line came only once the process had ended"
    # Live: ~2 s before the end of a 3 s run; printed at the end: ~0 s.
    assert eof_at - first_at > 1.0, f"[ 1s ] came {eof_at - first_at:.2f} s before the end"
    assert out.startswith("sysbench 1.0.20 (using probetop ")
    assert out.index("Threads started!") < out.index("[ 1s ]")

    summary, reason = footer_summary(recording, family)
    whole = REPORTS[family](summary, show_intervals=True, report_interval_s=1.0, reason=reason)
    assert out == whole


@pytest.mark.parametrize("args", [["cpu", "--threads", "0"], ["mem", "--memory-block-size", "0"]])
def test_bad_options_print_no_banner(args: list[str]) -> None:
    if not PROBETOP.exists():
        pytest.skip(f"no console script at {PROBETOP} (pip install -e .)")
    done = subprocess.run(
        [str(PROBETOP), *args, "--time", "1", "--report-interval", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr  # sysbench's status for a refused value
    assert done.stdout == ""
    assert "probetop: error:" in done.stderr


def test_json_prints_one_document_at_the_end() -> None:
    if not PROBETOP.exists():
        pytest.skip(f"no console script at {PROBETOP} (pip install -e .)")
    done = subprocess.run(
        [str(PROBETOP), "mem", "--time", "1", "--report-interval", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # one document, no banner before it
    assert doc["intervals"]
