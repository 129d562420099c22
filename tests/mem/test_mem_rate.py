"""``probetop mem --rate=N`` beside sysbench 1.0.20's ``memory --rate=N``
(issue 27): the same argv to both, alternated in one test, both reports
read by the same parser. sysbench's memory report prints no queue line, so
the over-load case is judged by what over-load means in both: the achieved
rate is the machine's, not the target, and latency (counted from each
operation's arrival) reaches hundreds of ms where an operation takes
~0.1 ms. Margins hold on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from privilege import sysbench
from probetop.probes.mem.report import parse_report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
FULL = (
    "FATAL: The event queue is full. This means the worker threads are unable to keep up "
    "with the specified event generation rate"
)


def run(cmd: list[str], argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, *argv],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state")),
    )


def both(argv: list[str], tmp_path: Path, pairs: int = 1) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"sysbench": [], "probetop": []}
    for _ in range(pairs):
        for name, cmd in (("sysbench", [sysbench()]), ("probetop", PROBETOP)):
            done = run(cmd, argv, tmp_path)
            assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
            out[name].append(parse_report(done.stdout))
    return out


@pytest.mark.parametrize("value", ["abc", "1.5", "99999999999"])
def test_bad_rate_refused_with_sysbenchs_message(value: str, tmp_path: Path) -> None:
    argv = ["memory", f"--rate={value}", "--time=1", "run"]
    message = f"Invalid value for the 'rate' option: '{value}'"
    for cmd in ([sysbench()], PROBETOP):
        done = run(cmd, argv, tmp_path)
        assert done.returncode == 1 and message in done.stdout + done.stderr, cmd


def test_sustainable_rate_beside_sysbench(tmp_path: Path) -> None:
    rate = 500
    argv = ["memory", f"--rate={rate}", "--time=3", "--report-interval=1", "run"]
    runs = both(argv, tmp_path, pairs=2)
    mean = {}
    for name, docs in runs.items():
        for doc in docs:
            assert doc["rate"] == rate, name
            assert 0.7 <= doc["ops_per_second"] / rate <= 1.3, (name, doc)
            # an operation takes microseconds: what is left is a thread's wake-up
            assert doc["latency_ms"]["avg"] < 100, (name, doc["latency_ms"])
        mean[name] = sum(d["ops_per_second"] for d in docs) / len(docs)
    assert 0.8 <= mean["probetop"] / mean["sysbench"] <= 1.25, mean


def test_overload_beside_sysbench(tmp_path: Path) -> None:
    block = ["--memory-block-size=1M"]
    capacity = max(
        parse_report(run(cmd, ["memory", *block, "--time=1", "run"], tmp_path).stdout)[
            "ops_per_second"
        ]
        for cmd in ([sysbench()], PROBETOP)
    )
    # 4x, not 2x: the capacity is measured once, and a machine whose load
    # lifts between that and the run gave sysbench 1.9x the capacity measured
    # (10,756 ops/s at --rate 11,302, CI at load). One second at under 90,000
    # events/s keeps the backlog below the event queue's 131,072 whatever the
    # workers manage: at --time=2 and 81,178/s (4x 20,294) sysbench itself
    # died with "The event queue is full" (CI run 59).
    rate = min(int(4 * capacity), 90_000)
    argv = ["memory", *block, f"--rate={rate}", "--time=1", "run"]
    for name, (doc,) in both(argv, tmp_path).items():
        assert doc["ops_per_second"] < 0.8 * rate, (name, doc["ops_per_second"], rate)
        # What the backlog implies in this run, not a fixed figure (300 ms
        # failed at load 9-23: sysbench did 0.75x the target, so its last
        # operation could not have waited more than ~250 ms): the last of the
        # N operations done arrived about N/rate into the run and finished at
        # its end, so latency counted from arrival reaches total_time - N/rate
        # (at least 0.2 s here), where an operation itself takes ~0.1 ms. Half
        # of it allows for the generator's Poisson jitter and a late wake-up;
        # latency counted from the operation's start would be ~1000x below.
        waited_ms = 1000 * (doc["total_time"] - doc["total_events"] / rate)
        assert doc["latency_ms"]["max"] > 0.5 * waited_ms, (name, doc, rate)
        # The average is not the backlog's: sysbench's own was 31.8 ms where the
        # last operation waited 460 ms (its generator and worker share two busy
        # cores). Still 100x an operation's own time, which is all a latency
        # counted from the operation's start would show.
        assert doc["latency_ms"]["avg"] > 10, (name, doc["latency_ms"])


def test_queue_full_beside_sysbench(tmp_path: Path) -> None:
    argv = ["memory", "--rate=2000000000", "--time=5", "run"]
    done = run(PROBETOP, argv, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert FULL in done.stdout + done.stderr
    assert "Total operations" not in done.stdout
    # The reference says the same. Under load sysbench once exited 1 after
    # "Threads started!" without its FATAL line (CI, load 13-16): up to 3 runs.
    said = []
    for _ in range(3):
        ref = run([sysbench()], argv, tmp_path)
        assert ref.returncode == 1, ref.stdout + ref.stderr
        assert "Total operations" not in ref.stdout
        said.append(ref.stdout + ref.stderr)
        if FULL in said[-1]:
            break
    else:
        pytest.fail(f"sysbench never said the queue was full: {said[-1][-300:]!r}")


def test_json_carries_the_rate_and_queue(tmp_path: Path) -> None:
    done = run(PROBETOP, ["mem", "--rate=300", "--time=2", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["rate"] == 300
    assert all("queue_length" in row and "concurrency" in row for row in doc["intervals"])
