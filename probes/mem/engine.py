"""The native loop of sysbench 1.0.20's ``memory`` test, built at run time by
LLVM (llvmlite) from the IR below: no compiler on the machine, ~20 ms to build.

Contract:
- ``load_engine()`` returns the (process-wide) ``MemEngine`` or raises
  ``EngineUnavailable``.
- ``engine.run(job)`` runs events back to back in the calling thread (a
  ctypes call: the GIL is released, threads run in parallel) until the stop
  flag is set, the deadline passes or the thread's operation budget is spent,
  and returns the STOPPED_* reason. One event is what sysbench's
  ``event_<mode>_<oper>`` does with one block of ``words`` 8-byte words:
  - seq write: a volatile store of ``end - p`` into every word, in order;
  - seq read: a volatile load of every word, in order;
  - seq none: an empty loop over the words with a compiler barrier;
  - rnd read/write/none: ``words`` accesses at ``(size_t)(u * words)`` where
    ``u`` is xoroshiro128+'s next double in [0, 1) (sysbench's
    ``sb_rand_uniform_double``); rnd write stores the byte index ``i``.
  Around each event, as sysbench's ``thread_run``: a CLOCK_MONOTONIC read for
  the --time check, one before and one after the event, then the thread's
  counters and its 1024-bucket latency histogram (sysbench's buckets).
- Counters (int64 slots, read live by the sampler): see STAT_*.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import threading
from dataclasses import dataclass, field
from typing import Any

STAT_EVENTS = 0
STAT_LAT_SUM = 1  # ns
STAT_LAT_MIN = 2  # ns, INT64_MAX until the first event
STAT_LAT_MAX = 3  # ns
STAT_END_NS = 4  # CLOCK_MONOTONIC ns when the thread left the loop
STAT_DONE = 5  # STOPPED_* code, stored last; 0 while running
STAT_LOCK = 6  # the thread's timer spinlock (sysbench takes one per clock read)
STAT_SLOTS = 8

HIST_SIZE = 1024
HIST_MIN_MS = 0.001
HIST_MAX_MS = 100000.0
HIST_DEDUCT = math.log(HIST_MIN_MS)
HIST_MULT = (HIST_SIZE - 1) / (math.log(HIST_MAX_MS) - HIST_DEDUCT)
INT64_MAX = 2**63 - 1

STOPPED_FLAG = 1
STOPPED_DEADLINE = 2
STOPPED_TOTAL = 3  # --memory-total-size reached

OPERS = ("write", "read", "none")
MODES = ("seq", "rnd")


class EngineUnavailable(RuntimeError):
    """The engine cannot be built on this machine (the message says why)."""


# One event per (mode, oper); all share the loop in @mem_run. Arguments:
# buffer, words, rng state (2 x i64). The distribution's sysbench is built
# with gcc -funroll-loops: its event loops do 8 words per trip (objdump -d
# $(which sysbench)); ours do the same, or a 1-MiB seq read costs ~2x here.
_ACCESS = {
    # (setup in entry, one access at word index %i{k} -> IR lines)
    # sysbench stores end - p in words, computed per word from the pointer
    # (mov, sub, sar, store: objdump); the empty asm hides the pointer's
    # relation to %i from LLVM, which otherwise folds it all into one lea:
    # less work per word than sysbench's loop (1.2-1.4x its seq write rate)
    "seq_write": (
        "  %endp = getelementptr i64, i64* %buf, i64 %words\n  %end = ptrtoint i64* %endp to i64\n",
        "  %g{k} = getelementptr i64, i64* %buf, i64 %i{k}\n"
        "  %q{k} = ptrtoint i64* %g{k} to i64\n"
        '  %a{k} = call i64 asm "", "=r,0"(i64 %q{k})\n'
        "  %p{k} = inttoptr i64 %a{k} to i64*\n"
        "  %d{k} = sub i64 %end, %a{k}\n"
        "  %v{k} = ashr i64 %d{k}, 3\n"
        "  store volatile i64 %v{k}, i64* %p{k}, align 8\n",
    ),
    "seq_read": (
        "",
        "  %p{k} = getelementptr i64, i64* %buf, i64 %i{k}\n"
        "  %v{k} = load volatile i64, i64* %p{k}, align 8\n",
    ),
    "seq_none": ("", '  call void asm sideeffect "", "~{{memory}}"()\n'),
    "rnd_write": (
        "  %scale = uitofp i64 %words to double\n",
        "  %x{k} = call i64 @rnd_index(i64* %rng, double %scale)\n"
        "  %p{k} = getelementptr i64, i64* %buf, i64 %x{k}\n"
        "  %b{k} = shl i64 %i{k}, 3\n"
        "  store volatile i64 %b{k}, i64* %p{k}, align 8\n",
    ),
    "rnd_read": (
        "  %scale = uitofp i64 %words to double\n",
        "  %x{k} = call i64 @rnd_index(i64* %rng, double %scale)\n"
        "  %p{k} = getelementptr i64, i64* %buf, i64 %x{k}\n"
        "  %v{k} = load volatile i64, i64* %p{k}, align 8\n",
    ),
    "rnd_none": (
        "  %scale = uitofp i64 %words to double\n  %slot = alloca i64\n",
        "  %x{k} = call i64 @rnd_index(i64* %rng, double %scale)\n"
        "  store volatile i64 %x{k}, i64* %slot\n",
    ),
}
UNROLL = 8


def _event_ir(name: str) -> str:
    """One event: words < UNROLL one word per trip, else UNROLL words per trip
    (words is a power of two, so a multiple of UNROLL then)."""
    setup, access = _ACCESS[name]
    one = access.format(k="s").replace("%i{k}", "%is")
    many = "".join(f"  %i{k} = add i64 %u, {k}\n" + access.format(k=k) for k in range(UNROLL))
    return f"""
