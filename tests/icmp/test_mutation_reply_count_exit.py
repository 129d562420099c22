"""``-c N -w S`` one reply short: ping exits 1 when the deadline leaves it
N - 1 replies (iputils, man ping -w), and so must probetop. -c 3 -w 1
-i 0.6 sends at 0 and 0.6 s (the third would go at 1.2 s, past the
deadline): 2 sent, 2 received, exit 1; ping runs first, in the same test,
and both texts are read by jc. Mutation review of issue 29 item 9
(docs/reliability.md): comparing the replies with N - 1 instead of N
(exit 0 one reply short) passed every ICMP test before this one."""

from __future__ import annotations

import shutil
import subprocess
import sys

import jc
import pytest
from privilege import needs_icmp

ARGS = ["-c", "3", "-w", "1", "-i", "0.6", "127.0.0.1"]


def sent_received_status(cmd: list[str]) -> tuple[int, int, int]:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    doc = jc.parse("ping", r.stdout, quiet=True)
    return doc["packets_transmitted"], doc["packets_received"], r.returncode


@needs_icmp
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_one_reply_short_of_the_count_by_the_deadline_exits_1() -> None:
    ping = sent_received_status(["ping", *ARGS])
    assert ping == (2, 2, 1)
    ours = sent_received_status(
        [sys.executable, "-m", "probetop.tui.main", "icmp", *ARGS, "--headless"]
    )
    assert ours == ping
