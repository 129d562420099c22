"""The native I/O loops of probes/disk/workers.py: numba ``nogil`` functions.

Imported lazily by ``workers.compile_kernels`` (it imports numba, ~0.5 s).
libc is reached through ``numba.types.ExternalFunction`` (resolved by symbol
name when the code is loaded, not baked-in addresses), so the compiled code
is cached on disk and later runs start in well under a second instead of
recompiling for seconds. The cache lives in a per-user directory chosen by
``native_cache`` before numba is imported (or is off: never an error).
Layout constants (counter slots, histogram shape) come from workers.py; see
its docstring for the contract.

Why the loops repeat themselves: moving a slot's whole life into shared
inlined helpers (claim, complete, release) cost 60-100 ns per I/O, the
reference counting of the array arguments numba copies when it inlines
(docs/iops.md). Keep helpers small and their array arguments few.

Stop latency: every loop reads its stop word after each I/O (sync), between
submitting calls (``SUBMIT_BATCH``) and after each completion (AIO,
io_uring), and while pacing ``--rate-iops`` (sleeps are cut in 100 ms
slices). Once stopped, a loop submits nothing more and returns when the I/Os
in flight have completed; an I/O in the kernel cannot be interrupted (the
block size cap, settings.MAX_BS, keeps it short; a hung device leaves the
worker to ``Engine.join``'s timeout). The asynchronous loops wait for
completions without a timeout (a periodic wake-up bought nothing: a stopped
loop drains what is in flight either way), except when pacing: then until
the next I/O is due.

The run's end (fio's --runtime): a loop whose deadline word (``K_DEADLINE``)
has passed issues nothing more, reaps every I/O in flight and counts it (as
fio's final ``io_u_queued_complete`` after ``runtime_exceeded``), sets
``K_EXPIRED`` and returns. The sync loop looks at it before each I/O, the
asynchronous ones before each submitting call, with the clock reading the
loop takes there anyway; a paced loop sleeps no later than the deadline.
"""

from __future__ import annotations

import platform
from typing import Any

from probetop.probes.core import native_cache, numba_target

# Before numba loads: its cache goes to a per-user directory (or is off).
CACHE = native_cache.enabled()
native_cache.claim(__file__)  # this tree's entry: kept while we run; stale ones pruned

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import types  # noqa: E402
from probetop.probes.disk import uring  # noqa: E402
from probetop.probes.disk.counters import (  # noqa: E402
    AIO_SYSCALLS,
    B_BAD,
    B_DATA,
    B_HOLE,
    B_UNSEEN,
    B_ZERO,
    C_BAD_SECTORS,
    C_BYTES,
    C_ERRORS,
    C_IOS,
    C_LAT_MAX,
    C_LAT_MIN,
    C_SLAT_MAX,
    C_SLAT_MIN,
    C_SLAT_N,
    C_TLAT_MAX,
    C_TLAT_MIN,
    C_ZERO_BYTES,
    F_LAT_SUM,
    F_SLAT_SUM,
    F_TLAT_SUM,
    FATAL_ERRNOS,
    FILE_END,
    FILE_FD,
    FILE_POS,
    FS_RANDOM,
    FS_SEQUENTIAL,
    HIST_BITS,
    HIST_BUCKETS,
    HIST_VAL,
    K_DEADLINE,
    K_ERR_DIR,
    K_ERR_FILE,
    K_ERR_OFFSET,
    K_ERRNO,
    K_EXPIRED,
    K_FIRST_BAD,
    K_PROGRESS,
    K_STOP,
    K_ZERO_EXACT,
    K_ZERO_SEEN,
    READ,
    SECTOR,
    WRITE,
)

# numba's CPU target filled now, without scipy.linalg (0.25 s of CPU): see
# probes/core/numba_target.py.
numba_target.load()

# The errnos after which going on is pointless (full, read-only, gone): a
# loop stops at the first one, as fio does at any error, instead of issuing
# failing I/Os until the probe looks at the next interval's end (those I/Os
# were counted as errors and their time as runtime, so IOPS read low).
FATAL_CODES = np.array(sorted(FATAL_ERRNOS), dtype=np.int64)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def halts(stop_on_error: bool, err: int) -> bool:
    """True if a failed I/O with ``err`` (0: short transfer) ends the loop.
    A short transfer always does: the target ended early (it shrank), and
    every I/O past its new end would fail the same way."""
    if stop_on_error or err == 0:
        return True
    for code in FATAL_CODES:  # noqa: SIM110 (numba: no any() over a generator)
        if err == code:
            return True
    return False


# Pointers travel as int64: same registers as void* in the C ABI.
_pread: Any = types.ExternalFunction(
    "pread", types.int64(types.int32, types.int64, types.int64, types.int64)
)
_pwrite: Any = types.ExternalFunction(
    "pwrite", types.int64(types.int32, types.int64, types.int64, types.int64)
)
_clock_gettime: Any = types.ExternalFunction("clock_gettime", types.int32(types.int32, types.int64))
_clock_nanosleep: Any = types.ExternalFunction(
    "clock_nanosleep", types.int32(types.int32, types.int32, types.int64, types.int64)
)
# syscall(2) is variadic; with integer arguments only, the non-variadic call is
# the same on x86-64 and aarch64 Linux. Number + 6 arguments (io_uring_enter
# takes 6); shorter system calls ignore the extra zeros.
_syscall: Any = types.ExternalFunction("syscall", types.int64(*([types.int64] * 7)))
_errno_location: Any = types.ExternalFunction("__errno_location", types.CPointer(types.int32)())

