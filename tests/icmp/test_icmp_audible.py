"""`probetop icmp -a` rings as ping -a: a BEL at the end of each reply line
(``time=0.031 ms\\a\\n``), none with -q. Real ping runs beside it on
loopback; the reply lines are compared byte for byte with the times masked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from forkserver import run_probetop_bytes
from privilege import needs_icmp

needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
TIME = re.compile(rb"time=[0-9.]+ ms")


def _reply_lines(out: bytes) -> list[bytes]:
    head, _, _ = out.partition(b"\n\n")  # the statistics block (and ours) apart
    return [TIME.sub(b"time=T ms", ln) for ln in head.split(b"\n")[1:]]


@needs_icmp
@needs_ping
@pytest.mark.parametrize("flags", [["-a"], ["-a", "-q"], []])
def test_the_bell_is_pings(flags: list[str], tmp_path: Path) -> None:
    argv = [*flags, "-c", "2", "-i", "0.2", "127.0.0.1"]
    ping = subprocess.run(["ping", *argv], capture_output=True, timeout=30)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    ours = run_probetop_bytes(["icmp", *argv], env=env, timeout=60)
    assert ping.returncode == ours.returncode == 0, ours.stderr
    assert _reply_lines(ours.stdout) == _reply_lines(ping.stdout)
    bells = 0 if "-q" in flags or "-a" not in flags else 2
    assert ours.stdout.count(b"\a") == ping.stdout.count(b"\a") == bells
