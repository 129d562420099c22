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

- ``sb_more_events``: an out-of-line call (with gcc's stack protector and
  the six callee-saved registers gcc's code saves for its --rate path) that
  reads the error flag, the clock (CLOCK_MONOTONIC) against --time and the
  event and rate limits;
- ``next_event`` through the test's function pointer (``memory_next_event``:
  the thread's --memory-total-size budget, a ``__thread`` variable in
  sysbench, and gcc's branchless type), returning a 48-byte event that is
  copied, as ``event = test->ops.next_event(...)`` does, its type then
  tested in the returned event, where gcc's code reads it (in the copy,
  the test waits for the copy's loads: 2 % an event);
- ``sb_event_start``: the thread's timer found by thread id (as sysbench
  indexes its global ``timers`` array), its spinlock (a 32-bit xchg), the
  clock, unlock;
- ``execute_event`` through the test's function pointer (one of
  ``event_{seq,rnd}_{write,read,none}``, each shaped like gcc -O2
  -funroll-loops made it: seq loops do the first word, then (words - 1) % 8
  words picked by a compare chain (not a jump table), then 8 words a trip;
  rnd loops one word per trip, reloading the block size, the buffer and the
  generator's state around every access, as ConcurrencyKit's
  ``ck_pr_load_64``/``ck_pr_store_64`` (asm with a memory clobber) force;
  rnd ``none`` only advances the generator, in registers, unrolled as the
  seq loops; the generator's state, the budget and the buffer pointer are
  reached as sysbench's ``__thread`` variables are, ``%fs:off(%reg)``, and
  ``(size_t)`` of the offset is gcc's compare-and-branch, not LLVM's
  branchless conversion);
- ``sb_event_stop``: an out-of-line call: the timer by thread id, spinlock,
  clock, the timer's count, sum, min and max, unlock; with --percentile > 0
  ``sb_histogram_update`` (out of line: a random slot of 128 from the
  thread's xoroshiro128+, ``floor((log(ms) - ln 0.001) * mult + 0.5)``
  clamped as gcc does it (a branch for i < 0, so the cell's address never
  waits for log and floor), and a locked increment in the histogram that
  ALL threads share, slot by slot, as sysbench's global
  ``sb_latency_histogram``: with 2 threads its cache lines move between
  cores); then the thread's event counter (``sb_counter_inc``: a ck load
  and a ck store, the counters' address read for each) and the --rate check.
- libc's ``clock_gettime``, ``log`` and ``floor`` are called through a
  table, as sysbench calls them through its PLT.

- the seq read and write loops start where sysbench's do in their 64-byte
  line (``SEQ_LOOP_HEAD``): the same code spanning another number of lines
  ran a 1 MiB write 2.5-3 % slower (docs/mem.md).

What is left different: our functions take the run's context (and the
thread's TLS offset) as arguments where sysbench's reach globals
RIP-relative, a few register moves per call; seq read and write events
begin with a jump over the padding that places their loop. Instructions per operation
(callgrind, ``benchmarks/mem_vs_sysbench.py --instructions``;
``tests/mem/test_mem_instructions.py``) are within 1 % of sysbench's.

Memory layout (int64 slots): a thread's row (``ROW_SLOTS``, from
``probes.core.sysbench.counters``: STAT_* first, then the timer's fields,
budget, generator state and buffer; thread i's row is rows[i] of one
``new_rows`` block, whose address is in the context) and the run's context
(``CTX_*``).
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
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
    STOPPED_DEADLINE,
    STOPPED_FLAG,
    STOPPED_LIMIT,
    done_ir,
)
from probetop.probes.core.sysbench.hist import HIST_DEDUCT, HIST_MULT, HIST_SIZE
from probetop.probes.core.sysbench.rate import RateSchedule, rate_ir