CLOCK_MONOTONIC = 1
MAX_SLEEP_NS = 100_000_000  # a paced loop looks at its stop word at least this often
CATCH_UP_NS = 1_000_000_000  # a paced loop catches up missed slots up to this far behind
# I/Os per submitting call (io_submit, io_uring_enter): 1, fio's default
# (iodepth_batch_submit=1: each I/O goes as soon as its slot is free). On a
# loop device that is 10-28 % more IOPS at depth 8 and 32 than submitting all
# free slots at once (the device's worker takes a batch as one, serially);
# 15-20 % fewer at depth 128 and on tmpfs files, still above fio there
# (docs/iops.md). The stop word is read between calls.
SUBMIT_BATCH = 1
# Completions taken per reaping step: 1, fio's default
# (iodepth_batch_complete_max defaults to iodepth_batch_complete_min, 1: fio
# calls io_getevents(ctx, 1, 1) and submits the next I/O before reaping
# another). Taking every ready completion at once and then refilling every
# slot turns a queue into lock-step bursts: the device idles while the loop
# reaps and refills (a loop device at depth 8: 0.70-0.77 x fio).
REAP_BATCH = 1
# Kernel AIO's syscall numbers (no libc wrapper: the loops call syscall(2)).
SYS_IO_SETUP, SYS_IO_DESTROY, SYS_IO_GETEVENTS, SYS_IO_SUBMIT = AIO_SYSCALLS.get(
    platform.machine(), (-1, -1, -1, -1)
)
AIO_SUPPORTED = SYS_IO_SETUP >= 0
SYS_IO_URING_ENTER = uring.SYS_IO_URING_ENTER
ENTER_GETEVENTS = 1  # IORING_ENTER_GETEVENTS
ENTER_EXT_ARG = 8  # IORING_ENTER_EXT_ARG: the wait has a timeout
OP_READ, OP_WRITE = 22, 23  # IORING_OP_READ, IORING_OP_WRITE (Linux 5.6+)
EINTR, EAGAIN, EBUSY, ETIME = 4, 11, 16, 62
L_FD = uring.L_FD
L_SQ_HEAD = uring.L_SQ_HEAD
L_SQ_TAIL = uring.L_SQ_TAIL
L_SQ_MASK = uring.L_SQ_MASK
L_SQ_ARRAY = uring.L_SQ_ARRAY
L_CQ_HEAD = uring.L_CQ_HEAD
L_CQ_TAIL = uring.L_CQ_TAIL
L_CQ_MASK = uring.L_CQ_MASK
L_CQES = uring.L_CQES
L_EXT_ARG = uring.L_EXT_ARG


@numba.njit(nogil=True, inline="always", cache=CACHE)
def now_ns(ts_addr: int, ts: Any) -> int:
    _clock_gettime(CLOCK_MONOTONIC, ts_addr)
    return ts[0] * 1_000_000_000 + ts[1]


@numba.njit(nogil=True, inline="always", cache=CACHE)
def expired(ctl: Any, now: int) -> bool:
    """True once the run's deadline (``K_DEADLINE``, 0: none) is reached at
    ``now``; it marks the job as ended by it (``K_EXPIRED``)."""
    deadline = ctl[K_DEADLINE]
    if deadline > 0 and now >= deadline:
        ctl[K_EXPIRED] = 1
        return True
    return False


@numba.njit(nogil=True, inline="always", cache=CACHE)
def pace(due: int, gap: int, ts_addr: int, ts: Any, sl: Any, ctl: Any) -> int:
    """Rate limit (fio --rate_iops): sleep until ``due``; return the next due time.
    The slots are a fixed grid from the loop's start (``due`` + gap), and slots
    missed while the thread waited for a CPU are caught up without sleeping, as
    fio does (its next I/O is due at issued bytes / rate since the job's epoch):
    so the run's average is the rate asked for, on a busy machine too (a grid
    restarted after each late slot held 2000 at ~1,750/s under load where fio
    kept 2,000). Falling behind by ``CATCH_UP_NS`` or more (the process was
    stopped: Ctrl-Z, SIGSTOP) restarts the grid one gap after now, so a resume
    never bursts more than that much I/O (fio would catch up all of it). Sleeps
    in slices of at most ``MAX_SLEEP_NS`` and returns early (due unchanged) when
    the stop word is set, so a low rate never delays a stop, and never past the
    deadline (fio caps its rate sleep at the runtime's end: the caller's next
    clock reading sees it)."""
    if gap <= 0:
        return 0
    now = now_ns(ts_addr, ts)
    deadline = ctl[K_DEADLINE]
    while now < due:
        wake = min(due, now + MAX_SLEEP_NS)
        if deadline > 0:
            if now >= deadline:
                return due
            wake = min(wake, deadline)
        sl[0] = wake // 1_000_000_000
        sl[1] = wake % 1_000_000_000
        _clock_nanosleep(CLOCK_MONOTONIC, 1, sl.ctypes.data, 0)  # 1 = TIMER_ABSTIME
        if ctl[K_STOP] != 0:
            return due
        now = now_ns(ts_addr, ts)
    if now - due >= CATCH_UP_NS:
        return now + gap
    return due + gap


@numba.njit(nogil=True, inline="always", cache=CACHE)
def bucket(v: int) -> int:
    if v < 2 * HIST_VAL:
        return max(v, 0)
    msb = 0
    x = v
    if x >= 1 << 32:
        x >>= 32
        msb += 32
    if x >= 1 << 16:
        x >>= 16
        msb += 16
    if x >= 1 << 8:
        x >>= 8
        msb += 8
    if x >= 1 << 4:
        x >>= 4
        msb += 4
    if x >= 1 << 2:
        x >>= 2
        msb += 2
    if x >= 1 << 1:
        msb += 1
    error_bits = msb - HIST_BITS
    idx = ((error_bits + 1) << HIST_BITS) + ((v >> error_bits) & (HIST_VAL - 1))
    return min(idx, HIST_BUCKETS - 1)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def accumulate(d: int, v: int, lo: int, hi: int, total: int, cnt: Any, flt: Any) -> None:
    """One latency sample ``v`` (ns) into its min (``cnt[d, lo]``), max
    (``cnt[d, hi]``), sum (``flt[d, total]``) and sum of squares (the word
    after it: probes/disk/counters.py)."""
    if v < cnt[d, lo]:
        cnt[d, lo] = v
    if v > cnt[d, hi]:
        cnt[d, hi] = v
    flt[d, total] += v
    flt[d, total + 1] += float(v) * float(v)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def record(d: int, got: int, clat: int, cnt: Any, flt: Any, hist: Any) -> None:
    """Count one finished I/O of ``got`` bytes with completion latency ``clat``
    (ns; the histogram is clat's, as fio's percentiles); ``record_slat`` and
    ``record_total`` count its other two latencies."""
    cnt[d, C_IOS] += 1
    cnt[d, C_BYTES] += got
    accumulate(d, clat, C_LAT_MIN, C_LAT_MAX, F_LAT_SUM, cnt, flt)
    hist[d, bucket(clat)] += 1


