"""`probetop icmp` exits as ping (iputils) does for the same bad command line.

Each case runs the installed ping and probetop with the same words and
compares their exit statuses: ping's usage errors exit 2 (an unknown
option, an option without its value, a second host, a host that does not
resolve, a TTL the socket refuses), the values its strtol_or_err refuses
and no destination exit 1. Every run fails before sending anything, and
each is bounded by a timeout. Other commands keep argparse's 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")

# (the words after the command, the status ping 20221126 gives them)
CASES = [
    (["-Z", "127.0.0.1"], 2),  # unknown option
    (["-c"], 2),  # an option without its value
    (["127.0.0.1", "127.0.0.2"], 2),  # two hosts
    (["nosuchhost.invalid"], 2),  # does not resolve (.invalid never does)
    (["-t", "0", "127.0.0.1"], 2),  # the socket refuses a TTL of 0
    (["-W", "-1", "127.0.0.1"], 2),  # "bad linger time"
    ([], 1),  # no destination
    (["-c", "0", "127.0.0.1"], 1),
    (["-c", "abc", "127.0.0.1"], 1),
    (["-c", "-1", "127.0.0.1"], 1),
    (["-s", "-1", "127.0.0.1"], 1),
    (["-s", "abc", "127.0.0.1"], 1),
    (["-w", "abc", "127.0.0.1"], 1),
    (["-w", "-1", "127.0.0.1"], 1),
    (["-l", "0", "127.0.0.1"], 1),
    (["-l", "abc", "127.0.0.1"], 1),
    (["-l", "70000", "127.0.0.1"], 1),
    (["-t", "256", "127.0.0.1"], 1),
    (["-t", "abc", "127.0.0.1"], 1),
]


def _ping_supports(words: list[str]) -> bool:
    """Whether this ping has the options the case uses (``ping -h`` lists them)."""
    usage = subprocess.run(["ping", "-h"], capture_output=True, text=True, timeout=5)
    text = usage.stdout + usage.stderr
    return all(f"  {w} " in text for w in words if w.startswith("-") and w[1:2].isalpha())


def _status(argv: list[str], state: str) -> tuple[int, str]:
    """The exit status and the first stderr line that says what is wrong."""
    env = {**os.environ, "XDG_STATE_HOME": state}
    r = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env)
    lines = [ln for ln in r.stderr.splitlines() if ln and not ln.startswith((" ", "usage:"))]
    return r.returncode, lines[0] if lines else ""


@needs_ping
@pytest.mark.parametrize(
    ("words", "expected"), CASES, ids=[" ".join(w) or "no host" for w, _ in CASES]
)
def test_icmp_exits_as_ping(words: list[str], expected: int, tmp_path: Path) -> None:
    if words and words[0] == "-Z":
        pass  # unknown to both by design
    elif not _ping_supports(words):
        pytest.skip(f"this ping lacks {words}")
    ping_code, ping_said = _status(["ping", *words], str(tmp_path))
    assert ping_code == expected, f"ping {words}: {ping_code} {ping_said}"
    ours, said = _status([*PROBETOP, "icmp", *words], str(tmp_path))
    assert ours == ping_code, f"probetop icmp {words}: {ours} ({said}); ping: {ping_code}"
    assert said.startswith("probetop") and "error: " in said, said  # its own words


# (cpu and mem exit as sysbench does, 1: tests/core/test_sysbench_command_lines.py)
@pytest.mark.parametrize(
    "words", [["iops", "--jobs", "abc"], ["http"], ["replay"], ["http", "--nope"]]
)
def test_other_commands_keep_argparse_status(words: list[str], tmp_path: Path) -> None:
    assert _status([*PROBETOP, *words], str(tmp_path))[0] == 2
