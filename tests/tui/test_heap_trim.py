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


# Threads that call malloc at once, as the demo's HTTP target's thread per
# connection and the probes' threads do: glibc gives a thread that finds
# every arena locked a new one (up to 8 per core). malloc_stats() prints one
# "Arena N:" block per arena on stderr. The libc calls release the GIL, so
# the threads really contend.
ARENAS = """
import ctypes, sys, threading
from probetop.tui.run.livesession import LiveSession

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "session":
    LiveSession([])

def churn():
    for _ in range(20_000):
        libc.free(libc.malloc(4096))

for _ in range(3):  # threads that come and go
    threads = [threading.Thread(target=churn) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
libc.malloc_stats()
"""


def _arenas(mode: str, env: dict[str, str] | None = None) -> int:
    out = subprocess.run(
        [sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stderr.count("Arena ")


def test_a_live_session_keeps_at_most_two_malloc_arenas():
    import os

    from probetop.tui.run.heaptrim import ARENA_MAX

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    # Without a session, 8 contending threads spread over more arenas...
    assert _arenas("none", env) > ARENA_MAX
    # ... with one, malloc keeps to its cap whatever the threads do.
    assert _arenas("session", env) <= ARENA_MAX
    # A MALLOC_ARENA_MAX of the user's is theirs: the session leaves it.
    assert _arenas("session", {**env, "MALLOC_ARENA_MAX": "3"}) > ARENA_MAX
