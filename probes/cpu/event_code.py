"""The code of one sysbench ``cpu`` event and of the loops around it, as text
for LLVM (``probes/cpu/engine.py`` builds it).

Contract:
- ``event_ir(peel_first_divisor, code)`` returns the event as an LLVM module:
  ``EVENT_SYSBENCH_X86_64`` is sysbench 1.0.20's gcc -O2 loop as x86-64
  ``module asm`` (instruction for instruction); ``EVENT_IR`` is the same
  loop as IR for LLVM to compile (other architectures).
- ``default_event_code(triple)`` picks the one to use on a target triple.
- ``RUN_IR`` is the module that wraps ``prime_event``: ``run_events`` (timing
  and sysbench's per-event bookkeeping), ``run_gated`` and ``thread_main``
  (a native thread's body; its argument block has ``ARG_SLOTS`` int64 slots).
  Their signatures are the ctypes types in ``engine.py``.

Why text in its own module: it is data for the JIT, not Python logic, and
``machine_code.py`` and the benchmarks compare what it compiles to with
sysbench's binary.
"""

from __future__ import annotations

from probetop.probes.core.sysbench.counters import done_ir
from probetop.probes.core.sysbench.rate import rate_ir

# --------------------------------------------------------------------------
# LLVM IR. One event is sysbench's loop; run_events wraps it with the timing
# and bookkeeping sysbench does around every event.
# --------------------------------------------------------------------------
_EVENT_IR_TEMPLATE = """
define i64 @prime_event(i64 %max_prime, ptr %stop) nounwind {
entry:
  br label %outer

outer:
  %c = phi i64 [ 3, %entry ], [ %c.next, %next ]
  %n = phi i64 [ 0, %entry ], [ %n.next, %next ]
  %more = icmp ult i64 %c, %max_prime
  br i1 %more, label %body, label %done

body:
  ; Every 4096 values of c, look at the stop flag, so Ctrl-C ends even a
  ; --max-prime 1e9 event at once (sysbench waits for it). One and + branch
  ; per c against ~10 divides per c: not measurable (docs/cpu.md).
  %low = and i64 %c, 4095
  %poll.now = icmp eq i64 %low, 0
  br i1 %poll.now, label %poll, label %compute

poll:
  %flag = load atomic i32, ptr %stop monotonic, align 4
  %stopped = icmp ne i32 %flag, 0
  br i1 %stopped, label %aborted, label %compute

aborted:
  ret i64 -1

compute:
  ; t = sqrt((double)c): c is unsigned long long in sysbench, but below
  ; max_prime, an int: gcc converts it signed (x86 cvtsi2sd, aarch64 scvtf)
  %cf = sitofp i64 %c to double
  %t = call double @llvm.sqrt.f64(double %cf)
  br label %{first}

  ; The first pass (l = 2) peeled as gcc -O2 does for sysbench: c % 2 is a bit
  ; test, not a divide. Leaving it to LLVM costs one 64-bit div per even c
  ; (~5 % of all divides at max-prime 10000; measured, docs/cpu.md).
peel:
  %two.in = fcmp ole double 2.000000e+00, %t
  br i1 %two.in, label %two, label %prime

two:
  %odd.bit = and i64 %c, 1
  %even = icmp eq i64 %odd.bit, 0
  br i1 %even, label %composite, label %inner

inner:
  %l = phi i64 [ 3, %two ], [ 2, %noop ], [ %l.next, %step ]
  ; l <= t compares l converted to double, every iteration, as the C does
  %lf = uitofp i64 %l to double
  %in = fcmp ole double %lf, %t
  br i1 %in, label %divide, label %prime

divide:
  %r = urem i64 %c, %l
  %z = icmp eq i64 %r, 0
  br i1 %z, label %composite, label %step

step:
  %l.next = add i64 %l, 1
  br label %inner

prime:
  ; n + 1 on the prime exit only: a phi of constants (1 / 0) would make LLVM
  ; set a register inside the divide loop (one more instruction per divide)
  %n.prime = add i64 %n, 1
  br label %next

composite:
  br label %next

next:
  %n.next = phi i64 [ %n.prime, %prime ], [ %n, %composite ]
  %c.next = add i64 %c, 1
  br label %outer

noop:
  br label %inner

done:
  ret i64 %n
}

declare double @llvm.sqrt.f64(double)
"""


