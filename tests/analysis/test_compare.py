"""probetop compare on real recordings: the cpu probe run twice, a recording
against itself, a heavier run (a real, large difference), refusals, charts,
--assert compare:regression, and the recordings shipped in tests/."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from analysis_helpers import probetop
from probetop.probes.record import Session, load_session
from probetop.tui.analysis.comparison import CompareRefused, compare_sessions, subcommand

DATA = Path(__file__).resolve().parents[1]


def _json(out: str) -> dict:
    return json.loads(out)


def test_two_runs_of_the_same_probe(cpu_runs: dict[str, Path]) -> None:
    out = probetop("compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--no-charts")
    assert out.returncode == 0, out.stderr
    assert "== cpu (cpu)" in out.stdout
    for column in ("A median", "A p95", "A p99", "B median", "B p95", "B p99", "change"):
        assert column in out.stdout
    eps = next(line for line in out.stdout.splitlines() if line.strip().startswith("eps "))
    assert "n=" in eps and ("p=" in eps or "p<" in eps)
    doc = _json(probetop("compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--json").stdout)
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert {"eps", "lat_pct_ms", "lat_avg_ms"} <= set(metrics)
    assert metrics["eps"]["a"]["n"] >= 8 and metrics["eps"]["b"]["n"] >= 8
    assert 0.0 <= metrics["eps"]["p_value"] <= 1.0
    # The medians are the recordings' own per-interval medians.
    values = sorted(
        line["values"]["eps"]
        for line in load_session(cpu_runs["a"]).samples("cpu")
        if line["values"].get("eps") is not None
    )
    n = len(values)
    median = (values[(n - 1) // 2] + values[n // 2]) / 2
    assert metrics["eps"]["a"]["median"] == median


def test_a_recording_against_itself_is_not_significant_anywhere(cpu_runs: dict[str, Path]) -> None:
    for test in ("mann-whitney", "welch"):
        out = probetop(
            "compare", str(cpu_runs["a"]), str(cpu_runs["a"]), "--no-charts", "--test", test
        )
        assert out.returncode == 0, out.stderr
        rows = [line for line in out.stdout.splitlines() if line.startswith("   ") and "n=" in line]
        assert rows, out.stdout
        assert all(" ~ (p=1.000 " in row for row in rows), out.stdout
        assert "regression: 0.00%" in out.stdout


def test_a_real_difference_is_significant_and_a_regression(cpu_runs: dict[str, Path]) -> None:
    a, heavy = str(cpu_runs["a"]), str(cpu_runs["heavy"])
    doc = _json(probetop("compare", a, heavy, "--force", "--json").stdout)
    eps = next(m for m in doc["metrics"] if m["metric"] == "eps")
    # A prime limit of 30000 instead of 10000 costs each event ~4x: events/s fall.
    assert eps["significant"] and eps["p_value"] < 0.01
    assert eps["change_pct"] < -40
    assert eps["verdict"] == "worse"
    assert doc["regression_pct"] > 40
    assert doc["differences"] == ["cpu: max_prime 10000 (A) vs 30000 (B)"]
    # The other way round it is an improvement.
    back = _json(probetop("compare", heavy, a, "--force", "--json").stdout)
    assert next(m for m in back["metrics"] if m["metric"] == "eps")["verdict"] == "better"
    assert back["improvement_pct"] > 40


def test_different_options_are_refused_and_named(cpu_runs: dict[str, Path]) -> None:
    out = probetop("compare", str(cpu_runs["a"]), str(cpu_runs["heavy"]))
    assert out.returncode == 2
    assert out.stdout == ""
    assert "different options" in out.stderr
    assert "cpu: max_prime 10000 (A) vs 30000 (B)" in out.stderr
    assert "--force" in out.stderr
    assert "Traceback" not in out.stderr


def test_different_probes_are_refused(cpu_runs: dict[str, Path]) -> None:
    demo = DATA / "data" / "demo_session.jsonl"
    out = probetop("compare", str(cpu_runs["a"]), str(demo))
    assert out.returncode == 2
    assert "different probes: A ran cpu; B ran cpu, http, icmp, iops, warmup" in out.stderr
    forced = probetop("compare", str(cpu_runs["a"]), str(demo), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    doc = _json(forced.stdout)
    assert {p["kind"] for p in doc["probes"]} == {"cpu"}
    assert len(doc["only_in_b"]) == 4


def test_compare_assert_regression(cpu_runs: dict[str, Path]) -> None:
    a, b, heavy = (str(cpu_runs[k]) for k in ("a", "b", "heavy"))
    same = probetop("compare", a, a, "--no-charts", "--assert", "compare:regression<5%")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "ok   compare:regression<5%: measured 0%" in same.stdout
    worse = probetop(
        "compare", a, heavy, "--force", "--no-charts", "--assert", "compare:regression<5%"
    )
    assert worse.returncode == 99, worse.stdout + worse.stderr
    assert "FAIL compare:regression<5%: measured" in worse.stdout
    # A plain metric on compare is checked against B's footer (the new run).
    plain = probetop("compare", a, b, "--no-charts", "--assert", "cpu.events_per_second>1")
    assert plain.returncode == 0 and "ok   cpu.events_per_second>1 (cpu)" in plain.stdout
    bad = probetop("compare", a, b, "--assert", "compare:regression<5ms")
    assert bad.returncode == 2 and "percent" in bad.stderr
    unknown = probetop("compare", a, b, "--assert", "compare:speed<5%")
    assert unknown.returncode == 2
    assert "compare:regression (%)" in unknown.stderr and "cpu.events_per_second" in unknown.stderr


def test_charts_in_the_terminal_and_svg(cpu_runs: dict[str, Path], tmp_path: Path) -> None:
    svg = tmp_path / "eps.svg"
    out = probetop(
        "compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--metric", "eps", "--plot", str(svg)
    )
    assert out.returncode == 0, out.stderr
    assert "cpu: eps" in out.stdout and "seconds since the start" in out.stdout  # plotext
    root = ET.fromstring(svg.read_text())
    assert root.tag.endswith("svg")
    lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2  # A and B, one panel
    samples = load_session(cpu_runs["a"]).samples("cpu")
    n_a = sum(1 for line in samples if line["values"].get("eps") is not None)
    assert len(lines[0].get("points", "").split()) == n_a
    png = probetop("compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--plot", "x.png")
    assert png.returncode == 2 and "SVG" in png.stderr


def test_metric_filter(cpu_runs: dict[str, Path]) -> None:
    doc = _json(
        probetop(
            "compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--json", "--metric", "cpu.lat_*"
        ).stdout
    )
    assert sorted(m["metric"] for m in doc["metrics"]) == ["lat_avg_ms", "lat_pct_ms"]
    out = probetop("compare", str(cpu_runs["a"]), str(cpu_runs["b"]), "--metric", "nope")
    assert out.returncode == 2
    assert "matches no metric" in out.stderr and "cpu.eps" in out.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, cpu_runs: dict[str, Path]) -> None:
    missing = probetop("compare", str(tmp_path / "none.jsonl"), str(cpu_runs["a"]), fresh=True)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    alpha = probetop("compare", str(cpu_runs["a"]), str(cpu_runs["a"]), "--alpha", "2")
    assert alpha.returncode == 2 and "between 0 and 1" in alpha.stderr
    for out in (missing, alpha):
        assert "Traceback" not in out.stderr


def test_old_recordings_compare_with_themselves() -> None:
    """The recordings tests/ ships (older probetop versions): every family,
    passive probes too, and a warm-up's plateau deltas."""
    demo = load_session(DATA / "data" / "demo_session.jsonl")
    c = compare_sessions(demo, demo, passive=True)
    kinds = {p.kind for p in c.pairs}
    assert {"cpu", "iops", "warmup", "icmp", "http", "system.cpu"} <= kinds
    assert c.metrics and not any(m.significant for m in c.metrics)
    assert c.regression_pct == 0.0
    warmup = load_session(DATA / "disk" / "data" / "warmup-session-0.1.jsonl")
    cw = compare_sessions(warmup, warmup)
    assert cw.plateaus
    for p in cw.plateaus:
        assert p.a == p.b
        assert p.to_dict()["reached_delta_s"] in (0.0, None)