define internal void @ev_{name}(i64* %buf, i64 %words, i64* %rng) noinline {{
entry:
{setup}  %empty = icmp eq i64 %words, 0
  br i1 %empty, label %done, label %pick
pick:
  %small = icmp ult i64 %words, {UNROLL}
  br i1 %small, label %single, label %unrolled
single:
  %is = phi i64 [0, %pick], [%ns, %single]
{one}  %ns = add i64 %is, 1
  %cs = icmp ult i64 %ns, %words
  br i1 %cs, label %single, label %done
unrolled:
  %u = phi i64 [0, %pick], [%nu, %unrolled]
{many}  %nu = add i64 %u, {UNROLL}
  %cu = icmp ult i64 %nu, %words
  br i1 %cu, label %unrolled, label %done
done:
  ret void
}}
"""


_RND_INDEX = r"""
; xoroshiro128+ next as a double in [0, 1), times words, truncated: an index.
define internal i64 @rnd_index(i64* %rng, double %scale) alwaysinline {
  %p1 = getelementptr i64, i64* %rng, i64 1
  %s0 = load i64, i64* %rng
  %s1a = load i64, i64* %p1
  %res = add i64 %s0, %s1a
  %s1 = xor i64 %s1a, %s0
  %r55a = shl i64 %s0, 55
  %r55b = lshr i64 %s0, 9
  %r55 = or i64 %r55a, %r55b
  %t1 = xor i64 %r55, %s1
  %sh = shl i64 %s1, 14
  %ns0 = xor i64 %t1, %sh
  %r36a = shl i64 %s1, 36
  %r36b = lshr i64 %s1, 28
  %ns1 = or i64 %r36a, %r36b
  store i64 %ns0, i64* %rng
  store i64 %ns1, i64* %p1
  %m = lshr i64 %res, 12
  %bits = or i64 %m, 4607182418800017408
  %d = bitcast i64 %bits to double
  %u = fsub double %d, 1.0
  %x = fmul double %u, %scale
  %idx = fptoui double %x to i64
  ret i64 %idx
}
"""

_EVENTS = _RND_INDEX + "".join(_event_ir(name) for name in _ACCESS)

_RUN = r"""
%timespec = type { i64, i64 }
declare i32 @clock_gettime(i32, %timespec*)
declare double @log(double)
declare double @floor(double)

; ck_spinlock_fas: swap 1 in until the old value was 0
define internal void @spin_lock(i64* %p) alwaysinline {
entry:
  br label %try
try:
  %old = atomicrmw xchg i64* %p, i64 1 acquire
  %free = icmp eq i64 %old, 0
  br i1 %free, label %got, label %try
got:
  ret void
}

define internal i64 @now(%timespec* %ts) alwaysinline {
  %r = call i32 @clock_gettime(i32 1, %timespec* %ts)
  %sp = getelementptr %timespec, %timespec* %ts, i32 0, i32 0
  %np = getelementptr %timespec, %timespec* %ts, i32 0, i32 1
  %s = load i64, i64* %sp
  %n = load i64, i64* %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}

