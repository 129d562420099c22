"""Where each worker's generator state sits, against the installed sysbench.

sysbench 1.0.20 keeps a worker's xoroshiro state (``sb_rng_state``) in the
thread's TLS, at a fixed page offset, each thread in its own page; its block
starts on a page. rnd operations load and store that state around every
access to the block, so its page offset decides whether block stores share
their low 12 address bits with it (4 KiB aliasing): probetop's rows must put
the state at sysbench's offset. sysbench's is read from the running process
(gdb: each worker's thread pointer) and its ELF (the TLS segment and the
symbol), not written down.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess

import pytest
from probetop.probes.mem.engine import ROW_RNG, new_rows
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.settings import MemSettings

PAGE = 4096

needs_tools = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("sysbench", "gdb", "readelf")),
    reason="needs sysbench, gdb and readelf",
)


def sysbench_rng_tp_offset() -> int:
    """sb_rng_state's address less the thread pointer (x86-64 variant II TLS:
    the executable's block ends at the thread pointer)."""
    binary = shutil.which("sysbench")
    assert binary
    segments = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout
    tls = next((line.split() for line in segments.splitlines() if line.split()[:1] == ["TLS"]), [])
    if not tls:
        pytest.skip("the installed sysbench has no TLS segment")
    memsz, align = int(tls[5], 16), int(tls[7], 16)
    symbols = subprocess.run(["readelf", "-sW", binary], capture_output=True, text=True).stdout
    value = next(
        (int(f[1], 16) for f in map(str.split, symbols.splitlines()) if f[-1:] == ["sb_rng_state"]),
        None,
    )
    if value is None:
        pytest.skip("the installed sysbench exports no sb_rng_state")
    return value - (memsz + align - 1) // align * align


def sysbench_worker_thread_pointers(threads: int) -> list[int]:
    """The thread pointers (%fs base) of a running sysbench memory's workers."""
    cmd = ["sysbench", "memory", "--memory-access-mode=rnd", f"--threads={threads}"]
    proc = subprocess.Popen(
        [*cmd, "--time=60", "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the workers are running after this line
            if line.startswith("Threads started!"):
                break
        gdb = subprocess.run(
            ["gdb", "-q", "-batch", "-p", str(proc.pid), "-ex", "thread apply all p/x $fs_base"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        proc.kill()
        proc.wait()
    pointers: dict[int, int] = {}
    lwp = None
    for line in gdb.stdout.splitlines():
        if m := re.search(r"\(LWP (\d+)\)", line):
            lwp = int(m.group(1))
        elif (m := re.match(r"\$\d+ = (0x[0-9a-f]+)", line)) and lwp is not None:
            pointers[lwp] = int(m.group(1), 16)
    pointers.pop(proc.pid, None)  # the main thread: not a worker
    if len(pointers) != threads:
        pytest.skip(f"gdb could not read the workers' thread pointers: {gdb.stderr.strip()}")
    return sorted(pointers.values())


def probetop_rows(threads: int) -> list[int]:
    """The generator state's address in each worker's row of a real run."""
    probe = MemProbe(MemSettings(threads=threads, time_s=0.2, access_mode="rnd"))
    probe.prepare()
    asyncio.run(probe.run(lambda _sample: None))
    rows = probe._stats
    assert probe.summary()["total_events"] > 0
    return [int(rows[i].ctypes.data) + ROW_RNG * 8 for i in range(threads)]


@needs_tools
def test_generator_state_at_sysbenchs_page_offset() -> None:
    states = [tp + sysbench_rng_tp_offset() for tp in sysbench_worker_thread_pointers(2)]
    theirs = {s % PAGE for s in states}
    assert len(theirs) == 1, [hex(s) for s in states]  # the same offset in every worker
    assert len({s // PAGE for s in states}) == 2  # each in a page of its own
    (offset,) = theirs
    assert offset >= 1024  # past a 1 KiB block's low bits (0x5c0 with glibc 2.36)
    ours = probetop_rows(2)
    assert [s % PAGE for s in ours] == [offset, offset], [hex(s) for s in ours]
    assert len({s // PAGE for s in ours}) == 2


def test_rows_a_page_apart_whatever_the_heap() -> None:
    # the heap's state before the call moves a plain numpy row; never these
    offsets = set()
    for pad in range(0, 4096, 448):
        keep = bytearray(pad)  # noqa: F841 - shifts the allocator's next block
        rows = new_rows(3)
        offsets |= {(int(rows[i].ctypes.data) + ROW_RNG * 8) % PAGE for i in range(3)}
        assert [int(rows[i + 1].ctypes.data) - int(rows[i].ctypes.data) for i in range(2)] == [
            PAGE,
            PAGE,
        ]
        assert all(rows[i].flags["C_CONTIGUOUS"] for i in range(3))
    assert offsets == {0x5C0}
