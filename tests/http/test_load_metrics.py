"""Load mode's Prometheus metrics and --assert, against real loopback servers.

The live endpoint is scraped while ``probetop http URL --rate R`` runs and
parsed with prometheus_client's OpenMetrics parser; the final textfile is
held to the run's own ``--json`` report (what wrk2's figures are checked
against in test_load_probe.py), value for value, with the expected numbers
taken from the report by hand (never through the tracker's converters).
``--assert`` runs against nginx: passing gates exit 0, a failing one 99,
a gate on nothing (no 2xx/3xx response) fails, a bad unit or the other
mode's figure exits 2 before the run.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from http_fixtures import NginxServer, make_cert
from probetop.probes.core.metricdefs import Summary
from probetop.probes.http.load.hist import Histogram
from probetop.probes.http.load.metrics import HttpLoadTracker
from probetop.probes.http.load.records import BoundCounts, ClassLatency, LoadInterval
from probetop.probes.http.status import StatusClass
from test_load_stall import StallServer, run_probetop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "metrics"))
from metrics_fixtures import assert_never_backwards, parse, run_and_scrape, samples, value

CLASSES = ("2xx_3xx", "4xx", "5xx", "transport")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cert = make_cert(tmp_path_factory.mktemp("httpload-cert"))
    with NginxServer(tmp_path_factory.mktemp("httpload-nginx"), *cert) as server:
        yield f"http://127.0.0.1:{server.plain_port}"


def test_live_metrics_are_the_reports_figures(tmp_path: Path) -> None:
    """Every 10th response a 503: counters by class, code and error kind,
    the corrected/service/phase histograms and the gauges, each equal to
    the --json report's figure."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with StallServer(status_every=10, status=503) as server:
        argv = ["http", server.url, "--rate", "200", "--time", "3", "--sample-interval", "0.5"]
        argv += ["--json", "--metrics", str(port), "--textfile", str(tmp_path)]
        argv += ["--record", str(tmp_path / "load.jsonl")]
        scrapes, result = run_and_scrape(argv, url, every_s=0.25, openmetrics=True)
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["probes"].values()
    assert len(scrapes) >= 3
    assert assert_never_backwards(scrapes) >= 10
    sent = [s.value for f in scrapes for s in samples(f, "probetop_http_load_requests_sent_total")]
    assert len(set(sent)) >= 3, f"the counter did not move while the load ran: {sent}"

    last = scrapes[-1]
    for name, type_, unit in (
        ("probetop_http_load_target_requests_per_second", "gauge", ""),
        ("probetop_http_load_sent_requests_per_second", "gauge", ""),
        ("probetop_http_load_requests_sent", "counter", ""),
        ("probetop_http_load_requests", "counter", ""),
        ("probetop_http_load_responses", "counter", ""),
        ("probetop_http_load_request_errors", "counter", ""),
        ("probetop_http_load_request_duration_seconds", "histogram", "seconds"),
        ("probetop_http_load_service_time_seconds", "histogram", "seconds"),
        ("probetop_http_load_phase_duration_seconds", "histogram", "seconds"),
        ("probetop_http_load_request_duration_quantile_seconds", "summary", "seconds"),
        ("probetop_http_load_service_time_quantile_seconds", "summary", "seconds"),
        ("probetop_http_load_phase_duration_quantile_seconds", "summary", "seconds"),
        ("probetop_http_load_in_flight_requests", "gauge", ""),
        ("probetop_http_load_backlog_requests", "gauge", ""),
        ("probetop_http_load_connections_opened", "counter", ""),
        ("probetop_http_load_generator_limited", "gauge", ""),
    ):
        assert last[name].type == type_, name
        assert last[name].unit == unit, name

    final = parse((tmp_path / "probetop.prom").read_text())
    probe = f"http.load:{server.url.split('://', 1)[1]}"
    labels = {"probe": probe, "url": server.url}

    def at(name: str, **more: str) -> float:
        return value(final, name, **labels, **more)

    classes = report["classes"]
    assert at("probetop_http_load_target_requests_per_second") == 200
    # 3 s at 200/s: 600 due; what a starved generator could not send by
    # --time is unsent (never sent late).
    assert at("probetop_http_load_requests_sent_total") == report["sent"]
    assert report["sent"] + report["unsent"] == 600 and report["unsent"] <= 120, report["sent"]
    assert at("probetop_http_load_connections_opened_total") == report["connects"]
    for cls in CLASSES:
        count = classes.get(cls, {}).get("count", 0)
        assert at("probetop_http_load_requests_total", **{"class": cls}) == count, cls
    fives = classes["5xx"]["count"]
    assert fives >= 50 and classes["2xx_3xx"]["count"] == report["done"] - fives
    for code, n in report["codes"].items():
        assert at("probetop_http_load_responses_total", code=code) == n
    assert report["errors"] == {"http_5xx": fives}
    assert at("probetop_http_load_request_errors_total", kind="http_5xx") == fives

    # Histograms: the report's own per-class histograms (µs buckets; below
    # 2048 µs a bucket's index is its value), counted by hand.
    for metric, table in (
        ("probetop_http_load_request_duration_seconds", "corrected"),
        ("probetop_http_load_service_time_seconds", "service"),
    ):
        for cls in ("2xx_3xx", "5xx"):
            hist = report["histograms_us"][table][cls]
            mine = {"class": cls}
            assert at(f"{metric}_count", **mine) == hist["n"] == classes[cls]["count"]
            assert at(f"{metric}_sum", **mine) == pytest.approx(hist["sum"] / 1e6, abs=1e-9)
            assert at(f"{metric}_bucket", le="+Inf", **mine) == hist["n"]
            for le_us in (100, 250, 500, 1000):
                want = sum(n for index, n in hist["b"] if index <= le_us)
                got = at(f"{metric}_bucket", le=str(le_us / 1e6), **mine)
                assert got == want, (metric, cls, le_us)
    ok = classes["2xx_3xx"]["count"]
    for phase in ("resolve", "connect", "tls", "processing", "transfer"):
        assert at("probetop_http_load_phase_duration_seconds_count", phase=phase) == ok
    server_ms = report["phases_ms"]["server"]["mean"]
    processing_s = at("probetop_http_load_phase_duration_seconds_sum", phase="processing")
    assert processing_s / ok == pytest.approx(server_ms / 1e3, rel=1e-3, abs=2e-6)

    # Gauges: the run's latest interval (the drain after --time sends nothing).
    row = [r for r in report["interval_rows"] if r["sent_rps"]][-1]
    got = at("probetop_http_load_sent_requests_per_second")
    assert got == pytest.approx(row["sent_rps"], abs=1e-3)  # the row: 3 decimals
    for q, key in (("0.5", "p50"), ("0.99", "p99"), ("0.999", "p99.9")):
        got = at("probetop_http_load_request_duration_quantile_seconds", quantile=q)
        assert got == pytest.approx(row["corrected_ms"][key] / 1e3, abs=1e-6), q
        got = at("probetop_http_load_service_time_quantile_seconds", quantile=q)
        assert got == pytest.approx(row["service_ms"][key] / 1e3, abs=1e-6), q
    # The phases' gauges: the recording's last interval of the run, as recorded (ms).
    lines = [json.loads(ln) for ln in (tmp_path / "load.jsonl").read_text().splitlines()]
    ran = [
        r
        for r in lines
        if r.get("type") == "sample" and not r["extra"].get("drain") and r["interval"] >= 0.05
    ]
    phases_ms = ran[-1]["extra"]["phases_ms"]
    for phase, label in (("dns", "resolve"), ("tcp", "connect"), ("server", "processing")):
        for q, key in (("0.5", "p50"), ("0.99", "p99")):
            got = at("probetop_http_load_phase_duration_quantile_seconds", phase=label, quantile=q)
            assert got == pytest.approx(phases_ms[phase][key] / 1e3, abs=1e-9), (phase, q)
    assert at("probetop_http_load_in_flight_requests") == row["in_flight_max"]
    assert at("probetop_http_load_backlog_requests") == row["backlog"]
    limited = at("probetop_http_load_generator_limited")
    assert limited == (1.0 if row["generator_limited"] else 0.0)


