"""What the machine can hold for a disk run: threads, memory, kernel AIO, intervals.

Why: ``--jobs``, ``--iodepth`` and ``--bs`` multiply (each job is a thread
with ``bs x iodepth`` bytes of I/O buffers and an AIO context of
``iodepth`` events); the product could exhaust memory, the user's process
limit or the kernel's AIO limit, and a very short ``--sample-interval`` makes the
probe spend its time summing histograms instead of letting the event loop
run. Each is refused before anything starts, with the numbers and the limit.

Contract (``check(jobs=, iodepth=, bs=)`` raises ``CapacityError``, a
``UsageProbeError``, exit 2):
- threads: ``jobs`` new threads must fit under the user's ``RLIMIT_NPROC``
  (``ulimit -u``, counted over the user's running threads; not enforced for
  root), the kernel's ``threads-max`` and ``pid_max`` and the cgroup's
  ``pids.max``, each less what is already running;
- memory: ``jobs x (bs x iodepth + PER_JOB_OVERHEAD)`` at most half of what
  is available (``MemAvailable``, or the cgroup's ``memory.max`` less its
  ``memory.current`` when lower);
- kernel AIO (``iodepth > 1``): ``jobs x iodepth`` events must fit in
  ``fs.aio-max-nr`` less ``fs.aio-nr``.
- ``MIN_INTERVAL_S`` (0.1 s): the shortest --sample-interval the disk probes keep.
  Each interval sums every job's latency histogram (2 x 1856 buckets per job,
  up to 256 jobs: a few ms) and, for the warm-up, builds the done map; at
  0.1 s that is at most a few % of one core, below it the event loop is not
  guaranteed to keep up and the figures are mostly noise.
- ``check_seconds``: durations up to ``MAX_SECONDS`` (10^9 s): a --time
  of 1e300 s would overflow the nanosecond clocks.
- ``MAX_BS`` (64 MiB): one I/O cannot be interrupted once in the kernel; at
  64 MiB it stays under a second even at 100 MB/s, so a stop is honoured in
  time.

Note: the shared checks of thread counts and interval floors are
``probes/core/machine.py`` and ``probes/core/ranges.py``; this module is the
disk family's own until it moves onto them.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from probetop.probes.core.base import UsageProbeError

MIN_INTERVAL_S = 0.1
MAX_SECONDS = 10**9  # --time, --sample-interval, --ramp ...: nanosecond counts stay far below 2**63
MAX_BS = 64 << 20
PER_JOB_OVERHEAD = 1 << 20  # counters, histograms, AIO arrays, the thread's touched stack
MEMORY_SHARE = 0.5  # use at most this share of the available memory


class CapacityError(UsageProbeError):
    """The run asks for more than the machine can hold."""

    code = "capacity"


def human(n: float) -> str:
    """Bytes in binary units, one decimal ("1.5 GiB")."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(value) < 1024 or unit == "EiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} EiB"


def check_interval(interval_s: float) -> None:
    if not interval_s >= MIN_INTERVAL_S:
        raise CapacityError(
            f"--sample-interval {interval_s:g} is too short for the disk probes: the shortest they "
            f"keep is {MIN_INTERVAL_S:g} s (each interval sums every job's latency histogram)"
        )
    check_seconds("--sample-interval", interval_s)


def check_seconds(option: str, seconds: float | None) -> None:
    """A duration the probes can turn into nanoseconds: finite, 0..MAX_SECONDS."""
    if seconds is not None and not 0 <= seconds <= MAX_SECONDS:
        raise CapacityError(
            f"{option} {seconds:g} is out of range: 0 to {MAX_SECONDS:,} seconds (about 31 years)"
        )


def check_bs(bs: int) -> None:
    if bs > MAX_BS:
        raise CapacityError(
            f"--bs {human(bs)} is larger than {human(MAX_BS)}: one I/O that big cannot be "
            "stopped in time once the kernel has it; use a smaller block size"
        )


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _cgroup_dir() -> Path | None:
    """This process's cgroup v2 directory, if there is one."""
    text = _read("/proc/self/cgroup") or ""
    for line in text.splitlines():
        if line.startswith("0::"):
            d = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            return d if d.is_dir() else None
    return None


