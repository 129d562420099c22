"""The sysbench-style report: our text parses back to our numbers; sysbench's parses too."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from probetop.probes.cpu import CpuSettings
from probetop.probes.cpu.probe import CpuProbe
from probetop.probes.cpu.report import format_report, interval_line, parse_report
from probetop.tui.run.runner import run_headless


@pytest.fixture(scope="module")
def summary() -> dict:
    probe = CpuProbe(
        CpuSettings(threads=2, time_s=1.1, interval_s=0.5, max_prime=3000, percentile=99)
    )
    result = asyncio.run(run_headless([probe]))
    return dict(result.summaries["cpu"])


def test_report_round_trip(summary: dict) -> None:
    text = format_report(summary, show_intervals=True)
    doc = parse_report(text)
    assert doc["events_per_second"] == pytest.approx(summary["events_per_second"], abs=0.005)
    assert doc["total_events"] == summary["total_events"]
    assert doc["total_time"] == pytest.approx(summary["total_time"], abs=5e-5)
    assert doc["threads"] == 2 and doc["max_prime"] == 3000
    assert doc["percentile"] == 99
    lat, want = doc["latency_ms"], summary["latency_ms"]
    for key in ("min", "avg", "max", "p99", "sum"):
        assert lat[key] == pytest.approx(want[key], abs=0.005), key
    for key in ("events_avg", "time_avg"):
        assert doc["fairness"][key] == pytest.approx(summary["fairness"][key], abs=5e-5)
    for key in ("events_stddev", "time_stddev"):
        assert doc["fairness"][key] == pytest.approx(summary["fairness"][key], abs=0.005)
    # the full intervals and the last one, at --time when that is on the grid
    printed = [r for r in summary["intervals"] if r["full"] or r.get("at_time")]
    assert len(doc["intervals"]) == len(printed) >= 1
    for parsed, row in zip(doc["intervals"], printed, strict=True):
        assert parsed["eps"] == pytest.approx(row["eps"], abs=0.005)
        assert parsed["threads"] == 2 and parsed["percentile"] == 99
    assert doc["interrupted"] is False and doc["python_engine"] is False


def test_report_uses_sysbench_names_and_columns(summary: dict) -> None:
    text = format_report(summary)
    for section in ("CPU speed:", "General statistics:", "Latency (ms):", "Threads fairness:"):
        assert section in text
    lines = text.splitlines()
    latency = [ln for ln in lines if ln.startswith("         ") and ":" in ln]
    assert [ln.split(":")[0].strip() for ln in latency] == [
        "min", "avg", "max", "99th percentile", "sum"
    ]  # fmt: skip
    assert {len(ln) for ln in latency} == {53}  # sysbench right-aligns to column 53
    assert any(ln.startswith("    total time:                          ") for ln in lines)
    assert "[ " not in text  # no interval lines unless asked


def test_interval_line_is_sysbench_format() -> None:
    row = {"t": 1.0004, "threads": 2, "eps": 5743.1912, "lat_pct_ms": 0.3497}
    assert interval_line(row, 95, 1.0) == "[ 1s ] thds: 2 eps: 5743.19 lat (ms,95%): 0.35"


@pytest.mark.parametrize(
    ("t", "interval_s", "expected"),
    [
        # sysbench prints "[ %.0fs ]" of the measured time: an interval that
        # ended late on a loaded machine is still whole seconds (a sysbench
        # user's "\[ (\d+)s \]" must match it), as is sysbench's own.
        (2.0712, 1.0, "[ 2s ]"),
        (2.9431, 1.0, "[ 3s ]"),
        (2.5, 1.0, "[ 2s ]"),  # printf's round-half-even, as sysbench's %.0f
        (10.0, 5.0, "[ 10s ]"),
        # probetop's fractional --report-interval: the interval's decimals,
        # on every line of the run, whatever the measured time.
        (1.0004, 0.5, "[ 1.0s ]"),
        (1.5612, 0.5, "[ 1.6s ]"),
        (0.7502, 0.25, "[ 0.75s ]"),
    ],
)
def test_interval_stamp_decimals_follow_the_interval_not_the_jitter(
    t: float, interval_s: float, expected: str
) -> None:
    row = {"t": t, "threads": 1, "eps": 1.0, "lat_pct_ms": 0.1}
    assert interval_line(row, 95, interval_s).split(" thds:")[0] == expected


def test_interrupted_report_says_so(summary: dict) -> None:
    text = format_report(summary, reason="interrupted (SIGINT)")
    assert "INTERRUPTED (SIGINT)" in text
    assert parse_report(text)["interrupted"] is True


def test_parse_refuses_other_text() -> None:
    with pytest.raises(ValueError):
        parse_report("hello")


def test_parser_reads_real_sysbench_output() -> None:
    sysbench = shutil.which("sysbench")
    if sysbench is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench)")
    out = subprocess.run(
        [sysbench, "cpu", "--threads=2", "--events=200", "--time=0", "--report-interval=1", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    doc = parse_report(out)
    assert doc["total_events"] == 200
    assert doc["threads"] == 2 and doc["max_prime"] == 10000
    assert doc["fairness"]["events_avg"] == pytest.approx(100.0)
    assert doc["latency_ms"]["p95"] is not None