def _asserting(url: str, *gates: str, time_s: str = "2") -> subprocess.CompletedProcess[str]:
    args = [url, "--rate", "100", "--time", time_s, "--headless"]
    for gate in gates:
        args += ["--assert", gate]
    return run_probetop(*args)


def test_gates_that_hold_exit_0_and_one_that_fails_exits_99(nginx: str) -> None:
    holding = (
        "http.load.requests_per_second>=50",
        "http.load.achieved>=50%",
        "http.load.p99<2s",
        "http.load.service.p99<2s",
        "http.load.dns.p99<1s",
        "http.load.error_rate==0%",
        "http.load.non_2xx_3xx==0",
        "http.load.class.transport==0",
        "http.load.requests>=150",
    )
    proc = _asserting(f"{nginx}/index.html", *holding)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"assertions: {len(holding)} passed, 0 failed" in proc.stdout
    for gate in holding:
        assert f"ok   {gate} (http.load:" in proc.stdout

    # A p99.9 of about 200 responses is their largest: it cannot pass
    # (probes/core/checks.py, Assertable.undecided; it needs 1000).
    proc = _asserting(
        f"{nginx}/index.html", "http.load.p99<2s", "http.load.p50<1us", "http.load.p99.9<2s"
    )
    assert proc.returncode == 99, proc.stdout + proc.stderr
    assert "assertions: 1 passed, 2 failed" in proc.stdout
    assert "a p99.9 needs at least 1000 values" in proc.stdout
    assert "FAIL http.load.p50<1us (http.load:" in proc.stdout
    assert "wanted < 0.001ms" in proc.stdout or "wanted < 1µs" in proc.stdout, proc.stdout


