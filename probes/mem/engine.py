"""The native loop of sysbench 1.0.20's ``memory`` test, built at run time by
LLVM (llvmlite) from the IR below: no compiler on the machine, ~20 ms to build.

Contract:
- ``load_engine()`` returns the (process-wide) ``MemEngine`` or raises
  ``EngineUnavailable``.
- ``engine.run(job)`` runs events back to back in the calling thread (a
  ctypes call: the GIL is released, threads run in parallel) until the stop
  flag is set, --time has passed or the thread's operation budget is spent,
  then stores ``STAT_END_NS``, ``STAT_CPU_NS`` and, last, ``STAT_DONE`` in
  its row and returns the STOPPED_* reason.

Why it is built like this: a figure means sysbench's figure only when each
event costs what it costs in sysbench, and at 1 KiB blocks sysbench spends
more time around the event than in it. So the loop does, per event, the work
sysbench 1.0.20's ``thread_run`` does (read off the distribution's binary,
``objdump -d $(which sysbench)``, and the sources), call for call:

- ``sb_more_events``: an out-of-line call (with gcc's stack protector) that
  reads the error flag, the clock (CLOCK_MONOTONIC) against --time and the
  event and rate limits;
- ``next_event`` through the test's function pointer (``memory_next_event``:
  the thread's --memory-total-size budget), returning a 48-byte event that
  is copied, as ``event = test->ops.next_event(...)`` does;
- ``sb_event_start``: the thread timer's spinlock (an xchg), the clock, unlock;
- ``execute_event`` through the test's function pointer (one of
  ``event_{seq,rnd}_{write,read,none}``, each shaped like gcc -O2
  -funroll-loops made it: seq loops 8 words per trip after a remainder
  prologue; rnd loops one word per trip, reloading the block size, the
  buffer and the generator's state around every access, as ConcurrencyKit's
  ``ck_pr_load_64``/``ck_pr_store_64`` (asm with a memory clobber) force;
  rnd ``none`` only advances the generator, as gcc leaves it; the
  generator's state and the buffer pointer are reached as sysbench's
  ``__thread`` variables are, ``%fs:(offset)``, and ``(size_t)`` of the
  offset is gcc's compare-and-branch, not LLVM's branchless conversion);
- ``sb_event_stop``: an out-of-line call: spinlock, clock, the timer's
  count, sum, min and max, unlock; with --percentile > 0 ``sb_histogram_update``
  (out of line: a random slot of 128 from the thread's xoroshiro128+,
  ``floor((log(ms) - ln 0.001) * mult + 0.5)`` clamped as gcc does it (a
  branch for i < 0, so the cell's address never waits for log and floor),
  and a locked increment in
  the histogram that ALL threads share, slot by slot, as sysbench's global
  ``sb_latency_histogram``: with 2 threads its cache lines move between
  cores); then the thread's event counter (``sb_counter_inc``).
- libc's ``clock_gettime``, ``log`` and ``floor`` are called through a
  table, as sysbench calls them through its PLT.

Memory layout (int64 slots): a thread's row (``ROW_SLOTS``, from
``probes.core.sysbench.counters``: STAT_* first, then the timer's fields,
budget, generator state and buffer) and the run's context (``CTX_*``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.sysbench.counters import (
    INT64_MAX,
    STAT_LAT_MIN,
    STOPPED_DEADLINE,
    STOPPED_FLAG,
    STOPPED_LIMIT,
    done_ir,
)
from probetop.probes.core.sysbench.hist import HIST_DEDUCT, HIST_MULT, HIST_SIZE

# A thread's row after the shared STAT_* slots (0-7): sysbench's sb_timer_t
# fields, its TLS (budget, generator state, buffer).
ROW_START_S = 8  # time_start (timespec: s, ns)
ROW_END_S = 10  # time_end
ROW_TIMER_EVENTS = 12
ROW_QUEUE_NS = 13  # always 0 (sysbench's --rate queue time)
ROW_LOCK = 14  # the timer's spinlock
ROW_BUDGET = 15  # tls_total_ops: operations left (--memory-total-size)
ROW_RNG = 16  # xoroshiro128+ state, 2 slots
ROW_BUF = 18  # the thread's block (global scope: the same for all)
ROW_TLS = 19  # ROW_RNG's address less the thread pointer (%fs base): see _XOROSHIRO
ROW_SLOTS = 24  # 192 bytes: rows never share a cache line

# The run's context: sysbench's globals, read by every thread.
CTX_ERROR = 0  # sb_globals.error: the stop flag (i32)
CTX_START_S = 1  # sb_exec_timer.time_start (s, ns)
CTX_QUEUE_NS = 3  # sb_exec_timer.queue_time: 0
CTX_MAX_TIME_NS = 4  # --time in ns; 0 = none
CTX_MAX_EVENTS = 5  # 0: the memory test keeps its own limit
CTX_TX_RATE = 6  # 0: no --rate
CTX_PERCENTILE = 7  # 0: --percentile 0, no histogram
CTX_BLOCK_SIZE = 8
CTX_TOTAL_SIZE = 9
CTX_CLOCK_GETTIME = 10  # libc functions (sysbench's PLT)
CTX_LOG = 11
CTX_FLOOR = 12
CTX_NEXT_EVENT = 13  # the test's ops (function pointers)
CTX_EXECUTE_EVENT = 14
CTX_HIST_SLOTS = 15  # address of HIST_SLOTS row addresses
CTX_DEDUCT = 16  # the histogram's constants (double bits)
CTX_MULT = 17
CTX_HIST_SIZE = 18
CTX_SLOTS = 24

HIST_SLOTS = 128  # sysbench's SB_HISTOGRAM_NSLOTS: rows of the shared histogram

OPERS = ("write", "read", "none")
MODES = ("seq", "rnd")
UNROLL = 8  # gcc -funroll-loops: 8 words per trip of a seq loop

CLOCK_MONOTONIC = 1
CLOCK_THREAD_CPUTIME_ID = 3


class EngineUnavailable(RuntimeError):
    """The engine cannot be built on this machine (the message says why)."""


# ConcurrencyKit's ck_pr_load_64 / ck_pr_store_64 on x86-64: one movq in asm
# with a memory clobber (nothing cached in registers across it).
_CK_LOAD = 'call i64 asm sideeffect "movq $1, $0", "=r,*m,~{{memory}}"(ptr elementtype(i64) {p})'
_CK_STORE = (
    'call void asm sideeffect "movq $1, $0", "=*m,r,~{{memory}}"(ptr elementtype(i64) {p}, i64 {v})'
)
_CK_BARRIER = 'call void asm sideeffect "", "~{{memory}}"()'


def _seq_word(oper: str, k: str) -> str:
    """One word of a seq event at pointer %p{k} (end pointer %end)."""
    if oper == "write":  # SIZE_T_STORE(buf, end - buf)
        # gcc materialises each word's pointer and subtracts it from end
        # (lea, mov, sub, sar, mov per word: objdump); the empty asm keeps
        # LLVM from folding end - p into one decrementing counter (3
        # instructions a word, 1.3-1.4x sysbench's rate at 1 MiB blocks).
        return (
            f"  %q{k} = ptrtoint ptr %p{k} to i64\n"
            f'  %pi{k} = call i64 asm "", "=r,0"(i64 %q{k})\n'
            f"  %pa{k} = inttoptr i64 %pi{k} to ptr\n"
            f"  %d{k} = sub i64 %endi, %pi{k}\n"
            f"  %v{k} = ashr i64 %d{k}, 3\n"
            f"  {_CK_STORE.format(p=f'%pa{k}', v=f'%v{k}')}\n"
        )
    if oper == "read":
        return f"  %v{k} = {_CK_LOAD.format(p=f'%p{k}')}\n"
    return f"  {_CK_BARRIER.format()}\n"


def _seq_event(oper: str) -> str:
    """``event_seq_<oper>``: for (buf = tls_buf; buf < end; buf++) as gcc
    unrolls it: the first word, (words - 1) % 8 words, then 8 per trip."""
    tail = []
    for r in range(UNROLL - 1, 0, -1):  # r words left before the loop
        nxt = f"r{r - 1}" if r > 1 else "check"
        tail.append(
            f"r{r}:\n  %p.r{r} = phi ptr [%p1, %pick]"
            + (f", [%n.r{r + 1}, %r{r + 1}]" if r < UNROLL - 1 else "")
            + "\n"
            + _seq_word(oper, f".r{r}")
            + f"  %n.r{r} = getelementptr i64, ptr %p.r{r}, i64 1\n"
            f"  br label %{nxt}\n"
        )
    # gcc addresses the trip's words from one base register (lea 8(%r9) ...,
    # two-operand); the asm keeps LLVM from rewriting that as base + index
    # + offset (a three-operand lea per word: slower on some CPUs).
    body = '  %ui = ptrtoint ptr %u to i64\n  %ua = call i64 asm "", "=r,0"(i64 %ui)\n'
    body += "  %ub = inttoptr i64 %ua to ptr\n"
    body += "".join(
        f"  %p.u{k} = getelementptr i64, ptr %ub, i64 {k}\n" + _seq_word(oper, f".u{k}")
        for k in range(UNROLL)
    )
    cases = " ".join(f"i64 {r}, label %r{r}" for r in range(1, UNROLL - 1))
    return f"""
