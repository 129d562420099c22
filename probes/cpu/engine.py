"""Native engines for the sysbench ``cpu`` event, built at run time by LLVM
(on x86-64 from sysbench's own loop as assembly, elsewhere from LLVM IR).

Contract:
- ``load_engine(kind)`` returns an engine or raises ``EngineUnavailable``;
  ``best_engine()`` returns the native engine, else the Python one (whose
  figures are labelled "not comparable with sysbench" by every output).
- ``engine.prime_event(max_prime)`` runs one event and returns its prime count
  (the count proves the work was done; sysbench discards it); with
  ``stop`` (a c_int32) set it returns -1. The event reads the stop flag
  every 4096 values of c and, when set, ends early (not counted in
  ``run_events``).
- ``engine.run_events(...)`` runs events back to back in the calling thread until
  the stop flag, the deadline or the shared event budget says stop, timing each
  event with CLOCK_MONOTONIC and updating that thread's counters and
  sysbench-style latency histogram in place. The native call releases the GIL
  (ctypes foreign call), so threads run truly in parallel and the UI loop is
  never blocked. With a ``Gate`` in ``SharedRun`` the thread first counts
  itself in and waits at the gate (blocked in the kernel), then reads the
  deadline, runs, and stores STAT_END_NS, STAT_CPU_NS and, last, STAT_DONE
  (release order), so a sampler knows a thread is done from memory alone.
  The stop flag is seen within ~30 ms even at --max-prime 2**31 (measured).
- ``NativeEngine.spawn(job, exited, idle=..., stacks=..., index=...)`` runs
  that gated loop in a joinable native thread (OS name ``probetop-cpu``) on
  a stack from ``Stacks``, that never enters Python: 1000s of workers never
  queue for the GIL, so they cannot stall the event loop while they start,
  run or end. ``idle`` makes the thread SCHED_IDLE; its last act is an
  atomic increment of ``exited``; ``reap(tid)`` then frees it (the thread
  itself frees nothing: see ``_PThreads``).
  ``PythonEngine`` has no ``spawn``: its workers are Python threads.

Why not numba: the figure must mean sysbench's figure, so the machine code
must be what gcc -O2 made of sysbench's loop. On x86-64 the event is exactly
that: sysbench 1.0.20's ``cpu_execute_event`` loop as gcc 12 -O2 emits it
(the loop in the distribution's binary, ``objdump -d $(which sysbench)``),
instruction for instruction, in ``module asm`` that LLVM's assembler builds
(``event_code.py``): baseline x86-64 (SSE2), like the distribution's
build, so the same instructions run on every x86-64 CPU and cost there what
sysbench's cost. Compiling the C-like IR for the host instead gave machine code
that changed with the CPU (AVX-512: one ``vcvtusi2sd`` per divide; AVX2: a
5-instruction magic-number conversion; plus an extra ``mov`` per divide),
while sysbench's never does, so the ratio to sysbench moved with the CPU
(1.01 on the Xeon where it was tuned, 1.06-1.11 on an AMD EPYC): docs/cpu.md.
Elsewhere (aarch64, ...) the event is the IR of ``event_code.py`` compiled by LLVM: gcc and
LLVM emit the same instructions per divide there (``udiv`` + ``msub``,
``ucvtf``, ``fcmp``; ``fsqrt`` per c). ``machine_code`` compares the loops. llvmlite
(numba's code generator, a wheel) needs no compiler on the machine.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno as errno_mod
import math
import os
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from probetop.probes.core.sysbench.counters import (
    INT64_MAX,
    STAT_CPU_NS,
    STAT_DONE,
    STAT_END_NS,
    STAT_EVENTS,
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
    STAT_SLOTS,
    STAT_TEST,
    STOPPED_DEADLINE,
    STOPPED_FLAG,
    STOPPED_LIMIT,
)
from probetop.probes.core.sysbench.hist import HIST_DEDUCT, HIST_MULT, HIST_SIZE, bucket_of
from probetop.probes.core.sysbench.rate import RateSchedule
from probetop.probes.cpu.event_code import (
    ARG_SLOTS,
    RUN_IR,
    default_event_code,
    event_ir,
)

# A thread's counters (probes.core.sysbench.counters): the test's own slot
# holds the last event's prime count (a liveness check of the work).
STAT_PRIMES = STAT_TEST
STOPPED_EVENTS = STOPPED_LIMIT  # --events reached
CLOCK_MONOTONIC = 1


class EngineUnavailable(RuntimeError):
    """The engine cannot load on this machine (the message says why)."""


class Engine(Protocol):
    name: str
    comparable: bool  # True when the codegen matches sysbench's (native engines)

    def prime_event(self, max_prime: int, stop: Any = None) -> int: ...

    def run_events(self, job: ThreadJob) -> int: ...


class Gate:
    """Where a run's workers wait, blocked in the kernel (no GIL held, no CPU
    used), until ``open()``: a pthread rwlock the creating thread holds for
    writing; each worker takes and drops it for reading, inside the same
    native call that then runs its events. ``open`` is idempotent and must
    be called by the thread that created the gate (the event loop's)."""

    SIZE = 256  # >= sizeof(pthread_rwlock_t) on every glibc/musl target (56 on x86_64)
    ATTR_SIZE = 64  # >= sizeof(pthread_rwlockattr_t) (8 on x86_64)
    PROCESS_SHARED = 1  # PTHREAD_PROCESS_SHARED (glibc, musl)

    def __init__(self, arena: Arena | None = None) -> None:
        """With ``arena`` the lock and the arrival count live in its shared
        memory and the lock is process-shared: workers in a worker process
        (``Crew``) wait at it too."""
        self._libc = ctypes.CDLL(None)
        attr = None
        if arena is None:
            self._lock: Any = ctypes.create_string_buffer(self.SIZE)
            self._arrived = ctypes.c_int64(0)  # threads that reached the gate
        else:
            self._lock = arena.cell(ctypes.c_char * self.SIZE)
            self._arrived = arena.cell(ctypes.c_int64)
            attr = ctypes.create_string_buffer(self.ATTR_SIZE)
            if self._libc.pthread_rwlockattr_init(attr) != 0 or (
                self._libc.pthread_rwlockattr_setpshared(attr, self.PROCESS_SHARED) != 0
            ):
                raise OSError("pthread_rwlockattr_setpshared failed")
        if self._libc.pthread_rwlock_init(self._lock, attr) != 0:
            raise OSError("pthread_rwlock_init failed")
        if self._libc.pthread_rwlock_wrlock(self._lock) != 0:
            raise OSError("pthread_rwlock_wrlock failed")
        self.opened = False

    @property
    def address(self) -> int:
        return ctypes.addressof(self._lock)

    @property
    def arrived_address(self) -> int:
        return ctypes.addressof(self._arrived)

    @property
    def arrived(self) -> int:
        return int(self._arrived.value)

    def open(self) -> None:
        if not self.opened:
            self.opened = True
            self._libc.pthread_rwlock_unlock(self._lock)

    def wait(self) -> None:
        """Block until open (a ctypes call: the GIL is released while blocked)."""
        with _python_ticket_lock:
            self._arrived.value += 1
        self._libc.pthread_rwlock_rdlock(self._lock)
        self._libc.pthread_rwlock_unlock(self._lock)


class Arena:
    """Anonymous shared memory (``MAP_SHARED``): what a worker process and
    this one both write (the gate, the stop flag, the counters) lives here,
    at the same address in both, since the worker process is forked after it
    is mapped. Pages cost nothing until touched; each piece is 64-byte
    aligned (its own cache line)."""

    ALIGN = 64

    def __init__(self, nbytes: int) -> None:
        import mmap

        self._map = mmap.mmap(-1, max(self.ALIGN, nbytes))  # MAP_SHARED | MAP_ANONYMOUS
        self._next = 0

    def _take(self, nbytes: int) -> int:
        offset = self._next
        if offset + nbytes > len(self._map):
            raise MemoryError("the arena is full (sized too small by its caller)")
        self._next = offset + -(-nbytes // self.ALIGN) * self.ALIGN
        return offset

    def cell(self, ctype: Any) -> Any:
        """A zeroed ctypes object (a c_int64, a char array ...) in the arena."""
        return ctype.from_buffer(self._map, self._take(ctypes.sizeof(ctype)))

    def int64_block(self, rows: int, cols: int) -> Any:
        """A zeroed C-contiguous rows x cols int64 numpy array in the arena."""
        import numpy as np

        offset = self._take(rows * cols * 8)
        return np.frombuffer(self._map, np.int64, rows * cols, offset).reshape(rows, cols)

    @staticmethod
    def bytes_for(threads: int, row_slots: int) -> int:
        """Room for a gate, the run's cells and two blocks of ``threads`` rows
        of ``row_slots`` int64 in all, alignment included."""
        return threads * row_slots * 8 + 16 * Arena.ALIGN + Gate.SIZE


@dataclass
class SharedRun:
    """State shared by all threads of one run: stop flag, the event budget and
    the deadline; with a ``gate``, workers wait at it and read the deadline
    (``set_deadline``) only once it opens."""

    max_prime: int
    max_events: int = 0  # 0 = no limit
    deadline_ns: int = 0  # CLOCK_MONOTONIC ns; 0 = no deadline
    stop: Any = field(default_factory=lambda: ctypes.c_int32(0))
    ticket: Any = field(default_factory=lambda: ctypes.c_int64(0))
    gate: Gate | None = None
    deadline_cell: Any = field(default_factory=lambda: ctypes.c_int64(0))
    schedule: RateSchedule | None = None  # --rate: the arrivals (None: back to back)

    def __post_init__(self) -> None:
        self.deadline_cell.value = self.deadline_ns

    def set_deadline(self, deadline_ns: int) -> None:
        """Set before the gate opens (the gated workers read it after)."""
        self.deadline_ns = deadline_ns
        self.deadline_cell.value = deadline_ns

    def request_stop(self) -> None:
        self.stop.value = 1

    @classmethod
    def in_arena(cls, arena: Arena, **kwargs: Any) -> SharedRun:
        """A run whose gate, stop flag, event budget and deadline are in
        ``arena`` (for workers in a worker process)."""
        return cls(
            gate=Gate(arena),
            stop=arena.cell(ctypes.c_int32),
            ticket=arena.cell(ctypes.c_int64),
            deadline_cell=arena.cell(ctypes.c_int64),
            **kwargs,
        )


def address_of(array: Any) -> int:
    """The address of a ctypes array or of a C-contiguous numpy int64 array
    (the probe keeps every thread's counters in one numpy block, one row each)."""
    if isinstance(array, ctypes.Array):
        return ctypes.addressof(array)
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("counters must be C-contiguous")
    return int(array.ctypes.data)


@dataclass
class ThreadJob:
    """One worker thread's live counters and histogram (written by the engine).

    ``stats`` (``STAT_SLOTS`` int64) and ``hist`` (``HIST_SIZE`` int64) are
    ctypes arrays by default, or rows of the probe's numpy blocks."""

    shared: SharedRun
    stats: Any = field(default_factory=lambda: (ctypes.c_int64 * STAT_SLOTS)())
    hist: Any = field(default_factory=lambda: (ctypes.c_int64 * HIST_SIZE)())
    stopped_by: int = 0  # STOPPED_* code returned by the engine
    cpu_ns: int = 0  # CPU time the worker thread used (CLOCK_THREAD_CPUTIME_ID)
    native_args: Any = None  # a spawned native thread's argument block (kept alive)

    def __post_init__(self) -> None:
        self.stats[STAT_LAT_MIN] = INT64_MAX


_RUN_EVENTS_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_double,
    ctypes.c_double,
    ctypes.c_int64,
    ctypes.c_void_p,
)
_RUN_GATED_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_double,
    ctypes.c_double,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
)
_EVENT_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