# A thread's row after the shared STAT_* slots (0-7): sysbench's sb_timer_t
# fields, its TLS (budget, generator state, buffer).
ROW_START_S = 8  # time_start (timespec: s, ns)
ROW_END_S = 10  # time_end
ROW_TIMER_EVENTS = 12
ROW_QUEUE_NS = 13  # sysbench's --rate queue time (0 without --rate)
ROW_LOCK = 14  # the timer's spinlock
ROW_BUDGET = 15  # tls_total_ops: operations left (--memory-total-size)
ROW_RNG = 16  # xoroshiro128+ state, 2 slots
ROW_BUF = 18  # the thread's block (global scope: the same for all)
ROW_TLS = 19  # the row's address less the thread pointer (%fs base): see _tls_load
ROW_SLOTS = 32  # 256 bytes used of each row
# Each thread's row in a page of its own, as sysbench's worker TLS sits in each
# thread's own stack mapping, at the page offset that puts the generator's
# state where sysbench 1.0.20's is: its workers' thread pointer is at page
# offset 0x6c0 (glibc's struct pthread at the top of a 64 KiB stack) and
# sb_rng_state at %fs-0x100, so 0x5c0 (tls_buf at 0x640; gdb on a running
# sysbench, docs/mem.md). The block (page offset 0 up to its size) then never
# shares low 12 address bits with the state rnd modes load and store every
# access (4 KiB aliasing: a load that seems to hit the store before it waits);
# a heap row at a random page offset did, in some runs.
ROW_SHIFT = 12  # thread tid's row at rows + (tid << ROW_SHIFT)
ROW_PAGE_OFFSET = 0x5C0 - ROW_RNG * 8  # 0x540: ROW_RNG at sysbench's 0x5c0

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
CTX_ROWS = 19  # row 0: thread tid's row is at rows + (tid << ROW_SHIFT), a page each
CTX_CONCURRENCY = 20  # sb_globals.concurrency: unused (the schedule counts it)
CTX_SCHED = 21  # --rate: the schedule's block (probes/core/sysbench/rate.py)
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
_BARRIER = _CK_BARRIER.format()


def _tls_load(out: str, slot: int, tls: str = "%tls") -> str:
    """``out`` = the row's ``slot`` read as sysbench reads a ``__thread``
    variable (initial-exec TLS): one ``movq %fs:off(%reg)``."""
    return f'  {out} = call i64 asm sideeffect "movq %fs:{8 * slot}($1), $0", "=r,r"(i64 {tls})\n'


def _tls_store(value: str, slot: int, tls: str = "%tls") -> str:
    """The row's ``slot`` written as a ``__thread`` variable: ``movq %reg, %fs:off(%reg)``."""
    asm = f'"movq $0, %fs:{8 * slot}($1)", "r,r"'
    return f"  call void asm sideeffect {asm}(i64 {value}, i64 {tls})\n"


def _chain(r: str, cases: dict[int, str], default: str, name: str) -> str:
    """gcc's dispatch on ``r`` (0-6, else ``default``) into an unrolled
    loop's remainder: a compare and a branch per case, in order. The empty
    asm in each block keeps LLVM from making it one switch (a jump table)."""
    out = ""
    for k in range(UNROLL - 1):
        nxt = f"{name}{k + 1}" if k < UNROLL - 2 else default
        out += (
            f"{name}{k}:\n"
            + (f"  {_BARRIER}\n" if k else "")
            + f"  %{name}.e{k} = icmp eq i64 {r}, {k}\n"
            f"  br i1 %{name}.e{k}, label %{cases[k]}, label %{nxt}\n"
        )
    return out


def _seq_word(oper: str, k: str, pointer: bool = False) -> str:
    """One word of a seq event at pointer %p{k} (end pointer %endi);
    ``pointer``: the word's pointer in a register of its own (see below)."""
    if oper == "write":  # SIZE_T_STORE(buf, end - buf)
        # gcc copies end and subtracts each word's pointer from the copy
        # (mov, sub, sar, mov per word; in the unrolled trip an lea makes
        # each word's pointer from the trip's base: objdump). The empty asm
        # hands each word its own copy of end (and, in the trip, of its
        # pointer), so LLVM can neither fold end - p into one decrementing
        # counter (3 instructions a word, 1.3-1.4x sysbench's rate at 1 MiB
        # blocks) nor into three-operand leas.
        q = f"  %q{k} = ptrtoint ptr %p{k} to i64\n"
        if pointer:
            q = f"  %q0{k} = ptrtoint ptr %p{k} to i64\n"
            q += f'  %q{k} = call i64 asm "", "=r,0"(i64 %q0{k})\n'
        return (
            f'  %e{k} = call i64 asm "", "=r,0"(i64 %endi)\n'
            + q
            + f"  %d{k} = sub i64 %e{k}, %q{k}\n"
            f"  %v{k} = ashr i64 %d{k}, 3\n"
            f"  {_CK_STORE.format(p=f'%p{k}', v=f'%v{k}')}\n"
        )
    if oper == "read":
        return f"  %v{k} = {_CK_LOAD.format(p=f'%p{k}')}\n"
    return f"  {_BARRIER}\n"


def _loop_label(oper: str) -> str:
    """The global symbol at event_seq_<oper>'s loop head (its address: the JIT's)."""
    return f"probetop_mem_seq_{oper}_loop"


