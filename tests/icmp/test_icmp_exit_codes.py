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
from forkserver import run_probetop

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
    # Python's int() read these as 10 and 2 (ten requests, TTL 2); ping's strtol does not
    (["-c", "1_0", "127.0.0.1"], 1),
    (["-t", "\u0662", "127.0.0.1"], 1),
    # -S and -m are strtol_or_err's too (they exited 2 before)
    (["-S", "0", "127.0.0.1"], 1),
    (["-S", "-5", "127.0.0.1"], 1),
    (["-S", "4294967296", "127.0.0.1"], 1),
    (["-S", "abc", "127.0.0.1"], 1),
    (["-m", "-1", "127.0.0.1"], 1),
    (["-m", "4294967296", "127.0.0.1"], 1),
    (["-m", "abc", "127.0.0.1"], 1),
    # -Q and -p refuse with their own errors, exit 2
    (["-Q", "256", "127.0.0.1"], 2),
    (["-Q", "abc", "127.0.0.1"], 2),
    # ping's strtol takes none of these (Python's int() took all three: TOS 10, 255, 8)
    (["-Q", "1_0", "127.0.0.1"], 2),
    (["-Q", "0x_ff", "127.0.0.1"], 2),
    (["-Q", "8 ", "127.0.0.1"], 2),
    (["-p", "zz", "127.0.0.1"], 2),
]


def _ping_supports(words: list[str]) -> bool:
    """Whether this ping has the options the case uses (``ping -h`` lists them)."""
    usage = subprocess.run(["ping", "-h"], capture_output=True, text=True, timeout=5)
    text = usage.stdout + usage.stderr
    return all(f"  {w} " in text for w in words if w.startswith("-") and w[1:2].isalpha())


def _status(argv: list[str], state: str, *, forked: bool = False) -> tuple[int, str]:
    """The exit status and the first stderr line that says what is wrong.
    ``forked``: ``probetop ARGV`` forked from an interpreter that has
    imported the CLI (tests/forkserver.py: a process of its own with this
    argv, stdio, environment and exit status; every case fails before it
    sends anything, so only the start-up is spared, ~0.3 CPU-s a case);
    test_other_commands_keep_argparse_status starts the whole `python -m`."""
    env = {**os.environ, "XDG_STATE_HOME": state}
    if forked:
        r = run_probetop(argv, env=env, timeout=10)
    else:
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
    ours, said = _status(["icmp", *words], str(tmp_path), forked=True)
    assert ours == ping_code, f"probetop icmp {words}: {ours} ({said}); ping: {ping_code}"
    assert said.startswith("probetop") and "error: " in said, said  # its own words


# Command lines ping runs (exit 0), some after a warning: the words, then
# what both must print. Bounded by -c 3 to loopback; -i 0 is root's (ping
# refuses it to other users: "cannot flood"), so these need root.
RUNS = [
    # -i 0: the next request as a reply comes, ipg/ewma in the statistics
    (["-c", "3", "-i", "0", "127.0.0.1"], "ipg/ewma"),
    # whole ms, as (int)(optval * 1000): 0.0005 is -i 0 (ipg/ewma), 0.0015 is 1 ms
    (["-c", "3", "-i", "0.0005", "127.0.0.1"], "ipg/ewma"),
    (["-c", "3", "-i", "0.0015", "127.0.0.1"], "3 received"),
]


def _after_prefix(line: str) -> str:
    """A stderr line without its program's name (``ping: ``, ``probetop icmp: ``)."""
    return line.split(": ", 1)[1] if ": " in line else line


@needs_ping
@pytest.mark.skipif(os.geteuid() != 0, reason="ping -i 0 is root's")
@pytest.mark.parametrize(("words", "said"), RUNS, ids=[" ".join(w) for w, _ in RUNS])
def test_icmp_runs_as_ping(words: list[str], said: str, tmp_path: Path) -> None:
    """Exit status, the first stderr line (without the program's name) and
    the statistics' shape, beside ping."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    ping = subprocess.run(["ping", *words], capture_output=True, text=True, timeout=20)
    ours = subprocess.run(
        [*PROBETOP, "icmp", *words], capture_output=True, text=True, timeout=20, env=env
    )
    assert ping.returncode == 0, ping.stderr
    assert ours.returncode == ping.returncode, ours.stderr
    first = [_after_prefix(r.stderr.splitlines()[0]) if r.stderr else "" for r in (ping, ours)]
    assert first[1] == first[0], (first, ours.stderr)
    for r in (ping, ours):
        assert "3 packets transmitted, 3 received" in r.stdout, r.stdout
        assert said in r.stdout, r.stdout
    assert ("ipg/ewma" in ours.stdout) == ("ipg/ewma" in ping.stdout)
    replies = [ln for ln in ours.stdout.splitlines() if ln.startswith("64 bytes from")]
    assert len(replies) == 3  # per-reply lines, not a flood's dots


# (cpu and mem exit as sysbench does, 1: tests/core/test_sysbench_command_lines.py)
@pytest.mark.parametrize(
    "words", [["iops", "--jobs", "abc"], ["http"], ["replay"], ["http", "--nope"]]
)
def test_other_commands_keep_argparse_status(words: list[str], tmp_path: Path) -> None:
    assert _status([*PROBETOP, *words], str(tmp_path))[0] == 2
