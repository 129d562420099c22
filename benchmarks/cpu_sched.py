"""Shared by the CPU benchmarks: the probetop command line, and scheduling
help on a machine others are using.

With ``kernel.sched_autogroup_enabled=1`` Linux shares CPU between sessions
(autogroups) first and between processes second, so a benchmark competes
with every other session at equal weight, and wall-clock events/s swing with
other people's jobs. ``--nice N`` (N < 0) gives the benchmark's sessions a
higher autogroup weight, the same for probetop and the reference tool, so
both get the cores for their run and the wall ratio means something again.
It does not change what either tool does.
"""

from __future__ import annotations

import os
import sys
import time

_MARK = "PROBETOP_CPU_BENCH_SESSION"
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def probetop_cpu_json(threads: int, max_prime: int, seconds: float) -> list[str]:
    """``probetop cpu --json`` for one run, as the benchmarks start it."""
    return [
        *PROBETOP,
        "cpu",
        "--json",
        f"--threads={threads}",
        f"--time={seconds:g}",
        f"--max-prime={max_prime}",
    ]


def own_session_with_nice(nice: int | None) -> None:
    """Re-run this script in a new session whose autogroup has ``nice``.

    No-op when ``nice`` is None. Needs root for a negative value.
    """
    if nice is None:
        return
    if os.environ.get(_MARK) != str(os.getpid()):
        env = dict(os.environ)
        # setsid forks when we lead a process group; the child is the new session.
        env[_MARK] = "pending"
        os.execvpe("setsid", ["setsid", "-w", sys.executable, *sys.argv], env)
    set_autogroup_nice(os.getpid(), nice)


def set_autogroup_nice(pid: int, nice: int | None) -> bool:
    """Give ``pid``'s session (autogroup) the nice value; False if not possible."""
    if nice is None:
        return False
    try:
        with open(f"/proc/{pid}/autogroup", "w", encoding="ascii") as f:
            f.write(str(nice))
        return True
    except OSError:
        return False


def claim_session() -> None:
    """Mark this process as the re-executed one (call first thing in main)."""
    if os.environ.get(_MARK) == "pending":
        os.environ[_MARK] = str(os.getpid())


def autogroup_line() -> str:
    try:
        with open("/proc/self/autogroup", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "autogroup: unknown"


def cpu_model() -> str:
    """The CPU model line of /proc/cpuinfo (x86 "model name", Arm "CPU part")."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown"
    if "model name" in fields:
        ids = [f"{k} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields]
        avx512 = "avx512f" in fields.get("flags", "").split()
        return f"{fields['model name']} ({', '.join(ids)}{', AVX-512' if avx512 else ''})"
    parts = [f"{k} {fields[k]}" for k in ("CPU implementer", "CPU part") if k in fields]
    return ", ".join(parts) or "unknown"


def device_interrupts_per_cpu(window_s: float = 1.0) -> list[float]:
    """Device interrupts per second on each CPU over ``window_s`` (the
    numbered lines of /proc/interrupts: disks, NICs, virtio queues; not the
    timer or IPIs, which every CPU takes). An empty list if unreadable."""

    def snapshot() -> list[int]:
        try:
            with open("/proc/interrupts", encoding="ascii", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        ncpu = len(lines[0].split()) if lines else 0
        totals = [0] * ncpu
        for line in lines[1:]:
            label, _, rest = line.partition(":")
            if not label.strip().isdigit():
                continue
            for i, field in enumerate(rest.split()[:ncpu]):
                totals[i] += int(field) if field.isdigit() else 0
        return totals

    first = snapshot()
    time.sleep(window_s)
    second = snapshot()
    if not first or len(first) != len(second):
        return []
    return [(b - a) / window_s for a, b in zip(first, second, strict=True)]


def quietest_cpu(window_s: float = 1.0) -> tuple[int, list[float]]:
    """The CPU this process may run on that took the fewest device interrupts
    in ``window_s``, and every CPU's rate: where a single-threaded run is
    least disturbed. A device's interrupts go to the CPUs its affinity
    names (here the virtio disk's all go to one), so a worker on that CPU
    loses time to them that a worker on another does not."""
    rates = device_interrupts_per_cpu(window_s)
    allowed = sorted(os.sched_getaffinity(0))
    if not rates:
        return allowed[0], rates
    return min(allowed, key=lambda cpu: (rates[cpu] if cpu < len(rates) else 0.0, cpu)), rates
