"""``probetop icmp -A`` is ping's adaptive interval (iputils update_interval),
run beside the installed ping: once a reply came, the time between requests
is the RTT's moving average (ping's ewma) in whole ms, at least 2 ms for a
user other than root; 0 ms paces by the replies, as a flood.

Each case runs ping and probetop with the same words (bounded by -c, to
loopback or the test namespace's peer) and reads both outputs with the same
parser: exit status, the statistics line, ping's ``time`` (first request to
last), and whether ``ipg/ewma`` is printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from icmp_fixtures import Peer, icmp_peer  # noqa: F401 (fixture)

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]

pytestmark = [
    pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed"),
    pytest.mark.skipif(
        os.geteuid() != 0, reason="the peer namespace and ping -A at 0 ms are root's"
    ),
]
STATS = re.compile(r"(\d+) packets transmitted, (\d+) received.*time (\d+)ms")


def run(cmd: list[str], tmp_path: Path) -> tuple[int, str, tuple[int, int, int]]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    m = STATS.search(r.stdout)
    assert m, r.stdout + r.stderr
    return r.returncode, r.stdout, (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def test_adaptive_on_loopback_beside_ping(tmp_path: Path) -> None:
    """A loopback RTT rounds to 0 ms: paced by the replies, per-reply lines and ipg/ewma."""
    words = ["-c", "5", "-A", "127.0.0.1"]
    code, out, stats = run(["ping", *words], tmp_path)
    ours_code, ours, ours_stats = run([*PROBETOP, "icmp", *words], tmp_path)
    assert ours_code == code == 0
    assert ours_stats[:2] == stats[:2] == (5, 5)
    assert ours_stats[2] < 100 and stats[2] < 100  # not 4 s of the default 1 s interval
    assert ("ipg/ewma" in ours) == ("ipg/ewma" in out) == True  # noqa: E712
    assert len([ln for ln in ours.splitlines() if ln.startswith("64 bytes from")]) == 5


def test_adaptive_follows_the_rtt_beside_ping(icmp_peer: Peer, tmp_path: Path) -> None:  # noqa: F811
    """A 5 ms RTT (the namespace's delaying responder, >= 5 ms): the period
    becomes ping's ewma in whole ms, 5 ms, so 20 requests take at least
    19 x 5 ms and far less than the 19 s of the default 1 s: both tools, two
    rounds alternated. (ping's time also holds its poll()'s ms wake-ups, so
    it reads up to ~1 ms a request longer: the ratio is reported, not bound.)"""
    responder = icmp_peer.responder("--delay-ms", "5")
    words = ["-q", "-c", "20", "-A", "-W", "1", icmp_peer.peer_addr]
    times: list[tuple[int, int]] = []
    try:
        for _ in range(2):
            _, _, ping_stats = run(["ping", *words], tmp_path)
            _, _, ours_stats = run([*PROBETOP, "icmp", *words], tmp_path)
            assert ping_stats[:2] == ours_stats[:2] == (20, 20)
            times.append((ping_stats[2], ours_stats[2]))
    finally:
        responder.kill()
        responder.wait()
    for ping_ms, ours_ms in times:
        assert 90 <= ping_ms < 1000, times  # adapted to the RTT, not 1 s apart
        assert 90 <= ours_ms < 1000, times  # nor paced by the replies (0 ms)


def test_adaptive_refuses_a_fixed_pace(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    r = subprocess.run(
        [*PROBETOP, "icmp", "-A", "--rate", "10", "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 2 and "-A adapts" in r.stderr, r.stderr
