"""benchmarks/figures.py and benchmarks/bench.py: every benchmark is in
`make bench`'s plan and reports through the shared module; the results file
and docs/figures.md carry the figures unchanged (issue 28 Want 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench  # noqa: E402
import figures  # noqa: E402


def test_every_benchmark_is_planned_and_reports_its_figures() -> None:
    scripts = bench.benchmark_scripts()
    assert len(scripts) > 20
    assert set(scripts) <= set(bench.PLAN), "a benchmark make bench would not run"
    assert set(bench.PLAN) <= set(scripts), "a plan for a script that is gone"
    for name in scripts:
        text = (BENCH / f"{name}.py").read_text(encoding="utf-8")
        assert "from figures import" in text, f"{name}.py does not report its figures"


def test_report_appends_one_json_line_per_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "figs.jsonl"
    monkeypatch.setenv(figures.ENV, str(out))
    figures.report("1 stream", "replies/s", 120.0, 100.0, unit="replies/s",
                   reference_tool="ping -f", goal=figures.at_least(1.0))  # fmt: skip
    figures.report("budget", "RSS", 90.0, unit="MB", goal=figures.at_most(80, of="probetop"))
    figures.report("lost", "replies/s", float("nan"), 100.0)  # not measured: null, not NaN
    got = figures.read(out)
    assert [f.met for f in got] == [True, False, None]
    assert got[0].ratio == pytest.approx(1.2) and got[0].goal == "ratio >= 1"
    assert got[1].goal == "value <= 80 MB" and got[1].reference is None
    assert got[2].probetop is None and got[2].ratio is None
    for line in out.read_text().splitlines():
        json.loads(line)  # strict JSON: no NaN


def test_goals_on_a_difference_and_a_signed_value() -> None:
    near = figures.Figure("b", "c", "median", 21.3, "ms", reference=20.5)
    assert figures.Goal(hi=1.0, of="diff").met(near) is True
    drift = figures.Figure("b", "c", "drift", -1.5, "ms")
    assert figures.Goal(hi=1.0, of="abs").met(drift) is False
    assert figures.between(0.97, 1.03).text() == "ratio 0.97-1.03"


def test_the_generated_page_keeps_its_data_through_a_merge(tmp_path: Path) -> None:
    fig = figures.Figure("icmp_vs_ping", "flood --size 1 -- 2 streams", "replies/s", 1.0, "")
    run = bench.Run(status="ran", args=["--rounds", "2"], started="now", figures=[fig.__dict__])
    data = {
        "machine": {k: "x" for k in ("kernel", "cpu", "cores", "memory", "python", "tools")},
        "run": {k: "x" for k in ("started", "finished", "load_start", "load_end")}
        | {"command": "make bench", "commit": "abc"},
        "benchmarks": {"icmp_vs_ping": run.__dict__},
    }
    page = tmp_path / "figures.md"
    page.write_text(bench.render(data), encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert "do not edit" in text
    # An HTML comment cannot hold "--": the embedded data escapes it.
    comment = text[text.index(bench.DATA_BEGIN) :]
    assert "--" not in comment[len("<!--") : comment.rindex("-->")]
    assert bench.load(page) == data
    assert "| icmp_vs_ping | flood --size 1 -- 2 streams: replies/s | 1.00 |" in text
    # `make bench-one` keeps the full run's header and lists itself under it.
    data["merged"] = [data["run"] | {"command": "make bench-one B=icmp_vs_ping"}]
    assert "| merged since | x to x, `make bench-one B=icmp_vs_ping`" in bench.render(data)


def test_a_benchmark_run_by_hand_writes_its_figures_with_the_option(tmp_path: Path) -> None:
    """The shared option on a real benchmark's command line (no benchmark
    run: --help exits first, the option must still parse)."""
    out = tmp_path / "f.jsonl"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "icmp_vs_ping.py"), "--figures", str(out), "--help"],
        capture_output=True, text=True, env=dict(os.environ), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and "--figures FILE" in proc.stdout