define i32 @event_seq_{oper}(ptr %req, i32 %tid, ptr %row, ptr %ctx) noinline nounwind {{
entry:
  %bufp = getelementptr i64, ptr %row, i64 {ROW_BUF}
  %buf = load ptr, ptr %bufp
  %bsp = getelementptr i64, ptr %ctx, i64 {CTX_BLOCK_SIZE}
  %bs = load i64, ptr %bsp
  %neg = icmp slt i64 %bs, 0
  %bs7 = add i64 %bs, 7
  %bsr = select i1 %neg, i64 %bs7, i64 %bs
  %bytes = and i64 %bsr, -8
  %end = getelementptr i8, ptr %buf, i64 %bytes
  %endi = ptrtoint ptr %end to i64
  %p0 = getelementptr i64, ptr %buf, i64 0
  %none = icmp uge ptr %buf, %end
  br i1 %none, label %done, label %first
first:
{_seq_word(oper, "0")}  %p1 = getelementptr i64, ptr %buf, i64 1
  %more = icmp ult ptr %p1, %end
  br i1 %more, label %pick, label %done
pick:
  %span = sub i64 %bytes, 8
  %sw = lshr i64 %span, 3
  %r = and i64 %sw, 7
  switch i64 %r, label %r7 [ i64 0, label %check {cases} ]
{"".join(tail)}check:
  %pc = phi ptr [%p1, %pick], [%n.r1, %r1], [%n.u, %loop]
  %go = icmp ult ptr %pc, %end
  br i1 %go, label %loop, label %done
loop:
  %u = phi ptr [%pc, %check]
{body}  %n.u = getelementptr i64, ptr %ub, i64 {UNROLL}
  br label %check
done:
  ret i32 0
}}
"""


_XOROSHIRO = """
; sysbench's sb_rand_uniform_uint64: xoroshiro128+ on the thread's state
define internal i64 @xoroshiro_next(ptr %s) alwaysinline nounwind {
  %p1 = getelementptr i64, ptr %s, i64 1
  %s0 = load i64, ptr %s
  %s1a = load i64, ptr %p1
  %res = add i64 %s0, %s1a
  %s1 = xor i64 %s1a, %s0
  %r55 = call i64 @llvm.fshl.i64(i64 %s0, i64 %s0, i64 55)
  %t1 = xor i64 %r55, %s1
  %sh = shl i64 %s1, 14
  %ns0 = xor i64 %t1, %sh
  %ns1 = call i64 @llvm.fshl.i64(i64 %s1, i64 %s1, i64 36)
  store i64 %ns0, ptr %s
  store i64 %ns1, ptr %p1
  ret i64 %res
}
declare i64 @llvm.fshl.i64(i64, i64, i64)

