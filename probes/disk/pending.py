"""An I/O in flight: what one is, and how to read one from the kernel.

Contract:
- ``InFlight``: one I/O submitted and not completed (``Engine.in_flight``:
  the asynchronous loops' slot tables; a synchronous worker's blocked
  pread/pwrite as the kernel shows it, ``blocked_call``).
- ``describe(ios)``: one line saying how many, which directions and the
  byte range they span.

Apart from ``inflight`` (waiting for them), which needs the engine: the
engine needs these.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass

from probetop.probes.disk.records import DIRECTIONS

# pread64 and pwrite64, whose argument lists are the same (fd, buf, count, pos).
_PREAD_PWRITE = {"x86_64": (17, 18), "aarch64": (67, 68)}


@dataclass(frozen=True)
class InFlight:
    job: int
    direction: int  # counters.READ / WRITE
    offset: int
    length: int

    def as_dict(self) -> dict[str, int | str]:
        return {
            "job": self.job,
            "direction": DIRECTIONS[self.direction],
            "offset": self.offset,
            "length": self.length,
        }


def blocked_call(tid: int, job: int, fds: Sequence[int]) -> InFlight | None:
    """The pread/pwrite thread ``tid`` is blocked in, on one of ``fds``, as
    /proc/self/task/TID/syscall shows it (number, then the arguments in
    hex); None when it is in none (running, or another call)."""
    calls = _PREAD_PWRITE.get(platform.machine())
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            fields = f.read().split()
    except OSError:
        return None
    if calls is None or len(fields) < 5 or not fields[0].isdigit():
        return None
    nr = int(fields[0])
    fd, _buf, count, pos = (int(x, 16) for x in fields[1:5])
    if nr not in calls or fd not in fds:
        return None
    return InFlight(job, calls.index(nr), pos, count)


def describe(ios: Sequence[InFlight]) -> str:
    """``8 I/Os (reads) in bytes 20,971,520-21,004,288``."""
    if not ios:
        return "no I/O in flight"
    kinds = sorted({DIRECTIONS[io.direction] + "s" for io in ios})
    lo = min(io.offset for io in ios)
    hi = max(io.offset + io.length for io in ios)
    noun = "I/O" if len(ios) == 1 else "I/Os"
    return f"{len(ios)} {noun} ({', '.join(kinds)}) in bytes {lo:,}-{hi:,}"
