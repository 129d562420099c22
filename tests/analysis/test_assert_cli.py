"""--assert end to end on real short cpu runs: pass (exit 0), fail (exit 99)
with the measured value, the outcomes in the recording's footer (schema
checked), usage errors before any probe starts, report against a
recording, the dashboard (checked at quit, printed after it closes)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from analysis_helpers import probetop
from file_size import text_of
from probetop.probes.record import load_session, schema_path
from probetop.probes.system import passive_probes
from probetop.tui.run.runner import run_headless
from pty_session import PtySession

DATA = Path(__file__).resolve().parents[1]
CPU = ["cpu", "--time", "1", "--headless"]


def _validate(path: Path) -> None:
    schema = json.loads(schema_path().read_text())
    for line in path.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)


def test_passing_assertions_exit_0_and_are_recorded(tmp_path: Path) -> None:
    rec = tmp_path / "pass.jsonl"
    out = probetop(
        *CPU,
        "--record",
        str(rec),
        "--assert",
        "cpu.events_per_second>1",
        "--assert",
        "cpu.latency.p95<10s",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "assertions: 2 passed, 0 failed" in out.stdout
    assert "ok   cpu.events_per_second>1 (cpu): measured " in out.stdout
    session = load_session(rec)
    outcomes = session.assertions
    assert [o["expr"] for o in outcomes] == ["cpu.events_per_second>1", "cpu.latency.p95<10s"]
    assert all(o["passed"] for o in outcomes)
    summary = session.footer["summaries"]["cpu"] if session.footer else {}
    assert outcomes[0]["measured"] == summary["events_per_second"]
    assert outcomes[1]["measured"] == summary["latency_ms"]["p95"]
    assert outcomes[1]["threshold"] == 10000.0 and outcomes[1]["unit"] == "ms"
    _validate(rec)


def test_failing_assertion_exits_99_with_the_measured_value(tmp_path: Path) -> None:
    rec = tmp_path / "fail.jsonl"
    out = probetop(*CPU, "--record", str(rec), "--assert", "cpu.events_per_second>1M")
    assert out.returncode == 99, out.stdout + out.stderr
    assert "assertions: 0 passed, 1 failed" in out.stdout
    line = next(x for x in out.stdout.splitlines() if "FAIL" in x)
    measured = load_session(rec).assertions[0]["measured"]
    assert line.startswith("  FAIL cpu.events_per_second>1M (cpu): measured ")
    assert "wanted > 1000000 /s" in line
    assert f"{measured:.1f}" in line
    assert load_session(rec).assertions[0]["passed"] is False
    _validate(rec)


def test_json_report_stays_one_document() -> None:
    out = probetop(*CPU, "--json", "--assert", "cpu.total_events<1")
    assert out.returncode == 99
    doc = json.loads(out.stdout)  # the outcomes went to stderr
    assert doc["total_events"] > 0
    assert "FAIL cpu.total_events<1 (cpu)" in out.stderr


def test_usage_errors_exit_2_before_any_probe_starts(tmp_path: Path) -> None:
    rec = tmp_path / "never.jsonl"
    started = time.monotonic()
    unknown = probetop(*CPU, "--record", str(rec), "--assert", "cpu.speed>1", fresh=True)
    assert unknown.returncode == 2
    assert "unknown metric 'cpu.speed'" in unknown.stderr
    assert (
        "cpu.events_per_second (/s)" in unknown.stderr and "cpu.latency.p99 (ms)" in unknown.stderr
    )
    assert not rec.exists()  # nothing started, nothing recorded
    assert time.monotonic() - started < 20
    unit = probetop(*CPU, "--assert", "cpu.latency.p95<200MB")
    assert unit.returncode == 2 and "'200MB' is in MB (bytes)" in unit.stderr
    syntax = probetop(*CPU, "--assert", "cpu.latency.p95 is small")
    assert syntax.returncode == 2 and "argument --assert" in syntax.stderr
    other = probetop(*CPU, "--assert", "http.p95<200ms")
    assert other.returncode == 2 and "not measured by probetop cpu" in other.stderr
    huge = probetop(*CPU, "--assert", "cpu.latency.p95<1e400")
    assert huge.returncode == 2 and "out of range" in huge.stderr
    for out in (unknown, unit, syntax, other, huge):
        assert "Traceback" not in out.stderr


def test_report_checks_a_recording() -> None:
    demo = DATA / "data" / "demo_session.jsonl"
    ok = probetop("report", str(demo), "--no-charts", "--assert", "icmp.loss<0.1%")
    assert ok.returncode == 0 and "ok   icmp.loss<0.1% (icmp:127.0.0.1): measured 0%" in ok.stdout
    bad = probetop("report", str(demo), "--no-charts", "--assert", "cpu.events_per_second>3k")
    assert bad.returncode == 99 and "measured 2561.6 /s" in bad.stdout


def test_a_footer_hook_that_fails_never_loses_the_footer(tmp_path: Path) -> None:
    rec = tmp_path / "hook.jsonl"

    def broken(summaries: object, probes: object) -> dict[str, object]:
        raise RuntimeError("boom")

    asyncio.run(
        run_headless(list(passive_probes(0.2)), duration_s=0.5, record=rec, footer_fields=broken)
    )
    session = load_session(rec)
    assert session.footer is not None
    assert session.footer["footer_fields_error"] == "RuntimeError: boom"
    assert session.assertions == []


def test_old_recordings_have_no_assertions_and_still_load() -> None:
    for path in (
        DATA / "data" / "demo_session.jsonl",
        DATA / "data" / "tui_session.jsonl",
        DATA / "disk" / "data" / "iops-session-0.1.jsonl",
    ):
        assert load_session(path).assertions == []


def test_a_malformed_assertions_field_is_refused(tmp_path: Path) -> None:
    from probetop.probes.record import RecordingError

    lines = (DATA / "data" / "tui_session.jsonl").read_text().splitlines()
    footer = json.loads(lines[-1])
    footer["assertions"] = [{"expr": "x<1", "metric": "x", "passed": "yes"}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:-1], json.dumps(footer)]) + "\n")
    with pytest.raises(RecordingError, match="'passed' is not true or false"):
        load_session(bad)


def test_dashboard_checks_at_quit_and_prints_after_it_closes(tmp_path: Path) -> None:
    rec = tmp_path / "dash.jsonl"
    app = PtySession.start(
        ["cpu", "--time", "1", "--record", str(rec), "--assert", "cpu.events_per_second>1M"]
    )
    try:
        deadline = time.monotonic() + 30
        # The cpu probe ends itself after --time; the dashboard stays open.
        while time.monotonic() < deadline and '"level":"stopped"' not in text_of(rec):
            time.sleep(0.2)
        assert app.proc.poll() is None, bytes(app.output)[-500:]
        app.type(b"q")
        rc = app.proc.wait(timeout=60)
    finally:
        app.close()
    assert rc == 99
    text = app.text
    tail = text[text.rfind("assertions:") :]
    assert "assertions: 0 passed, 1 failed" in tail
    assert "FAIL cpu.events_per_second>1M (cpu): measured" in tail
    assert load_session(rec).assertions[0]["passed"] is False


@pytest.fixture
def local_http() -> Iterator[str]:
    """A loopback HTTP server answering 200 to every GET."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_http_p95_against_a_loopback_server(local_http: str, tmp_path: Path) -> None:
    rec = tmp_path / "http.jsonl"
    # 20 responses: the fewest a p95 rests on (test_assertion_gates_on_too_little_data)
    run = ["http", local_http, "--count", "20", "--interval", "0.1", "--headless"]
    ok = probetop(*run, "--record", str(rec), "--assert", "http.p95<5s",
                  "--assert", "http.error_rate==0%")  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    outcome = load_session(rec).assertions[0]
    summary = load_session(rec).footer["summaries"]  # type: ignore[index]
    (url,) = next(iter(summary.values()))["urls"].values()
    assert outcome["measured"] == url["phases_ms"]["total"]["p95"]
    assert (
        url["phases_ms"]["total"]["p90"] <= outcome["measured"] <= url["phases_ms"]["total"]["p99"]
    )
    bad = probetop(*run, "--assert", "http.p95<1us")
    assert bad.returncode == 99 and "FAIL http.p95<1us" in bad.stdout
    one_off = probetop("http", local_http, "--assert", "http.p95<5s")
    assert one_off.returncode == 2 and "--count" in one_off.stderr