def _seq_event(oper: str, skip: int | None = None) -> str:
    """``event_seq_<oper>``: for (buf = tls_buf; buf < end; buf++) as gcc
    -funroll-loops compiles it: the first word, then (words - 1) % 8 words
    picked by a compare chain, then 8 words a trip.

    The loop head sits where sysbench's does in its 64-byte line: the entry
    jumps over padding (``.p2align 6`` then ``skip`` bytes, never executed)
    to an address ``skip`` past a line start, so the head's offset in its
    line is fixed by the code after it and ``skip`` (``_loop_skips`` picks
    it; None: no padding, for ``none``, whose loop LLVM aligns to 16 bytes
    itself); a label marks the head."""
    pad = ""
    if skip is not None:
        asm = f"jmp 1f\\0A.p2align 6, 0x90\\0A.skip {skip}, 0x90\\0A1:"
        pad = f'  call void asm sideeffect "{asm}", ""()\n'
    tail = ""
    for r in range(UNROLL - 1, 0, -1):  # r words left before the loop
        incoming = f"[%p1, %pick{UNROLL - 2}]"
        if r < UNROLL - 1:
            incoming = f"[%p1, %pick{r}], [%n.r{r + 1}, %r{r + 1}]"
        nxt = f"r{r - 1}" if r > 1 else "tail"
        tail += (
            f"r{r}:\n  %p.r{r} = phi ptr {incoming}\n"
            + _seq_word(oper, f".r{r}")
            + f"  %n.r{r} = getelementptr i64, ptr %p.r{r}, i64 1\n"
            f"  br label %{nxt}\n"
        )
    # gcc addresses the trip's words from one base register (two-operand
    # lea 8(%r9) ...); the asm keeps LLVM from rewriting that as base +
    # index + offset (three-operand leas: slower on some CPUs).
    body = '  %ui = ptrtoint ptr %u to i64\n  %ua = call i64 asm "", "=r,0"(i64 %ui)\n'
    body += "  %ub = inttoptr i64 %ua to ptr\n"
    body += "".join(
        f"  %p.u{k} = getelementptr i64, ptr %ub, i64 {k}\n" + _seq_word(oper, f".u{k}", k > 0)
        for k in range(UNROLL)
    )
    cases = {0: "loop", **{k: f"r{k}" for k in range(1, UNROLL - 1)}}
    return f"""
define i32 @event_seq_{oper}(ptr %req, i32 %tid, i64 %tls, ptr %ctx) noinline nounwind {{
entry:
{pad}{_tls_load("%bufi", ROW_BUF)}  %buf = inttoptr i64 %bufi to ptr
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
  ; the words left after the first, mod 8, from the pointers as gcc computes
  ; it, before the first word (the asm keeps LLVM from sinking it past the
  ; one-word exit, which gcc does not)
  %nb = xor i64 %bufi, -1
  %left = add i64 %nb, %endi
  %lw = lshr i64 %left, 3
  %r0 = and i64 %lw, 7
  %r = call i64 asm sideeffect "", "=r,0"(i64 %r0)
{_seq_word(oper, "0")}  %p1 = getelementptr i64, ptr %buf, i64 1
  %more = icmp ult ptr %p1, %end
  br i1 %more, label %pick0, label %done
{_chain("%r", cases, "r7", "pick")}{tail}tail:
  ; gcc ends the peel with its own compare and a branch to the exit, then
  ; falls into the loop's head; LLVM folded this test into a jump to the
  ; loop's bottom test, and sysbench's code with that jump ran seq read 1M
  ; from 5 to 9 % faster (docs/mem.md, "seq read 1M: the peel into the
  ; loop"). The compare in asm (flags out) is not folded; the latch's
  ; weights keep the head from LLVM's loop alignment (a hot header that is
  ; not a fall-through is aligned to 16 bytes), so the padding still puts
  ; it at SEQ_LOOP_HEAD.
  %go8 = call i8 asm "cmp $2, $1", "={{@ccb}},r,r,~{{flags}}"(ptr %n.r1, ptr %end)
  %go = icmp ne i8 %go8, 0
  br i1 %go, label %loop, label %done
loop:
  %u = phi ptr [%p1, %pick0], [%n.r1, %tail], [%n.u, %loop]
  call void asm sideeffect ".globl {_loop_label(oper)}\\0A{_loop_label(oper)}:", ""()
{body}  %n.u = getelementptr i64, ptr %ub, i64 {UNROLL}
  %again = icmp ult ptr %n.u, %end
  br i1 %again, label %loop, label %done, !prof !{{!"branch_weights", i32 1, i32 1}}
done:
  ret i32 0
}}
"""