; The same on the state addressed as sysbench's __thread sb_rng_state is
; (initial-exec TLS: movq %fs:(%reg) with the offset in a register; gcc
; keeps it in memory, loaded and stored on every draw): %tls is the state's
; address less the thread pointer, so %fs:(%tls) is the row's ROW_RNG.
; Plain loads and stores would let the CPU forward the state from store to
; load faster than it does through sysbench's %fs accesses (rnd read ran
; 1.06x sysbench's rate per CPU-second so).
define internal i64 @xoroshiro_tls(i64 %tls) alwaysinline nounwind {
  %s0 = call i64 asm sideeffect "movq %fs:($1), $0", "=r,r"(i64 %tls)
  %s1a = call i64 asm sideeffect "movq %fs:8($1), $0", "=r,r"(i64 %tls)
  ; gcc copies s0 twice (movq) and adds in place where LLVM would use one
  ; lea: two more instructions per draw, which is what sysbench runs
  %s0x = call i64 asm sideeffect "movq $1, $0", "=r,r"(i64 %s0)
  %s0r = call i64 asm sideeffect "movq $1, $0", "=r,r"(i64 %s0)
  %res = add i64 %s0, %s1a
  %s1 = xor i64 %s1a, %s0x
  %r55 = call i64 @llvm.fshl.i64(i64 %s0r, i64 %s0r, i64 55)
  %t1 = xor i64 %r55, %s1
  %sh = shl i64 %s1, 14
  %ns0 = xor i64 %t1, %sh
  %ns1 = call i64 @llvm.fshl.i64(i64 %s1, i64 %s1, i64 36)
  call void asm sideeffect "movq $0, %fs:8($1)", "r,r"(i64 %ns1, i64 %tls)
  call void asm sideeffect "movq $0, %fs:($1)", "r,r"(i64 %ns0, i64 %tls)
  ret i64 %res
}