# sysbench 1.0.20's event loop on x86-64, as gcc 12 -O2 compiled it into the
# distribution's binary (Debian bookworm / Ubuntu: objdump -d $(which sysbench),
# the function with the sqrtsd and the div; ``gcc -O2 -S`` of the C loop gives
# the same): the same instructions in the same order, with the same registers
# and encodings, both loops at the same offsets in a 64-byte line (outer 0x10,
# inner 0x38), baseline x86-64 (SSE2), so it costs on every x86-64 CPU what
# sysbench's event costs there. Two things are added, none in the divide loop:
# - the stop flag is read once per chunk of 4096 c (an outer loop; the per-c
#   exit test compares c with the chunk's end instead of max_prime), so
#   Ctrl-C ends even a --max-prime 2^31 event at once;
# - the prime count (r9) is incremented on the prime exit (one add per prime,
#   ~1 instruction in 1000; sysbench discards n and gcc dropped it): the proof
#   the work was done.
# c < 2^31 (max_prime is an int, as in sysbench), so c converts signed, as gcc
# does; l converts unsigned: the jns falls through only for l >= 2^63 (never;
# that path uses r10 where gcc used rsi, which holds our stop flag pointer).
# gcc's `call sqrt` for a negative argument (errno) cannot happen (c >= 3): its
# compare and branch are kept, the branch goes to an inline sqrtsd.
_SB_EVENT_X86_64 = r"""
	.text
	.globl	prime_event
	.p2align	6, 0x90
	.type	prime_event,@function
prime_event:
	pushq	%rbp
	pushq	%rbx
	subq	$8, %rsp
	xorl	%r9d, %r9d
	cmpq	$3, %rdi
	jbe	.Ldone
	movabsq	$0x4000000000000000, %rax
	movq	%rax, %xmm2
	movl	$3, %ebx
	pxor	%xmm3, %xmm3
.Lchunk:
	movl	(%rsi), %eax
	testl	%eax, %eax
	jne	.Laborted
	leaq	4096(%rbx), %rbp
	cmpq	%rdi, %rbp
	cmovaq	%rdi, %rbp
	.p2align	6
	.nops	16
.Louter:
	pxor	%xmm0, %xmm0
	cvtsi2sdq	%rbx, %xmm0
	ucomisd	%xmm0, %xmm3
	ja	.Lnegative
	sqrtsd	%xmm0, %xmm0
.Lhave_t:
	comisd	%xmm2, %xmm0
	jb	.Lprime
	testb	$1, %bl
	je	.Lnext
	movl	$2, %ecx
	jmp	.Lstep
	.p2align	4,,10
	.p2align	3
.Linner:
	pxor	%xmm1, %xmm1
	cvtsi2sdq	%rcx, %xmm1
	comisd	%xmm1, %xmm0
	jb	.Lprime
.Ldivide:
	movq	%rbx, %rax
	xorl	%edx, %edx
	divq	%rcx
	testq	%rdx, %rdx
	je	.Lnext
.Lstep:
	addq	$1, %rcx
	jns	.Linner
	movq	%rcx, %r10
	movq	%rcx, %rdx
	pxor	%xmm1, %xmm1
	shrq	%r10
	andl	$1, %edx
	orq	%rdx, %r10
	cvtsi2sdq	%r10, %xmm1
	addsd	%xmm1, %xmm1
	comisd	%xmm1, %xmm0
	jae	.Ldivide
.Lprime:
	addq	$1, %r9
.Lnext:
	addq	$1, %rbx
	cmpq	%rbp, %rbx
	jne	.Louter
	cmpq	%rdi, %rbx
	jb	.Lchunk
.Ldone:
	movq	%r9, %rax
.Lreturn:
	addq	$8, %rsp
	popq	%rbx
	popq	%rbp
	retq
.Lnegative:
	sqrtsd	%xmm0, %xmm0
	jmp	.Lhave_t
.Laborted:
	movq	$-1, %rax
	jmp	.Lreturn
.Lprime_event_end:
	.size	prime_event, .Lprime_event_end-prime_event
"""

# Which code the event is: sysbench's gcc loop as x86-64 assembly, or the IR.
EVENT_SYSBENCH_X86_64 = "sysbench-x86-64"
EVENT_IR = "ir"


