"""`probetop icmp -O` prints ping -O's ``no answer yet for icmp_seq=N``.

ping checks, before each request, whether the one before it was answered,
and says so if not, with -q too (iputils pinger). Real ping runs beside
probetop to a namespace whose firewall drops every echo request (and with
none dropped); jc's ping parser, which scripts use to read the lines as
``timeout`` responses, must read the same from both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jc
import pytest
from forkserver import run_probetop
from icmp_fixtures import Peer, icmp_peer  # noqa: F401 (fixture)

needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")


def _responses(text: str) -> list[dict[str, Any]]:
    parsed = jc.parse("ping", text, quiet=True)
    return [{k: r.get(k) for k in ("type", "icmp_seq")} for r in parsed["responses"]]


@needs_ping
@pytest.mark.parametrize(
    ("flags", "dropped"),
    [(["-O"], True), (["-O", "-q"], True), (["-O"], False), ([], True)],
)
def test_no_answer_yet_lines_as_ping(
    icmp_peer: Peer,  # noqa: F811
    flags: list[str],
    dropped: bool,
    tmp_path: Path,
) -> None:
    if dropped:
        icmp_peer.nft("add table inet ptdrop")
        icmp_peer.nft("add chain inet ptdrop in { type filter hook input priority 0; }")
        icmp_peer.nft("add rule inet ptdrop in icmp type echo-request drop")
    argv = [*flags, "-c", "3", "-i", "0.2", "-W", "0.5"]
    argv.append(icmp_peer.peer_addr)
    ping = subprocess.run(["ping", *argv], capture_output=True, text=True, timeout=30)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    ours = run_probetop(["icmp", *argv], env=env, timeout=60)
    assert ping.returncode == ours.returncode == (1 if dropped else 0), ours.stderr
    # the request before each next one: 1 and 2 (the third has no next)
    said = dropped and "-O" in flags
    want = [f"no answer yet for icmp_seq={n}" for n in (1, 2)] if said else []
    for text in (ping.stdout, ours.stdout):
        assert [ln for ln in text.splitlines() if ln.startswith("no answer")] == want
    assert _responses(ours.stdout) == _responses(ping.stdout)