; sb_rand_uniform_double: the top 52 bits as a double in [0, 1)
define internal double @uniform_double(i64 %tls) alwaysinline nounwind {
  %x = call i64 @xoroshiro_tls(i64 %tls)
  %m = lshr i64 %x, 12
  %bits = or i64 %m, 4607182418800017408
  %d = bitcast i64 %bits to double
  %u = fsub double %d, 1.0
  ret double %u
}
"""


def _rnd_event(oper: str) -> str:
    """``event_rnd_<oper>``: for (i = 0; i < block_size; i += 8) one access at
    (size_t)(uniform * (block_size / 8)); read/write one word per trip, every
    global reloaded after each ck_pr access; none only advances the state."""
    if oper == "none":
        # gcc drops the unused offset: 8 generator steps per trip, the state
        # in registers; the same word count as the other events.
        steps = "".join(f"  %x{k} = call i64 @xoroshiro_next(ptr %rng)\n" for k in range(UNROLL))
        return f"""
define i32 @event_rnd_none(ptr %req, i32 %tid, ptr %row, ptr %ctx) noinline nounwind {{
entry:
  %rng = getelementptr i64, ptr %row, i64 {ROW_RNG}
  %bsp = getelementptr i64, ptr %ctx, i64 {CTX_BLOCK_SIZE}
  %bs = load i64, ptr %bsp
  %words = lshr i64 %bs, 3
  %few = icmp ult i64 %words, {UNROLL}
  br i1 %few, label %single, label %check
single:
  %is = phi i64 [0, %entry], [%ns, %single]
  %xs = call i64 @xoroshiro_next(ptr %rng)
  %ns = add i64 %is, 1
  %cs = icmp ult i64 %ns, %words
  br i1 %cs, label %single, label %done
check:
  %i = phi i64 [0, %entry], [%ni, %loop]
  %go = icmp ult i64 %i, %words
  br i1 %go, label %loop, label %done
loop:
{steps}  %ni = add i64 %i, {UNROLL}
  br label %check
done:
  ret i32 0
}}
"""
    access = (
        _CK_STORE.format(p="%at", v="%i") if oper == "write" else "%v = " + _CK_LOAD.format(p="%at")
    )
    return f"""
define i32 @event_rnd_{oper}(ptr %req, i32 %tid, ptr %row, ptr %ctx) noinline nounwind {{
entry:
  %tlsp = getelementptr i64, ptr %row, i64 {ROW_TLS}
  %tls = load i64, ptr %tlsp
  %bsp = getelementptr i64, ptr %ctx, i64 {CTX_BLOCK_SIZE}
  %bs0 = load i64, ptr %bsp
  %any = icmp sgt i64 %bs0, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%ni, %access]
  %bs = load i64, ptr %bsp
  %words = ashr i64 %bs, 3
  %wf = sitofp i64 %words to double
  %u = call double @uniform_double(i64 %tls)
  %x = fmul double %u, %wf
  ; (size_t) of a double as gcc does it: one compare and a branch never
  ; taken (x < 2^63 always), one conversion; LLVM's own fptoui is
  ; branchless, two conversions and four more instructions per word
  %big = fcmp oge double %x, 0x43E0000000000000
  br i1 %big, label %hi, label %lo
hi:
  {_CK_BARRIER.format()}
  %xh = fsub double %x, 0x43E0000000000000
  %oh0 = fptosi double %xh to i64
  %oh = xor i64 %oh0, -9223372036854775808
  br label %access
lo:
  %ol = fptosi double %x to i64
  br label %access
access:
  %off = phi i64 [%oh, %hi], [%ol, %lo]
  ; tls_buf is __thread in sysbench too: reloaded through %fs every word
  %bufi = call i64 asm sideeffect "movq %fs:{8 * (ROW_BUF - ROW_RNG)}($1), $0", "=r,r"(i64 %tls)
  %buf = inttoptr i64 %bufi to ptr
  %at = getelementptr i64, ptr %buf, i64 %off
  {access}
  %ni = add i64 %i, 8
  %bs1 = load i64, ptr %bsp
  %more = icmp slt i64 %ni, %bs1
  br i1 %more, label %loop, label %done
done:
  ret i32 0
}}
"""


def _clock_gettime(clock: int | str, timespec: str) -> str:
    """libc's clock_gettime(clock, timespec) through the context's table, as
    sysbench calls it through its PLT."""
    return (
        f"  %fp = getelementptr i64, ptr %ctx, i64 {CTX_CLOCK_GETTIME}\n"
        "  %f = load ptr, ptr %fp\n"
        f"  %r = call i32 %f(i32 {clock}, ptr {timespec})"
    )


def _elapsed_ns(out: str, end: tuple[str, str], start: tuple[str, str], queue: str) -> str:
    """sysbench's timer arithmetic, as gcc orders it: ``out`` = (end.s -
    start.s) * 10^9 + (end.ns - start.ns + queue), each a (s, ns) of i64 values."""
    return (
        f"  %ds = sub i64 {end[0]}, {start[0]}\n"
        "  %dsn = mul i64 %ds, 1000000000\n"
        f"  %dn = sub i64 {end[1]}, {start[1]}\n"
        f"  %dq = add i64 %dn, {queue}\n"
        f"  {out} = add i64 %dsn, %dq"
    )


_RUN = f"""
%timespec = type {{ i64, i64 }}