@numba.njit(nogil=True, inline="always", cache=CACHE)
def record_total(d: int, lat: int, cnt: Any, flt: Any) -> None:
    """fio's lat (ns): submission + completion (psync: the call, = clat)."""
    accumulate(d, lat, C_TLAT_MIN, C_TLAT_MAX, F_TLAT_SUM, cnt, flt)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def record_slat(d: int, slat: int, cnt: Any, flt: Any) -> None:
    """fio's slat (ns): the system call that submitted the I/O."""
    cnt[d, C_SLAT_N] += 1
    accumulate(d, slat, C_SLAT_MIN, C_SLAT_MAX, F_SLAT_SUM, cnt, flt)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def rand_next(state: Any) -> int:
    # xorshift64*: cheap, good enough to spread offsets and mix choices.
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return int((x * np.uint64(2685821657736338717)) >> np.uint64(1))


@numba.njit(nogil=True, inline="always", cache=CACHE)
def stamp(buf64: Any, base_word: int, n: int, off: int) -> None:
    for s in range(n // SECTOR):
        buf64[base_word + s * (SECTOR // 8)] = off + s * SECTOR


@numba.njit(nogil=True, inline="always", cache=CACHE)
def check(buf64: Any, base_word: int, n: int, off: int) -> int:
    bad = 0
    for s in range(n // SECTOR):
        if buf64[base_word + s * (SECTOR // 8)] != off + s * SECTOR:
            bad += 1
    return bad


@numba.njit(nogil=True, inline="always", cache=CACHE)
def all_zero(buf64: Any, w0: int, w1: int) -> bool:
    """True if the words [w0, w1) are all zero. Sector by sector: the inner
    OR has no branch, so it vectorises, and data is told from zeros within
    the first sector (a written block costs ~nothing; a zero one one pass
    over it)."""
    w = w0
    while w < w1:
        stop = min(w + SECTOR // 8, w1)
        acc = np.uint64(0)
        for i in range(w, stop):
            acc |= buf64[i]
        if acc != 0:
            return False
        w = stop
    return True


@numba.njit(nogil=True, inline="always", cache=CACHE)
def bytes_zero(buf64: Any, lo: int, hi: int) -> bool:
    """True if the bytes [lo, hi) of the buffer are all zero (the few bytes
    of a block that do not fill a whole word)."""
    if lo >= hi:
        return True
    b = buf64.view(np.uint8)
    for i in range(lo, hi):  # noqa: SIM110 (numba)
        if b[i] != 0:
            return False
    return True


# The zero check samples two words per 4 KiB page (its first and last); a
# block whose samples are all zero is checked whole once in FULL_CHECK_EVERY
# such blocks, and always once one of those checks found data (the target
# holds data with zeros where the samples fall). Why not check every zero
# block whole: reading back 1 MiB of zeros costs as much as the kernel's copy
# of it, which halved the pass rate of a memory-speed zero device (a loop
# device over an allocated file of zeros: 1.3 vs 3.1 GB/s); a fresh cloud
# volume answers at that kind of speed too.
PAGE_WORDS = 4096 // 8
FULL_CHECK_EVERY = 16


@numba.njit(nogil=True, inline="always", cache=CACHE)
def looks_zero(buf64: Any, start: int, n: int, ctl: Any) -> bool:
    """Whether the ``n`` bytes read into the buffer at byte ``start`` are all
    zero: sampled, checked whole when due (see ``FULL_CHECK_EVERY``); a data
    block nearly always shows it in its first sample, at the cost of one
    load. Any --bs: a slot starts at ``s * bs``, which need not be a word
    boundary, so the bytes before the first and after the last whole word
    are always checked one by one (at most 7 each side)."""
    end = start + n
    w0 = (start + 7) // 8
    w1 = end // 8
    if w1 <= w0:  # no whole word: a few bytes, checked exactly
        return bytes_zero(buf64, start, end)
    if not bytes_zero(buf64, start, w0 * 8) or not bytes_zero(buf64, w1 * 8, end):
        return False
    for w in range(w0, w1, PAGE_WORDS):
        if buf64[w] != 0 or buf64[min(w + PAGE_WORDS, w1) - 1] != 0:
            return False
    seen = ctl[K_ZERO_SEEN]
    ctl[K_ZERO_SEEN] = seen + 1
    if ctl[K_ZERO_EXACT] == 0 and seen % FULL_CHECK_EVERY != 0:
        return True
    if all_zero(buf64, w0, w1):
        return True
    ctl[K_ZERO_EXACT] = 1
    return False


@numba.njit(nogil=True, inline="always", cache=CACHE)
def mark(bmap: Any, bbase: int, bgran: int, off: int, n: int, state: int) -> None:
    """Put ``state`` on the block map's granules under [off, off + n): a
    failure wins over anything, data over zero (counters.B_*)."""
    first = max((off - bbase) // bgran, 0)
    last = min((off + max(n, 1) - 1 - bbase) // bgran, bmap.size - 1)
    for g in range(first, last + 1):
        cur = bmap[g]
        if (
            state == B_BAD
            or cur == B_UNSEEN
            or (state == B_DATA and (cur == B_ZERO or cur == B_HOLE))  # noqa: SIM109 (numba)
        ):
            bmap[g] = state


@numba.njit(nogil=True, inline="always", cache=CACHE)
def in_hole(bmap: Any, bbase: int, bgran: int, off: int, n: int) -> bool:
    """True if every granule under [off, off + n) is a known hole."""
    first = max((off - bbase) // bgran, 0)
    last = min((off + max(n, 1) - 1 - bbase) // bgran, bmap.size - 1)
    for g in range(first, last + 1):  # noqa: SIM110 (numba: no all() over a generator)
        if bmap[g] != B_HOLE:
            return False
    return True


@numba.njit(nogil=True, inline="always", cache=CACHE)
def classify(
    buf64: Any, start: int, n: int, off: int, d: int, failed: bool,
    bmap: Any, bbase: int, bgran: int, cnt: Any, ctl: Any,
) -> None:  # fmt: skip
    """What one finished I/O says about its blocks (a plan with
    ``classify``): failed, data (a write, or a read with a non-zero byte) or
    zero (a read of all zeros: never written, or written with zeros). A
    read inside a known hole is counted as zeros unread: a hole has no data."""
    if failed:
        mark(bmap, bbase, bgran, off, n, B_BAD)
    elif d == READ and in_hole(bmap, bbase, bgran, off, n):
        cnt[d, C_ZERO_BYTES] += n
    elif d == READ and looks_zero(buf64, start, n, ctl):
        cnt[d, C_ZERO_BYTES] += n
        mark(bmap, bbase, bgran, off, n, B_ZERO)
    else:
        mark(bmap, bbase, bgran, off, n, B_DATA)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def next_io(
    lo: int, hi: int, bs: int, seq: bool, pos: int, readpct: int, state: Any
) -> tuple[int, int, int]:
    """(offset, size, direction) of the next I/O; size 0 = extent finished."""
    if seq:
        if pos >= hi:
            return pos, 0, READ
        off = pos
        n = min(bs, hi - pos)
    else:
        nblocks = (hi - lo) // bs
        off = lo + (rand_next(state) % nblocks) * bs
        n = bs
    if readpct >= 100:
        d = READ
    elif readpct <= 0:
        d = WRITE
    else:
        d = READ if rand_next(state) % 100 < readpct else WRITE
    return off, n, d


@numba.njit(nogil=True, inline="always", cache=CACHE)
def file_turn(files: Any, f: int, lo: int, bs: int, seq: bool, fsvc: int, fsvc_nr: int) -> int:
    """I/Os file ``f`` gets before the next file (fio's file_service_type):
    ``fsvc_nr`` (roundrobin, random), or all of its blocks (sequential)."""
    if fsvc != FS_SEQUENTIAL:
        return fsvc_nr
    span = files[f, FILE_END] - lo
    return max((span + bs - 1) // bs if seq else span // bs, 1)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def pick_file(f: int, nfiles: int, fsvc: int, state: Any) -> int:
    """The file after ``f``: the next one in turn, or (random) any."""
    if fsvc == FS_RANDOM:
        return rand_next(state) % nfiles
    return 0 if f + 1 == nfiles else f + 1


@numba.njit(nogil=True, inline="always", cache=CACHE)
def next_file(
    files: Any, f: int, lo: int, bs: int, seq: bool, fsvc: int, fsvc_nr: int, state: Any
) -> tuple[int, int]:
    """(file, I/Os in its turn) once file ``f``'s turn is over: fio's
    --file_service_type over a job's files (``files``), the next file
    (``pick_file``) and its turn (``file_turn``). A loop starts at file
    ``files.shape[0] - 1`` with no turn left, so its first I/O gets file 0
    (random: any), as fio's; one file gets a turn that never ends. The
    loops call it only when a turn is over: with one file the hot path
    never enters it (an inlined helper's array arguments cost reference
    counting where they run)."""
    nfiles = files.shape[0]
    if nfiles == 1:
        return 0, 1 << 62
    f = pick_file(f, nfiles, fsvc, state)
    return f, file_turn(files, f, lo, bs, seq, fsvc, fsvc_nr)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def settle(
    s: int,
    res: int,
    t_done: int,
    slot_start: Any,
    slot_issue: Any,
    slot_off: Any,
    slot_dir: Any,
    slot_len: Any,
    bs: int,
    buf64: Any,
    do_verify: bool,
    ctl: Any,
    cnt: Any,
    flt: Any,
    hist: Any,
) -> bool:
    """Account for the completion of slot ``s`` (``res``: bytes done, or
    -errno) and free the slot's offset; True if the I/O failed. Latencies as
    fio's: slat from ``slot_start`` (before the submitting call) to
    ``slot_issue`` (after it returned), clat from there to ``t_done`` (after
    the reaping call)."""
    d = slot_dir[s]
    n = slot_len[s]
    off = slot_off[s]
    slot_off[s] = -1
    if res != n:
        cnt[d, C_ERRORS] += 1
        ctl[K_ERRNO] = -res if res < 0 else 0
        ctl[K_ERR_OFFSET] = off
        ctl[K_ERR_DIR] = d
        if res > 0:
            cnt[d, C_BYTES] += res
        return True
    record(d, n, t_done - slot_issue[s], cnt, flt, hist)
    record_slat(d, slot_issue[s] - slot_start[s], cnt, flt)
    record_total(d, t_done - slot_start[s], cnt, flt)
    if d == READ and do_verify:
        bad = check(buf64, s * bs // 8, n, off)
        if bad > 0:
            if cnt[d, C_BAD_SECTORS] == 0:
                ctl[K_FIRST_BAD] = off
            cnt[d, C_BAD_SECTORS] += bad
    return False


@numba.njit(nogil=True, inline="always", cache=CACHE)
def done_below(pos: int, slot_off: Any) -> int:
    """A sequential pass's progress with I/Os in flight: everything below the
    lowest offset still in flight (``slot_off`` -1: a free slot) is done."""
    low = pos
    for s in range(slot_off.size):
        if slot_off[s] >= 0 and slot_off[s] < low:
            low = slot_off[s]
    return low


@numba.njit(nogil=True, cache=CACHE)
def sync_loop(
    files: Any,
    buf_addr: int,
    buf64: Any,
    bs: int,
    lo: int,
    fsvc: int,
    fsvc_nr: int,
    seq: bool,
    wrap: bool,
    readpct: int,
    do_stamp: bool,
    do_verify: bool,
    stop_on_error: bool,
    gap_ns: int,
    seed: int,
    ctl: Any,
    cnt: Any,
    flt: Any,
    hist: Any,
    bmap: Any,
    bbase: int,
    bgran: int,
    do_classify: bool,
) -> int:
    ts = np.zeros(2, dtype=np.int64)
    ts_addr = ts.ctypes.data
    errno = numba.carray(_errno_location(), 1, np.int32)
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed | 1)
    f, fleft = files.shape[0] - 1, 0  # the first I/O's next_file picks file 0 (random: any)
    done = 0
    sl = np.zeros(2, dtype=np.int64)
    due = now_ns(ts_addr, ts)
    while ctl[K_STOP] == 0:
        if gap_ns > 0:
            due = pace(due, gap_ns, ts_addr, ts, sl, ctl)
            if ctl[K_STOP] != 0:
                break
        if fleft == 0:
            f, fleft = next_file(files, f, lo, bs, seq, fsvc, fsvc_nr, state)
        fleft -= 1
        hi = files[f, FILE_END]
        off, n, d = next_io(lo, hi, bs, seq, files[f, FILE_POS], readpct, state)
        if n == 0:
            if not wrap:
                break
            files[f, FILE_POS] = lo  # the end of the area: from its start again
            off, n, d = next_io(lo, hi, bs, seq, lo, readpct, state)
        fd = files[f, FILE_FD]
        if d == WRITE and do_stamp:
            stamp(buf64, 0, n, off)
        t0 = now_ns(ts_addr, ts)
        if expired(ctl, t0):
            break  # the run's end: nothing is in flight
        got = _pread(fd, buf_addr, n, off) if d == READ else _pwrite(fd, buf_addr, n, off)
        lat = now_ns(ts_addr, ts) - t0
        if got != n:
            cnt[d, C_ERRORS] += 1
            ctl[K_ERRNO] = errno[0] if got < 0 else 0
            ctl[K_ERR_OFFSET] = off
            ctl[K_ERR_DIR] = d
            ctl[K_ERR_FILE] = f
            if got > 0:
                cnt[d, C_BYTES] += got
            if halts(stop_on_error, ctl[K_ERRNO]):
                break
            if do_classify:
                classify(buf64, 0, n, off, d, True, bmap, bbase, bgran, cnt, ctl)
        else:
            record(d, got, lat, cnt, flt, hist)
            record_total(d, lat, cnt, flt)
            if do_classify:
                classify(buf64, 0, n, off, d, False, bmap, bbase, bgran, cnt, ctl)
            if d == READ and do_verify:
                bad = check(buf64, 0, n, off)
                if bad > 0:
                    if cnt[d, C_BAD_SECTORS] == 0:
                        ctl[K_FIRST_BAD] = off
                    cnt[d, C_BAD_SECTORS] += bad
        if seq:
            files[f, FILE_POS] = off + n
            ctl[K_PROGRESS] = off + n
        done += 1
    return done


@numba.njit(nogil=True, cache=CACHE)
def aio_loop(
    files: Any,
    buf_addr: int,
    buf64: Any,
    bs: int,
    depth: int,
    ctx_id: int,
    lo: int,
    fsvc: int,
    fsvc_nr: int,
    seq: bool,
    wrap: bool,
    readpct: int,
    do_stamp: bool,
    do_verify: bool,
    stop_on_error: bool,
    gap_ns: int,
    seed: int,
    ctl: Any,
    cnt: Any,
    flt: Any,
    hist: Any,
    bmap: Any,
    bbase: int,
    bgran: int,
    do_classify: bool,
    inflight: Any,
) -> int:
    ts = np.zeros(2, dtype=np.int64)
    ts_addr = ts.ctypes.data
    errno = numba.carray(_errno_location(), 1, np.int32)
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed | 1)
    # struct iocb is 64 bytes = 8 words; io_event is 32 bytes = 4 words.
    iocbs = np.zeros(depth * 8, dtype=np.uint64)
    ptrs = np.zeros(depth, dtype=np.uint64)
    events = np.zeros(depth * 4, dtype=np.int64)
    slot_start = np.zeros(depth, dtype=np.int64)  # before the submitting call
    slot_issue = np.zeros(depth, dtype=np.int64)  # after it returned
    # Each slot's offset (-1: free), direction and length live in the caller's
    # array: Engine.in_flight reads them when a device stops answering.
    slot_off, slot_dir, slot_len = inflight[0], inflight[1], inflight[2]
    slot_off[:] = -1
    slot_file = np.zeros(depth, dtype=np.int64)
    free = np.empty(depth, dtype=np.int64)
    ctx = np.zeros(1, dtype=np.int64)
    ctx[0] = ctx_id
    iocb_base = iocbs.ctypes.data
    for i in range(depth):
        ptrs[i] = iocb_base + i * 64
        free[i] = i
    nfree = depth
    timeout = np.zeros(2, dtype=np.int64)  # used when pacing: wake when the next I/O is due
    f, fleft = files.shape[0] - 1, 0  # the first I/O's next_file picks file 0 (random: any)
    inflight = 0
    finished = False
    done = 0
    sl = np.zeros(2, dtype=np.int64)
    due = now_ns(ts_addr, ts)
    while True:
        # Fill free slots, then submit them, SUBMIT_BATCH per call.
        nsub = 0
        while nfree > 0 and not finished and ctl[K_STOP] == 0:
            if gap_ns > 0:
                # Never sleep with I/O in flight (its latency would grow):
                # reap first and come back when the slot is due.
                if inflight + nsub > 0 and now_ns(ts_addr, ts) < due:
                    break
                due = pace(due, gap_ns, ts_addr, ts, sl, ctl)
                if ctl[K_STOP] != 0:
                    break
            if fleft == 0:
                f, fleft = next_file(files, f, lo, bs, seq, fsvc, fsvc_nr, state)
            fleft -= 1
            hi = files[f, FILE_END]
            off, n, d = next_io(lo, hi, bs, seq, files[f, FILE_POS], readpct, state)
            if n == 0:
                if not wrap:
                    finished = True
                    break
                files[f, FILE_POS] = lo  # the end of the area: from its start again
                off, n, d = next_io(lo, hi, bs, seq, lo, readpct, state)
            if seq:
                files[f, FILE_POS] = off + n
            fd = files[f, FILE_FD]
            nfree -= 1
            s = free[nfree]
            word = s * bs // 8
            if d == WRITE and do_stamp:
                stamp(buf64, word, n, off)
            b = s * 8
            iocbs[b + 0] = s
            iocbs[b + 2] = np.uint64(d) | (np.uint64(fd) << np.uint64(32))
            iocbs[b + 3] = buf_addr + s * bs
            iocbs[b + 4] = n
            iocbs[b + 5] = off
            slot_off[s] = off
            slot_dir[s] = d
            slot_len[s] = n
            slot_file[s] = f
            # ptrs must list the slots to submit first: swap into place.
            ptrs[nsub] = iocb_base + s * 64
            nsub += 1
        if nsub > 0:
            # SUBMIT_BATCH per call (fio's default, 1); small batches also
            # keep a stop prompt: io_submit can do the I/O itself (buffered
            # AIO, some filesystems).
            sent = 0
            failed = False
            while sent < nsub:
                if sent > 0 and ctl[K_STOP] != 0:
                    break
                batch = min(nsub - sent, SUBMIT_BATCH)
                t_sub = now_ns(ts_addr, ts)
                if expired(ctl, t_sub):
                    # The run's end: submit nothing more; what is in flight
                    # is reaped and counted below, then the loop returns.
                    finished = True
                    break
                for k in range(sent, sent + batch):
                    slot_start[(int(ptrs[k]) - iocb_base) // 64] = t_sub
                r = _syscall(SYS_IO_SUBMIT, ctx[0], batch, ptrs.ctypes.data + sent * 8, 0, 0, 0)
                if r <= 0:
                    failed = True
                    break
                t_issue = now_ns(ts_addr, ts)
                for k in range(sent, sent + r):
                    slot_issue[(int(ptrs[k]) - iocb_base) // 64] = t_issue
                sent += r
            inflight += sent
            if sent < nsub:
                # Not submitted (failed, a stop, the deadline): release those slots; a
                # sequential pass goes back to the first of them, so they are
                # never counted as done.
                for k in range(sent, nsub):
                    s = (int(ptrs[k]) - iocb_base) // 64
                    sf = slot_file[s]
                    if seq and slot_off[s] < files[sf, FILE_POS]:
                        files[sf, FILE_POS] = slot_off[s]
                    if failed:
                        cnt[slot_dir[s], C_ERRORS] += 1
                        ctl[K_ERR_OFFSET] = slot_off[s]
                        ctl[K_ERR_DIR] = slot_dir[s]
                        ctl[K_ERR_FILE] = sf
                    slot_off[s] = -1
                    free[nfree] = s
                    nfree += 1
                if failed:
                    ctl[K_ERRNO] = errno[0]
                    if halts(stop_on_error, ctl[K_ERRNO]):
                        finished = True
        if inflight == 0:
            if finished or ctl[K_STOP] != 0:
                break
            continue
        timeout_addr = 0
        if gap_ns > 0 and nfree > 0 and not finished:
            wait = max(due - now_ns(ts_addr, ts), 1000)
            timeout[0] = wait // 1_000_000_000
            timeout[1] = wait % 1_000_000_000
            timeout_addr = timeout.ctypes.data
        got = _syscall(SYS_IO_GETEVENTS, ctx[0], 1, REAP_BATCH, events.ctypes.data, timeout_addr, 0)
        if got < 0:
            continue  # EINTR
        t_done = now_ns(ts_addr, ts)
        for e in range(got):
            s = events[e * 4]
            c_off, c_len, c_dir = slot_off[s], slot_len[s], slot_dir[s]
            failed = settle(
                s, events[e * 4 + 2], t_done, slot_start, slot_issue, slot_off, slot_dir, slot_len,
                bs, buf64, do_verify, ctl, cnt, flt, hist,
            )  # fmt: skip
            if failed:
                ctl[K_ERR_FILE] = slot_file[s]
            if failed and halts(stop_on_error, ctl[K_ERRNO]):
                finished = True
            elif do_classify:
                classify(buf64, s * bs, c_len, c_off, c_dir, failed, bmap, bbase, bgran, cnt, ctl)
            free[nfree] = s
            nfree += 1
            inflight -= 1
            done += 1
        if seq and not (finished and ctl[K_ERRNO] != 0 and halts(stop_on_error, ctl[K_ERRNO])):
            ctl[K_PROGRESS] = done_below(files[0, FILE_POS], slot_off)
    return done


@numba.njit(nogil=True, cache=CACHE)
def uring_loop(
    files: Any,
    buf_addr: int,
    buf64: Any,
    bs: int,
    depth: int,
    layout: Any,
    sq: Any,
    sqe: Any,
    cq32: Any,
    cq64: Any,
    lo: int,
    fsvc: int,
    fsvc_nr: int,
    seq: bool,
    wrap: bool,
    readpct: int,
    do_stamp: bool,
    do_verify: bool,
    stop_on_error: bool,
    gap_ns: int,
    seed: int,
    ctl: Any,
    cnt: Any,
    flt: Any,
    hist: Any,
    bmap: Any,
    bbase: int,
    bgran: int,
    do_classify: bool,
    inflight: Any,
) -> int:
    """The io_uring engine (fio --ioengine=io_uring): one ring per job (probes/
    disk/uring.py), IORING_OP_READ/WRITE; free slots are filled, then
    submitted SUBMIT_BATCH per io_uring_enter call; when no completion is
    in the ring, a separate call waits for one (when pacing, only until the
    next I/O is due, where the kernel has EXT_ARG, 5.11+); then up to
    REAP_BATCH completions are reaped before the next submission, as fio
    does. Same accounting as ``aio_loop``."""
    ts = np.zeros(2, dtype=np.int64)
    ts_addr = ts.ctypes.data
    errno = numba.carray(_errno_location(), 1, np.int32)
    state = np.empty(1, dtype=np.uint64)
    state[0] = np.uint64(seed | 1)
    ring_fd = layout[L_FD]
    sq_head_i = layout[L_SQ_HEAD]
    sq_tail_i = layout[L_SQ_TAIL]
    sq_array_i = layout[L_SQ_ARRAY]
    cq_head_i = layout[L_CQ_HEAD]
    cq_tail_i = layout[L_CQ_TAIL]
    cqes_w = layout[L_CQES]
    sq_mask = np.int64(sq[layout[L_SQ_MASK]])
    cq_mask = np.int64(cq32[layout[L_CQ_MASK]])
    slot_start = np.zeros(depth, dtype=np.int64)  # before the submitting call
    slot_issue = np.zeros(depth, dtype=np.int64)  # after it returned
    # Each slot's offset (-1: free), direction and length live in the caller's
    # array: Engine.in_flight reads them when a device stops answering.
    slot_off, slot_dir, slot_len = inflight[0], inflight[1], inflight[2]
    slot_off[:] = -1
    slot_file = np.zeros(depth, dtype=np.int64)
    fresh = np.empty(depth, dtype=np.int64)
    free = np.empty(depth, dtype=np.int64)
    for i in range(depth):
        free[i] = i
    nfree = depth
    # io_uring_getevents_arg {u64 sigmask; u32 sigmask_sz, pad; u64 ts} and
    # the timeout it points to: used when pacing, where the kernel has EXT_ARG.
    timeout = np.zeros(2, dtype=np.int64)
    wait_arg = np.zeros(3, dtype=np.int64)
    wait_arg[2] = timeout.ctypes.data
    timed_waits = layout[L_EXT_ARG] != 0 and gap_ns > 0
    tail = np.int64(sq[sq_tail_i])
    f, fleft = files.shape[0] - 1, 0  # the first I/O's next_file picks file 0 (random: any)
    inflight = 0  # submitted, not completed
    pending = 0  # in the submission ring, not yet taken by the kernel
    finished = False
    done = 0
    sl = np.zeros(2, dtype=np.int64)
    due = now_ns(ts_addr, ts)
    while True:
        nfresh = 0
        while nfree > 0 and not finished and ctl[K_STOP] == 0:
            if gap_ns > 0:
                if inflight + pending + nfresh > 0 and now_ns(ts_addr, ts) < due:
                    break
                due = pace(due, gap_ns, ts_addr, ts, sl, ctl)
                if ctl[K_STOP] != 0:
                    break
            if fleft == 0:
                f, fleft = next_file(files, f, lo, bs, seq, fsvc, fsvc_nr, state)
            fleft -= 1
            hi = files[f, FILE_END]
            off, n, d = next_io(lo, hi, bs, seq, files[f, FILE_POS], readpct, state)
            if n == 0:
                if not wrap:
                    finished = True
                    break
                files[f, FILE_POS] = lo  # the end of the area: from its start again
                off, n, d = next_io(lo, hi, bs, seq, lo, readpct, state)
            if seq:
                files[f, FILE_POS] = off + n
            fd = files[f, FILE_FD]
            nfree -= 1
            s = free[nfree]
            if d == WRITE and do_stamp:
                stamp(buf64, s * bs // 8, n, off)
            b = s * 8  # an SQE is 64 bytes = 8 words; slot s uses SQE s
            op = OP_READ if d == READ else OP_WRITE
            sqe[b + 0] = np.uint64(op) | (np.uint64(fd) << np.uint64(32))
            sqe[b + 1] = off
            sqe[b + 2] = buf_addr + s * bs
            sqe[b + 3] = n  # len; rw_flags 0
            sqe[b + 4] = s  # user_data
            sqe[b + 5] = 0
            sqe[b + 6] = 0
            sqe[b + 7] = 0
            sq[sq_array_i + (tail & sq_mask)] = s
            tail = (tail + 1) & 0xFFFFFFFF
            slot_off[s] = off
            slot_dir[s] = d
            slot_len[s] = n
            slot_file[s] = f
            fresh[nfresh] = s
            nfresh += 1
        if nfresh > 0:
            t_sub = now_ns(ts_addr, ts)
            if expired(ctl, t_sub):
                # The run's end: take back the entries not yet published
                # (the kernel never saw them; a sequential pattern goes back
                # to the first of them); what is in flight is reaped below.
                for k in range(nfresh):
                    s = fresh[k]
                    sf = slot_file[s]
                    if seq and slot_off[s] < files[sf, FILE_POS]:
                        files[sf, FILE_POS] = slot_off[s]
                    slot_off[s] = -1
                    free[nfree] = s
                    nfree += 1
                tail = (tail - nfresh) & 0xFFFFFFFF
                finished = True
            else:
                for k in range(nfresh):
                    slot_start[fresh[k]] = t_sub
                sq[sq_tail_i] = tail  # publish; the system call below orders it
                pending += nfresh
        if inflight + pending == 0:
            if finished or ctl[K_STOP] != 0:
                break
            continue
        # Submit, then wait for a completion in a second call, as fio does:
        # measured here, one combined call (submit + wait) made the kernel
        # sleep right after queueing and was up to 25 % slower at depth 32.
        # The submitting call has GETEVENTS with min_complete 0, as fio's:
        # with DEFER_TASKRUN the kernel posts completions to the ring only
        # inside such a call, so without it the ring looks empty and every
        # step pays a wait call.
        ret = 0
        while pending > 0:
            ret = _syscall(
                SYS_IO_URING_ENTER, ring_fd, min(pending, SUBMIT_BATCH), 0, ENTER_GETEVENTS, 0, 0
            )
            if ret <= 0:
                break
            # The kernel took the oldest ``ret`` of the pending entries: they
            # were issued now (fio's issue time: clat starts here).
            t_issue = now_ns(ts_addr, ts)
            first = (tail - pending) & 0xFFFFFFFF
            for k in range(ret):
                slot_issue[np.int64(sq[sq_array_i + ((first + k) & sq_mask)])] = t_issue
            pending -= ret
            inflight += ret
        if ret < 0:
            err = errno[0]
            if err != EINTR and err != ETIME and err != EAGAIN and err != EBUSY:
                # The kernel refuses what is queued: take it back (it never
                # started), count it as failed and free its slots; a
                # sequential pass goes back to the first of them.
                head = np.int64(sq[sq_head_i])
                while head != tail:
                    s = np.int64(sq[sq_array_i + (head & sq_mask)])
                    sf = slot_file[s]
                    if seq and slot_off[s] < files[sf, FILE_POS]:
                        files[sf, FILE_POS] = slot_off[s]
                    cnt[slot_dir[s], C_ERRORS] += 1
                    ctl[K_ERR_OFFSET] = slot_off[s]
                    ctl[K_ERR_DIR] = slot_dir[s]
                    ctl[K_ERR_FILE] = sf
                    slot_off[s] = -1
                    free[nfree] = s
                    nfree += 1
                    head = (head + 1) & 0xFFFFFFFF
                tail = np.int64(sq[sq_head_i])
                sq[sq_tail_i] = tail
                pending = 0
                ctl[K_ERRNO] = err
                if halts(stop_on_error, err):
                    finished = True
        if inflight > 0 and np.int64(cq32[cq_head_i]) == np.int64(cq32[cq_tail_i]):
            # Nothing ready yet: wait in the kernel (fio also looks at the
            # ring first). EINTR or a pacing timeout (ETIME) just loop;
            # completions ready are reaped below either way.
            if timed_waits and nfree > 0 and not finished:
                wait = max(due - now_ns(ts_addr, ts), 1000)
                timeout[0] = wait // 1_000_000_000
                timeout[1] = wait % 1_000_000_000
                _syscall(
                    SYS_IO_URING_ENTER, ring_fd, 0, 1, ENTER_GETEVENTS | ENTER_EXT_ARG,
                    wait_arg.ctypes.data, 24,
                )  # fmt: skip
            else:
                _syscall(SYS_IO_URING_ENTER, ring_fd, 0, 1, ENTER_GETEVENTS, 0, 0)
        head = np.int64(cq32[cq_head_i])
        ctail = np.int64(cq32[cq_tail_i])
        if head != ctail:
            t_done = now_ns(ts_addr, ts)
            taken = 0
            while head != ctail and taken < REAP_BATCH:
                taken += 1
                w = cqes_w + (head & cq_mask) * 2  # a CQE is 16 bytes = 2 words
                s = np.int64(cq64[w])
                res = np.int64(cq64[w + 1] & np.uint64(0xFFFFFFFF))
                if res >= 0x80000000:
                    res -= 0x100000000  # the low word is the signed 32-bit result
                c_off, c_len, c_dir = slot_off[s], slot_len[s], slot_dir[s]
                failed = settle(
                    s, res, t_done, slot_start, slot_issue, slot_off, slot_dir, slot_len,
                    bs, buf64, do_verify, ctl, cnt, flt, hist,
                )  # fmt: skip
                if failed:
                    ctl[K_ERR_FILE] = slot_file[s]
                if failed and halts(stop_on_error, ctl[K_ERRNO]):
                    finished = True
                elif do_classify:
                    classify(
                        buf64, s * bs, c_len, c_off, c_dir, failed,
                        bmap, bbase, bgran, cnt, ctl,
                    )  # fmt: skip
                free[nfree] = s
                nfree += 1
                inflight -= 1
                done += 1
                head = (head + 1) & 0xFFFFFFFF
            cq32[cq_head_i] = head
        if seq and not (finished and ctl[K_ERRNO] != 0 and halts(stop_on_error, ctl[K_ERRNO])):
            ctl[K_PROGRESS] = done_below(files[0, FILE_POS], slot_off)
    return done


# The AIO context lives as long as the job's thread: io_destroy waits for
# an RCU grace period (~30 ms measured here), too slow to pay per chunk.
@numba.njit(nogil=True, cache=CACHE)
def aio_setup(depth: int) -> int:
    ctx = np.zeros(1, dtype=np.int64)  # int64, not uint64: uint64 | -1 unifies to float
    ret = _syscall(SYS_IO_SETUP, depth, ctx.ctypes.data, 0, 0, 0, 0)
    if ret != 0:
        return np.int64(-1)
    return ctx[0]


@numba.njit(nogil=True, cache=CACHE)
def aio_destroy(ctx_id: int) -> None:
    _syscall(SYS_IO_DESTROY, ctx_id, 0, 0, 0, 0, 0)
