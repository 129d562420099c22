"""sysbench's ``--rate=N``: events arrive as a Poisson process and wait in a
queue until a worker takes them; latency counts from the arrival.

What sysbench 1.0.20 does (src/sysbench.c, ``eventgen_thread_proc`` and
``sb_more_events``): an event-generator thread draws exponential gaps with
mean 1e9/rate ns (``-lambda * log(1 - uniform)``), sleeps until each arrival,
stamps it with the run's clock and pushes the stamp into a ring of
``MAX_QUEUE_LEN`` (131072) slots; an idle worker takes the oldest stamp, and
the event's latency is its run time plus ``queue_time`` (take - stamp). A
push into a full ring is fatal: "The event queue is full. ..." and exit 1.
At ``--report-interval`` it prints ``[ Ns ] queue length: Q concurrency: C``
(stamps in the ring, workers inside an event).

Contract:
- ``rate_ir(declared)`` is LLVM IR a native engine links into its module:
  ``@rate_take(ptr %sched, ptr %stop, i64 %deadline)`` (a worker: the due
  time, in CLOCK_MONOTONIC ns, of the next event to run, after sleeping
  until it; -1 stop flag, -2 deadline, -3 queue full), ``@rate_begin`` /
  ``@rate_end`` (concurrency) and ``@rate_queue(ptr %sched, i64 %at)`` (the
  sampler: the queue length at %at, 0 now; -1 once full). ``declared`` names the libc/libm
  functions the host module already declares.
- ``RateSchedule(rate, seed)`` is the shared block (``SCHED_*`` int64 slots
  then the ring) those functions use; ``address`` is what the engine passes.

Why no generator thread: the arrivals are generated lazily, under a spin
lock, by whoever looks next (a worker taking an event, the sampler reading
the queue): every arrival whose due time has passed goes into the ring with
its due time as its stamp. The queue holds exactly what sysbench's would
(the arrivals due and not yet taken), the worker's wait until a future
arrival is a sleep in the native loop (in steps of at most 10 ms, so the stop
flag and --time are seen), and no extra thread competes with the workers for
a CPU. An arrival is stamped with its due time, except what a sleeping
worker wakes for: it plays sysbench's generator, which stamps an arrival
when it wakes and enqueues the ones it overslept at once, stamped then. So
the timer's oversleep is in neither tool's latency, queueing behind busy
threads in both; sysbench's condition-variable wake-up of its worker is in
its latency only.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time
from typing import Any

MAX_QUEUE_LEN = 131072  # sysbench's MAX_QUEUE_LEN (a power of 2)
QUEUE_FULL_MESSAGE = (
    "The event queue is full. This means the worker threads are unable to keep up "
    "with the specified event generation rate"
)
# sysbench's option is an INT (sb_get_value_int): its parser refuses what does
# not fit in an int ("Invalid value for the 'rate' option: '99999999999'").
RATE_MAX = 2**31 - 1

SCHED_LOCK = 0  # spin lock word
SCHED_MEAN = 1  # mean gap in ns, as a double's bits
SCHED_RNG = 2  # xorshift64* state (never 0)
SCHED_NEXT = 3  # due time of the next arrival not yet generated; 0 = not started
SCHED_GEN = 4  # arrivals generated (pushed into the ring, or taken at once)
SCHED_TAKEN = 5  # arrivals taken by workers
SCHED_CONC = 6  # workers inside an event (sysbench's "concurrency")
SCHED_FULL = 7  # 1 once an arrival found the ring full
SCHED_RING = 16  # the ring: MAX_QUEUE_LEN due times
SCHED_SLOTS = SCHED_RING + MAX_QUEUE_LEN

TAKE_STOPPED = -1
TAKE_DEADLINE = -2
TAKE_FULL = -3
SLEEP_STEP_NS = 10_000_000  # a waiting worker looks at the stop flag this often


def rate_ir(declared: frozenset[str] = frozenset()) -> str:
    """The schedule's functions as LLVM IR (see the module docstring)."""
    decls = {
        "clock_gettime": "declare i32 @clock_gettime(i32, ptr)",
        "log": "declare double @log(double)",
        "clock_nanosleep": "declare i32 @clock_nanosleep(i32, i32, ptr, ptr)",
        "sched_yield": "declare i32 @sched_yield()",
        "prctl": "declare i32 @prctl(i32, ...)",
    }
    head = "\n".join(line for name, line in decls.items() if name not in declared)
    return head + _RATE_IR


