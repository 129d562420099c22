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

What the machine allows (limits, tasks, memory, the cgroup's) is read once,
by ``probes/core/machine.py`` (``MachineLimits``), as for cpu, icmp and
http; the rules and messages above are the disk family's (no reserve
besides the memory share: a disk run's threads are few).
"""

from __future__ import annotations

from pathlib import Path

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.machine import MachineLimits
from probetop.probes.core.machine import binary_size as human

MIN_INTERVAL_S = 0.1
MAX_SECONDS = 10**9  # --time, --sample-interval, --ramp ...: nanosecond counts stay far below 2**63
MAX_BS = 64 << 20
PER_JOB_OVERHEAD = 1 << 20  # counters, histograms, AIO arrays, the thread's touched stack
MEMORY_SHARE = 0.5  # use at most this share of the available memory


class CapacityError(UsageProbeError):
    """The run asks for more than the machine can hold."""

    code = "capacity"


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


def thread_limits(new: int, machine: MachineLimits) -> str | None:
    """Why ``new`` more threads would not fit on ``machine``, or None."""
    m = machine
    if (
        m.nproc_soft is not None
        and m.user_tasks is not None
        and m.uid != 0
        and m.user_tasks + new > m.nproc_soft
    ):
        return (
            f"your process limit RLIMIT_NPROC (ulimit -u) is {m.nproc_soft} and "
            f"{m.user_tasks} threads of yours are running"
        )
    for name, limit in (("threads-max", m.threads_max), ("pid_max", m.pid_max)):
        if limit is not None and m.tasks_now is not None and m.tasks_now + new > limit:
            return f"the kernel's {name} is {limit} and {m.tasks_now} threads are running"
    if m.cgroup_pids is not None:
        limit, current = m.cgroup_pids
        if current + new > limit:
            return f"this cgroup's pids.max is {limit} and {current} are in use"
    return None


def available_memory(machine: MachineLimits) -> tuple[int, str] | None:
    """(bytes available, where that figure comes from), or None if unknown."""
    best: tuple[int, str] | None = None
    if machine.mem_available is not None:
        best = (machine.mem_available, "MemAvailable")
    if machine.cgroup_memory is not None:
        limit, usage = machine.cgroup_memory
        room = max(0, limit - usage)
        if best is None or room < best[0]:
            best = (room, "this cgroup's memory.max less memory.current")
    return best


def aio_room() -> tuple[int, int] | None:
    """(fs.aio-max-nr, fs.aio-nr), or None if unknown."""
    try:
        limit, used = (int(Path(f"/proc/sys/fs/{n}").read_text()) for n in ("aio-max-nr", "aio-nr"))
    except (OSError, ValueError):
        return None
    return limit, used


def check(*, jobs: int, iodepth: int, bs: int, machine: MachineLimits | None = None) -> None:
    """Refuse (CapacityError) what the machine cannot hold; see the module
    docstring. ``machine``: its limits (default: read now)."""
    check_bs(bs)
    machine = machine if machine is not None else MachineLimits.read()
    why = thread_limits(jobs, machine)
    if why:
        raise CapacityError(f"--jobs {jobs} needs {jobs} I/O threads, but {why}. Lower --jobs.")
    need = jobs * (bs * iodepth + PER_JOB_OVERHEAD)
    avail = available_memory(machine)
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
