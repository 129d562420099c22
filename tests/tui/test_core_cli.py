"""The command line as a user meets it: help, bad input, headless reports."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from forkserver import run_probetop

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=timeout)


# The tables of refused command lines below fork each run from a zygote that
# has imported the CLI (tests/forkserver.py: a process of its own with this
# argv, stdio and exit status; ~0.25 CPU-s of start-up spared a run): what
# they test is what the program does with its arguments. The other tests
# here start the whole `python -m`.
forked = run_probetop


def test_help_lists_commands_and_examples():
    out = run("--help")
    assert out.returncode == 0
    for word in ("demo", "replay", "report", "--record", "--headless", "examples:"):
        assert word in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--time", "-1"], "must be zero or a positive number"),
        (["--interval", "0"], "must be a positive number"),
        (["--interval", "abc"], "not a duration"),
        (["nosuchcommand"], "invalid choice"),
    ],
)
def test_bad_input_gets_usage_and_exit_2(args, message):
    out = forked(args, timeout=60)
    assert out.returncode == 2
    assert "usage:" in out.stderr and message in out.stderr
    assert "Traceback" not in out.stderr


def test_headless_json_report_of_passive_probes():
    out = run("--json", "--time", "0.5", "--interval", "0.25")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["reason"] == "time"
    assert set(doc["probes"]) == {"system.cpu", "system.disk", "system.net"}
    cpu = doc["probes"]["system.cpu"]["metrics"]
    assert 0 <= cpu["busy_pct"]["mean"] <= 100
    net = doc["probes"]["system.net"]["metrics"]
    assert "rx_pps@lo" in net


def test_report_of_a_recording_prints_tables_and_charts(tmp_path):
    rec = tmp_path / "s.jsonl"
    assert (
        run("--headless", "--time", "0.8", "--interval", "0.2", "--record", str(rec)).returncode
        == 0
    )
    out = run("report", str(rec))
    assert out.returncode == 0, out.stderr
    assert "== system.cpu" in out.stdout and "busy_pct" in out.stdout
    assert "seconds" in out.stdout  # a chart's x label
    assert "\x1b[" not in out.stdout  # piped: no colour codes
    doc = json.loads(run("report", str(rec), "--json").stdout)
    assert doc["reason"] == "time"
    cpu_lines = [
        line
        for line in map(json.loads, rec.read_text().splitlines())
        if line.get("type") == "sample" and line["probe"] == "system.cpu"
    ]
    # 0.8 s at 0.2 s: 3 or 4 intervals (the last tick races the deadline); the
    # report counts exactly what the file holds.
    assert len(cpu_lines) in (3, 4)
    assert doc["probes"]["system.cpu"]["metrics"]["busy_pct"]["count"] == len(cpu_lines)


@pytest.mark.parametrize(
    ("argv", "message", "status"),
    [
        (["icmp", "127.0.0.1", "--count", "-1"], "must be at least 0, got -1", 1),
        # cpu: sysbench's status for a refused value, 1
        (["cpu", "--time", "-1"], "must be zero or a positive number, got -1", 1),
        (["--time", "-2", "cpu"], "must be zero or a positive number, got -2", 1),
        (["--time", "-2", "replay", "x.jsonl"], "must be zero or a positive number, got -2", 2),
        # The short spellings too (they said "expected one argument").
        (["icmp", "127.0.0.1", "-c", "-1"], "must be at least 0, got -1", 1),
        (["icmp", "127.0.0.1", "-s", "-5"], "must be at least 0, got -5", 1),
        (["icmp", "127.0.0.1", "-t", "-1"], "must be at least 0, got -1", 1),
        (
            ["http", "http://127.0.0.1:9/", "-m", "-1"],
            "must be zero or a positive number, got -1",
            2,
        ),
    ],
)
def test_a_negative_value_reaches_the_options_own_check(
    argv: list[str], message: str, status: int
) -> None:
    """argparse would read -1 as an option name (icmp and http have -4/-6) and
    say 'expected one argument'; the option's own message must come instead,
    with the command's status for a refused value (icmp: ping's 1)."""
    out = forked(argv, timeout=60)
    assert out.returncode == status
    assert message in out.stderr
    assert "expected one argument" not in out.stderr


def test_theme_in_a_headless_run_is_said_to_be_ignored() -> None:
    out = subprocess.run(
        [
            *PROBETOP,
            "--headless",
            "--time",
            "0.2",
            "--interval",
            "0.1",
            "--theme",
            "probetop-light",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "--theme probetop-light is ignored: this run is headless" in out.stderr


REFUSED_BY_NO_PROBE_COMMANDS = (
    "--record",
    "--time",
    "--sample-interval",
    "--metrics",
    "--textfile",
)


@pytest.mark.parametrize(
    "command, args",
    [
        ("replay", ["x.jsonl"]),
        ("report", ["x.jsonl"]),
        ("compare", ["a.jsonl", "b.jsonl"]),
        ("export", ["x.jsonl"]),
        ("ls", []),
        ("stop", ["x"]),
        ("rm", ["x"]),
    ],
)
def test_a_command_that_runs_no_probes_does_not_offer_what_it_refuses(
    command: str, args: list[str]
) -> None:
    """`probetop report --help` listed --time ('stop the probes after S
    seconds'), --record, --detach ... and the command then refused each with
    exit 2: its help offers only what it takes; the refusal stays."""
    from probetop.tui.cli.parser import build_parser

    parser = build_parser({command})
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[union-attr]
    text = sub.format_help()
    for flag in (*REFUSED_BY_NO_PROBE_COMMANDS, "--detach", "--name"):
        offered = re.search(rf"^\s+{flag}\b", text, re.M) or f"[{flag}" in text
        assert not offered, (command, flag)
    assert "--help" in text
    out = forked([command, *args, "--time", "3"], timeout=60)
    assert out.returncode == 2 and "runs no probes" in out.stderr, out.stderr


def test_a_probe_command_still_offers_the_common_options() -> None:
    from probetop.tui.cli.parser import build_parser

    parser = build_parser({"cpu"})
    text = next(a for a in parser._actions if a.dest == "command").choices["cpu"].format_help()  # type: ignore[union-attr]
    for flag in (*REFUSED_BY_NO_PROBE_COMMANDS, "--detach", "--name"):
        assert re.search(rf"^\s+{flag}\b", text, re.M), flag


def test_theme_in_a_headless_replay_is_said_to_be_ignored(tmp_path) -> None:
    """replay --headless took --theme silently while a headless run said it."""
    rec = tmp_path / "h2-theme.jsonl"
    made = run("--headless", "--time", "0.2", "--interval", "0.1", "--record", str(rec))
    assert made.returncode == 0, made.stderr
    out = run("replay", str(rec), "--headless", "--theme", "probetop-light")
    assert out.returncode == 0, out.stderr
    assert "--theme probetop-light is ignored: this run is headless" in out.stderr