_XOROSHIRO = f"""
; sysbench's sb_rand_uniform_uint64: xoroshiro128+ on the thread's state,
; reached as sysbench's __thread sb_rng_state is (initial-exec TLS: movq
; %fs:off(%reg); gcc keeps it in memory, loaded and stored on every draw).
; Plain loads and stores would let the CPU forward the state from store to
; load faster than it does through sysbench's %fs accesses (rnd read ran
; 1.06x sysbench's rate per CPU-second so).
define internal i64 @xoroshiro_tls(i64 %tls) alwaysinline nounwind {{
{_tls_load("%s0", ROW_RNG)}{_tls_load("%s1a", ROW_RNG + 1)}\
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
{_tls_store("%ns1", ROW_RNG + 1)}{_tls_store("%ns0", ROW_RNG)}\
  ret i64 %res
}}
declare i64 @llvm.fshl.i64(i64, i64, i64)

; sb_rand_uniform_double: the top 52 bits as a double in [0, 1)
define internal double @uniform_double(i64 %tls) alwaysinline nounwind {{
  %x = call i64 @xoroshiro_tls(i64 %tls)
  %m = lshr i64 %x, 12
  %bits = or i64 %m, 4607182418800017408
  %d = bitcast i64 %bits to double
  %u = fsub double %d, 1.0
  ret double %u
}}
"""


def _step(a: str, b: str, k: str) -> str:
    """One xoroshiro128+ step on the state (%{a}, %{b}) in registers, the
    sum dropped (rnd none uses no offset): new state (%a{k}, %b{k})."""
    return (
        f"  %x{k} = xor i64 {b}, {a}\n"
        f"  %ra{k} = call i64 @llvm.fshl.i64(i64 {a}, i64 {a}, i64 55)\n"
        f"  %t{k} = xor i64 %ra{k}, %x{k}\n"
        f"  %sh{k} = shl i64 %x{k}, 14\n"
        f"  %a{k} = xor i64 %t{k}, %sh{k}\n"
        f"  %b{k} = call i64 @llvm.fshl.i64(i64 %x{k}, i64 %x{k}, i64 36)\n"
    )


def _rnd_none() -> str:
    """``event_rnd_none`` as gcc -funroll-loops leaves it: the unused offset
    (and so the double) dropped, the state loaded from TLS once, stepped in
    registers (the first step peeled, the remainder picked by a compare
    chain, then 8 a trip, the byte index i counted as the C loop counts it),
    stored back once."""
    rem = ""
    for r in range(UNROLL - 1, 0, -1):
        if r == UNROLL - 1:
            inc = "[%a0, %pick6]", "[%b0, %pick6]", "[8, %pick6]"
        else:
            inc = (
                f"[%a0, %pick{r}], [%a.r{r + 1}, %r{r + 1}]",
                f"[%b0, %pick{r}], [%b.r{r + 1}, %r{r + 1}]",
                f"[8, %pick{r}], [%i.r{r + 1}, %r{r + 1}]",
            )
        nxt = f"r{r - 1}" if r > 1 else "tail"
        rem += (
            f"r{r}:\n  %pa.r{r} = phi i64 {inc[0]}\n  %pb.r{r} = phi i64 {inc[1]}\n"
            f"  %pi.r{r} = phi i64 {inc[2]}\n"
            + _step(f"%pa.r{r}", f"%pb.r{r}", f".r{r}")
            + f"  %ii.r{r} = add i64 %pi.r{r}, 8\n"
            # gcc adds 8 to i per step; without the asm LLVM folds the adds
            f'  %i.r{r} = call i64 asm "", "=r,0"(i64 %ii.r{r})\n'
            f"  br label %{nxt}\n"
        )
    steps = ""
    a, b = "%la", "%lb"
    for k in range(UNROLL):
        steps += _step(a, b, f".u{k}")
        a, b = f"%a.u{k}", f"%b.u{k}"
    cases = {0: "loop", **{k: f"r{k}" for k in range(1, UNROLL - 1)}}
    return f"""
define i32 @event_rnd_none(ptr %req, i32 %tid, i64 %tls, ptr %ctx) noinline nounwind {{
entry:
  %bsp = getelementptr i64, ptr %ctx, i64 {CTX_BLOCK_SIZE}
  %bs = load i64, ptr %bsp
  %any = icmp sgt i64 %bs, 0
  br i1 %any, label %start, label %done
start:
{_tls_load("%s0", ROW_RNG)}{_tls_load("%s1", ROW_RNG + 1)}\
  %bm1 = add i64 %bs, -1
  %bw = lshr i64 %bm1, 3
  %r = and i64 %bw, 7
{_step("%s0", "%s1", "0")}  %one = icmp sge i64 8, %bs
  br i1 %one, label %out, label %pick0
{_chain("%r", cases, "r7", "pick")}{rem}tail:
  %more = icmp slt i64 %i.r1, %bs
  br i1 %more, label %loop, label %out
loop:
  %la = phi i64 [%a0, %pick0], [%a.r1, %tail], [%a.u{UNROLL - 1}, %loop]
  %lb = phi i64 [%b0, %pick0], [%b.r1, %tail], [%b.u{UNROLL - 1}, %loop]
  %li = phi i64 [8, %pick0], [%i.r1, %tail], [%ni, %loop]
{steps}  %ni = add i64 %li, {8 * UNROLL}
  %again = icmp slt i64 %ni, %bs
  br i1 %again, label %loop, label %out
out:
  %fa = phi i64 [%a0, %start], [%a.r1, %tail], [%a.u{UNROLL - 1}, %loop]
  %fb = phi i64 [%b0, %start], [%b.r1, %tail], [%b.u{UNROLL - 1}, %loop]
{_tls_store("%fa", ROW_RNG)}{_tls_store("%fb", ROW_RNG + 1)}\
  br label %done
done:
  ret i32 0
}}
"""


