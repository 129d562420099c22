"""``probetop cpu --rate=N`` beside sysbench 1.0.20's ``--rate=N`` (issue 27).

Each test runs the installed sysbench and probetop with the same argv,
alternated in the same test, and reads both outputs with the same parser
(``parse_report``). Margins are ratios wide enough for a loaded 2-core
machine: Poisson noise over a 3 s run at 200/s is ~4 % (1 sigma), and the
over-load case asks only what over-load means (the queue grows every
interval, latency reaches hundreds of ms), not equal figures.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from privilege import sysbench
from probetop.probes.cpu.report import parse_report

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
    """``pairs`` runs of each tool, alternated; each run's parsed report."""
    out: dict[str, list[dict[str, Any]]] = {"sysbench": [], "probetop": []}
    for _ in range(pairs):
        for name, cmd in (("sysbench", [sysbench()]), ("probetop", PROBETOP)):
            done = run(cmd, argv, tmp_path)
            assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
            out[name].append(parse_report(done.stdout))
    return out


@pytest.mark.parametrize("value", ["abc", "1.5", "1e3", "99999999999", ""])
def test_bad_rate_refused_with_sysbenchs_message(value: str, tmp_path: Path) -> None:
    argv = ["cpu", f"--rate={value}", "--time=1", "run"]
    ref = run([sysbench()], argv, tmp_path)
    ours = run(PROBETOP, argv, tmp_path)
    if value == "":
        # sysbench reads an empty --rate= as 0 (unlimited) and runs
        assert ref.returncode == ours.returncode == 0, ours.stderr
        assert "Target transaction rate" not in ref.stdout + ours.stdout
        return
    message = f"Invalid value for the 'rate' option: '{value}'"
    assert ref.returncode == 1 and message in ref.stdout + ref.stderr
    assert ours.returncode == 1 and message in ours.stdout + ours.stderr


def test_negative_rate_exits_1_as_sysbench(tmp_path: Path) -> None:
    """sysbench runs --rate=-5 as 2^32-5/s and dies of a full queue; probetop
    refuses it: both exit 1 before any report."""
    argv = ["cpu", "--rate=-5", "--time=2", "run"]
    ref = run([sysbench()], argv, tmp_path)
    ours = run(PROBETOP, argv, tmp_path)
    assert ref.returncode == ours.returncode == 1
    # sysbench's FATAL line can be lost at load (its generator thread dies
    # with the process before the line is flushed: seen once in a parallel
    # run, stdout ending at "Threads started!"); exit 1 and no report hold.
    assert FULL in ref.stdout + ref.stderr or ref.stdout.rstrip().endswith("Threads started!")
    assert "--rate must be 0" in ours.stderr
    assert "events per second" not in ref.stdout + ours.stdout


def test_sustainable_rate_beside_sysbench(tmp_path: Path) -> None:
    """At 200 events/s (a few % of one CPU) both reach the target, report the
    queue line after each [ Ns ] line, and keep latency tiny."""
    rate = 200
    argv = ["cpu", f"--rate={rate}", "--time=3", "--report-interval=1", "run"]
    runs = both(argv, tmp_path, pairs=2)
    mean: dict[str, float] = {}
    for name, docs in runs.items():
        for doc in docs:
            assert doc["rate"] == rate, name
            assert 0.7 <= doc["events_per_second"] / rate <= 1.3, (name, doc)
            assert doc["intervals"], name
            # each [ Ns ] line has its queue line (sysbench may lose the last
            # one to its end-of-run race: its reporting thread is silenced)
            assert all("queue_length" in row for row in doc["intervals"][:-1]), (name, doc)
            assert "queue_length" in doc["intervals"][0], (name, doc)
            # tiny: the event is ~0.3 ms; queueing at 5 % load adds little
            # (sysbench showed a 25 ms interval p95 at load 15: margins for that)
            assert doc["latency_ms"]["p95"] < 100, (name, doc["latency_ms"])
            assert doc["latency_ms"]["avg"] < 50, (name, doc["latency_ms"])
        mean[name] = sum(d["events_per_second"] for d in docs) / len(docs)
    assert 0.8 <= mean["probetop"] / mean["sysbench"] <= 1.25, mean


def test_overload_beside_sysbench(tmp_path: Path) -> None:
    """A rate far above what one thread can do: in both tools the queue grows
    every interval, latency grows with it (seconds, where the event takes
    ~0.3 ms), and the achieved rate is the machine's, not the target."""
    capacity = max(
        parse_report(run(cmd, ["cpu", "--time=1", "run"], tmp_path).stdout)["events_per_second"]
        for cmd in ([sysbench()], PROBETOP)
    )
    rate = int(4 * capacity)
    argv = ["cpu", f"--rate={rate}", "--time=3", "--report-interval=1", "run"]
    runs = both(argv, tmp_path)
    for name, (doc,) in runs.items():
        # sysbench prints no queue line with the interval that ends the run
        # when its main thread, not its reporter, reports it (seen 4 of 4
        # here, quiet, and in a CI run at load): read the lines it printed.
        queues = [row["queue_length"] for row in doc["intervals"] if "queue_length" in row]
        assert len(queues) >= 2, (name, doc["intervals"])
        assert all(b > a for a, b in itertools.pairwise(queues)), (name, queues)
        assert queues[-1] > 0.5 * capacity, (name, queues, capacity)
        assert doc["events_per_second"] < 0.6 * rate, (name, doc["events_per_second"], rate)
        lats = [row["lat_pct_ms"] for row in doc["intervals"]]
        assert lats[-1] > lats[0] and lats[-1] > 200, (name, lats)
        assert doc["latency_ms"]["max"] > 500, (name, doc["latency_ms"])


def test_queue_full_beside_sysbench(tmp_path: Path) -> None:
    """A rate no machine keeps: sysbench's 131072-event queue fills at once,
    and both end with its FATAL line and exit 1, no report."""
    argv = ["cpu", "--rate=2000000000", "--time=5", "run"]
    for cmd in ([sysbench()], PROBETOP):
        done = run(cmd, argv, tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert FULL in done.stdout + done.stderr
        assert "events per second" not in done.stdout


def test_json_and_recording_carry_the_rate(tmp_path: Path) -> None:
    record = tmp_path / "rate.jsonl"
    done = run(
        PROBETOP,
        ["cpu", "--rate=300", "--time=2", "--json", "--record", str(record)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["rate"] == 300
    assert all("queue_length" in row and "concurrency" in row for row in doc["intervals"])
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    header = lines[0]
    assert "--rate=300" in json.dumps(header)
    samples = [ln for ln in lines if "values" in ln and "rate" in ln.get("values", {})]
    assert samples and all(s["values"]["rate"] == 300 for s in samples)
    assert all("queue_length" in s["values"] for s in samples)


def test_rate_zero_is_unlimited(tmp_path: Path) -> None:
    done = run(PROBETOP, ["cpu", "--rate=0", "--time=1", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "rate" not in doc
    assert all("queue_length" not in row for row in doc["intervals"])
