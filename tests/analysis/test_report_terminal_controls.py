"""A recording's strings reach the terminal with no terminal control in them
(tui/run/termtext.py): a recording may come from anyone.

Seen by a hostile tester: ``probetop report their.jsonl`` (and ``compare``,
``replay --headless``) wrote the header's command and host name as they
were, so ``ESC ] 0;... BEL`` set the terminal's title, ``ESC [2J`` cleared
the screen and ``ESC [31m`` turned the rest red (OSC 52 would write the
clipboard). Real runs of the command line, on a pipe and on a real pty
(where the charts keep their own colours: every escape left is an SGR).
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "data" / "demo_session.jsonl"
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
EVIL = "\x1b]0;TITLE\x07\x1b[2J\x1b[31m\x9b1m\r"
SHOWN = r"\x1b]0;TITLE\x07\x1b[2J\x1b[31m\x9b1m\x0d"
SGR = re.compile(rb"\x1b\[[0-9;]*m")


def _hostile(path: Path) -> Path:
    """The demo recording with EVIL in its command, host name, every status
    message, a unit and an interface's name (every sample's key)."""
    lines = []
    for raw in DEMO.read_text().splitlines():
        line = json.loads(raw.replace('@lo"', "@lo" + json.dumps(EVIL)[1:-1] + '"'))
        if line["type"] == "header":
            line["command"].append(EVIL)
            line["host"]["hostname"] += EVIL
            for probe in line["probes"]:
                for metric in probe.get("metrics", []):
                    if metric.get("primary"):
                        metric["unit"] = "u" + EVIL
        if line["type"] == "status":
            line["message"] += EVIL
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    return path


COMMANDS = {
    "report": ["report", "REC", "--all-charts"],
    "compare": ["compare", "REC", "REC", "--force"],
    "replay": ["replay", "--headless", "REC"],
}


def _args(which: str, rec: Path) -> list[str]:
    return [str(rec) if a == "REC" else a for a in COMMANDS[which]]


@pytest.mark.parametrize("which", sorted(COMMANDS))
def test_no_terminal_control_from_a_recording_on_a_pipe(tmp_path: Path, which: str) -> None:
    rec = _hostile(tmp_path / "hostile.jsonl")
    out = subprocess.run(
        [*PROBETOP, *_args(which, rec)], capture_output=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    both = out.stdout + out.stderr
    assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", both), both[:2000]
    assert SHOWN.encode() in out.stdout  # shown, as \xNN


@pytest.mark.parametrize("which", ["report", "compare"])
def test_only_the_charts_colours_on_a_terminal(tmp_path: Path, which: str) -> None:
    rec = _hostile(tmp_path / "hostile.jsonl")
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [*PROBETOP, *_args(which, rec)], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    os.close(slave)
    got = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0, bytes(got[-2000:])
    assert SGR.search(got), "no colour: the charts were not drawn on a terminal"
    rest = SGR.sub(b"", bytes(got))
    assert not re.search(rb"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]", rest), rest[:2000]
    assert SHOWN.encode() in got
