"""What this machine can hold for one run: how many threads, streams or jobs
fit now, and how busy workers share its CPUs with the event loop.

Why: a probe that starts more threads than the machine can hold runs it out
of tasks or memory, and more busy workers than CPUs starve the event loop
(frozen dashboard, signals ignored). These checks refuse such runs up
front, with a message that names the binding limit (``ranges.LimitProbeError``).

Contract:
- ``UnitCost`` says what one unit of a count option costs (OS threads, file
  descriptors, resident memory, reserved address space); ``MachineLimits.read()``
  reads what this machine allows now (RLIMIT_NPROC and the user's tasks,
  kernel.threads-max, kernel.pid_max, the cgroup's pids.max, MemAvailable and
  the cgroup's memory limit, RLIMIT_AS, strict overcommit, RLIMIT_NOFILE);
  ``capacity`` turns both into the most units that fit and the limit that
  binds; ``check_capacity(option, count, cost)`` raises LimitProbeError when
  ``count`` does not fit. Used for ``cpu --threads``, ``icmp --streams`` and
  ``http --connections``.
- ``thread_stack(nbytes)``: create worker threads with a small, known stack
  (the reserved size ``UnitCost.reserved_bytes`` counts), then restore.
- ``oversubscribed(workers)`` / ``background_priority()``: more busy workers
  than ``OVERSUBSCRIBED_PER_CPU`` per CPU would make the event loop wait its
  turn behind each of them; such workers make themselves SCHED_IDLE (native
  threads only: a SCHED_IDLE thread that takes the GIL would hold up the loop;
  the cpu probe also runs them in a worker process of their own session, as
  SCHED_IDLE ranks threads only within their scheduling group: docs/cpu.md).
  ``check_busy_workers`` refuses that many busy Python-side workers instead;
  ``check_per_cpu`` is the general per-CPU cap (native workers: see cpu).
- ``binary_size(n)``: bytes as the messages here (and the disk family's) write them.
- Only the standard library and ``ranges``: it runs as any user, under any
  rlimit, before anything heavy loads.
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from probetop.probes.core.ranges import LimitProbeError

# Kept free for the rest of the machine when counting what fits.
TASK_RESERVE = 64  # tasks (threads/processes): the shell, sshd, the dashboard's own helpers
FD_RESERVE = 64  # file descriptors: the recording, /proc readers, the terminal
MEMORY_SHARE = 0.5  # at most this share of the available memory goes to one run's units

# A worker thread's stack. The native loops use a few KiB; Python frames are
# on the heap (3.11+), so this is ample and keeps 1000s of threads from
# reserving GiBs of address space (glibc's default is RLIMIT_STACK, 8 MiB).
WORKER_STACK_BYTES = 256 * 1024
# Busy workers per CPU above which they yield to the event loop (see oversubscribed).
OVERSUBSCRIBED_PER_CPU = 2


@dataclass(frozen=True, slots=True)
class UnitCost:
    """What one unit of a count option (one thread, stream, job, queue slot) costs.

    ``tasks``: OS threads it starts. ``files``: descriptors it opens.
    ``resident_bytes``: memory it really uses (arrays, buffers, touched stack
    pages, the kernel's task). ``reserved_bytes``: address space it reserves
    (a thread's whole stack), which counts against ``ulimit -v`` and strict
    overcommit. ``detail`` says what the memory is, for the message.
    """

    noun: str
    tasks: int = 1
    files: int = 0
    resident_bytes: int = 0
    reserved_bytes: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MachineLimits:
    """What this machine allows now (None: no such limit, or unknown)."""

    uid: int = 0
    nproc_soft: int | None = None  # RLIMIT_NPROC (not enforced for root)
    user_tasks: int | None = None  # threads of this real uid, all processes
    threads_max: int | None = None  # /proc/sys/kernel/threads-max
    pid_max: int | None = None  # /proc/sys/kernel/pid_max
    tasks_now: int | None = None  # threads on the machine (/proc/loadavg)
    cgroup_pids: tuple[int, int] | None = None  # (pids.max, pids.current), tightest ancestor
    mem_available: int | None = None  # MemAvailable, bytes
    cgroup_memory: tuple[int, int] | None = None  # (limit, usage), bytes
    as_soft: int | None = None  # RLIMIT_AS, bytes
    vm_size: int | None = None  # this process's address space, bytes
    commit_room: int | None = None  # CommitLimit - Committed_AS under overcommit_memory=2
    nofile_soft: int | None = None  # RLIMIT_NOFILE
    open_files: int | None = None  # this process's open descriptors
    notes: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def read(cls) -> MachineLimits:
        """The limits in force for this process, read from /proc, /sys and getrlimit."""
        uid = os.getuid()
        nproc = _soft(resource.RLIMIT_NPROC)
        loadavg = _read("/proc/loadavg")
        tasks_now = None
        if loadavg:
            with contextlib.suppress(IndexError, ValueError):
                tasks_now = int(loadavg.split()[3].split("/")[1])
        meminfo = _meminfo()
        commit_room = None
        if _int(_read("/proc/sys/vm/overcommit_memory")) == 2:
            limit, committed = meminfo.get("CommitLimit"), meminfo.get("Committed_AS")
            if limit is not None and committed is not None:
                commit_room = max(0, limit - committed)
        status = _status_fields("/proc/self/status")
        try:
            open_files: int | None = len(os.listdir("/proc/self/fd"))
        except OSError:
            open_files = None
        return cls(
            uid=uid,
            nproc_soft=nproc,
            user_tasks=_user_tasks(uid) if nproc is not None and uid != 0 else None,
            threads_max=_int(_read("/proc/sys/kernel/threads-max")),
            pid_max=_int(_read("/proc/sys/kernel/pid_max")),
            tasks_now=tasks_now,
            cgroup_pids=_cgroup_pids(),
            mem_available=meminfo.get("MemAvailable"),
            cgroup_memory=_cgroup_memory(),
            as_soft=_soft(resource.RLIMIT_AS),
            vm_size=status.get("VmSize"),
            commit_room=commit_room,
            nofile_soft=_soft(resource.RLIMIT_NOFILE),
            open_files=open_files,
        )


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit on a count: how many units fit under it, and why."""

    name: str  # "RLIMIT_NPROC", "kernel.pid_max", "MemAvailable" ...
    units: int  # most units that fit (>= 0)
    why: str  # a clause for the message: "kernel.pid_max is 32768 and 170 tasks exist"


def capacity(cost: UnitCost, machine: MachineLimits) -> list[Limit]:
    """Every limit that applies to ``cost`` on ``machine``, tightest first."""
    out: list[Limit] = []

    def add(name: str, room: int, per_unit: int, why: str) -> None:
        if per_unit > 0:
            out.append(Limit(name, max(0, room) // per_unit, why))

    m = machine
    if cost.tasks:
        reserve = f"{TASK_RESERVE} kept free for the rest of the system"
        if m.nproc_soft is not None and m.uid != 0 and m.user_tasks is not None:
            add(
                "RLIMIT_NPROC",
                m.nproc_soft - m.user_tasks - TASK_RESERVE,
                cost.tasks,
                f"RLIMIT_NPROC (ulimit -u) is {m.nproc_soft} and your user runs "
                f"{m.user_tasks} threads, {reserve}",
            )
        if m.tasks_now is not None:
            for name, cap in (("kernel.threads-max", m.threads_max), ("kernel.pid_max", m.pid_max)):
                if cap is not None:
                    add(
                        name,
                        cap - m.tasks_now - TASK_RESERVE,
                        cost.tasks,
                        f"{name} is {cap} and {m.tasks_now} threads exist, {reserve}",
                    )
        if m.cgroup_pids is not None:
            pmax, pcur = m.cgroup_pids
            add(
                "cgroup pids.max",
                pmax - pcur - TASK_RESERVE,
                cost.tasks,
                f"the cgroup's pids.max is {pmax} and it holds {pcur} threads, {reserve}",
            )
    if cost.files and m.nofile_soft is not None:
        add(
            "RLIMIT_NOFILE",
            m.nofile_soft - (m.open_files or 0) - FD_RESERVE,
            cost.files,
            f"RLIMIT_NOFILE (ulimit -n) is {m.nofile_soft} and {m.open_files or 0} are open, "
            f"{FD_RESERVE} kept free",
        )
    if cost.resident_bytes:
        share = f"{MEMORY_SHARE:.0%}"
        if m.mem_available is not None:
            add(
                "MemAvailable",
                int(m.mem_available * MEMORY_SHARE),
                cost.resident_bytes,
                f"{binary_size(cost.resident_bytes)} per {cost.noun}{_detail(cost)}, and at most "
                f"{share} of MemAvailable ({binary_size(m.mem_available)}) may be used",
            )
        if m.cgroup_memory is not None:
            limit, usage = m.cgroup_memory
            add(
                "cgroup memory limit",
                int((limit - usage) * MEMORY_SHARE),
                cost.resident_bytes,
                f"{binary_size(cost.resident_bytes)} per {cost.noun}{_detail(cost)}, "
                f"and the cgroup's memory limit {binary_size(limit)} has "
                f"{binary_size(max(0, limit - usage))} free, {share} of which may be used",
            )
    if cost.reserved_bytes:
        if m.as_soft is not None and m.vm_size is not None:
            add(
                "RLIMIT_AS",
                m.as_soft - m.vm_size - 64 * 2**20,
                cost.reserved_bytes,
                f"each {cost.noun} reserves {binary_size(cost.reserved_bytes)} of address "
                f"space and RLIMIT_AS (ulimit -v) is {binary_size(m.as_soft)} with "
                f"{binary_size(m.vm_size)} in use",
            )
        if m.commit_room is not None:
            add(
                "vm.overcommit_memory=2",
                m.commit_room - 64 * 2**20,
                cost.reserved_bytes,
                f"each {cost.noun} commits {binary_size(cost.reserved_bytes)} and strict "
                f"overcommit leaves {binary_size(m.commit_room)} (CommitLimit - Committed_AS)",
            )
    return sorted(out, key=lambda lim: lim.units)


def check_capacity(
    option: str, count: int, cost: UnitCost, *, machine: MachineLimits | None = None
) -> None:
    """Raise LimitProbeError when ``count`` units of ``cost`` do not fit on this
    machine now; the message names the binding limit and the most that fit."""
    limits = capacity(cost, machine if machine is not None else MachineLimits.read())
    for limit in limits:
        if count > limit.units:
            raise LimitProbeError(
                f"{option} {count}: at most {limit.units} {cost.noun}s fit on this machine "
                f"now, limited by {limit.name}: {limit.why}"
            )


def logical_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def oversubscribed(workers: int, per_cpu: int = OVERSUBSCRIBED_PER_CPU) -> bool:
    """More busy workers than ``per_cpu`` per CPU: with the kernel's fair
    scheduler the event loop would then wait its turn behind every worker
    (measured: 1000 busy threads on 2 CPUs kept a 10 ms sleep waiting 1.4 s),
    so such workers run as ``background_priority`` threads."""
    return workers > per_cpu * logical_cpus()


def check_per_cpu(option: str, count: int, noun: str, *, per_cpu: int, why: str) -> None:
    """Refuse more than ``per_cpu`` busy workers per logical CPU; ``why``
    says what more would do (the message names the CPUs as the limit)."""
    cpus = logical_cpus()
    most = per_cpu * cpus
    if count > most:
        raise LimitProbeError(
            f"{option} {count}: at most {most} {noun}s fit on this machine now, limited by "
            f"its {cpus} logical CPUs ({per_cpu} per CPU: {why})"
        )


def check_busy_workers(option: str, count: int, noun: str, *, why: str) -> None:
    """Refuse more busy Python-side workers (each keeps a CPU busy and takes
    the GIL every interval) than ``OVERSUBSCRIBED_PER_CPU`` per logical CPU:
    beyond that they add no throughput, and the event loop waits behind them."""
    check_per_cpu(
        option,
        count,
        noun,
        per_cpu=OVERSUBSCRIBED_PER_CPU,
        why=f"{why}, so more add no throughput and would starve the event loop",
    )


def background_priority() -> bool:
    """Make the calling thread SCHED_IDLE: it runs whenever a CPU would
    otherwise idle, and any normal thread (the event loop, a signal's
    handler) preempts it at once. Allowed without privileges; on an idle
    machine the thread gets the same CPU time. False if the OS refused."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread
    except (AttributeError, OSError):
        return False
    return True


@contextlib.contextmanager
def thread_stack(nbytes: int = WORKER_STACK_BYTES) -> Iterator[None]:
    """Threads created inside get ``nbytes`` stacks. Create them without awaiting
    in between: the stack size is process-wide while this is open."""
    old = threading.stack_size(nbytes)
    try:
        yield
    finally:
        threading.stack_size(old)


# -- readers -------------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (IndexError, ValueError):
        return None  # "max" in a cgroup file means: no limit


def _soft(which: int) -> int | None:
    try:
        soft, _hard = resource.getrlimit(which)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def _status_fields(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (_read(path) or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("VmSize", "Threads") and parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def _user_tasks(uid: int) -> int | None:
    """Threads of every process whose real uid is ``uid`` (what RLIMIT_NPROC counts)."""
    total = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        real = threads = None
        for line in (_read(f"/proc/{entry}/status") or "").splitlines():
            if line.startswith("Uid:"):
                real = _int(line[4:])
            elif line.startswith("Threads:"):
                threads = _int(line[8:])
        if real == uid and threads:
            total += threads
    return total


def _cgroup_paths(controller: str) -> list[Path]:
    """This process's cgroup directory for ``controller`` and its ancestors
    (v2 unified or v1), innermost first."""
    out: list[Path] = []
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _hid, controllers, rel = parts
        if controllers == "":
            base = Path("/sys/fs/cgroup")
        elif controller in controllers.split(","):
            base = Path("/sys/fs/cgroup") / controllers
        else:
            continue
        path = base / rel.lstrip("/")
        while True:
            out.append(path)
            if path == base or path.parent == path:
                break
            path = path.parent
    return out


def _cgroup_pids() -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for path in _cgroup_paths("pids"):
        pmax, pcur = _int(_read(str(path / "pids.max"))), _int(_read(str(path / "pids.current")))
        if (
            pmax is not None
            and pcur is not None
            and (best is None or pmax - pcur < best[0] - best[1])
        ):
            best = (pmax, pcur)
    return best


def _cgroup_memory() -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for path in _cgroup_paths("memory"):
        for limit_file, usage_file in (
            ("memory.max", "memory.current"),
            ("memory.limit_in_bytes", "memory.usage_in_bytes"),
        ):
            limit, usage = _int(_read(str(path / limit_file))), _int(_read(str(path / usage_file)))
            if limit is None or usage is None or limit >= 2**60:  # v1 "no limit" is ~2**63
                continue
            if best is None or limit - usage < best[0] - best[1]:
                best = (limit, usage)
    return best


def binary_size(nbytes: float) -> str:
    """Bytes in binary units, one decimal ("1.5 GiB"), for messages."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} EiB"


def _detail(cost: UnitCost) -> str:
    return f" ({cost.detail})" if cost.detail else ""
