"""What the I/O worker threads cost the machine, as fio's ``usr_cpu``,
``sys_cpu``, ``ctx``, ``majf`` and ``minf`` count it (fio reads
``getrusage(RUSAGE_THREAD)`` in each job's thread; probetop reads the same
kernel counters of each worker thread from /proc/self/task/TID).

Contract: ``read_thread(tid)`` is one thread's ``ThreadUsage`` (CPU in ms,
at the kernel's clock-tick resolution), zero once it has ended: so each I/O
worker reads its own as its loop returns (``workers.Engine.usage``).
``ThreadUsage.plus`` sums threads, ``ThreadUsage.minus`` gives a window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class ThreadUsage:
    usr_ms: float = 0.0
    sys_ms: float = 0.0
    ctx: int = 0  # voluntary + involuntary context switches (fio's ctx)
    majf: int = 0
    minf: int = 0

    def plus(self, other: ThreadUsage) -> ThreadUsage:
        return ThreadUsage(
            self.usr_ms + other.usr_ms,
            self.sys_ms + other.sys_ms,
            self.ctx + other.ctx,
            self.majf + other.majf,
            self.minf + other.minf,
        )

    def minus(self, before: ThreadUsage) -> ThreadUsage:
        return ThreadUsage(
            max(0.0, self.usr_ms - before.usr_ms),
            max(0.0, self.sys_ms - before.sys_ms),
            max(0, self.ctx - before.ctx),
            max(0, self.majf - before.majf),
            max(0, self.minf - before.minf),
        )


def read_thread(tid: int) -> ThreadUsage:
    """One thread's counters (zero when it has ended)."""
    base = f"/proc/self/task/{tid}"
    try:
        with open(f"{base}/stat", encoding="ascii", errors="replace") as f:
            # Fields after the ")" closing the thread's name: state is field 3.
            fields = f.read().rpartition(")")[2].split()
        ctx = 0
        with open(f"{base}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    ctx += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return ThreadUsage()
    # minflt, majflt, utime, stime are fields 10, 12, 14, 15 (fields[0] is field 3)
    return ThreadUsage(
        usr_ms=int(fields[11]) * _TICK_MS,
        sys_ms=int(fields[12]) * _TICK_MS,
        ctx=ctx,
        majf=int(fields[9]),
        minf=int(fields[7]),
    )