def test_a_gate_on_no_success_fails_and_errors_are_counted(nginx: str) -> None:
    """Every response a 404: no latency to gate on (fails, never passes on
    nothing); the error figures are measured."""
    proc = _asserting(
        f"{nginx}/missing",
        "http.load.p99<10s",
        "http.load.non_2xx_3xx>=50",  # 100 due in 1 s: a starved generator sends fewer
        "http.load.error_rate==100%",
        time_s="1",
    )
    assert proc.returncode == 99, proc.stdout + proc.stderr
    out = proc.stdout
    assert "assertions: 2 passed, 1 failed" in out
    assert "FAIL http.load.p99<10s (http.load:" in out and "no value measured" in out
    assert "ok   http.load.non_2xx_3xx>=50" in out and "ok   http.load.error_rate==100%" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "100", "--assert", "http.load.p99<5%"], "http.load.p99<5%"),
        # the other mode's figures: refused before the run, naming this mode's
        (["--rate", "100", "--assert", "http.p99<5ms"], "assert load mode's: http.load.p99"),
        (["--count", "3", "--assert", "http.load.p99<5ms"], "add --rate R or --connections N"),
    ],
)
def test_a_gate_this_run_cannot_measure_exits_2_before_it(
    nginx: str, args: list[str], message: str
) -> None:
    proc = run_probetop(f"{nginx}/index.html", "--headless", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert "ran" not in proc.stdout and "assertions:" not in proc.stdout


def test_a_recording_is_gated_and_exported_after_the_fact(nginx: str) -> None:
    with tempfile.TemporaryDirectory(prefix="httpload-") as tmp:
        rec = Path(tmp) / "load.jsonl"
        run = run_probetop(f"{nginx}/index.html", "--rate", "100", "--time", "1",
                           "--headless", "--record", str(rec))  # fmt: skip
        assert run.returncode == 0, run.stderr
        main = [sys.executable, "-m", "probetop.tui.main"]
        gated = subprocess.run(
            [*main, "report", str(rec), "--assert", "http.load.requests>=50",
             "--assert", "http.load.p99.9<1us"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert gated.returncode == 99, gated.stdout + gated.stderr
        assert "ok   http.load.requests>=50" in gated.stdout
        assert "FAIL http.load.p99.9<1us" in gated.stdout
        exported = subprocess.run(
            [*main, "export", str(rec), "-O", "openmetrics"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        promtool = shutil.which("promtool")
        if promtool is not None:  # Prometheus' own backfill reads it whole
            om = Path(tmp) / "load.om"
            om.write_text(exported.stdout)
            backfill = subprocess.run(
                [promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), f"{tmp}/tsdb"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    families = parse(exported.stdout, openmetrics=True)
    counts = [
        s.value
        for s in samples(families, "probetop_http_load_request_duration_seconds_count")
        if s.labels["class"] == "2xx_3xx"
    ]
    assert counts and counts == sorted(counts) and counts[-1] >= 50
    sent = samples(families, "probetop_http_load_requests_sent_total")
    assert 50 <= sent[-1].value <= 100  # 100 due; a starved generator sends fewer (unsent)


def test_bound_counts_are_exact_below_2ms_and_read_back() -> None:
    values = [50, 100, 101, 250, 999, 1000, 1001, 30_000, 90_000_000]  # µs
    counts = BoundCounts.of(Histogram.of(values))
    # bounds 100, 250, 500, 1000, 2500 µs ...; (25 ms, 50 ms] is slot 8; past 60 s the last
    assert counts.counts[:5] == (2, 2, 0, 2, 1)
    assert counts.counts[8] == 1 and counts.counts[-1] == 1
    assert counts.count == len(values) and counts.sum_us == sum(values)
    assert BoundCounts.from_mapping(counts.to_dict()) == counts
    for garbage in (None, {}, {"n": "x"}, {"n": [1, "a", -3]}, [1, 2]):
        assert BoundCounts.from_mapping(garbage).count in (0, 1)


def _sample(**le: object) -> LoadInterval:
    ok = ClassLatency(count=3, corrected_ms={"p50": 1.5, "p99": 2.0})
    return LoadInterval(
        target_rps=10.0, seconds=1.0, scheduled=3, sent=3, done=3,
        classes={StatusClass.SUCCESS: ok}, codes={"200": 3}, **le,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_recording_without_counts_gives_counters_but_no_histogram() -> None:
    """Recordings from before the samples kept counts (or under other
    bounds) export their counters and no made-up histogram."""
    tracker = HttpLoadTracker("p", {"params": {"url": "http://h/", "rate": 10}})
    tracker.observe(_sample().to_sample("p", 1))
    raw = _sample(le_corrected={StatusClass.SUCCESS: BoundCounts((3,), 30)}).to_sample("p", 2)
    raw.extra["le"]["bounds_s"] = [0.5, 1.0]  # a future version's bounds
    tracker.observe(raw)
    names = {p.metric.name for p in tracker.points()}
    assert "probetop_http_load_request_duration_seconds" not in names
    by_name = {(p.metric.name, p.labels): p.value for p in tracker.points()}
    assert by_name[("probetop_http_load_requests_sent", ("p", "http://h/"))] == 6
    assert by_name[("probetop_http_load_requests", ("p", "http://h/", "2xx_3xx"))] == 6
    assert by_name[("probetop_http_load_responses", ("p", "http://h/", "200"))] == 6
    summary = by_name[("probetop_http_load_request_duration_quantile_seconds", ("p", "http://h/"))]
    assert isinstance(summary, Summary) and dict(summary.quantiles)[0.99] == 0.002