def test_two_demo_recordings_ignore_their_fresh_targets() -> None:
    assert subcommand(["probetop", "--time", "5", "demo", "--only", "cpu"]) == "demo"
    assert subcommand(["probetop", "--record", "demo", "cpu"]) == "cpu"
    assert subcommand(["probetop"]) is None


def test_demo_recordings_pair_fresh_targets(tmp_path: Path) -> None:
    """Two demo runs differ in their temporary paths and HTTP port: not a
    difference of options, and the per-URL metrics pair by position."""
    original = DATA / "data" / "demo_session.jsonl"
    text = original.read_text()
    other = tmp_path / "demo-b.jsonl"
    other.write_text(
        text.replace("127.0.0.1:38705", "127.0.0.1:40001").replace(
            "probetop-demo-rmyz5ks_", "probetop-demo-zzzzzzzz"
        )
    )
    a, b = load_session(original), load_session(other)
    c = compare_sessions(a, b)
    assert c.differences == [] and c.only_a == [] and c.only_b == []
    assert not c.notes
    http_keys = {m.key for m in c.metrics if m.kind == "http"}
    assert "total_ms@127.0.0.1:38705/delay?ms=20" in http_keys
    moved = next(m for m in c.metrics if m.key == "total_ms@127.0.0.1:38705/delay?ms=20")
    assert moved.b_key == "total_ms@127.0.0.1:40001/delay?ms=20"
    assert not moved.significant and moved.a == moved.b
    # Not demo recordings: the same change is a difference of options.
    for session in (a, b):
        session.header["command"] = ["probetop", "http", "URL"]
    try:
        compare_sessions(a, b)
    except CompareRefused as exc:
        assert "127.0.0.1:40001" in str(exc)
    else:
        raise AssertionError("a different target was not refused")