# x86 features that change the division. "idivq-to-divl" lets LLVM replace a
# 64-bit div by a 32-bit one when both operands fit in 32 bits (they always do
# here), which sysbench's gcc build never does.
NATIVE_FEATURE_OVERRIDES = ("-idivq-to-divl",)


def _bits(value: float) -> int:
    """A double's bits as a signed int64 (thread_main bitcasts them back)."""
    return int(struct.unpack("<q", struct.pack("<d", value))[0])


class _PThreads:
    """pthread_create / pthread_tryjoin_np for joinable native threads on
    stacks the caller provides.

    Why joinable and caller stacks: a thread that ends frees nothing itself.
    A detached thread with a glibc-allocated stack munmaps stacks (taking the
    process's mmap lock for writing) and frees its TLS block (a malloc lock)
    as it ends; a SCHED_IDLE thread preempted while holding either lock kept
    the event loop's own mmap/brk waiting 8-11 s (measured, 5000 threads on a
    busy machine). Here the joiner, the event loop's thread, frees them."""

    ATTR_SIZE = 128  # >= sizeof(pthread_attr_t) (56 on x86_64 glibc)

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)  # a private handle: own argtypes
        self._create = libc.pthread_create
        self._create.argtypes = [
            ctypes.POINTER(ctypes.c_ulong),
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self._create.restype = ctypes.c_int
        self._attr_init = libc.pthread_attr_init
        self._attr_destroy = libc.pthread_attr_destroy
        self._set_stack = libc.pthread_attr_setstack
        self._set_stack.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self._tryjoin = libc.pthread_tryjoin_np
        self._tryjoin.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        self._tryjoin.restype = ctypes.c_int
        self._join = libc.pthread_join
        self._join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        self._join.restype = ctypes.c_int

    def create(self, entry: int, arg: int, stack_addr: int, stack_bytes: int) -> int:
        """Start a joinable thread on [stack_addr, +stack_bytes); its id."""
        attr = ctypes.create_string_buffer(self.ATTR_SIZE)
        if self._attr_init(attr) != 0:
            raise OSError(errno_mod.ENOMEM, "pthread_attr_init failed")
        try:
            if self._set_stack(attr, stack_addr, stack_bytes) != 0:
                raise OSError(errno_mod.EINVAL, "pthread_attr_setstack failed")
            tid = ctypes.c_ulong()
            rc = self._create(ctypes.byref(tid), attr, entry, arg)
        finally:
            self._attr_destroy(attr)
        if rc != 0:
            raise OSError(rc, f"pthread_create: {os.strerror(rc)}")
        return int(tid.value)

    def tryjoin(self, tid: int) -> bool:
        """Reap an ended thread (never blocks); False while it still runs."""
        return int(self._tryjoin(tid, None)) == 0

    def join(self, tid: int) -> None:
        """Wait for a thread to end and reap it (blocks: a worker process's use)."""
        self._join(tid, None)


class Stacks:
    """One anonymous mapping holding ``count`` thread stacks (page aligned,
    untouched pages cost nothing). It must outlive every thread using it."""

    def __init__(self, count: int, stack_bytes: int) -> None:
        import mmap

        self.stack_bytes = stack_bytes
        self._map = mmap.mmap(-1, max(1, count) * stack_bytes)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self._map))

    def address(self, index: int) -> int:
        return self._base + index * self.stack_bytes