define internal void @spin_lock(ptr %p) alwaysinline nounwind {{
entry:
  br label %try
try:
  %old = atomicrmw xchg ptr %p, i64 1 acquire
  %free = icmp eq i64 %old, 0
  br i1 %free, label %got, label %wait
wait:
  call void @llvm.x86.sse2.pause()
  br label %try
got:
  ret void
}}
declare void @llvm.x86.sse2.pause()

define internal i64 @clock_ns(ptr %ctx, i32 %clock) nounwind {{
  %ts = alloca %timespec
{_clock_gettime("%clock", "%ts")}
  %s = load i64, ptr %ts
  %np = getelementptr i64, ptr %ts, i64 1
  %n = load i64, ptr %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}}

; sysbench's sb_more_events: error flag, --time, --events, --rate
define internal zeroext i1 @sb_more_events(ptr %ctx, i32 %tid) noinline nounwind sspstrong {{
entry:
  %ts = alloca %timespec
  %err = load volatile i32, ptr %ctx
  %bad = icmp ne i32 %err, 0
  br i1 %bad, label %no, label %time
time:
  %mtp = getelementptr i64, ptr %ctx, i64 {CTX_MAX_TIME_NS}
  %mt = load i64, ptr %mtp
  %timed = icmp ne i64 %mt, 0
  br i1 %timed, label %clock, label %events
clock:
{_clock_gettime(CLOCK_MONOTONIC, "%ts")}
  %s = load i64, ptr %ts
  %nsp = getelementptr i64, ptr %ts, i64 1
  %ns = load i64, ptr %nsp
  %s0p = getelementptr i64, ptr %ctx, i64 {CTX_START_S}
  %s0 = load i64, ptr %s0p
  %n0p = getelementptr i64, ptr %ctx, i64 {CTX_START_S + 1}
  %n0 = load i64, ptr %n0p
  %qp = getelementptr i64, ptr %ctx, i64 {CTX_QUEUE_NS}
  %q = load i64, ptr %qp
{_elapsed_ns("%elapsed", ("%s", "%ns"), ("%s0", "%n0"), "%q")}
  %late = icmp uge i64 %elapsed, %mt
  br i1 %late, label %no, label %events
events:
  %mep = getelementptr i64, ptr %ctx, i64 {CTX_MAX_EVENTS}
  %me = load i64, ptr %mep
  %counted = icmp ne i64 %me, 0
  br i1 %counted, label %no, label %rate
rate:
  %rp = getelementptr i64, ptr %ctx, i64 {CTX_TX_RATE}
  %rate.v = load i32, ptr %rp
  %paced = icmp ne i32 %rate.v, 0
  br i1 %paced, label %no, label %yes
yes:
  ret i1 1
no:
  ret i1 0
}}

; memory_next_event: the thread's budget (tls_total_ops), type 0 = none left
define void @memory_next_event(ptr sret([48 x i8]) %ev, i32 %tid, ptr %row,
                                        ptr %ctx) noinline nounwind {{
entry:
  %tp = getelementptr i64, ptr %ctx, i64 {CTX_TOTAL_SIZE}
  %total = load i64, ptr %tp
  %limited = icmp sgt i64 %total, 0
  br i1 %limited, label %count, label %some
count:
  %bp = getelementptr i64, ptr %row, i64 {ROW_BUDGET}
  %left = load i64, ptr %bp
  %left1 = add i64 %left, -1
  store i64 %left1, ptr %bp
  %spent = icmp eq i64 %left, 0
  br i1 %spent, label %null, label %some
null:
  store i32 0, ptr %ev
  ret void
some:
  store i32 2, ptr %ev
  ret void
}}

