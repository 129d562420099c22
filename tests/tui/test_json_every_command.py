"""``--json`` is one JSON document on stdout in every command that takes it.

Found by a hostile review (`... --json | jq .`): `export REC --json` wrote
OpenMetrics, `stop NAME --json` the session's text report and `compile
--json` its text lines, each exit 0; `report REC --theme x` took a theme it
has nothing to draw with. A real recording, a real detached session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, *args], capture_output=True, text=True, timeout=180, env=env, check=False
    )


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rec = tmp_path_factory.mktemp("json") / "cpu.jsonl"
    out = run("cpu", "--time", "1", "--sample-interval", "0.25", "--record", str(rec), "--json")
    assert out.returncode == 0, out.stderr
    return rec


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{rec}"),
        ("replay", "{rec}"),
        ("compare", "{rec}", "{rec}"),
        ("export", "{rec}"),
        ("export", "{rec}", "-O", "json"),
        ("ls",),
        ("compile",),
    ],
)
def test_every_command_prints_one_json_document(
    recording: Path, args: tuple[str, ...], tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    out = run(*(a.format(rec=recording) for a in args), "--json", env=env)
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)  # one document, nothing else on stdout


def test_export_json_and_another_format_is_a_usage_error(recording: Path) -> None:
    out = run("export", str(recording), "--json", "-O", "csv")
    assert out.returncode == 2 and "--json asks for -O json" in out.stderr


def test_an_export_with_nothing_to_export_says_so(tmp_path: Path) -> None:
    rec = tmp_path / "passive.jsonl"
    assert run("--time", "0.5", "--record", str(rec), "--headless").returncode == 0
    out = run("export", str(rec), "-O", "csv")
    assert out.returncode == 0
    assert "holds no metric to export" in out.stderr


@pytest.mark.parametrize("command", ["report", "compare", "export", "ls", "compile"])
def test_a_command_without_a_dashboard_refuses_a_theme(recording: Path, command: str) -> None:
    files = {
        "report": [str(recording)],
        "compare": [str(recording)] * 2,
        "export": [str(recording)],
    }
    out = run(command, *files.get(command, []), "--theme", "probetop-light")
    assert out.returncode == 2
    assert f"{command} shows no dashboard, so --theme would be ignored" in out.stderr


def test_stop_json_prints_the_sessions_report_as_json() -> None:
    # A short base, not tmp_path: a Unix socket path holds at most 107 bytes,
    # and /tmp/pytest-of-USER/pytest-N/popen-gwN/... passed it for a user
    # named ptnonroot ("socket path too long").
    base = Path(tempfile.mkdtemp(prefix="ptj-", dir="/tmp"))
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_RUNTIME_DIR": str(base / "run"),
    }
    (base / "run").mkdir(mode=0o700)
    started = run("cpu", "--time", "60", "--detach", "--name", "json-stop", env=env)
    assert started.returncode == 0, started.stderr
    try:
        out = run("stop", "json-stop", "--json", env=env)
    finally:
        run("stop", "json-stop", env=env)  # whatever happened above
        shutil.rmtree(base, ignore_errors=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert "cpu" in json.dumps(doc["probes"])
    assert "recording:" in out.stderr