class NativeEngine:
    """sysbench's event compiled by LLVM for this CPU, 64-bit division kept."""

    comparable = True

    def __init__(
        self,
        *,
        feature_overrides: tuple[str, ...] = NATIVE_FEATURE_OVERRIDES,
        peel_first_divisor: bool = True,
        event_code: str | None = None,
    ) -> None:
        try:
            import llvmlite.binding as llvm
        except ImportError as exc:  # pragma: no cover - llvmlite ships with numba
            raise EngineUnavailable(f"llvmlite is not installed ({exc})") from exc
        self.feature_overrides = feature_overrides
        self.peel_first_divisor = peel_first_divisor
        self.event_code = event_code or default_event_code(llvm.get_process_triple())
        self.name = "llvm"
        try:
            self._build(llvm)
        except Exception as exc:  # any LLVM failure means: use another engine
            raise EngineUnavailable(f"cannot JIT the CPU event with LLVM: {exc}") from exc

    def _build(self, llvm: Any) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()  # the event's module asm
        libc = ctypes.CDLL(None)
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        llvm.add_symbol("clock_gettime", ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value)
        llvm.add_symbol("log", ctypes.cast(libm.log, ctypes.c_void_p).value)
        for name in (
            "pthread_rwlock_rdlock",
            "pthread_rwlock_unlock",
            "sched_setscheduler",
            "prctl",
            "clock_nanosleep",
            "sched_yield",
        ):
            llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        triple = llvm.get_process_triple()
        target = llvm.Target.from_triple(triple)
        cpu = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten() if triple.startswith("x86") else ""
        if triple.startswith("x86"):
            features = ",".join(
                [f for f in features.split(",") if f and f[1:] not in self._overridden()]
                + list(self.feature_overrides)
            )
        self.cpu, self.features = cpu, features
        tm = target.create_target_machine(cpu=cpu, features=features, opt=2, jit=True)
        module = llvm.parse_assembly(event_ir(self.peel_first_divisor, self.event_code) + RUN_IR)
        module.triple = triple
        module.data_layout = str(tm.target_data)
        module.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        pb = llvm.create_pass_builder(tm, pto)
        pm = pb.getModulePassManager()
        pm.run(module, pb)
        self.target_machine = tm
        self.module = module
        self.engine = llvm.create_mcjit_compiler(module, tm)
        self.engine.finalize_object()
        self._event = _EVENT_TYPE(self.engine.get_function_address("prime_event"))
        self._never_stop = ctypes.c_int32(0)
        self._run = _RUN_EVENTS_TYPE(self.engine.get_function_address("run_events"))
        self._run_gated = _RUN_GATED_TYPE(self.engine.get_function_address("run_gated"))
        self._thread_main = self.engine.get_function_address("thread_main")
        self.rate_queue_address = int(self.engine.get_function_address("rate_queue"))
        self._pthread = _PThreads()

    def _overridden(self) -> set[str]:
        return {f[1:] for f in self.feature_overrides}

    def asm(self) -> str:
        """The module's assembly text (the event's module asm comes first)."""
        return str(self.target_machine.emit_assembly(self.module))

    def object_code(self) -> bytes:
        """The module as an ELF object, as the JIT built it (for objdump)."""
        return bytes(self.target_machine.emit_object(self.module))

    def event_address(self) -> int:
        """Where the JIT put the event's machine code."""
        return int(self.engine.get_function_address("prime_event"))

    def prime_event(self, max_prime: int, stop: Any = None) -> int:
        """One event; -1 when ``stop`` (a c_int32) is set (read per 4096 c)."""
        flag = self._never_stop if stop is None else stop
        return int(self._event(max_prime, ctypes.addressof(flag)))

    def spawn(self, job: ThreadJob, exited: Any, *, idle: bool, stacks: Stacks, index: int) -> int:
        """Run ``job`` in a new native thread (joinable, named probetop-cpu,
        on stack ``index`` of ``stacks``) that waits at the gate, runs, stores
        its done slots, increments ``exited`` (a c_int64) and ends, never
        entering Python; reap it with ``reap``. ``idle`` makes it SCHED_IDLE.
        Returns the thread's id. Raises OSError (EAGAIN at a thread limit)."""
        s = job.shared
        if s.gate is None:
            raise ValueError("a spawned worker needs a gate")
        args = (ctypes.c_int64 * ARG_SLOTS)(
            s.gate.address,
            ctypes.addressof(s.deadline_cell),
            s.max_prime,
            s.max_events,
            ctypes.addressof(s.stop),
            ctypes.addressof(s.ticket),
            address_of(job.stats),
            address_of(job.hist),
            _bits(HIST_DEDUCT),
            _bits(HIST_MULT),
            HIST_SIZE,
            s.gate.arrived_address,
            1 if idle else 0,
            ctypes.addressof(exited),
            _schedule_address(s) or 0,
        )
        job.native_args = args  # the thread reads it: keep it alive with the job
        return self._pthread.create(
            self._thread_main, ctypes.addressof(args), stacks.address(index), stacks.stack_bytes
        )

    def reap(self, tid: int) -> bool:
        """Free an ended thread's resources (never blocks); False while it runs."""
        return self._pthread.tryjoin(tid)

    def join(self, tid: int) -> None:
        """Wait for a thread to end and free it (blocks: never on the event loop)."""
        self._pthread.join(tid)

    def run_events(self, job: ThreadJob) -> int:
        s = job.shared
        if s.gate is not None:
            return int(
                self._run_gated(
                    s.gate.address,
                    ctypes.addressof(s.deadline_cell),
                    s.max_prime,
                    s.max_events,
                    ctypes.addressof(s.stop),
                    ctypes.addressof(s.ticket),
                    address_of(job.stats),
                    address_of(job.hist),
                    HIST_DEDUCT,
                    HIST_MULT,
                    HIST_SIZE,
                    s.gate.arrived_address,
                    _schedule_address(s),
                )
            )
        return int(
            self._run(
                s.max_prime,
                s.max_events,
                s.deadline_ns,
                ctypes.addressof(s.stop),
                ctypes.addressof(s.ticket),
                address_of(job.stats),
                address_of(job.hist),
                HIST_DEDUCT,
                HIST_MULT,
                HIST_SIZE,
                _schedule_address(s),
            )
        )