def _rnd_event(oper: str) -> str:
    """``event_rnd_<oper>``: for (i = 0; i < block_size; i += 8) one access at
    (size_t)(uniform * (block_size / 8)); read/write one word per trip, every
    global reloaded after each ck_pr access; none only advances the state."""
    if oper == "none":
        return _rnd_none()
    access = (
        _CK_STORE.format(p="%at", v="%i") if oper == "write" else "%v = " + _CK_LOAD.format(p="%at")
    )
    return f"""
define i32 @event_rnd_{oper}(ptr %req, i32 %tid, i64 %tls, ptr %ctx) noinline nounwind {{
entry:
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
  {_BARRIER}
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
{_tls_load("%bufi", ROW_BUF)}  %buf = inttoptr i64 %bufi to ptr
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


def _row_of(out: str, tid: str) -> str:
    """``out`` = thread ``tid``'s row, indexed from the rows block as sysbench
    indexes its global timers and counters arrays by thread id."""
    return (
        f"  %rowsp.{out[1:]} = getelementptr i64, ptr %ctx, i64 {CTX_ROWS}\n"
        f"  %rows.{out[1:]} = load ptr, ptr %rowsp.{out[1:]}\n"
        f"  %tid64.{out[1:]} = sext i32 {tid} to i64\n"
        f"  %off.{out[1:]} = shl i64 %tid64.{out[1:]}, {ROW_SHIFT}\n"
        f"  {out} = getelementptr i8, ptr %rows.{out[1:]}, i64 %off.{out[1:]}"
    )


# The callee-saved registers gcc's sb_more_events holds (for its --rate path).
_SAVE_SIX = "r,~{rbx},~{rbp},~{r12},~{r13},~{r14},~{r15},~{memory}"

_RUN = f"""
%timespec = type {{ i64, i64 }}

; ConcurrencyKit's ck_spinlock (an unsigned int): xchg, then spin on loads
define internal void @spin_lock(ptr %p) alwaysinline nounwind {{
entry:
  br label %try
try:
  %old = atomicrmw xchg ptr %p, i32 1 acquire
  %free = icmp ne i32 %old, 1
  br i1 %free, label %got, label %wait
wait:
  call void @llvm.x86.sse2.pause()
  %now = load atomic i32, ptr %p monotonic, align 4
  %busy = icmp eq i32 %now, 1
  br i1 %busy, label %wait, label %try
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
  br i1 %paced, label %queue, label %yes
queue:
  ; sysbench's --rate path: an event from the queue (probes/core/sysbench/
  ; rate.py), slept for until due; gcc's code for it holds six registers,
  ; so every call saves and restores them all
  call void asm sideeffect "", "{_SAVE_SIX}"(i32 %tid)
  %schedp = getelementptr i64, ptr %ctx, i64 {CTX_SCHED}
  %sched = load ptr, ptr %schedp
  %q.mtp = getelementptr i64, ptr %ctx, i64 {CTX_MAX_TIME_NS}
  %q.mt = load i64, ptr %q.mtp
  %q.s0p = getelementptr i64, ptr %ctx, i64 {CTX_START_S}
  %q.s0 = load i64, ptr %q.s0p
  %q.n0p = getelementptr i64, ptr %ctx, i64 {CTX_START_S + 1}
  %q.n0 = load i64, ptr %q.n0p
  %q.s9 = mul i64 %q.s0, 1000000000
  %q.t0 = add i64 %q.s9, %q.n0
  %q.end = add i64 %q.t0, %q.mt
  %q.timed = icmp ne i64 %q.mt, 0
  %q.deadline = select i1 %q.timed, i64 %q.end, i64 0
  %due = call i64 @rate_take(ptr %sched, ptr %ctx, i64 %q.deadline)
  %got = icmp sge i64 %due, 0
  br i1 %got, label %taken, label %refused
refused:
  %is.full = icmp eq i64 %due, -3
  br i1 %is.full, label %fatal, label %no
fatal:
  ; "The event queue is full": sysbench sets sb_globals.error, all stop
  store volatile i32 1, ptr %ctx
  br label %no
taken:
  ; sysbench's concurrency and queue_time (take - stamp), which
  ; sb_event_stop adds to the event's time
  call void @rate_begin(ptr %sched)
  %q.now = call i64 @rate_now()
  %q.wait = sub i64 %q.now, %due
{_row_of("%qrow", "%tid")}
  %q.slot = getelementptr i64, ptr %qrow, i64 {ROW_QUEUE_NS}
  store i64 %q.wait, ptr %q.slot
  br label %yes
yes:
  br label %out
no:
  br label %out
out:
  ; one exit: one stack-protector check, as gcc's
  %more = phi i1 [1, %yes], [0, %no]
  ret i1 %more
}}