; sb_histogram_update on the shared histogram (HIST_SLOTS rows)
define internal void @sb_histogram_update(ptr %ctx, ptr %row, double %ms) noinline nounwind {{
entry:
  %tlsp = getelementptr i64, ptr %row, i64 {ROW_TLS}
  %tls = load i64, ptr %tlsp
  %x = call i64 @xoroshiro_tls(i64 %tls)
  %slot = and i64 %x, {HIST_SLOTS - 1}
  %lp = getelementptr i64, ptr %ctx, i64 {CTX_LOG}
  %logf = load ptr, ptr %lp
  %ln = call double %logf(double %ms)
  %dp = getelementptr i64, ptr %ctx, i64 {CTX_DEDUCT}
  %deduct = load double, ptr %dp
  %mp = getelementptr i64, ptr %ctx, i64 {CTX_MULT}
  %mult = load double, ptr %mp
  %a = fsub double %ln, %deduct
  %b = fmul double %a, %mult
  %c = fadd double %b, 0.5
  %fp = getelementptr i64, ptr %ctx, i64 {CTX_FLOOR}
  %floorf = load ptr, ptr %fp
  %fl = call double %floorf(double %c)
  %i = fptosi double %fl to i64
  ; gcc's shape: a branch for i < 0 (SB_UNLIKELY, yet taken by every event
  ; under 1 us), a cmov for i >= size. The branch is predicted, so the cell's
  ; address does not wait for log and floor; with a select it would
  %neg = icmp slt i64 %i, 0
  br i1 %neg, label %under, label %inside
under:
  {_CK_BARRIER.format()}
  br label %inc
inside:
  %sp = getelementptr i64, ptr %ctx, i64 {CTX_HIST_SIZE}
  %size = load i64, ptr %sp
  %last = add i64 %size, -1
  %over = icmp sge i64 %i, %size
  %i1 = select i1 %over, i64 %last, i64 %i
  br label %inc
inc:
  %i2 = phi i64 [0, %under], [%i1, %inside]
  %hp = getelementptr i64, ptr %ctx, i64 {CTX_HIST_SLOTS}
  %slots = load ptr, ptr %hp
  %rowp = getelementptr ptr, ptr %slots, i64 %slot
  %hrow = load ptr, ptr %rowp
  %cell = getelementptr i64, ptr %hrow, i64 %i2
  %old = atomicrmw add ptr %cell, i64 1 monotonic
  ret void
}}

; sb_event_stop: timer (spinlock, clock, count/sum/min/max), histogram, counter
define internal void @sb_event_stop(ptr %ctx, ptr %row, i32 %tid) noinline nounwind {{
entry:
  %lock = getelementptr i64, ptr %row, i64 {ROW_LOCK}
  call void @spin_lock(ptr %lock)
  %endp = getelementptr i64, ptr %row, i64 {ROW_END_S}
{_clock_gettime(CLOCK_MONOTONIC, "%endp")}
  %es = load i64, ptr %endp
  %enp = getelementptr i64, ptr %row, i64 {ROW_END_S + 1}
  %en = load i64, ptr %enp
  %ssp = getelementptr i64, ptr %row, i64 {ROW_START_S}
  %ss = load i64, ptr %ssp
  %snp = getelementptr i64, ptr %row, i64 {ROW_START_S + 1}
  %sn = load i64, ptr %snp
  %qp = getelementptr i64, ptr %row, i64 {ROW_QUEUE_NS}
  %q = load i64, ptr %qp
{_elapsed_ns("%lat", ("%es", "%en"), ("%ss", "%sn"), "%q")}
  %tep = getelementptr i64, ptr %row, i64 {ROW_TIMER_EVENTS}
  %te = load i64, ptr %tep
  %te1 = add i64 %te, 1
  store i64 %te1, ptr %tep
  %sump = getelementptr i64, ptr %row, i64 1
  %sum = load i64, ptr %sump
  %sum1 = add i64 %sum, %lat
  store i64 %sum1, ptr %sump
  %minp = getelementptr i64, ptr %row, i64 2
  %mn = load i64, ptr %minp
  %lt = icmp ult i64 %lat, %mn
  br i1 %lt, label %newmin, label %maxck
newmin:
  store i64 %lat, ptr %minp
  br label %maxck
maxck:
  %maxp = getelementptr i64, ptr %row, i64 3
  %mx = load i64, ptr %maxp
  %gt = icmp ugt i64 %lat, %mx
  br i1 %gt, label %newmax, label %unlock
newmax:
  store i64 %lat, ptr %maxp
  br label %unlock
unlock:
  store atomic i64 0, ptr %lock release, align 8
  %pp = getelementptr i64, ptr %ctx, i64 {CTX_PERCENTILE}
  %pct = load i32, ptr %pp
  %want = icmp ne i32 %pct, 0
  br i1 %want, label %hist, label %count
hist:
  %latf = sitofp i64 %lat to double
  %ms = fdiv double %latf, 1.0e6
  call void @sb_histogram_update(ptr %ctx, ptr %row, double %ms)
  br label %count
count:
  ; sb_counter_inc, stored last (release): a sampler reading the count
  ; first sees sums and buckets at least as far along
  %ev = load i64, ptr %row
  %ev1 = add i64 %ev, 1
  store atomic i64 %ev1, ptr %row release, align 8
  %rp = getelementptr i64, ptr %ctx, i64 {CTX_TX_RATE}
  %rate = load i32, ptr %rp
  ret void
}}