; mem_run(kind, buf, words, budget (-1: none), stop*, deadline* (0: none),
;         stats*, hist*, rng*) -> STOPPED_*
define i64 @mem_run(i64 %kind, i64* %buf, i64 %words, i64 %budget, i32* %stop,
                    i64* %deadline_p, i64* %stats, i64* %hist, i64* %rng) {
entry:
  %ts = alloca %timespec
  %deadline = load volatile i64, i64* %deadline_p
  %ev_p = getelementptr i64, i64* %stats, i64 0
  %sum_p = getelementptr i64, i64* %stats, i64 1
  %min_p = getelementptr i64, i64* %stats, i64 2
  %max_p = getelementptr i64, i64* %stats, i64 3
  %end_p = getelementptr i64, i64* %stats, i64 4
  %done_p = getelementptr i64, i64* %stats, i64 5
  %lock_p = getelementptr i64, i64* %stats, i64 6
  br label %head

head:
  %left = phi i64 [%budget, %entry], [%left1, %tail]
  %flag = load volatile i32, i32* %stop
  %stopped = icmp ne i32 %flag, 0
  br i1 %stopped, label %out_flag, label %check_time

check_time:
  %has_deadline = icmp ne i64 %deadline, 0
  br i1 %has_deadline, label %read_clock, label %check_budget
read_clock:
  %t_now = call i64 @now(%timespec* %ts)
  %late = icmp sge i64 %t_now, %deadline
  br i1 %late, label %out_deadline, label %check_budget

check_budget:
  %spent = icmp eq i64 %left, 0
  br i1 %spent, label %out_total, label %event
event:
  %left1 = add i64 %left, -1
  ; sb_timer_start: spinlock, clock, unlock
  call void @spin_lock(i64* %lock_p)
  %t0 = call i64 @now(%timespec* %ts)
  store atomic i64 0, i64* %lock_p release, align 8
  switch i64 %kind, label %ev_done [
    i64 0, label %k0
    i64 1, label %k1
    i64 2, label %k2
    i64 3, label %k3
    i64 4, label %k4
    i64 5, label %k5
  ]
k0:
  call void @ev_seq_write(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done
k1:
  call void @ev_seq_read(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done
k2:
  call void @ev_seq_none(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done
k3:
  call void @ev_rnd_write(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done
k4:
  call void @ev_rnd_read(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done
k5:
  call void @ev_rnd_none(i64* %buf, i64 %words, i64* %rng)
  br label %ev_done

ev_done:
  ; sb_timer_stop: the thread's timer spinlock around the clock read and
  ; the timer's sums, as sysbench's (an xchg to take, a store to release)
  call void @spin_lock(i64* %lock_p)
  %t1 = call i64 @now(%timespec* %ts)
  %lat = sub i64 %t1, %t0
  %ev = load volatile i64, i64* %ev_p
  %ev1 = add i64 %ev, 1
  %sum = load volatile i64, i64* %sum_p
  %sum1 = add i64 %sum, %lat
  store volatile i64 %sum1, i64* %sum_p
  %mn = load volatile i64, i64* %min_p
  %lt = icmp slt i64 %lat, %mn
  %mn1 = select i1 %lt, i64 %lat, i64 %mn
  store volatile i64 %mn1, i64* %min_p
  %mx = load volatile i64, i64* %max_p
  %gt = icmp sgt i64 %lat, %mx
  %mx1 = select i1 %gt, i64 %lat, i64 %mx
  store volatile i64 %mx1, i64* %max_p
  store atomic i64 0, i64* %lock_p release, align 8
  ; sb_histogram_update: a random slot (one xoroshiro step of the thread's
  ; generator, as sysbench's), floor((ln(ms) - ln(0.001)) * mult + 0.5)
  ; clamped, and an atomic increment
  %slot = call i64 @rnd_index(i64* %rng, double 128.0)
  %latf = sitofp i64 %lat to double
  %ms = fdiv double %latf, 1.0e6
  %ln = call double @log(double %ms)
  %a = fsub double %ln, DEDUCT
  %b = fmul double %a, MULT
  %c = fadd double %b, 0.5
  %fl = call double @floor(double %c)
  %ok = fcmp oge double %fl, 0.0
  %fl0 = select i1 %ok, double %fl, double 0.0
  %big = fcmp oge double %fl0, 1023.0
  %fl1 = select i1 %big, double 1023.0, double %fl0
  %bk = fptosi double %fl1 to i64
  %hp = getelementptr i64, i64* %hist, i64 %bk
  %h1 = atomicrmw add i64* %hp, i64 1 monotonic
  ; the count last (release): a sampler reading it first sees sums and
  ; buckets at least as far along
  store atomic volatile i64 %ev1, i64* %ev_p release, align 8
  br label %tail
tail:
  br label %head

out_flag:
  br label %out
out_deadline:
  br label %out
out_total:
  br label %out
out:
  %why = phi i64 [1, %out_flag], [2, %out_deadline], [3, %out_total]
  %te = call i64 @now(%timespec* %ts)
  store volatile i64 %te, i64* %end_p
  fence release
  store atomic volatile i64 %why, i64* %done_p release, align 8
  ret i64 %why
}
"""


def _double_hex(value: float) -> str:
    """An LLVM IR double literal, exact (hex of the IEEE bits)."""
    import struct

    return "0x" + struct.pack(">d", value).hex().upper()


_RUN_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
)


@dataclass
class SharedRun:
    """What every thread of one run shares: the stop flag and the deadline
    (set before the threads are let go; 0 = none)."""

    stop: Any = field(default_factory=lambda: ctypes.c_int32(0))
    deadline: Any = field(default_factory=lambda: ctypes.c_int64(0))

    def request_stop(self) -> None:
        self.stop.value = 1


@dataclass
class ThreadJob:
    """One worker: its buffer, its operation budget (-1 = none) and its
    counters (``stats`` STAT_SLOTS and ``hist`` HIST_SIZE int64, numpy rows)."""

    shared: SharedRun
    kind: int
    buffer_address: int
    words: int
    budget: int
    stats: Any
    hist: Any
    rng: Any  # ctypes c_uint64 * 2, xoroshiro128+ state


def kind_of(mode: str, oper: str) -> int:
    return MODES.index(mode) * 3 + OPERS.index(oper)


class MemEngine:
    """The compiled loop (see the module docstring)."""

    name = "llvm"

    def __init__(self) -> None:
        try:
            import llvmlite.binding as llvm
        except ImportError as exc:  # pragma: no cover - llvmlite ships with numba
            raise EngineUnavailable(f"llvmlite is not installed ({exc})") from exc
        try:
            self._build(llvm)
        except Exception as exc:
            raise EngineUnavailable(f"cannot JIT the memory loop with LLVM: {exc}") from exc

    def _build(self, llvm: Any) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        libc = ctypes.CDLL(None)
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        llvm.add_symbol("clock_gettime", ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value)
        for name in ("log", "floor"):
            llvm.add_symbol(name, ctypes.cast(getattr(libm, name), ctypes.c_void_p).value)
        ir = _EVENTS + _RUN.replace("DEDUCT", _double_hex(HIST_DEDUCT)).replace(
            "MULT", _double_hex(HIST_MULT)
        )
        module = llvm.parse_assembly(ir)
        module.verify()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        # -O2 like sysbench's build; volatile accesses keep every load and
        # store, one per word, as ck_pr_load_64/ck_pr_store_64 do.
        # Generic x86-64 (SSE2) like the distribution's sysbench build.
        machine = target.create_target_machine(opt=2, jit=True)
        module.triple = llvm.get_process_triple()
        module.data_layout = str(machine.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        pb = llvm.create_pass_builder(machine, pto)
        pb.getModulePassManager().run(module, pb)
        self._engine = llvm.create_mcjit_compiler(module, machine)
        self._engine.finalize_object()
        self._run = _RUN_TYPE(self._engine.get_function_address("mem_run"))

    def run(self, job: ThreadJob) -> int:
        from probetop.probes.mem.engine import address_of

        return int(
            self._run(
                job.kind,
                job.buffer_address,
                job.words,
                job.budget,
                ctypes.addressof(job.shared.stop),
                ctypes.addressof(job.shared.deadline),
                address_of(job.stats),
                address_of(job.hist),
                ctypes.addressof(job.rng),
            )
        )


def address_of(array: Any) -> int:
    """The address of a C-contiguous numpy int64 array (a row of a block)."""
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("counters must be C-contiguous")
    return int(array.ctypes.data)


_engine: MemEngine | None = None
_lock = threading.Lock()


def load_engine() -> MemEngine:
    """The process's engine, built once (kept forever: a worker may still run it)."""
    global _engine
    with _lock:
        if _engine is None:
            _engine = MemEngine()
        return _engine