; memory_next_event: the thread's budget (tls_total_ops, __thread in
; sysbench), type SB_REQ_TYPE_MEMORY (2) while some is left, else NULL (0)
define void @memory_next_event(ptr sret([48 x i8]) %ev, i32 %tid, i64 %tls,
                               ptr %ctx) noinline nounwind {{
entry:
  %tp = getelementptr i64, ptr %ctx, i64 {CTX_TOTAL_SIZE}
  %total = load i64, ptr %tp
  %limited = icmp sgt i64 %total, 0
  br i1 %limited, label %count, label %set
count:
{_tls_load("%left", ROW_BUDGET)}  %left1 = add i64 %left, -1
{_tls_store("%left1", ROW_BUDGET)}  %some = icmp ne i64 %left, 0
  %some32 = zext i1 %some to i32
  %typed = shl i32 %some32, 1
  br label %set
set:
  %type = phi i32 [2, %entry], [%typed, %count]
  store i32 %type, ptr %ev
  ret void
}}

; sb_histogram_update on the shared histogram (HIST_SLOTS rows)
define internal void @sb_histogram_update(ptr %ctx, double %ms, ptr %row) noinline nounwind {{
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
  {_BARRIER}
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

; sb_event_stop: timer (spinlock, clock, count/sum/min/max), histogram,
; the thread's event counter, the --rate concurrency
define internal void @sb_event_stop(ptr %ctx, i32 %tid) noinline nounwind {{
entry:
{_row_of("%row", "%tid")}
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
  %sump = getelementptr i64, ptr %row, i64 {STAT_LAT_SUM}
  %sum = load i64, ptr %sump
  %sum1 = add i64 %sum, %lat
  store i64 %sum1, ptr %sump
  %minp = getelementptr i64, ptr %row, i64 {STAT_LAT_MIN}
  %mn = load i64, ptr %minp
  %lt = icmp ult i64 %lat, %mn
  br i1 %lt, label %newmin, label %maxck
newmin:
  store i64 %lat, ptr %minp
  br label %maxck
maxck:
  %maxp = getelementptr i64, ptr %row, i64 {STAT_LAT_MAX}
  %mx = load i64, ptr %maxp
  %gt = icmp ugt i64 %lat, %mx
  br i1 %gt, label %newmax, label %unlock
newmax:
  store i64 %lat, ptr %maxp
  br label %unlock
unlock:
  store atomic i32 0, ptr %lock release, align 4
  %pp = getelementptr i64, ptr %ctx, i64 {CTX_PERCENTILE}
  %pct = load i32, ptr %pp
  %want = icmp ne i32 %pct, 0
  br i1 %want, label %hist, label %count
hist:
  %latf = sitofp i64 %lat to double
  %ms = fdiv double %latf, 1.0e6
  call void @sb_histogram_update(ptr %ctx, double %ms, ptr %row)
  br label %count
count:
  ; sb_counter_inc: ck_pr_load_64 then ck_pr_store_64 on the thread's slot
  ; of the counters array (its address read again after the load's memory
  ; clobber, as gcc reads sb_counters twice); stored last: a sampler
  ; reading the count first sees sums and buckets at least as far along
{_row_of("%crow", "%tid")}
  %ev = {_CK_LOAD.format(p="%crow")}
  %ev1 = add i64 %ev, 1
{_row_of("%crow2", "%tid")}
  {_CK_STORE.format(p="%crow2", v="%ev1")}
  %rp = getelementptr i64, ptr %ctx, i64 {CTX_TX_RATE}
  %rate = load i32, ptr %rp
  %paced = icmp ne i32 %rate, 0
  br i1 %paced, label %leave, label %done
leave:
  ; --rate's concurrency count
  %lschedp = getelementptr i64, ptr %ctx, i64 {CTX_SCHED}
  %lsched = load ptr, ptr %lschedp
  call void @rate_end(ptr %lsched)
  br label %done
done:
  ret void
}}

; sysbench's thread_run, then the thread's done slots (end, CPU time, why)
define i64 @thread_run(ptr %ctx, ptr %row, i32 %tid) nounwind {{
entry:
  %ev = alloca [48 x i8], align 16
  %ret = alloca [48 x i8], align 16
  %cpu0 = call i64 @clock_ns(ptr %ctx, i32 {CLOCK_THREAD_CPUTIME_ID})
  ; the row's address as a TLS offset from this thread's pointer (glibc
  ; and musl keep the thread pointer itself at %fs:0): %fs:off(%tls) is
  ; the row's slot at byte off, as sysbench's __thread variables are
  %tp = call i64 asm "movq %fs:0, $0", "=r"()
  %rowi = ptrtoint ptr %row to i64
  %tls = sub i64 %rowi, %tp
  %tlsp = getelementptr i64, ptr %row, i64 {ROW_TLS}
  store i64 %tls, ptr %tlsp
  %clkp = getelementptr i64, ptr %ctx, i64 {CTX_CLOCK_GETTIME}
  %nextp = getelementptr i64, ptr %ctx, i64 {CTX_NEXT_EVENT}
  %execp = getelementptr i64, ptr %ctx, i64 {CTX_EXECUTE_EVENT}
  br label %head
head:
  %more = call i1 @sb_more_events(ptr %ctx, i32 %tid)
  br i1 %more, label %next, label %ended
next:
  %nextf = load ptr, ptr %nextp
  call void %nextf(ptr sret([48 x i8]) %ret, i32 %tid, i64 %tls, ptr %ctx)
  call void @llvm.memcpy.p0.p0.i64(ptr align 16 %ev, ptr align 16 %ret, i64 48, i1 true)
  ; the type read from the returned event, not from the copy, as gcc's
  ; sysbench does (``mov (%rsp),%edx`` after the copy's loads). Read from
  ; the copy it depends on the copy's 16-byte loads, which cannot take the
  ; 4-byte type from the store just before them (no store-to-load
  ; forwarding) and wait for it: 118.5 ns an event undisturbed (1 KiB seq
  ; none) against sysbench's 116.1; read here, 116.1 (docs/mem.md)
  %type = load i32, ptr %ret
  %null = icmp eq i32 %type, 0
  br i1 %null, label %out_limit, label %start
start:
  ; sb_event_start: the thread's timer (indexed by thread id), its
  ; spinlock, the clock, unlock
{_row_of("%trow", "%tid")}
  %lock = getelementptr i64, ptr %trow, i64 {ROW_LOCK}
  %startp = getelementptr i64, ptr %trow, i64 {ROW_START_S}
  call void @spin_lock(ptr %lock)
  %clk = load ptr, ptr %clkp
  %r0 = call i32 %clk(i32 {CLOCK_MONOTONIC}, ptr %startp)
  store atomic i32 0, ptr %lock release, align 4
  %execf = load ptr, ptr %execp
  %rc = call i32 %execf(ptr %ev, i32 %tid, i64 %tls, ptr %ctx)
  call void @sb_event_stop(ptr %ctx, i32 %tid)
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

# Where sysbench 1.0.20's seq loops start in their 64-byte line (the head
# of the 8-words-a-trip loop, address mod 64, in the distribution's binary:
# ``objdump -d $(which sysbench)``; tests/mem check it). The same code at
# another offset spans other lines: the write loop (147 bytes) at 46-62 spans
# four lines where sysbench's spans three, 2.5-3 % slower a 1 MiB operation
# (benchmarks/mem_loop_alignment.py; docs/mem.md).
SEQ_LOOP_HEAD = {"write": 6, "read": 10}


def _ir(skips: dict[str, int]) -> str:
    return (
        _XOROSHIRO
        + "".join(_seq_event(oper, skips.get(oper)) for oper in OPERS)
        + "".join(_rnd_event(oper) for oper in OPERS)
        + _RUN
        + rate_ir()
    )


_IR = _ir({})  # unplaced (no padding); the engine builds _ir(_loop_skips(llvm))


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
    """One worker: its row of a rows block (``ROW_SLOTS`` int64, C-contiguous, a page apart)."""

    shared: SharedRun
    tid: int
    row: Any  # numpy int64 row


def kind_of(mode: str, oper: str) -> str:
    if mode not in MODES or oper not in OPERS:
        raise ValueError(f"no memory event {mode} {oper}")
    return f"event_{mode}_{oper}"


def new_rows(threads: int) -> Any:
    """A zeroed threads x ROW_SLOTS block (min latency at max): row i at page
    offset ROW_PAGE_OFFSET of page i of a page-aligned block (ROW_SHIFT)."""
    import numpy as np

    page = 1 << ROW_SHIFT
    slots = page // 8
    raw = np.zeros((threads + 2) * slots, np.int64)
    skip = (-raw.ctypes.data % page + ROW_PAGE_OFFSET) // 8
    pages = raw[skip : skip + threads * slots].reshape(threads, slots)
    rows = pages[:, :ROW_SLOTS]  # each row C-contiguous, rows[i + 1] a page on
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
        # the --rate schedule's libc/libm calls (rate.py), linked by name
        for name, lib in (
            ("clock_gettime", libc),
            ("log", libm),
            ("clock_nanosleep", libc),
            ("sched_yield", libc),
            ("prctl", libc),
        ):
            llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        self.module, self._engine, self.target_machine = _jit(llvm, _ir(_loop_skips(llvm)))
        self.rate_queue_address = int(self._engine.get_function_address("rate_queue"))
        self._run = _RUN_TYPE(self._engine.get_function_address("thread_run"))
        self._next_event = self._engine.get_function_address("memory_next_event")

    def function_address(self, name: str) -> int:
        """Where the JIT put ``name`` (e.g. ``event_seq_read``: to disassemble it)."""
        return int(self._engine.get_function_address(name))

    def loop_head(self, oper: str) -> int:
        """The address of event_seq_<oper>'s loop head (tests: mod 64 = SEQ_LOOP_HEAD)."""
        return int(self._engine.get_function_address(_loop_label(oper)))

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
        rows: Any,
        schedule: RateSchedule | None = None,
    ) -> None:
        """Fill the run's context: the test's ops, sizes, the histogram and
        the threads' rows (a ``new_rows`` block: thread i runs on rows[i])."""
        ctx = shared.ctx
        ctx[CTX_ROWS] = address_of(rows[0])
        shared.refs.append(rows)
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
        if schedule is not None:  # --rate: sysbench's tx_rate and the queue
            schedule.bind(self.rate_queue_address)
            ctx[CTX_TX_RATE] = schedule.rate
            ctx[CTX_SCHED] = schedule.address
            shared.refs.append(schedule)

    def run(self, job: ThreadJob) -> int:
        row = address_of(job.row)
        if row != job.shared.ctx[CTX_ROWS] + (job.tid << ROW_SHIFT):
            raise ValueError(f"thread {job.tid}'s row is not rows[{job.tid}] of setup's block")
        return int(self._run(job.shared.address, row, job.tid))


def _jit(llvm: Any, ir: str) -> tuple[Any, Any, Any]:
    """``ir`` optimised at -O2 and compiled: (module, MCJIT engine, its
    target machine, which the engine owns)."""
    target = llvm.Target.from_triple(llvm.get_process_triple())
    # -O2 like sysbench's build; generic x86-64 (SSE2) like the
    # distribution's binary, so the same instructions run on every CPU.
    machine = target.create_target_machine(opt=2, jit=True)
    module = llvm.parse_assembly(ir)
    module.verify()
    module.triple = llvm.get_process_triple()
    module.data_layout = str(machine.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(machine, pto)
    pb.getModulePassManager().run(module, pb)
    jit = llvm.create_mcjit_compiler(module, machine)
    jit.finalize_object()
    return module, jit, machine


def _loop_skips(llvm: Any) -> dict[str, int]:
    """The padding that puts each seq loop's head at SEQ_LOOP_HEAD: the seq
    events alone compiled with none (each function's code is its own, so
    the distance from the padding to the head is the same in the engine's
    module), the head's offset read from its label."""
    _, jit, _ = _jit(llvm, "".join(_seq_event(oper, 0) for oper in SEQ_LOOP_HEAD))
    return {
        oper: (head - jit.get_function_address(_loop_label(oper))) % 64
        for oper, head in SEQ_LOOP_HEAD.items()
    }


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