; sysbench's thread_run, then the thread's done slots (end, CPU time, why)
define i64 @thread_run(ptr %ctx, ptr %row, i32 %tid) nounwind {{
entry:
  %ev = alloca [48 x i8], align 16
  %ret = alloca [48 x i8], align 16
  %cpu0 = call i64 @clock_ns(ptr %ctx, i32 {CLOCK_THREAD_CPUTIME_ID})
  ; the generator's state as a TLS offset from this thread's pointer (glibc
  ; and musl keep the thread pointer itself at %fs:0)
  %tp = call i64 asm "movq %fs:0, $0", "=r"()
  %rngp = getelementptr i64, ptr %row, i64 {ROW_RNG}
  %rngi = ptrtoint ptr %rngp to i64
  %tlsv = sub i64 %rngi, %tp
  %tlsp = getelementptr i64, ptr %row, i64 {ROW_TLS}
  store i64 %tlsv, ptr %tlsp
  %lock = getelementptr i64, ptr %row, i64 {ROW_LOCK}
  %startp = getelementptr i64, ptr %row, i64 {ROW_START_S}
  %clkp = getelementptr i64, ptr %ctx, i64 {CTX_CLOCK_GETTIME}
  %nextp = getelementptr i64, ptr %ctx, i64 {CTX_NEXT_EVENT}
  %execp = getelementptr i64, ptr %ctx, i64 {CTX_EXECUTE_EVENT}
  br label %head
head:
  %more = call i1 @sb_more_events(ptr %ctx, i32 %tid)
  br i1 %more, label %next, label %ended
next:
  %nextf = load ptr, ptr %nextp
  call void %nextf(ptr sret([48 x i8]) %ret, i32 %tid, ptr %row, ptr %ctx)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %ev, ptr align 16 %ret, i64 48, i1 true)
  %type = load i32, ptr %ev
  %null = icmp eq i32 %type, 0
  br i1 %null, label %out_limit, label %start
start:
  ; sb_event_start: the timer's spinlock, the clock, unlock
  call void @spin_lock(ptr %lock)
  %clk = load ptr, ptr %clkp
  %r0 = call i32 %clk(i32 {CLOCK_MONOTONIC}, ptr %startp)
  store atomic i64 0, ptr %lock release, align 8
  %execf = load ptr, ptr %execp
  %rc = call i32 %execf(ptr %ev, i32 %tid, ptr %row, ptr %ctx)
  call void @sb_event_stop(ptr %ctx, ptr %row, i32 %tid)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %out_flag, label %head
ended:
  %err = load volatile i32, ptr %ctx
  %flagged = icmp ne i32 %err, 0
  br i1 %flagged, label %out_flag, label %out_time
out_flag:
  br label %out
out_time:
  br label %out
out_limit:
  br label %out
out:
  %why = phi i64 [{STOPPED_FLAG}, %out_flag], [{STOPPED_DEADLINE}, %out_time],
                 [{STOPPED_LIMIT}, %out_limit]
  %end = call i64 @clock_ns(ptr %ctx, i32 {CLOCK_MONOTONIC})
  %cpu1 = call i64 @clock_ns(ptr %ctx, i32 {CLOCK_THREAD_CPUTIME_ID})
  %cpu = sub i64 %cpu1, %cpu0
{done_ir("%row", end="%end", cpu="%cpu", why="%why")}
  ret i64 %why
}}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""

_IR = (
    _XOROSHIRO
    + "".join(_seq_event(oper) for oper in OPERS)
    + "".join(_rnd_event(oper) for oper in OPERS)
    + _RUN
)

_RUN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


