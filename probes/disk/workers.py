"""The native I/O engine shared by the IOPS probe and the volume warm-up:
its loops loaded, its worker threads run, stopped and read.

What it runs is ``engineplan.EnginePlan``; the loops run once before any
clock and a plan run in one call are ``selftest``.

Contract:
- ``Engine(plan)`` runs ``plan.jobs`` worker threads. Each thread calls a
  numba ``nogil`` loop that issues pread/pwrite through libc (``iodepth`` 1,
  like fio's psync engine) or kernel AIO through raw ``syscall``
  (io_setup/io_submit/io_getevents, like fio's libaio engine, no libaio.so
  needed). No Python code runs per I/O, so jobs scale past the GIL.
- Every completed I/O updates, inside the native loop, per-job cumulative
  counters (ios, bytes, errors, min/max/sum/sum of squares of fio's clat,
  slat and lat in ns) and a fio-style log-linear histogram of clat: their
  layout and the typed readings are ``probes/disk/counters.py``. Callers
  read them with ``snapshot()`` once per interval and work with deltas.
- A job may have several files (``plan.files``, fio's --nrfiles): one fd
  each, in a per-job int64 table (``counters.FILE_*``: fd, end of its area,
  sequential position) the loop picks each I/O's file from, as fio's
  --file_service_type (``plan.file_service``); its counters are the job's,
  over all of them. Several files need a time-based plan.
- Work is either time-based (``plan.wrap``: random or wrapping sequential
  offsets until ``stop()``) or a list of extents handed out in chunks
  (sequential passes: warm-up). ``done_extents()`` tells exactly which bytes
  completed, including each job's finished prefix of the chunk in flight, so a
  checkpoint redoes at most the I/Os that were in flight.
- ``compile_kernels()`` loads the loops (probes/disk/native.py) before any
  clock starts: the object code ``probetop compile`` kept
  (``core.native_objects``: milliseconds, numba not imported) when it was
  built from these sources on this CPU, else numba's (compiled the first
  time, seconds, then cached on disk: the same code). ``keep_kernels()``
  (``probetop compile``) keeps the loops numba compiled as object code.
  ``selftest.warm_up_kernels()`` also runs them once on a temp file.
- ``end_at(deadline_ns)`` is the run's end (fio's --runtime): each loop stops
  issuing at that monotonic instant, reaps and counts the I/Os in flight and
  returns, so ``finished_ns`` is when the last of them completed and the
  final snapshot counts every I/O issued; ``expired`` says the deadline (not
  the work or an error) ended a loop. A work list's jobs take no new chunk
  after it.
- ``usage()``: the workers' CPU counters (``jobusage``), an ended worker's
  as it ended (a loop that returned at the deadline has left /proc).
- ``in_flight()``: the I/Os the workers still running have submitted and
  not completed (``pending.InFlight``), for a device that stopped
  answering: the asynchronous loops keep their slots (offset, direction,
  length) in an array of the engine's; a synchronous worker's is the
  pread/pwrite the kernel shows it blocked in.
- ``stop()`` + ``join(timeout)`` end every worker thread: each loop looks at
  its stop word at least every 100 ms (probes/disk/native.py). After a stop,
  ``join_stopped(grace_s)`` waits ``grace_s``, and longer (up to
  ``STARVED_CAP_S``) while a worker left is runnable (``iothreads``): short
  of CPU on a loaded machine is not "blocked by the device". A worker blocked in the
  kernel past that (a hung device) is a daemon thread: its fds and buffers
  stay open until it ends; the last worker to end then closes them (``join``
  closes nothing while one lives). The kernel holds the process until such
  a worker ends, so it is noted in ``core.kernelholds``: the process the
  shell waits for then does not wait for it.
- A write plan on a block device opens it with ``O_EXCL`` (``exclusive``):
  while probetop writes, the kernel refuses to mount it or swapon it.
- A failure to compile or load the native loops is a ``NativeCodeError``
  (a ``ProbeError``: one line, exit 2), never a raw numba exception.
- Writes stamp every 512-byte sector of each block with its absolute byte
  offset (first 8 bytes; the rest is a fixed random fill), so a later
  ``verify`` read pass (or a test) can tell each sector was written where it
  belongs. Reads with ``verify`` count sectors whose stamp is wrong.
- An error inside the loop is data: counted per direction, with the last
  errno and offset kept. With ``stop_on_error`` the job ends at the first one;
  without, at one that makes going on pointless (full, read-only, gone, a
  short transfer: ``halting_error``).
- A plan with a ``blockmap`` (``blockmap.BlockMap``) has every finished I/O
  classified into it (data, all zero, failed) and its all-zero reads counted
  (``DirectionTotals.zero_bytes``): what a warm-up pass found.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import mmap
import os
import platform
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from probetop.probes.core import kernelholds, native_objects
from probetop.probes.core.base import ProbeError
from probetop.probes.disk.blockmap import BlockMap
from probetop.probes.disk.counters import (
    AIO_SYSCALLS,
    C_ERRORS,
    C_IOS,
    FATAL_ERRNOS,
    FILE_END,
    FILE_FD,
    FILE_POS,
    FILE_SERVICES,
    HIST_BUCKETS,
    K_DEADLINE,
    K_ERR_DIR,
    K_ERR_FILE,
    K_ERR_OFFSET,
    K_ERRNO,
    K_EXPIRED,
    K_FIRST_BAD,
    K_PROGRESS,
    K_STOP,
    MAX_COUNTERS,
    MIN_COUNTERS,
    N_CONTROL,
    N_COUNTERS,
    N_FILE_WORDS,
    N_FLOATS,
    Snapshot,
    sum_jobs,
)
from probetop.probes.disk.engineplan import EnginePlan, cut_chunks, open_target
from probetop.probes.disk.iothreads import STARVED_CAP_S, runnable, yield_to_control
from probetop.probes.disk.jobusage import ThreadUsage, read_thread
from probetop.probes.disk.pending import InFlight, blocked_call
from probetop.probes.disk.records import DIRECTIONS
from probetop.probes.disk.steps import wait_threads
from probetop.probes.disk.writeback import close_held_message, writeback_progress

# -- the native loops -------------------------------------------------------

_KERNELS: dict[str, Any] = {}
_COMPILE_LOCK = threading.Lock()
# How often a stop that waits for runnable workers looks at their state again.
_STATE_POLL_S = 0.05
CLOSE_WAIT_S = 5.0  # inflight.HUNG_S (not imported: inflight imports this module)
CLOSE_CAP_S = 30.0  # inflight.DRAIN_CAP_S
"""How long the fds' close may wait for the writeback of what a buffered run
wrote, with no progress meanwhile (``writeback_progress``: sectors written
on the target's device, WRITEs its NFS mount completed), before the run
goes on without it (the device's "no answer" time); CLOSE_CAP_S in all
where nothing shows progress (tmpfs, FUSE)."""


# Each job's buffers are one anonymous mapping: page aligned. fio's buffered
# jobs malloc theirs with no alignment unless told --iomem_align, and the
# page-cache copy into them can be several times slower
# (benchmarks/fio_buffer_alignment.py), so the equivalent fio command names
# the alignment.
FIO_BUFFER_ALIGNMENT = f"--iomem_align={mmap.PAGESIZE}"


class NativeCodeError(ProbeError):
    """The native I/O loops cannot be compiled or loaded."""

    code = "native-code"


def compile_kernels() -> dict[str, Any]:
    """Load (once per process) and return the nogil loops. Compiles on first use
    (seconds; then cached on disk): call before starting any clock. Raises
    NativeCodeError when numba cannot build them."""
    with _COMPILE_LOCK:
        if not _KERNELS:
            try:
                _KERNELS.update(_build_kernels())
            except ProbeError:
                raise
            except Exception as exc:  # numba/llvmlite: one line, not a traceback
                raise NativeCodeError(
                    f"cannot load the native I/O loop ({type(exc).__name__}: {exc})"
                ) from None
            # numba and llvmlite leave ~10^5 objects that live as long as the
            # process; out of the cyclic collector's sight, they no longer cost
            # every full collection, nor 0.5-1 s of collection at exit (a
            # stop's budget is 2 s).
            gc.freeze()
    return _KERNELS


def kernel_notes() -> list[str]:
    """What the user should know about the native code (its cache is off ...)."""
    from probetop.probes.core import native_cache, native_objects

    note = native_cache.note()
    if note and native_objects.used_shared():
        # Nothing compiled: the loops came from the install's kept object code.
        note = (
            note.split(": the I/O loops", 1)[0]
            + ": the I/O loops came from the install's kept object code"
        )
    return [note] if note else []


#: The loops kept as object code (their native.py names), and the files
#: their code and constants come from (a change to any makes them stale).
KEPT_LOOPS = {
    "sync": "sync_loop",
    "aio": "aio_loop",
    "aio_setup": "aio_setup",
    "aio_destroy": "aio_destroy",
    "uring": "uring_loop",
}
_SOURCES = tuple(
    os.path.join(os.path.dirname(__file__), name)
    for name in ("native.py", "counters.py", "uring.py")
)
# Pinned now, as this process binds the constants the loop is built with
# (native_objects.pin_sources): an upgrade landing later is another build.
native_objects.pin_sources(_SOURCES)


def _kept_kernels() -> dict[str, Any] | None:
    """Every loop from its kept object code, or None when one is missing or stale."""

    kernels: dict[str, Any] = {}
    for key, name in KEPT_LOOPS.items():
        loop = native_objects.load(f"disk.{name}", _SOURCES)
        if loop is None:
            return None
        kernels[key] = loop
    kernels["aio_supported"] = aio_syscalls_mapped()
    return kernels


def keep_kernels(run_once: Callable[[], None]) -> bool:
    """``probetop compile``: numba's loops compiled and run once (``run_once``:
    each then has its one signature), kept as object code, then loaded from
    it for this process too. False when they cannot be kept (the cache is
    off, or their code needs numba's runtime: ``native_objects.build``).
    Raises NativeCodeError when numba cannot build them."""
    from probetop.probes.core import native_cache, native_objects

    with _COMPILE_LOCK:
        _KERNELS.clear()
        _KERNELS.update(_numba_kernels())
    run_once()
    if not native_cache.enabled():
        return False
    from probetop.probes.disk import native

    try:
        for name in KEPT_LOOPS.values():
            native_objects.build(f"disk.{name}", getattr(native, name), _SOURCES)
    except ValueError:  # cannot be kept (native_objects.build): numba's loops serve
        return False
    except Exception as exc:  # numba/llvmlite: one line, not a traceback
        raise NativeCodeError(
            f"cannot keep the native I/O loop ({type(exc).__name__}: {exc})"
        ) from None
    with _COMPILE_LOCK:
        _KERNELS.clear()
    return kernels_kept()


def kernels_kept() -> bool:
    """Whether the loops in use came from their kept object code (loading them)."""

    return isinstance(compile_kernels()["sync"], native_objects.Loop)


def aio_syscalls_mapped() -> bool:
    """Whether kernel AIO's syscall numbers are known on this machine (native.py)."""
    return platform.machine() in AIO_SYSCALLS


def _build_kernels() -> dict[str, Any]:
    return _kept_kernels() or _numba_kernels()


def _numba_kernels() -> dict[str, Any]:
    from probetop.probes.disk import native  # lazy: imports numba

    return {
        "sync": native.sync_loop,
        "aio": native.aio_loop,
        "aio_setup": native.aio_setup,
        "aio_destroy": native.aio_destroy,
        "aio_supported": native.AIO_SUPPORTED,
        "uring": native.uring_loop,
    }


# -- the engine ---------------------------------------------------------------

_NO_MAP = BlockMap(0, 1, 1)  # what the loops get when a plan classifies nothing


class Engine:
    """Worker threads running the native loops. See the module docstring."""

    def __init__(self, plan: EnginePlan) -> None:
        if plan.bs <= 0 or plan.jobs <= 0 or plan.iodepth <= 0:
            raise ValueError("bs, jobs and iodepth must be positive")
        self.plan = plan
        jobs = plan.jobs
        self.cnt = np.zeros((jobs, 2, N_COUNTERS), dtype=np.int64)
        self.cnt[:, :, list(MIN_COUNTERS)] = np.iinfo(np.int64).max
        self.flt = np.zeros((jobs, 2, N_FLOATS), dtype=np.float64)
        self.hist = np.zeros((jobs, 2, HIST_BUCKETS), dtype=np.int64)
        self.ctl = np.zeros((jobs, N_CONTROL), dtype=np.int64)
        self.ctl[:, K_FIRST_BAD] = -1
        # The asynchronous loops' slots: offset (-1: free), direction, length.
        self._slots = np.zeros((jobs, 3, plan.iodepth), dtype=np.int64)
        self._slots[:, 0] = -1
        self.draining_since_ns = 0  # inflight.drain is waiting for the loops
        self._threads: list[threading.Thread] = []
        self._fds: list[int] = []
        self._files: list[np.ndarray] = []  # per job: its files' rows (counters.FILE_*)
        self._maps: list[mmap.mmap] = []
        self._lock = threading.Lock()
        self._queue: list[tuple[int, int]] = []
        self._completed: list[tuple[int, int]] = []
        self._current: list[tuple[int, int] | None] = [None] * jobs
        self.failures: list[str] = []  # Python-side exceptions in workers
        self.close_held: str | None = None  # the fds' close outlived CLOSE_WAIT_S: why
        self.finished = threading.Event()
        self.on_finish: Callable[[], None] | None = None  # called from the last worker
        self.started_ns = 0
        self.finished_ns = 0
        self._loop_end = [0] * jobs
        # Each worker's usage as it ends: /proc/self/task/TID is gone after.
        self._end_usage: list[ThreadUsage | None] = [None] * jobs
        self._running = 0
        self._abandoned = False  # join_stopped gave up: the last worker closes fds/buffers
        self._start_began = False
        self._started_all = threading.Event()  # start() has started (or given up on) every thread

    # -- lifecycle --
    def start(self) -> None:
        """Open the target (one fd per job and file), allocate aligned buffers, start threads."""
        self._start_began = True
        try:
            self._start()
        finally:
            self._started_all.set()

    def _start(self) -> None:
        kernels = compile_kernels()
        plan = self.plan
        if plan.engine == "libaio" and not kernels["aio_supported"]:
            raise OSError(f"kernel AIO syscalls are not mapped for {platform.machine()}")
        if plan.engine == "psync" and plan.iodepth > 1:
            raise ValueError("psync is synchronous: iodepth must be 1")
        if not plan.wrap:
            total = sum(e - s for s, e in plan.extents)
            size = plan.chunk_bytes or max(plan.bs * plan.iodepth * 4, -(-total // (plan.jobs * 4)))
            size = max(plan.bs, (size // plan.bs) * plan.bs)
            self._queue = cut_chunks(plan.extents, size, plan.bs)
            self._queue.reverse()  # pop() from the end = lowest offset first
        if len(plan.job_files(0)) > 1 and not plan.wrap:
            raise ValueError("several files per job need a time-based plan (wrap)")
        try:
            for job in range(plan.jobs):
                rows = np.zeros((len(plan.job_files(job)), N_FILE_WORDS), dtype=np.int64)
                for f in range(rows.shape[0]):
                    fd = open_target(plan, exclusive=plan.exclusive and job == 0, job=job, file=f)
                    self._fds.append(fd)
                    rows[f, FILE_FD] = fd
                    rows[f, FILE_END] = plan.file_end(job, f)
                self._files.append(rows)
            fill = np.random.default_rng(12345).integers(0, 256, plan.bs * plan.iodepth, np.uint8)
            for _job in range(plan.jobs):
                m = mmap.mmap(-1, max(plan.bs * plan.iodepth, mmap.PAGESIZE))
                self._maps.append(m)
                arr = np.frombuffer(m, dtype=np.uint8)
                arr[: fill.size] = fill
        except (OSError, ValueError, OverflowError, MemoryError) as exc:
            self._close()
            if isinstance(exc, OSError):
                raise
            raise OSError(errno.ENOMEM, f"cannot allocate the I/O buffers: {exc}") from None
        for job in range(plan.jobs):
            thread = threading.Thread(
                target=self._work, args=(job, kernels), name=f"probetop-io-{job}", daemon=True
            )
            self._threads.append(thread)
        self._running = len(self._threads)
        self.started_ns = time.monotonic_ns()
        started = 0
        try:
            for thread in self._threads:
                thread.start()
                started += 1
        except RuntimeError as exc:  # "can't start new thread": the machine is out of them
            self.stop()
            with self._lock:
                self._running -= len(self._threads) - started
                self._threads = self._threads[:started]
                if self._running == 0:
                    self.finished.set()
            self._started_all.set()
            self.join(2.0)
            raise OSError(
                errno.EAGAIN, f"cannot start I/O thread {started + 1} of {plan.jobs}: {exc}"
            ) from None

    def _work(self, job: int, kernels: dict[str, Any]) -> None:
        plan = self.plan
        ctx_id = 0
        ring: Any = None
        yield_to_control(plan.jobs)
        try:
            if self.ctl[job, K_STOP]:  # stopped while the threads were being started
                return
            if plan.cpus_allowed:
                # fio's --cpus_allowed (policy "shared"): this thread only, before any I/O
                os.sched_setaffinity(0, plan.cpus_allowed)
            if plan.engine == "io_uring":
                from probetop.probes.disk import uring

                ring = uring.Ring.open(plan.iodepth)  # in this thread: it submits
            elif plan.engine == "libaio":
                ctx_id = kernels["aio_setup"](plan.iodepth)
                if ctx_id <= 0:
                    raise OSError(
                        f"io_setup({plan.iodepth}) failed: the kernel's AIO limit "
                        "(sysctl fs.aio-max-nr) is reached; lower --jobs or --iodepth"
                    )
            m = self._maps[job]
            buf_addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
            words = len(m) // 8
            buf64 = np.frombuffer(m, dtype=np.uint64, count=words)
            seed = (plan.seed + job * 0x632BE59BD9B4E019) & 0x7FFFFFFFFFFFFFFF
            bmap = plan.blockmap if plan.blockmap is not None else _NO_MAP
            files = self._files[job]
            fsvc = FILE_SERVICES[plan.file_service]
            while self.ctl[job, K_STOP] == 0 and self.ctl[job, K_EXPIRED] == 0:
                if plan.wrap:
                    extent = plan.extents[0]
                else:
                    with self._lock:
                        if not self._queue:
                            break
                        extent = self._queue.pop()
                        self._current[job] = extent
                        self.ctl[job, K_PROGRESS] = extent[0]
                files[:, FILE_POS] = extent[0]
                if not plan.wrap:  # one file: this chunk is its area
                    files[0, FILE_END] = extent[1]
                args = (
                    files,
                    buf_addr,
                    buf64,
                    plan.bs,
                    extent[0],
                    fsvc,
                    plan.file_service_nr,
                    plan.seq,
                    plan.wrap,
                    plan.readpct,
                    plan.stamp,
                    plan.verify,
                    plan.stop_on_error,
                    1_000_000_000 // plan.rate_iops if plan.rate_iops > 0 else 0,
                    seed,
                    self.ctl[job],
                    self.cnt[job],
                    self.flt[job],
                    self.hist[job],
                    bmap.states,
                    bmap.base,
                    bmap.granule,
                    plan.classify,
                )
                if ring is not None:
                    kernels["uring"](
                        *args[:4],
                        plan.iodepth,
                        ring.layout,
                        ring.sq32,
                        ring.sqe64,
                        ring.cq32,
                        ring.cq64,
                        *args[4:],
                        self._slots[job],
                    )
                elif plan.engine == "libaio":
                    kernels["aio"](*args[:4], plan.iodepth, ctx_id, *args[4:], self._slots[job])
                else:
                    kernels["sync"](*args)
                self._loop_end[job] = time.monotonic_ns()
                if plan.wrap:
                    break
                with self._lock:
                    progress = int(self.ctl[job, K_PROGRESS])
                    if progress >= extent[1]:
                        self._completed.append(extent)
                        self._current[job] = None
                    else:  # stopped or failed inside: keep the finished prefix only
                        if progress > extent[0]:
                            self._completed.append((extent[0], progress))
                        self._current[job] = None
                        break
                seed += 1
        except Exception as exc:  # report, never kill the process from a worker
            self.failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            self._end_usage[job] = read_thread(threading.get_native_id())
            if ctx_id > 0:
                kernels["aio_destroy"](ctx_id)
            if ring is not None:
                ring.close()
            with self._lock:
                self._running -= 1
                last = self._running == 0
                close_now = last and self._abandoned
            if close_now:
                self._close()  # nobody joins an abandoned engine again
            if last:
                # When the last I/O completed, not when the AIO context was gone.
                self.finished_ns = max(self._loop_end) or time.monotonic_ns()
                self.finished.set()
                if self.on_finish is not None:
                    self.on_finish()

    def stop(self) -> None:
        """Ask every loop to stop after the I/Os in flight complete."""
        self.ctl[:, K_STOP] = 1

    def end_at(self, deadline_ns: int) -> None:
        """The run's end: every loop stops issuing at ``deadline_ns``
        (``time.monotonic_ns``, the loops' CLOCK_MONOTONIC), counts what is
        in flight and returns. May be set before ``start`` or while running."""
        self.ctl[:, K_DEADLINE] = max(1, deadline_ns)

    @property
    def loop_ends_ns(self) -> list[int]:
        """When each job's loop last returned (0: not yet)."""
        return list(self._loop_end)

    @property
    def expired(self) -> bool:
        """True if a loop stopped at the deadline (``end_at``)."""
        return bool(self.ctl[:, K_EXPIRED].any())

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker threads (``timeout`` seconds in all; None: no
        limit); close fds and buffers once all ended. True if all ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._start_began and not self._started_all.wait(timeout):
            return False  # start() is still opening or starting threads: close nothing yet
        if deadline is None:
            for thread in self._threads:
                thread.join()
        else:
            wait_threads(self._threads, max(0.0, deadline - time.monotonic()))
        alive = any(t.is_alive() for t in self._threads)
        if not alive:
            self._close()
        return not alive

    def join_stopped(self, grace_s: float, cap_s: float = STARVED_CAP_S) -> bool:
        """After ``stop``: ``join(grace_s)``, then keep waiting while a worker
        left is runnable (``iothreads.runnable``), ``cap_s`` in all at most. True if
        all ended. If not, the workers left are ``stuck`` (blocked in the
        kernel) and the last of them to end closes the fds and buffers."""
        began = time.monotonic()
        if self.join(grace_s):
            return True
        while time.monotonic() - began < cap_s:
            if not any(runnable(t) for t in self._threads if t.is_alive()):
                break
            if self.join(min(_STATE_POLL_S, max(0.0, cap_s - (time.monotonic() - began)))):
                return True
        with self._lock:
            self._abandoned = True
            # The last worker may have passed its end since the join, before
            # the flag was set: then nobody else closes.
            ended = self._running == 0 and self._started_all.is_set()
        if ended:
            self._close()
        else:  # the process cannot end before them: say so to whatever ends it
            kernelholds.hold(
                f"{self.stuck} I/O thread(s) blocked in the kernel on {self.plan.path}",
                lambda: self.stuck > 0,
            )
        return ended

    def in_flight(self) -> list[InFlight]:
        """The I/Os submitted and not completed by the workers still running:
        read while they wait on a device that stopped answering."""
        out: list[InFlight] = []
        for job, thread in enumerate(self._threads):
            if not thread.is_alive() or thread.native_id is None:
                continue
            if self.plan.engine == "psync":
                fds = [int(fd) for fd in self._files[job][:, FILE_FD]]
                io = blocked_call(thread.native_id, job, fds)
                out.extend([io] if io is not None else [])
                continue
            slots = self._slots[job]
            for s in np.flatnonzero(slots[0] >= 0):
                out.append(InFlight(job, int(slots[1, s]), int(slots[0, s]), int(slots[2, s])))
        return out

    @property
    def stuck(self) -> int:
        """Workers still alive (after ``stop`` and a timed-out ``join``)."""
        return sum(t.is_alive() for t in self._threads)

    def _close(self) -> None:
        """Close the fds and buffers once (the lists are taken under the lock:
        a joiner and the last worker may both get here)."""
        with self._lock:
            fds, self._fds = self._fds, []
            maps, self._maps = self._maps, []

        def close_fds() -> None:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass

        # The last close of a device or file written through the page cache
        # waits for its writeback: forever on a device that stopped answering.
        # Never on the thread that must report and end the run.
        what = f"close() of {self.plan.path} blocked in the kernel (writing back its writes)"
        progress = writeback_progress(self.plan.path)
        wait_s = CLOSE_WAIT_S if progress.read is not None else CLOSE_CAP_S
        if fds and not kernelholds.bounded(close_fds, what, wait_s, progress.read):
            self.close_held = close_held_message(self.plan.path, progress, wait_s)
        for m in maps:
            try:
                m.close()
            except BufferError:  # a numpy view still alive: the GC frees it later
                pass

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def usage(self) -> ThreadUsage:
        """The worker threads' CPU, context switches and faults so far,
        summed (fio's getrusage(RUSAGE_THREAD) per job); a worker that ended
        counts as it stood when its loop returned."""
        total = ThreadUsage()
        for one in self.job_usage():
            total = total.plus(one)
        return total

    def job_usage(self) -> list[ThreadUsage]:
        """``usage`` job by job (a job whose thread never started: zeros)."""
        out = [ThreadUsage() for _ in range(self.plan.jobs)]
        for job, thread in enumerate(self._threads):
            end = self._end_usage[job]
            if end is None and thread.native_id is not None:
                end = read_thread(thread.native_id)
            out[job] = end or ThreadUsage()
        return out

    # -- readings --
    def snapshot(self, t_ns: int, *, per_job: bool = False) -> Snapshot:
        """Sum every job's cumulative counters (a copy; the loops keep going);
        with ``per_job``, each job's own too (``Snapshot.jobs``). Each job's
        copy is consistent: its histogram holds exactly the I/Os its
        ``C_IOS`` counts (fio's sum of bins is N), see ``_job_copy``."""
        cnt, flt, hist = self.cnt.copy(), self.flt.copy(), self.hist.copy()
        for job in range(self.cnt.shape[0]):
            cnt[job], flt[job], hist[job] = self._job_copy(job)
        return sum_jobs(t_ns, cnt, flt, hist.sum(axis=0), per_job=hist if per_job else None)

    def _job_copy(self, job: int, tries: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One job's (cnt, flt, hist) with no I/O half counted. ``native.record``
        bumps ``C_IOS``, then the latency sums, then the histogram; a copy
        taken meanwhile counted an I/O its bins miss. Read the I/O count,
        then hist, cnt and flt, then the count again: equal counts that match
        the bins mean no I/O was being recorded. A loop recording nonstop can
        outrun every try (then the last copy, off by the I/Os in flight); a
        stopped one (the final snapshot) always matches."""
        for _ in range(tries):
            ios = self.cnt[job, :, C_IOS].copy()
            hist = self.hist[job].copy()
            cnt = self.cnt[job].copy()
            flt = self.flt[job].copy()
            if (cnt[:, C_IOS] == ios).all() and (hist.sum(axis=1) == ios).all():
                break
            time.sleep(0)  # let the loop finish the I/O it is recording
        return cnt, flt, hist

    def reset_min_max(self) -> None:
        """Start min/max latency afresh (after a ramp). A race with the loop only
        loses one I/O's min/max update."""
        self.cnt[:, :, list(MIN_COUNTERS)] = np.iinfo(np.int64).max
        self.cnt[:, :, list(MAX_COUNTERS)] = 0

    def done_extents(self) -> list[tuple[int, int]]:
        """[start, end) ranges whose I/O completed (sequential work lists only)."""
        with self._lock:
            out = list(self._completed)
            for job, extent in enumerate(self._current):
                if extent is not None:
                    progress = int(self.ctl[job, K_PROGRESS])
                    if progress > extent[0]:
                        out.append((extent[0], min(progress, extent[1])))
        return out

    def last_error(self) -> tuple[int, int, str] | None:
        """(errno, offset, direction) of the most recent failed I/O, if any."""
        for job in range(self.plan.jobs):
            if self.cnt[job, :, C_ERRORS].sum() > 0:
                return (
                    int(self.ctl[job, K_ERRNO]),
                    int(self.ctl[job, K_ERR_OFFSET]),
                    DIRECTIONS[int(self.ctl[job, K_ERR_DIR])],
                )
        return None

    def halting_error(self) -> tuple[int, int, str] | None:
        """(errno, offset, direction) of a failed I/O that ended a job by
        itself (``native.halts``: full, read-only, gone, or a short transfer,
        errno 0: the target ended early), or None."""
        for job in range(self.plan.jobs):
            if self.cnt[job, :, C_ERRORS].sum() <= 0:
                continue
            code = int(self.ctl[job, K_ERRNO])
            if code == 0 or code in FATAL_ERRNOS:
                return (
                    code,
                    int(self.ctl[job, K_ERR_OFFSET]),
                    DIRECTIONS[int(self.ctl[job, K_ERR_DIR])],
                )
        return None

    def fatal_error(self) -> str | None:
        """Why going on is pointless, or None: the last failed I/O's errno says
        the target is full, read-only or gone (``FATAL_ERRNOS``). Other errors
        (EIO on a failing disk) are data: counted, and the run goes on."""
        error = self.last_error()
        if error is None or error[0] not in FATAL_ERRNOS:
            return None
        code, offset, direction = error
        return (
            f"{direction} failed at byte {offset:,} of {self._failed_path()}: "
            f"{FATAL_ERRNOS[code]} ({errno.errorcode.get(code, code)})"
        )

    def _failed_path(self) -> str:
        """The file (of its job's files) the failed I/O ``last_error`` names went to."""
        for job in range(self.plan.jobs):
            if self.cnt[job, :, C_ERRORS].sum() > 0:
                files = self.plan.job_files(job)
                return files[min(int(self.ctl[job, K_ERR_FILE]), len(files) - 1)]
        return self.plan.path

    def first_bad_offset(self) -> int | None:
        bad = [int(x) for x in self.ctl[:, K_FIRST_BAD] if x >= 0]
        return min(bad) if bad else None