def test_every_compare_option_is_in_docs_compare_md() -> None:
    import re

    from probetop.tui.commands import compare

    text = (DATA.parent / "docs" / "compare.md").read_text()
    for option in compare.SPEC.options:
        if not option.positional:
            flag = max(option.flags, key=len)
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), flag


def test_warmup_plateau_deltas_on_two_real_passes() -> None:
    """Two read passes over the same 256 MiB file (data/warmup-plateau-*.jsonl:
    `probetop warmup wu.img --bs 64k --rate-iops 300 --steadystate iops:20%
    --ss-dur 3 --interval 0.5 --record ...`, run twice): the plateau was
    reached at 6.0 s and 7.0 s; its level is the median of the intervals
    from then until it was left, recomputed here from the raw lines."""
    here = Path(__file__).resolve().parent / "data"
    a = load_session(here / "warmup-plateau-a.jsonl")
    b = load_session(here / "warmup-plateau-b.jsonl")
    (delta,) = compare_sessions(a, b, metrics=["iops"]).plateaus
    assert delta.pass_name == "read"
    assert delta.a.reached_at_s == 6.012412871
    assert delta.b.reached_at_s == 7.013124294

    def level(session: Session) -> float:
        values, on = [], False
        for line in session.samples():
            plateau = line["extra"]["plateau"]
            on = on or plateau["reached_at_s"] is not None
            if on and plateau["left_at_s"] is not None:
                break
            if on:
                values.append(line["values"]["iops"])
        values.sort()
        n = len(values)
        return (values[(n - 1) // 2] + values[n // 2]) / 2

    assert delta.a.iops == level(a)
    assert delta.b.iops == level(b)
    out = probetop(
        "compare",
        str(here / "warmup-plateau-a.jsonl"),
        str(here / "warmup-plateau-b.jsonl"),
        "--no-charts",
        "--metric",
        "iops",
    )
    assert out.returncode == 0, out.stderr
    assert "plateau (read pass): A 6.0 s, B 7.0 s (+1.0 s); IOPS at the plateau:" in out.stdout


def test_nothing_compared_fails_a_regression_gate(tmp_path: Path) -> None:
    """Recordings with no sample in common (one cut after its header) compare
    no metric: the regression is unknown, not 0 %, and a gate on it fails."""
    demo = DATA / "data" / "demo_session.jsonl"
    header_only = tmp_path / "header.jsonl"
    header_only.write_text(demo.read_text().splitlines()[0] + "\n")
    c = compare_sessions(load_session(header_only), load_session(demo))
    assert not c.metrics and c.regression_pct is None and c.improvement_pct is None
    assert c.to_dict()["regression_pct"] is None
    out = probetop("compare", str(header_only), str(demo), "--no-charts")
    assert out.returncode == 0 and "no metric has values in both recordings" in out.stdout
    gate = probetop(
        "compare", str(header_only), str(demo), "--no-charts", "--assert", "compare:regression<5%"
    )
    assert gate.returncode == 99, gate.stdout + gate.stderr
    assert (
        "FAIL compare:regression<5%: no value measured (no metric has values in both recordings)"
        in gate.stdout
    )
