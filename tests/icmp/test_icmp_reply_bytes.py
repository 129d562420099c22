"""A reply's length in ``N bytes from`` is the whole reply, as ping prints it.

The engine's receive buffer once held 1,024 bytes, so every reply longer
than that was cut to it: ``-s 1472`` printed ``1004 bytes from`` (ping:
1480) and the RTTs came from a truncated datagram. Real ping runs beside
probetop on loopback (MTU 65536) with the same words, and the per-reply
lengths must be ping's, for both socket kinds and both address families.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from forkserver import run_probetop
from privilege import DATAGRAM, RAW

needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
LENGTH = re.compile(r"^(\d+) bytes from ", re.M)


def _lengths(text: str) -> list[int]:
    return [int(n) for n in LENGTH.findall(text)]


@needs_ping
@pytest.mark.parametrize("socket_kind", ["raw", "datagram"])
@pytest.mark.parametrize(
    ("host", "size"),
    [("127.0.0.1", 1472), ("127.0.0.1", 9000), ("127.0.0.1", 65507), ("::1", 9000)],
)
def test_reply_lengths_are_pings(socket_kind: str, host: str, size: int, tmp_path: Path) -> None:
    if not (RAW if socket_kind == "raw" else DATAGRAM):
        pytest.skip(f"needs a {socket_kind} ICMP socket here")
    words = ["-c", "2", "-i", "0.2", "-s", str(size), host]
    ping = subprocess.run(["ping", *words], capture_output=True, text=True, timeout=30)
    if ping.returncode != 0:
        pytest.skip(f"ping itself fails here: {ping.stderr.strip()}")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    ours = run_probetop(["icmp", *words, "--socket", socket_kind], env=env, timeout=60)
    assert ours.returncode == 0, ours.stderr
    # 8 bytes of ICMP header and the payload: 1480 for -s 1472
    assert _lengths(ours.stdout) == _lengths(ping.stdout) == [size + 8] * 2