_RATE_IR = f"""
define internal i64 @rate_now() nounwind {{
  %ts = alloca {{ i64, i64 }}, align 8
  %rc = call i32 @clock_gettime(i32 1, ptr %ts)
  %sp = getelementptr {{ i64, i64 }}, ptr %ts, i32 0, i32 0
  %np = getelementptr {{ i64, i64 }}, ptr %ts, i32 0, i32 1
  %s = load i64, ptr %sp
  %ns = load i64, ptr %np
  %s9 = mul i64 %s, 1000000000
  %t = add i64 %s9, %ns
  ret i64 %t
}}

define internal void @rate_lock(ptr %s) nounwind {{
entry:
  br label %try
try:
  %old = atomicrmw xchg ptr %s, i64 1 acquire
  %got = icmp eq i64 %old, 0
  br i1 %got, label %done, label %wait
wait:
  %y = call i32 @sched_yield()
  %v = load atomic i64, ptr %s monotonic, align 8
  %free = icmp eq i64 %v, 0
  br i1 %free, label %try, label %wait
done:
  ret void
}}

define internal void @rate_unlock(ptr %s) nounwind {{
  store atomic i64 0, ptr %s release, align 8
  ret void
}}

; One exponential gap in ns, as sysbench draws it: -mean * log(1 - u),
; truncated to an integer (its uint64_t intr_ns). u from xorshift64*.
define internal i64 @rate_gap(ptr %s) nounwind {{
  %p.rng = getelementptr i64, ptr %s, i64 {SCHED_RNG}
  %x0 = load i64, ptr %p.rng
  %a1 = lshr i64 %x0, 12
  %x1 = xor i64 %x0, %a1
  %a2 = shl i64 %x1, 25
  %x2 = xor i64 %x1, %a2
  %a3 = lshr i64 %x2, 27
  %x3 = xor i64 %x2, %a3
  store i64 %x3, ptr %p.rng
  %out = mul i64 %x3, 2685821657736338717
  %top = lshr i64 %out, 11
  %uf = uitofp i64 %top to double
  %u = fmul double %uf, 0x3CA0000000000000
  %one.minus = fsub double 1.0, %u
  %lg = call double @log(double %one.minus)
  %p.mean = getelementptr i64, ptr %s, i64 {SCHED_MEAN}
  %mean.bits = load i64, ptr %p.mean
  %mean = bitcast i64 %mean.bits to double
  %neg = fneg double %mean
  %gap = fmul double %neg, %lg
  %ns = fptoui double %gap to i64
  ret i64 %ns
}}

; With the lock held: every arrival due by %now into the ring, stamped with
; its due time or %floor if later. Returns the queue length, or -1 when an
; arrival found the ring full.
define internal i64 @rate_fill(ptr %s, i64 %now, i64 %floor) nounwind {{
entry:
  %p.next = getelementptr i64, ptr %s, i64 {SCHED_NEXT}
  %p.gen = getelementptr i64, ptr %s, i64 {SCHED_GEN}
  %p.taken = getelementptr i64, ptr %s, i64 {SCHED_TAKEN}
  %ring = getelementptr i64, ptr %s, i64 {SCHED_RING}
  %first = load i64, ptr %p.next
  %fresh = icmp eq i64 %first, 0
  br i1 %fresh, label %start, label %loop
start:
  ; the first arrival one gap after the run starts, as sysbench's first
  %g0 = call i64 @rate_gap(ptr %s)
  %n0 = add i64 %now, %g0
  store i64 %n0, ptr %p.next
  br label %loop
loop:
  %next = load i64, ptr %p.next
  %gen = load i64, ptr %p.gen
  %taken = load i64, ptr %p.taken
  %len = sub i64 %gen, %taken
  %due = icmp sle i64 %next, %now
  br i1 %due, label %push, label %out
push:
  %room = icmp slt i64 %len, {MAX_QUEUE_LEN}
  br i1 %room, label %store, label %full
store:
  %slot = and i64 %gen, {MAX_QUEUE_LEN - 1}
  %sp = getelementptr i64, ptr %ring, i64 %slot
  %late = icmp sgt i64 %floor, %next
  %stamp = select i1 %late, i64 %floor, i64 %next
  store i64 %stamp, ptr %sp
  %gen1 = add i64 %gen, 1
  store atomic i64 %gen1, ptr %p.gen monotonic, align 8
  %gap = call i64 @rate_gap(ptr %s)
  %next1 = add i64 %next, %gap
  store i64 %next1, ptr %p.next
  br label %loop
full:
  %p.full = getelementptr i64, ptr %s, i64 {SCHED_FULL}
  store atomic i64 1, ptr %p.full monotonic, align 8
  ret i64 -1
out:
  ret i64 %len
}}

; The sampler: the queue length at %at (0: now; sysbench's ck_ring_size),
; -1 once full.
define i64 @rate_queue(ptr %s, i64 %at) nounwind {{
  call void @rate_lock(ptr %s)
  %clock = call i64 @rate_now()
  %given = icmp sgt i64 %at, 0
  %now = select i1 %given, i64 %at, i64 %clock
  %len = call i64 @rate_fill(ptr %s, i64 %now, i64 0)
  call void @rate_unlock(ptr %s)
  ret i64 %len
}}

; A worker: take the oldest arrival due, or the next one and sleep until it.
; Returns its stamp (the event's latency counts from it: its due time, or
; for an event slept for, the wake-up), or
; {TAKE_STOPPED} (stop flag), {TAKE_DEADLINE} (--time passed while waiting),
; {TAKE_FULL} (the queue is full: sysbench's fatal error).
define i64 @rate_take(ptr %s, ptr %stop, i64 %deadline) nounwind {{
entry:
  %p.next = getelementptr i64, ptr %s, i64 {SCHED_NEXT}
  %p.gen = getelementptr i64, ptr %s, i64 {SCHED_GEN}
  %p.taken = getelementptr i64, ptr %s, i64 {SCHED_TAKEN}
  %ring = getelementptr i64, ptr %s, i64 {SCHED_RING}
  %ts = alloca {{ i64, i64 }}, align 8
  call void @rate_lock(ptr %s)
  %now = call i64 @rate_now()
  %len = call i64 @rate_fill(ptr %s, i64 %now, i64 0)
  %full = icmp slt i64 %len, 0
  br i1 %full, label %is.full, label %pick
is.full:
  call void @rate_unlock(ptr %s)
  ret i64 {TAKE_FULL}
pick:
  %gen = load i64, ptr %p.gen
  %taken = load i64, ptr %p.taken
  %taken1 = add i64 %taken, 1
  %queued = icmp sgt i64 %len, 0
  br i1 %queued, label %from.ring, label %ahead
from.ring:
  %slot = and i64 %taken, {MAX_QUEUE_LEN - 1}
  %sp = getelementptr i64, ptr %ring, i64 %slot
  %d.ring = load i64, ptr %sp
  store atomic i64 %taken1, ptr %p.taken monotonic, align 8
  call void @rate_unlock(ptr %s)
  br label %wait
ahead:
  ; nothing due: this worker waits for the next arrival itself
  %d.next = load i64, ptr %p.next
  %gap = call i64 @rate_gap(ptr %s)
  %after = add i64 %d.next, %gap
  store i64 %after, ptr %p.next
  %gen1 = add i64 %gen, 1
  store atomic i64 %gen1, ptr %p.gen monotonic, align 8
  store atomic i64 %taken1, ptr %p.taken monotonic, align 8
  call void @rate_unlock(ptr %s)
  br label %wait
wait:
  %due = phi i64 [ %d.ring, %from.ring ], [ %d.next, %ahead ], [ %due, %nap ]
  %slept = phi i1 [ false, %from.ring ], [ false, %ahead ], [ true, %nap ]
  %t = call i64 @rate_now()
  %early = icmp slt i64 %t, %due
  br i1 %early, label %check, label %go
check:
  %flag = load atomic i32, ptr %stop monotonic, align 4
  %flagged = icmp ne i32 %flag, 0
  br i1 %flagged, label %by.flag, label %check.time
check.time:
  %has.deadline = icmp sgt i64 %deadline, 0
  %late = icmp sge i64 %t, %deadline
  %over = and i1 %has.deadline, %late
  br i1 %over, label %by.deadline, label %nap
nap:
  %step.end = add i64 %t, {SLEEP_STEP_NS}
  %sooner = icmp slt i64 %due, %step.end
  %until.0 = select i1 %sooner, i64 %due, i64 %step.end
  ; never past --time: the run ends at its deadline, as sysbench's
  %past = icmp sgt i64 %until.0, %deadline
  %cap = and i1 %has.deadline, %past
  %until = select i1 %cap, i64 %deadline, i64 %until.0
  %sec = sdiv i64 %until, 1000000000
  %nsec = srem i64 %until, 1000000000
  %sp.s = getelementptr {{ i64, i64 }}, ptr %ts, i32 0, i32 0
  %sp.n = getelementptr {{ i64, i64 }}, ptr %ts, i32 0, i32 1
  store i64 %sec, ptr %sp.s
  store i64 %nsec, ptr %sp.n
  ; PR_SET_TIMERSLACK (29) to 1 ns: the kernel's default 50 us of slack
  ; would be added to every event's latency; what is left is one thread's
  ; wake-up, as sysbench's worker waking on its condition variable
  %slack = call i32 (i32, ...) @prctl(i32 29, i64 1)
  ; CLOCK_MONOTONIC (1), TIMER_ABSTIME (1)
  %rc = call i32 @clock_nanosleep(i32 1, i32 1, ptr %ts, ptr null)
  br label %wait
by.flag:
  ret i64 {TAKE_STOPPED}
by.deadline:
  ret i64 {TAKE_DEADLINE}
go:
  br i1 %slept, label %woke, label %on.time
on.time:
  ret i64 %due
woke:
  ; This worker slept as sysbench's generator thread does, and like it
  ; stamps what it wakes for when it wakes: the event it slept for, and the
  ; arrivals that came due while it overslept (sysbench's generator, late,
  ; enqueues them at once stamped "now"). The timer's oversleep is in
  ; neither tool's latency; queueing behind busy threads is in both.
  call void @rate_lock(ptr %s)
  %w.len = call i64 @rate_fill(ptr %s, i64 %t, i64 %t)
  call void @rate_unlock(ptr %s)
  ret i64 %t
}}

; sysbench's concurrency: workers inside an event.
define void @rate_begin(ptr %s) nounwind {{
  %p = getelementptr i64, ptr %s, i64 {SCHED_CONC}
  %old = atomicrmw add ptr %p, i64 1 monotonic
  ret void
}}

define void @rate_end(ptr %s) nounwind {{
  %p = getelementptr i64, ptr %s, i64 {SCHED_CONC}
  %old = atomicrmw sub ptr %p, i64 1 monotonic
  ret void
}}
"""

