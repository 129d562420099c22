"""A live session hands the C heap's free pages back to the kernel as it
runs (issue 29: the demo's resident size crept up over hours while what it
held was flat; tui/run/heaptrim.py)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")

# 40 MiB freed in the middle of the main heap, a live block above it: free()
# cannot shrink the heap past that block, so the pages stay resident until
# something trims. With "session", a LiveSession (no probes) runs meanwhile,
# its trimmer every 0.2 s.
SCRIPT = """
import asyncio, sys
from probetop.tui.run import heaptrim
heaptrim.TRIM_EVERY_S = 0.2
from probetop.tui.run.livesession import LiveSession

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

async def main():
    session = LiveSession([]) if sys.argv[1] == "session" else None
    if session is not None:
        await session.start(lossless=True)
    held = [b"x" * (100 * 1024) for _ in range(400)]
    pin = b"y" * (100 * 1024)
    before = rss_mib()
    del held
    await asyncio.sleep(1.5)
    after = rss_mib()
    if session is not None:
        await session.shutdown()
    print(before - after, len(pin))

asyncio.run(main())
"""


def _freed_mib(mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return float(out.stdout.split()[0])


def test_a_live_session_gives_freed_heap_pages_back():
    # Without a session the 40 MiB stay resident (what made the demo creep)...
    assert _freed_mib("none") < 10
    # ... with one, its trimmer gives them back within a few periods.
    assert _freed_mib("session") > 30