def default_event_code(triple: str) -> str:
    """The x86-64 assembly on x86-64 ELF systems (Linux, the BSDs: its
    directives are ELF's), the IR compiled by LLVM elsewhere."""
    elf = not any(os_ in triple for os_ in ("darwin", "macos", "windows", "mingw", "cygwin"))
    return EVENT_SYSBENCH_X86_64 if triple.startswith("x86_64") and elf else EVENT_IR


def event_ir(peel_first_divisor: bool = True, code: str = EVENT_IR) -> str:
    """The event as a module: the IR (without the peel, l starts at 2 and
    c % 2 is a real divide), or sysbench's x86-64 loop as ``module asm``."""
    if code == EVENT_SYSBENCH_X86_64:
        lines = _SB_EVENT_X86_64.strip("\n").splitlines()
        quoted = "\n".join(
            'module asm "' + line.replace("\\", "\\5C").replace('"', "\\22") + '"' for line in lines
        )
        return quoted + "\n\ndeclare i64 @prime_event(i64, ptr)\n"
    if code != EVENT_IR:
        raise ValueError(f"unknown event code {code!r}")
    return _EVENT_IR_TEMPLATE.replace("{first}", "peel" if peel_first_divisor else "noop")


RUN_IR = (
    """
%timespec = type { i64, i64 }

declare i32 @clock_gettime(i32, ptr)
declare double @log(double)
declare double @llvm.floor.f64(double)

; A clock in ns: 1 CLOCK_MONOTONIC, 3 CLOCK_THREAD_CPUTIME_ID.
define internal i64 @clock_ns(i32 %clock) nounwind {
  %ts = alloca %timespec, align 8
  %rc = call i32 @clock_gettime(i32 %clock, ptr %ts)
  %sp = getelementptr %timespec, ptr %ts, i32 0, i32 0
  %np = getelementptr %timespec, ptr %ts, i32 0, i32 1
  %s = load i64, ptr %sp
  %ns = load i64, ptr %np
  %s9 = mul i64 %s, 1000000000
  %t = add i64 %s9, %ns
  ret i64 %t
}

; Returns why it stopped: 1 stop flag, 2 deadline, 3 event budget spent.
define i64 @run_events(i64 %max_prime, i64 %max_events, i64 %deadline, ptr %stop,
                       ptr %ticket, ptr %stats, ptr %hist,
                       double %deduct, double %mult, i64 %hsize,
                       ptr %sched) nounwind noinline {
entry:
  ; --rate: with a schedule each event waits for its arrival (rate.py)
  %rated = icmp ne ptr %sched, null
  %p.events = getelementptr i64, ptr %stats, i64 0
  %p.sum = getelementptr i64, ptr %stats, i64 1
  %p.min = getelementptr i64, ptr %stats, i64 2
  %p.max = getelementptr i64, ptr %stats, i64 3
  %p.primes = getelementptr i64, ptr %stats, i64 4
  %hlast = sub i64 %hsize, 1
  %hlastf = sitofp i64 %hlast to double
  br label %loop

loop:
  %flag = load atomic i32, ptr %stop monotonic, align 4
  %flagged = icmp ne i32 %flag, 0
  br i1 %flagged, label %by_flag, label %check_time

check_time:
  %t0 = call i64 @clock_ns(i32 1)
  %has_deadline = icmp sgt i64 %deadline, 0
  %late = icmp sge i64 %t0, %deadline
  %over = and i1 %has_deadline, %late
  br i1 %over, label %by_deadline, label %check_budget

check_budget:
  %limited = icmp sgt i64 %max_events, 0
  br i1 %limited, label %take_ticket, label %pace

take_ticket:
  %old = atomicrmw add ptr %ticket, i64 1 monotonic
  %spent = icmp sge i64 %old, %max_events
  br i1 %spent, label %by_budget, label %pace

pace:
  br i1 %rated, label %take, label %work

take:
  ; the oldest arrival due (or the next, slept until): latency counts from
  ; its due time, so time spent queued is in it, as in sysbench
  %due = call i64 @rate_take(ptr %sched, ptr %stop, i64 %deadline)
  %got = icmp sge i64 %due, 0
  br i1 %got, label %begin, label %not_taken

not_taken:
  %waited_out = icmp eq i64 %due, -2
  br i1 %waited_out, label %by_deadline, label %not_taken.2

not_taken.2:
  %is_full = icmp eq i64 %due, -3
  br i1 %is_full, label %by_full, label %by_flag

by_full:
  ; sysbench's fatal "event queue is full": every worker stops
  store atomic i32 1, ptr %stop monotonic, align 4
  br label %by_flag

begin:
  call void @rate_begin(ptr %sched)
  br label %work

work:
  %start = phi i64 [ %t0, %pace ], [ %due, %begin ]
  %n = call i64 @prime_event(i64 %max_prime, ptr %stop)
  %t1 = call i64 @clock_ns(i32 1)
  br i1 %rated, label %end_rated, label %judge

end_rated:
  call void @rate_end(ptr %sched)
  br label %judge

judge:
  ; an event cut short by the stop flag is not an event: do not count it
  %cut = icmp slt i64 %n, 0
  br i1 %cut, label %by_flag, label %account

account:
  %lat = sub i64 %t1, %start

  %ev = load atomic i64, ptr %p.events monotonic, align 8
  %ev1 = add i64 %ev, 1
  %sum = load atomic i64, ptr %p.sum monotonic, align 8
  %sum1 = add i64 %sum, %lat
  %mn = load atomic i64, ptr %p.min monotonic, align 8
  %lt = icmp slt i64 %lat, %mn
  %mn1 = select i1 %lt, i64 %lat, i64 %mn
  %mx = load atomic i64, ptr %p.max monotonic, align 8
  %gt = icmp sgt i64 %lat, %mx
  %mx1 = select i1 %gt, i64 %lat, i64 %mx

  ; bucket = floor((log(ms) - deduct) * mult + 0.5), clamped to 0..hsize-1
  %latf = sitofp i64 %lat to double
  %ms = fdiv double %latf, 1.000000e+06
  %lg = call double @log(double %ms)
  %a = fsub double %lg, %deduct
  %b = fmul double %a, %mult
  %x = fadd double %b, 5.000000e-01
  %pos = fcmp oge double %x, 0.000000e+00
  %x0 = select i1 %pos, double %x, double 0.000000e+00
  %big = fcmp ogt double %x0, %hlastf
  %x1 = select i1 %big, double %hlastf, double %x0
  %fl = call double @llvm.floor.f64(double %x1)
  %idx = fptosi double %fl to i64
  %hp = getelementptr i64, ptr %hist, i64 %idx
  %hv = load atomic i64, ptr %hp monotonic, align 8
  %hv1 = add i64 %hv, 1
  store atomic i64 %hv1, ptr %hp monotonic, align 8

  store atomic i64 %sum1, ptr %p.sum monotonic, align 8
  store atomic i64 %mn1, ptr %p.min monotonic, align 8
  store atomic i64 %mx1, ptr %p.max monotonic, align 8
  store atomic i64 %n, ptr %p.primes monotonic, align 8
  ; the event count last, with release order: a reader that sees it also
  ; sees this event's latency in the histogram and sums
  store atomic i64 %ev1, ptr %p.events release, align 8
  br label %loop

by_flag:
  ret i64 1
by_deadline:
  ret i64 2
by_budget:
  ret i64 3
}

; The gate: wait (blocked in the kernel, not holding the GIL, not computing)
; until the starting thread releases its write lock on %gate, then read the
; deadline it set and run. Starting 1000s of threads this way takes no
; scheduler period per thread, and no worker needs the GIL once all run.
declare i32 @pthread_rwlock_rdlock(ptr)
declare i32 @pthread_rwlock_unlock(ptr)

; After the run: when it stopped, the CPU time used, and why (stored last,
; release order: a reader that sees the code also sees the rest).
define i64 @run_gated(ptr %gate, ptr %deadline.p, i64 %max_prime, i64 %max_events,
                      ptr %stop, ptr %ticket, ptr %stats, ptr %hist,
                      double %deduct, double %mult, i64 %hsize, ptr %arrived,
                      ptr %sched) nounwind {
entry:
  ; counted in before blocking: the starter opens the gate only when every
  ; thread is here, so none is still running Python (holding the GIL) then
  %was = atomicrmw add ptr %arrived, i64 1 release
  %locked = call i32 @pthread_rwlock_rdlock(ptr %gate)
  %unlocked = call i32 @pthread_rwlock_unlock(ptr %gate)
  %deadline = load atomic i64, ptr %deadline.p acquire, align 8
  %cpu0 = call i64 @clock_ns(i32 3)
  %why = call i64 @run_events(i64 %max_prime, i64 %max_events, i64 %deadline, ptr %stop,
                              ptr %ticket, ptr %stats, ptr %hist,
                              double %deduct, double %mult, i64 %hsize, ptr %sched)
  %end = call i64 @clock_ns(i32 1)
  %cpu1 = call i64 @clock_ns(i32 3)
  %cpu = sub i64 %cpu1, %cpu0
"""
    + done_ir("%stats", end="%end", cpu="%cpu", why="%why")
    + """
  ret i64 %why
}

; A worker as a native thread (pthread_create): it never runs Python, so it
; never needs the GIL, and 1000s of them neither stall the event loop nor
; queue for the GIL when they end. %args holds i64 slots (ARG_* in Python).
declare i32 @sched_setscheduler(i32, i32, ptr)
declare i32 @prctl(i32, ...)

@thread.name = private constant [13 x i8] c"probetop-cpu\\00"

define ptr @thread_main(ptr %args) nounwind {
entry:
  %name = call i32 (i32, ...) @prctl(i32 15, ptr @thread.name)
  %p.idle = getelementptr i64, ptr %args, i64 12
  %idle = load i64, ptr %p.idle
  %want.idle = icmp ne i64 %idle, 0
  br i1 %want.idle, label %set.idle, label %go

set.idle:
  ; SCHED_IDLE (5): any normal thread, the event loop first, preempts it
  %param = alloca i32, align 4
  store i32 0, ptr %param
  %rc = call i32 @sched_setscheduler(i32 0, i32 5, ptr %param)
  br label %go

go:
  %s0 = load i64, ptr %args
  %q1 = getelementptr i64, ptr %args, i64 1
  %s1 = load i64, ptr %q1
  %q2 = getelementptr i64, ptr %args, i64 2
  %s2 = load i64, ptr %q2
  %q3 = getelementptr i64, ptr %args, i64 3
  %s3 = load i64, ptr %q3
  %q4 = getelementptr i64, ptr %args, i64 4
  %s4 = load i64, ptr %q4
  %q5 = getelementptr i64, ptr %args, i64 5
  %s5 = load i64, ptr %q5
  %q6 = getelementptr i64, ptr %args, i64 6
  %s6 = load i64, ptr %q6
  %q7 = getelementptr i64, ptr %args, i64 7
  %s7 = load i64, ptr %q7
  %q8 = getelementptr i64, ptr %args, i64 8
  %s8 = load i64, ptr %q8
  %q9 = getelementptr i64, ptr %args, i64 9
  %s9 = load i64, ptr %q9
  %q10 = getelementptr i64, ptr %args, i64 10
  %s10 = load i64, ptr %q10
  %q11 = getelementptr i64, ptr %args, i64 11
  %s11 = load i64, ptr %q11
  %q13 = getelementptr i64, ptr %args, i64 13
  %s13 = load i64, ptr %q13
  %q14 = getelementptr i64, ptr %args, i64 14
  %s14 = load i64, ptr %q14
  %sched = inttoptr i64 %s14 to ptr
  %gate = inttoptr i64 %s0 to ptr
  %deadline.p = inttoptr i64 %s1 to ptr
  %stop = inttoptr i64 %s4 to ptr
  %ticket = inttoptr i64 %s5 to ptr
  %stats = inttoptr i64 %s6 to ptr
  %hist = inttoptr i64 %s7 to ptr
  %deduct = bitcast i64 %s8 to double
  %mult = bitcast i64 %s9 to double
  %arrived = inttoptr i64 %s11 to ptr
  %exited = inttoptr i64 %s13 to ptr
  %why = call i64 @run_gated(ptr %gate, ptr %deadline.p, i64 %s2, i64 %s3,
                             ptr %stop, ptr %ticket, ptr %stats, ptr %hist,
                             double %deduct, double %mult, i64 %s10, ptr %arrived,
                             ptr %sched)
  ; the thread's last touch of shared memory: after this the starter may free it
  %old = atomicrmw add ptr %exited, i64 1 release
  ret ptr null
}
"""
    + rate_ir(frozenset({"clock_gettime", "log", "prctl"}))
)

# Slots of thread_main's argument block.
ARG_SLOTS = 15
