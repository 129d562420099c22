"""Recorder and reader: schema, permissions, redaction, torn lines, signals, kill -9."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from file_size import text_of
from probetop.probes.record.reader import load_session
from probetop.probes.record.writer import SCHEMA_VERSION, Recorder, RecordingError, schema_path
from probetop.probes.system.collectors import passive_probes
from probetop.tui.run.runner import run_headless

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def validate_file(path: Path) -> list[dict]:
    schema = json.loads(schema_path().read_text())
    validator = jsonschema.Draft202012Validator(schema)
    lines = [json.loads(row) for row in path.read_text().splitlines()]
    for line in lines:
        validator.validate(line)
    return lines


async def test_recording_is_private_valid_and_complete(tmp_path):
    out = tmp_path / "s.jsonl"
    result = await run_headless(passive_probes(0.2), duration_s=0.7, record=out, command=["x"])
    assert result.reason == "time"
    assert out.stat().st_mode & 0o777 == 0o600
    lines = validate_file(out)
    assert lines[0]["type"] == "header" and lines[0]["schema"] == SCHEMA_VERSION
    assert {p["id"] for p in lines[0]["probes"]} == {"system.cpu", "system.disk", "system.net"}
    assert lines[-1]["type"] == "footer" and lines[-1]["reason"] == "time"
    samples = [line for line in lines if line["type"] == "sample"]
    # 0.7 s at 0.2 s: three intervals per probe (two if a loaded machine
    # delays the third tick past the deadline; four if it delays a tick so
    # that a last partial interval remains before it), and the footer agrees.
    per_probe = {pid: sum(1 for s in samples if s["probe"] == pid) for pid in result.summaries}
    assert all(n in (2, 3, 4) for n in per_probe.values()), per_probe
    assert {pid: s["samples"] for pid, s in lines[-1]["summaries"].items()} == per_probe
    ts = [s["t"] for s in samples]
    assert ts == sorted(ts)
    session = load_session(out)
    assert session.warnings == []
    assert session.footer is not None and set(session.footer["summaries"]) == set(per_probe)


async def test_existing_file_is_overwritten_private(tmp_path):
    out = tmp_path / "s.jsonl"
    out.write_text("old\n")
    out.chmod(0o644)
    await run_headless(passive_probes(0.2), duration_s=0.25, record=out)
    assert out.stat().st_mode & 0o777 == 0o600
    validate_file(out)


def test_secrets_are_redacted_before_writing(tmp_path):
    from probetop.probes.record.redaction import redact

    params = {
        "url": "https://alice:s3cret@example.invalid/x",
        "headers": ["Authorization: Bearer abc", "Cookie: a=b", "X-Ok: yes"],
        "user": "alice:pw",
        "cmd": "curl -u bob https://bob:pw@h.invalid/",
    }
    red = json.dumps(redact(params))
    for secret in ("s3cret", "Bearer abc", "a=b", "alice:pw", "bob:pw"):
        assert secret not in red
    assert "X-Ok: yes" in red and "https://***@example.invalid/x" in red


def test_check_path_refuses_bad_targets(tmp_path):
    with pytest.raises(RecordingError, match="does not exist"):
        Recorder.check_path(tmp_path / "nope" / "s.jsonl")
    with pytest.raises(RecordingError, match="directory"):
        Recorder.check_path(tmp_path)


def test_cli_unwritable_record_fails_before_start(tmp_path):
    proc = subprocess.run(
        [*PROBETOP, "--headless", "--time", "5", "--record", str(tmp_path / "no" / "x.jsonl")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(rows))
    return path


def _header(schema: int = SCHEMA_VERSION) -> str:
    return (
        json.dumps(
            {
                "type": "header",
                "format": "probetop-session",
                "schema": schema,
                "probetop": "0",
                "started_at": "x",
                "host": {},
                "probes": [],
            }
        )
        + "\n"
    )


def test_reader_skips_torn_last_line_and_says_so(tmp_path):
    sample = json.dumps(
        {"type": "sample", "probe": "p", "t": 1.0, "interval": 1.0, "values": {"a": 1}}
    )
    path = _write(tmp_path / "torn.jsonl", [_header(), sample + "\n", sample[:20]])
    session = load_session(path)
    assert len(session.samples()) == 1
    assert any("torn last line" in w for w in session.warnings)


def test_reader_refuses_corrupt_middle_and_foreign_files(tmp_path):
    sample = json.dumps({"type": "sample", "probe": "p", "t": 1.0, "interval": 1.0, "values": {}})
    with pytest.raises(RecordingError, match="line 2"):
        load_session(_write(tmp_path / "mid.jsonl", [_header(), "{oops\n", sample + "\n"]))
    with pytest.raises(RecordingError, match="newer"):
        load_session(_write(tmp_path / "new.jsonl", [_header(SCHEMA_VERSION + 1)]))
    with pytest.raises(RecordingError, match="not a probetop recording"):
        load_session(_write(tmp_path / "csv.jsonl", ["a,b,c\n"]))
    with pytest.raises(RecordingError, match="no such file"):
        load_session(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    "args, message",
    [
        (["replay", "/nonexistent/x.jsonl"], "no such file"),
        (["report", "/etc/hostname"], "not a probetop recording"),
    ],
)
def test_cli_replay_and_report_errors_are_one_line_exit_2(args, message):
    proc = subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _start_recording(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "s.jsonl"
    proc = subprocess.Popen(
        [*PROBETOP, "--headless", "--interval", "0.2", "--record", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if text_of(out).count('"type":"sample"') >= 6:
            return proc, out
        time.sleep(0.1)
    proc.kill()
    pytest.fail("recording did not start")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_writes_footer_and_summary(tmp_path, sig):
    proc, out = _start_recording(tmp_path)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    lines = validate_file(out)
    assert lines[-1]["type"] == "footer"
    assert lines[-1]["reason"] == f"interrupted ({sig.name})"
    assert "interrupted" in stdout


def test_kill_9_loses_at_most_the_last_second(tmp_path):
    import datetime as dt

    proc, out = _start_recording(tmp_path)
    time.sleep(1.2)
    killed_at = dt.datetime.now(dt.timezone.utc)
    proc.kill()
    proc.wait(timeout=10)
    session = load_session(out)  # every complete line parses
    assert session.footer is None
    assert any("no footer" in w for w in session.warnings)
    started = dt.datetime.fromisoformat(session.header["started_at"])
    ran_for = (killed_at - started).total_seconds()
    last_t = max(s["t"] for s in session.samples())
    # Samples every 0.2 s, flushed at least every second: at most the last second is lost.
    assert last_t >= ran_for - 1.0, (last_t, ran_for)