def _schedule_address(shared: SharedRun) -> int | None:
    """The --rate schedule's block for the native loop (NULL: back to back)."""
    return shared.schedule.address if shared.schedule is not None else None


class PythonEngine:
    """The same loop in CPython: ~20x slower, holds the GIL, not comparable."""

    name = "python"
    comparable = False

    def prime_event(self, max_prime: int, stop: Any = None) -> int:
        n = 0
        for c in range(3, max_prime):
            # Every 64 c here (not 4096 as native): Python is ~20x slower, and a
            # stop must be seen within milliseconds even at --max-prime 2**31.
            if stop is not None and c & 63 == 0 and stop.value:
                return -1  # cut short, as the native event
            t = math.sqrt(c)
            lim = 2
            while lim <= t:
                if c % lim == 0:
                    break
                lim += 1
            if lim > t:
                n += 1
        return n

    def run_events(self, job: ThreadJob) -> int:
        s = job.shared
        if s.gate is not None:
            s.gate.wait()
        cpu0 = time.thread_time_ns()
        why = self._run_events(job)
        job.stats[STAT_END_NS] = time.monotonic_ns()
        job.stats[STAT_CPU_NS] = time.thread_time_ns() - cpu0
        job.stats[STAT_DONE] = why
        return why

    def _run_events(self, job: ThreadJob) -> int:
        s = job.shared
        stats, hist = job.stats, job.hist
        lock = _python_ticket_lock
        while True:
            if s.stop.value:
                return STOPPED_FLAG
            t0 = time.monotonic_ns()
            if s.deadline_ns > 0 and t0 >= s.deadline_ns:
                return STOPPED_DEADLINE
            if s.max_events > 0:
                with lock:
                    old = s.ticket.value
                    s.ticket.value = old + 1
                if old >= s.max_events:
                    return STOPPED_EVENTS
            n = self.prime_event(s.max_prime, s.stop)
            if n < 0:
                return STOPPED_FLAG
            lat = time.monotonic_ns() - t0
            stats[STAT_LAT_SUM] += lat
            stats[STAT_LAT_MIN] = min(stats[STAT_LAT_MIN], lat)
            stats[STAT_LAT_MAX] = max(stats[STAT_LAT_MAX], lat)
            hist[bucket_of(lat / 1e6)] += 1
            stats[STAT_PRIMES] = n
            stats[STAT_EVENTS] += 1


_python_ticket_lock = threading.Lock()


def keep_forever(obj: object) -> None:
    """Never free ``obj`` (one extra reference, never dropped): for memory a
    native thread may still use while the interpreter shuts down."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def load_engine(kind: str) -> Engine:
    """A cached engine: "llvm" (native) or "python". Raises EngineUnavailable."""
    with _engines_lock:
        engine = _engines.get(kind)
        if engine is None:
            if kind == "llvm":
                engine = NativeEngine()
            elif kind == "python":
                engine = PythonEngine()
            else:
                raise EngineUnavailable(f"unknown engine {kind!r} (llvm or python)")
            _engines[kind] = engine
            if kind == "llvm":
                # A native worker may outlive everything else (a SCHED_IDLE
                # thread waiting for a CPU at exit): the JIT code it runs must
                # never be freed, not even when the interpreter finalizes.
                keep_forever(engine)
        return engine


def best_engine() -> tuple[Engine, str | None]:
    """The native engine if it loads, else the Python one and the reason why."""
    try:
        return load_engine("llvm"), None
    except EngineUnavailable as exc:
        return load_engine("python"), str(exc)