_QUEUE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)


def _seed_state(seed: int) -> int:
    """A non-zero xorshift64* state from a seed (splitmix64 of it)."""
    z = (seed + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z or 1


def _signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


class RateSchedule:
    """The block one rated run's workers share (``SCHED_*`` slots, then the
    ring: 1 MiB). ``seed`` 0 draws from the clock, as sysbench's default."""

    def __init__(self, rate: int, seed: int = 0) -> None:
        if rate <= 0:
            raise ValueError("a schedule needs a rate of 1 or more")
        self.rate = rate
        self.block = (ctypes.c_int64 * SCHED_SLOTS)()
        mean = 1e9 / rate
        self.block[SCHED_MEAN] = struct.unpack("<q", struct.pack("<d", mean))[0]
        state = _seed_state(seed or (time.time_ns() ^ os.getpid()))
        self.block[SCHED_RNG] = _signed(state)
        self._queue: Any = None

    @property
    def address(self) -> int:
        return ctypes.addressof(self.block)

    def bind(self, queue_fn_address: int) -> None:
        """The engine's compiled ``rate_queue``."""
        self._queue = _QUEUE_TYPE(queue_fn_address)

    def queue_length(self, at_ns: int = 0) -> int:
        """Events due and not yet taken (generating the arrivals due by
        ``at_ns``, CLOCK_MONOTONIC; 0: now); -1 once the queue was found full."""
        if self._queue is None:
            return int(self.block[SCHED_GEN] - self.block[SCHED_TAKEN])
        return int(self._queue(self.address, at_ns))

    @property
    def concurrency(self) -> int:
        return int(self.block[SCHED_CONC])

    @property
    def full(self) -> bool:
        return bool(self.block[SCHED_FULL])

    @property
    def taken(self) -> int:
        return int(self.block[SCHED_TAKEN])