def _user_threads(uid: int) -> int:
    """Threads of processes whose real user is ``uid`` (what RLIMIT_NPROC counts)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        text = _read(f"/proc/{entry.name}/status")
        if not text:
            continue
        real_uid = threads = None
        for line in text.splitlines():
            if line.startswith("Uid:"):
                real_uid = _int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = _int(line.split()[1])
        if real_uid == uid and threads:
            total += threads
    return total


def thread_limits(new: int) -> str | None:
    """Why ``new`` more threads would not fit, or None."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:
        used = _user_threads(os.getuid())
        if used + new > soft:
            return (
                f"your process limit RLIMIT_NPROC (ulimit -u) is {soft} and {used} "
                "threads of yours are running"
            )
    loadavg = (_read("/proc/loadavg") or "").split()
    running = _int(loadavg[3].split("/")[1]) if len(loadavg) > 3 and "/" in loadavg[3] else None
    for name in ("threads-max", "pid_max"):
        limit = _int(_read(f"/proc/sys/kernel/{name}"))
        if limit is not None and running is not None and running + new > limit:
            return f"the kernel's {name} is {limit} and {running} threads are running"
    cgroup = _cgroup_dir()
    if cgroup is not None:
        limit = _int(_read(str(cgroup / "pids.max")))  # "max" reads as None
        current = _int(_read(str(cgroup / "pids.current"))) or 0
        if limit is not None and current + new > limit:
            return f"this cgroup's pids.max is {limit} and {current} are in use"
    return None


def available_memory() -> tuple[int, str] | None:
    """(bytes available, where that figure comes from), or None if unknown."""
    best: tuple[int, str] | None = None
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            best = (int(line.split()[1]) * 1024, "MemAvailable")
    cgroup = _cgroup_dir()
    if cgroup is not None:
        limit = _int(_read(str(cgroup / "memory.max")))
        current = _int(_read(str(cgroup / "memory.current")))
        if limit is not None and current is not None:
            room = max(0, limit - current)
            if best is None or room < best[0]:
                best = (room, "this cgroup's memory.max less memory.current")
    return best


def aio_room() -> tuple[int, int] | None:
    """(fs.aio-max-nr, fs.aio-nr), or None if unknown."""
    limit = _int(_read("/proc/sys/fs/aio-max-nr"))
    used = _int(_read("/proc/sys/fs/aio-nr"))
    return (limit, used) if limit is not None and used is not None else None


def check(*, jobs: int, iodepth: int, bs: int) -> None:
    """Refuse (CapacityError) what the machine cannot hold; see the module docstring."""
    check_bs(bs)
    why = thread_limits(jobs)
    if why:
        raise CapacityError(f"--jobs {jobs} needs {jobs} I/O threads, but {why}. Lower --jobs.")
    need = jobs * (bs * iodepth + PER_JOB_OVERHEAD)
    avail = available_memory()
    if avail is not None and need > avail[0] * MEMORY_SHARE:
        raise CapacityError(
            f"--jobs {jobs} x --iodepth {iodepth} x --bs {human(bs)} need {human(need)} of "
            f"I/O buffers; {human(avail[0])} is available ({avail[1]}) and probetop uses at "
            f"most {MEMORY_SHARE:.0%} of it. Lower --jobs, --iodepth or --bs."
        )
    if iodepth > 1:
        room = aio_room()
        if room is not None and jobs * iodepth > room[0] - room[1]:
            raise CapacityError(
                f"--jobs {jobs} x --iodepth {iodepth} need {jobs * iodepth} kernel AIO events; "
                f"fs.aio-max-nr is {room[0]} and {room[1]} are in use. Lower --jobs or "
                "--iodepth, or raise it (sysctl fs.aio-max-nr)."
            )
