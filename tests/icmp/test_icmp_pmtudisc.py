"""`probetop icmp -M do|want|dont` means what ping -M means, beside real ping.

The classic path-MTU check (``ping -M do -s 1472``, one more byte fails)
and its opposite (``-M want``/``dont``: the kernel fragments) over a veth
pair to a namespace, MTU 1500. Both tools' statistics are read with jc's
ping parser, which scripts use: the same requests, replies, ``+N errors``
and exit status.
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
from privilege import RAW

needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")


def _both(peer: Peer, words: list[str], tmp_path: Path) -> tuple[Any, Any]:
    argv = ["-c", "2", "-i", "0.2", "-W", "1", *words, peer.peer_addr]
    ping = subprocess.run(["ping", *argv], capture_output=True, text=True, timeout=30)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    ours = run_probetop(["icmp", *argv], env=env, timeout=60)
    return ping, ours


def _stats(text: str) -> tuple[int, int, int]:
    parsed = jc.parse("ping", text, quiet=True)
    return parsed["packets_transmitted"], parsed["packets_received"], parsed.get("errors") or 0


@needs_ping
@pytest.mark.skipif(not RAW, reason="needs a raw ICMP socket (root)")
@pytest.mark.parametrize(
    ("words", "status", "stats"),
    [
        (["-M", "do", "-s", "1472"], 0, (2, 2, 0)),  # 1500 bytes: fits
        (["-M", "do", "-s", "1473"], 1, (2, 0, 2)),  # one over: ping's +2 errors
        (["-M", "want", "-s", "2000"], 0, (2, 2, 0)),  # fragmented, answered
        (["-M", "dont", "-s", "2000"], 0, (2, 2, 0)),
    ],
)
def test_pmtudisc_as_ping(
    icmp_peer: Peer,  # noqa: F811
    words: list[str],
    status: int,
    stats: tuple[int, int, int],
    tmp_path: Path,
) -> None:
    ping, ours = _both(icmp_peer, words, tmp_path)
    assert (ping.returncode, ours.returncode) == (status, status), ours.stderr
    assert _stats(ping.stdout) == _stats(ours.stdout) == stats
    if stats[1]:  # whole replies, reassembled: 8 + the payload
        size = int(words[-1]) + 8
        assert f"{size} bytes from {icmp_peer.peer_addr}: icmp_seq=2" in ours.stdout


@needs_ping
def test_an_unknown_pmtudisc_word_exits_2_as_ping(tmp_path: Path) -> None:
    # ping 20221126 takes do, want, dont; its "probe" is refused too
    for word in ("probe", "sometimes"):
        ping = subprocess.run(
            ["ping", "-M", word, "-c", "1", "127.0.0.1"], capture_output=True, timeout=10
        )
        ours = run_probetop(
            ["icmp", "-M", word, "-c", "1", "127.0.0.1"],
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        )
        assert ping.returncode == ours.returncode == 2
        assert "-M" in ours.stderr and word in ours.stderr