def _double_bits(value: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", value))[0])


@dataclass
class SharedRun:
    """The run's context (sysbench's globals), one ctypes block every thread
    reads: the stop flag, the exec timer's start, --time, the test's ops."""

    ctx: Any = field(default_factory=lambda: (ctypes.c_int64 * CTX_SLOTS)())
    refs: list[Any] = field(default_factory=list)  # what ctx points into: kept alive

    @property
    def address(self) -> int:
        return ctypes.addressof(self.ctx)

    def request_stop(self) -> None:
        self.ctx[CTX_ERROR] = 1

    def set_clock(self, start_ns: int, max_time_ns: int) -> None:
        """The exec timer's start (CLOCK_MONOTONIC ns) and --time (0: none)."""
        self.ctx[CTX_START_S], self.ctx[CTX_START_S + 1] = divmod(start_ns, 1_000_000_000)
        self.ctx[CTX_MAX_TIME_NS] = max_time_ns


@dataclass
class ThreadJob:
    """One worker: its row of a rows block (``ROW_SLOTS`` int64, C-contiguous)."""

    shared: SharedRun
    tid: int
    row: Any  # numpy int64 row


def kind_of(mode: str, oper: str) -> str:
    if mode not in MODES or oper not in OPERS:
        raise ValueError(f"no memory event {mode} {oper}")
    return f"event_{mode}_{oper}"


def new_rows(threads: int) -> Any:
    """A zeroed threads x ROW_SLOTS block, each row 64-byte aligned (min latency at max)."""
    import numpy as np

    raw = np.zeros(threads * ROW_SLOTS + 8, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    rows = raw[skip : skip + threads * ROW_SLOTS].reshape(threads, ROW_SLOTS)
    rows[:, STAT_LAT_MIN] = INT64_MAX
    return rows


class SharedHistogram:
    """sysbench's ``sb_latency_histogram``: HIST_SLOTS rows of HIST_SIZE
    counters that every thread increments (a random row per event)."""

    def __init__(self) -> None:
        import numpy as np

        self.counts = np.zeros((HIST_SLOTS, HIST_SIZE), np.int64)
        base = int(self.counts.ctypes.data)
        self.rows = (ctypes.c_uint64 * HIST_SLOTS)(
            *(base + i * HIST_SIZE * 8 for i in range(HIST_SLOTS))
        )

    @property
    def rows_address(self) -> int:
        return ctypes.addressof(self.rows)


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
        llvm.initialize_native_asmparser()  # ConcurrencyKit's movq in asm
        libc = ctypes.CDLL(None)
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        self.libc_functions = {
            CTX_CLOCK_GETTIME: ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value,
            CTX_LOG: ctypes.cast(libm.log, ctypes.c_void_p).value,
            CTX_FLOOR: ctypes.cast(libm.floor, ctypes.c_void_p).value,
        }
        module = llvm.parse_assembly(_IR)
        module.verify()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        # -O2 like sysbench's build; generic x86-64 (SSE2) like the
        # distribution's binary, so the same instructions run on every CPU.
        machine = target.create_target_machine(opt=2, jit=True)
        module.triple = llvm.get_process_triple()
        module.data_layout = str(machine.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        pb = llvm.create_pass_builder(machine, pto)
        pb.getModulePassManager().run(module, pb)
        self.target_machine = machine
        self.module = module
        self._engine = llvm.create_mcjit_compiler(module, machine)
        self._engine.finalize_object()
        self._run = _RUN_TYPE(self._engine.get_function_address("thread_run"))
        self._next_event = self._engine.get_function_address("memory_next_event")

    def asm(self) -> str:
        """The module's assembly text (to compare with sysbench's loop)."""
        return str(self.target_machine.emit_assembly(self.module))

    def setup(
        self,
        shared: SharedRun,
        *,
        mode: str,
        oper: str,
        block_size: int,
        total_size: int,
        percentile: float,
        hist: SharedHistogram,
    ) -> None:
        """Fill the run's context: the test's ops, sizes and the histogram."""
        ctx = shared.ctx
        for slot, address in self.libc_functions.items():
            ctx[slot] = address
        ctx[CTX_NEXT_EVENT] = self._next_event
        ctx[CTX_EXECUTE_EVENT] = self._engine.get_function_address(kind_of(mode, oper))
        ctx[CTX_BLOCK_SIZE] = block_size
        ctx[CTX_TOTAL_SIZE] = total_size
        ctx[CTX_PERCENTILE] = 1 if percentile > 0 else 0
        ctx[CTX_HIST_SLOTS] = hist.rows_address
        shared.refs.append(hist)
        ctx[CTX_DEDUCT] = _double_bits(HIST_DEDUCT)
        ctx[CTX_MULT] = _double_bits(HIST_MULT)
        ctx[CTX_HIST_SIZE] = HIST_SIZE

    def run(self, job: ThreadJob) -> int:
        return int(self._run(job.shared.address, address_of(job.row), job.tid))


def address_of(array: Any) -> int:
    """The address of a C-contiguous numpy int64 array (a row of a block)."""
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("counters must be C-contiguous")
    return int(array.ctypes.data)


def setup_row(row: Any, *, buffer_address: int, budget: int, rng: tuple[int, int]) -> None:
    """A thread's TLS: its block, its share of --memory-total-size, its generator."""
    row[ROW_BUF] = buffer_address
    row[ROW_BUDGET] = budget
    row[ROW_RNG] = _signed(rng[0])
    row[ROW_RNG + 1] = _signed(rng[1])


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


_engine: MemEngine | None = None
_lock = threading.Lock()


def load_engine() -> MemEngine:
    """The process's engine, built once (kept forever: a worker may still run it)."""
    global _engine
    with _lock:
        if _engine is None:
            _engine = MemEngine()
        return _engine
