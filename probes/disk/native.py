"""The native I/O loops of probes/disk/workers.py: numba ``nogil`` functions.

Imported lazily by ``workers.compile_kernels`` (it imports numba, ~0.5 s).
libc is reached through ``numba.types.ExternalFunction`` (resolved by symbol
name when the code is loaded, not baked-in addresses), so the compiled code
is cached on disk and later runs start in well under a second instead of
recompiling for seconds. The cache lives in a per-user directory chosen by
``native_cache`` before numba is imported (or is off: never an error).
Layout constants (counter slots, histogram shape) come from workers.py; see
its docstring for the contract.

Stop latency: every loop reads its stop word after each I/O (sync), between
``io_submit`` calls of at most 32 iocbs and after each completion (AIO,
io_uring), and while pacing ``--rate-iops`` (sleeps are cut in 100 ms
slices). Once stopped, a loop submits nothing more and returns when the I/Os
in flight have completed; an I/O in the kernel cannot be interrupted (the
block size cap, settings.MAX_BS, keeps it short; a hung device leaves the
worker to ``Engine.join``'s timeout). The asynchronous loops wait for
completions without a timeout (a periodic wake-up bought nothing: a stopped
loop drains what is in flight either way), except when pacing: then until
the next I/O is due.
"""

from __future__ import annotations

import platform
from typing import Any

from probetop.probes.core import native_cache

# Before numba loads: its cache goes to a per-user directory (or is off).
CACHE = native_cache.enabled()

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import types  # noqa: E402
from probetop.probes.disk import uring  # noqa: E402
from probetop.probes.disk.workers import (  # noqa: E402
    _AIO_SYSCALLS,
    C_BAD_SECTORS,
    C_BYTES,
    C_ERRORS,
    C_IOS,
    C_LAT_MAX,
    C_LAT_MIN,
    F_LAT_SUM,
    F_LAT_SUMSQ,
    HIST_BITS,
    HIST_BUCKETS,
    HIST_VAL,
    J_BS,
    J_BUF,
    J_DEPTH,
    J_FD,
    J_GAP_NS,
    J_HI,
    J_LO,
    J_READPCT,
    J_SEED,
    J_SEQ,
    J_STAMP,
    J_STOP_ON_ERROR,
    J_VERIFY,
    J_WRAP,
    K_ERR_DIR,
    K_ERR_OFFSET,
    K_ERRNO,
    K_FIRST_BAD,
    K_PROGRESS,
    K_STOP,
    READ,
    SECTOR,
    WRITE,
)

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
N_CLOCK = 4  # a loop's clock words: timespec read, timespec to sleep until
# A queue's slots (int64 rows by slot) and cursor words; see ``new_queue``.
S_START, S_OFF, S_DIR, S_LEN, S_FREE = range(5)  # S_OFF -1: free; S_FREE[:nfree]: free list
N_SLOT_ROWS = 5
# Q_POS: next sequential offset; Q_DUE: when the next paced I/O is due (ns);
# Q_FINISHED: nothing more to queue (extent done, or an error stopped it);
# Q_FAILED: an error stopped it; Q_DONE: I/Os completed.
Q_POS, Q_DUE, Q_NFREE, Q_FINISHED, Q_FAILED, Q_DONE = range(6)
N_CURSOR = 6
MAX_SLEEP_NS = 100_000_000  # a paced loop looks at its stop word at least this often
SUBMIT_BATCH = 32  # iocbs per io_submit call (the stop word is read between calls)
SYS_IO_SETUP, SYS_IO_DESTROY, SYS_IO_GETEVENTS, SYS_IO_SUBMIT = _AIO_SYSCALLS.get(
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
def now_ns(clock: Any) -> int:
    """CLOCK_MONOTONIC in ns, read into ``clock``'s first two words."""
    _clock_gettime(CLOCK_MONOTONIC, clock.ctypes.data)
    return clock[0] * 1_000_000_000 + clock[1]


@numba.njit(nogil=True, inline="always", cache=CACHE)
def pace(due: int, gap: int, clock: Any, ctl: Any) -> int:
    """Rate limit (fio --rate_iops): sleep until ``due``; return the next due time.
    Falling behind never causes a burst: the next slot is one gap after now.
    Sleeps in slices of at most ``MAX_SLEEP_NS`` and returns early (due
    unchanged) when the stop word is set, so a low rate never delays a stop."""
    if gap <= 0:
        return 0
    now = now_ns(clock)
    while now < due:
        wake = min(due, now + MAX_SLEEP_NS)
        clock[2] = wake // 1_000_000_000  # words 2-3: the wake-up time
        clock[3] = wake % 1_000_000_000
        _clock_nanosleep(CLOCK_MONOTONIC, 1, clock.ctypes.data + 16, 0)  # 1 = TIMER_ABSTIME
        if ctl[K_STOP] != 0:
            return due
        now = now_ns(clock)
    return max(due, now) + gap


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
def record(d: int, n: int, got: int, lat: int, cnt: Any, flt: Any, hist: Any) -> None:
    cnt[d, C_IOS] += 1
    cnt[d, C_BYTES] += got
    if lat < cnt[d, C_LAT_MIN]:
        cnt[d, C_LAT_MIN] = lat
    if lat > cnt[d, C_LAT_MAX]:
        cnt[d, C_LAT_MAX] = lat
    flt[d, F_LAT_SUM] += lat
    flt[d, F_LAT_SUMSQ] += float(lat) * float(lat)
    hist[d, bucket(lat)] += 1


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
def next_io(job: Any, pos: int, rng: Any) -> tuple[int, int, int]:
    """(offset, size, direction) of the job's next I/O from sequential
    position ``pos``; size 0 = the extent is finished."""
    lo, hi, bs = job[J_LO], job[J_HI], job[J_BS]
    if job[J_SEQ]:
        if pos >= hi:
            return pos, 0, READ
        off = pos
        n = min(bs, hi - pos)
    else:
        nblocks = (hi - lo) // bs
        off = lo + (rand_next(rng) % nblocks) * bs
        n = bs
    readpct = job[J_READPCT]
    if readpct >= 100:
        d = READ
    elif readpct <= 0:
        d = WRITE
    else:
        d = READ if rand_next(rng) % 100 < readpct else WRITE
    return off, n, d


# -- the queue every loop runs on -----------------------------------------------
#
# A loop keeps ``depth`` slots (psync: one); slot s owns the buffer bytes
# [s * bs, (s + 1) * bs) and, in the asynchronous loops, iocb or SQE s. The
# helpers below are the whole life of a slot, shared by the three loops:
# ``claim`` (next I/O into a free slot, paced), then the engine submits and
# waits, then ``complete`` (account the result, free the slot) or, if it was
# never submitted, ``release``; ``publish_progress`` after each round.


@numba.njit(nogil=True, inline="always", cache=CACHE)
def new_queue(job: Any, depth: int, clock: Any) -> tuple[Any, Any, Any]:
    """(slots, cursor, rng) of a fresh queue: every slot free, the cursor at
    the extent's start, the first paced I/O due now."""
    slots = np.zeros((N_SLOT_ROWS, depth), dtype=np.int64)
    for s in range(depth):
        slots[S_OFF, s] = -1
        slots[S_FREE, s] = s
    cur = np.zeros(N_CURSOR, dtype=np.int64)
    cur[Q_POS] = job[J_LO]
    cur[Q_NFREE] = depth
    cur[Q_DUE] = now_ns(clock)
    rng = np.empty(1, dtype=np.uint64)
    rng[0] = np.uint64(job[J_SEED] | 1)
    return slots, cur, rng


@numba.njit(nogil=True, inline="always", cache=CACHE)
def claim(
    job: Any, cur: Any, slots: Any, busy: int, buf64: Any, clock: Any, ctl: Any, rng: Any
) -> int:
    """Take the next I/O into a free slot and return the slot (its offset,
    size and direction in ``slots``; a write's buffer stamped when the job
    stamps). -1 when nothing more is to be queued now: no free slot, a stop,
    the extent finished (``cur[Q_FINISHED]`` set), or, pacing with ``busy``
    I/Os queued, the next one not yet due (never sleep with I/O in flight:
    its latency would grow; reap first and come back)."""
    if cur[Q_NFREE] == 0 or cur[Q_FINISHED] != 0 or ctl[K_STOP] != 0:
        return -1
    gap = job[J_GAP_NS]
    if gap > 0:
        if busy > 0 and now_ns(clock) < cur[Q_DUE]:
            return -1
        cur[Q_DUE] = pace(cur[Q_DUE], gap, clock, ctl)
        if ctl[K_STOP] != 0:
            return -1
    off, n, d = next_io(job, cur[Q_POS], rng)
    if n == 0 and job[J_WRAP]:  # a sequential pass goes round again
        cur[Q_POS] = job[J_LO]
        off, n, d = next_io(job, cur[Q_POS], rng)
    if n == 0:
        cur[Q_FINISHED] = 1
        return -1
    if job[J_SEQ]:
        cur[Q_POS] = off + n
    cur[Q_NFREE] -= 1
    s = slots[S_FREE, cur[Q_NFREE]]
    if d == WRITE and job[J_STAMP]:
        stamp(buf64, s * job[J_BS] // 8, n, off)
    slots[S_OFF, s] = off
    slots[S_DIR, s] = d
    slots[S_LEN, s] = n
    return s


@numba.njit(nogil=True, inline="always", cache=CACHE)
def complete(
    job: Any, cur: Any, slots: Any, s: int, res: int, t_done: int,
    buf64: Any, ctl: Any, cnt: Any, flt: Any, hist: Any,
) -> None:  # fmt: skip
    """Account for slot ``s``'s I/O, done at ``t_done`` with ``res`` (bytes
    done, or -errno), and free the slot. A failed I/O is counted with its
    errno, offset and direction; with stop-on-error it finishes the queue."""
    d = slots[S_DIR, s]
    n = slots[S_LEN, s]
    off = slots[S_OFF, s]
    slots[S_OFF, s] = -1
    slots[S_FREE, cur[Q_NFREE]] = s
    cur[Q_NFREE] += 1
    cur[Q_DONE] += 1
    if res != n:
        cnt[d, C_ERRORS] += 1
        ctl[K_ERRNO] = -res if res < 0 else 0
        ctl[K_ERR_OFFSET] = off
        ctl[K_ERR_DIR] = d
        if res > 0:
            cnt[d, C_BYTES] += res
        if job[J_STOP_ON_ERROR]:
            cur[Q_FINISHED] = 1
            cur[Q_FAILED] = 1
        return
    record(d, n, n, t_done - slots[S_START, s], cnt, flt, hist)
    if d == READ and job[J_VERIFY]:
        bad = check(buf64, s * job[J_BS] // 8, n, off)
        if bad > 0:
            if cnt[d, C_BAD_SECTORS] == 0:
                ctl[K_FIRST_BAD] = off
            cnt[d, C_BAD_SECTORS] += bad


@numba.njit(nogil=True, inline="always", cache=CACHE)
def release(job: Any, cur: Any, slots: Any, s: int, err: int, cnt: Any, ctl: Any) -> None:
    """Free slot ``s`` whose I/O was never submitted (a stop between
    submission batches, or the kernel refused it: ``err`` > 0, counted as a
    failed I/O; with stop-on-error it finishes the queue). A sequential pass
    goes back to the slot's offset, so its bytes are never counted as done."""
    off = slots[S_OFF, s]
    if job[J_SEQ] and off < cur[Q_POS]:
        cur[Q_POS] = off
    if err > 0:
        d = slots[S_DIR, s]
        cnt[d, C_ERRORS] += 1
        ctl[K_ERRNO] = err
        ctl[K_ERR_OFFSET] = off
        ctl[K_ERR_DIR] = d
        if job[J_STOP_ON_ERROR]:
            cur[Q_FINISHED] = 1
            cur[Q_FAILED] = 1
    slots[S_OFF, s] = -1
    slots[S_FREE, cur[Q_NFREE]] = s
    cur[Q_NFREE] += 1


@numba.njit(nogil=True, inline="always", cache=CACHE)
def publish_progress(job: Any, cur: Any, slots: Any, ctl: Any) -> None:
    """A sequential pass's progress: everything below the lowest offset still
    in flight is done. Frozen once an error stopped the pass (the pass resumes
    from the failed I/O)."""
    if not job[J_SEQ] or cur[Q_FAILED] != 0:
        return
    low = cur[Q_POS]
    for s in range(slots.shape[1]):
        off = slots[S_OFF, s]
        if 0 <= off < low:
            low = off
    ctl[K_PROGRESS] = low


@numba.njit(nogil=True, cache=CACHE)
def sync_loop(job: Any, buf64: Any, ctl: Any, cnt: Any, flt: Any, hist: Any) -> int:
    """The psync engine (fio --ioengine=psync): one pread/pwrite at a time on
    slot 0. Returns the I/Os done."""
    clock = np.zeros(N_CLOCK, dtype=np.int64)
    errno = numba.carray(_errno_location(), 1, np.int32)
    slots, cur, rng = new_queue(job, 1, clock)
    fd, buf = job[J_FD], job[J_BUF]
    while True:
        s = claim(job, cur, slots, 0, buf64, clock, ctl, rng)
        if s < 0:
            break
        n, off = slots[S_LEN, s], slots[S_OFF, s]
        t0 = now_ns(clock)
        got = _pread(fd, buf, n, off) if slots[S_DIR, s] == READ else _pwrite(fd, buf, n, off)
        t_done = now_ns(clock)
        slots[S_START, s] = t0
        complete(
            job, cur, slots, s, got if got >= 0 else -errno[0], t_done,
            buf64, ctl, cnt, flt, hist,
        )  # fmt: skip
        publish_progress(job, cur, slots, ctl)
    return cur[Q_DONE]


@numba.njit(nogil=True, cache=CACHE)
def aio_loop(job: Any, ctx_id: int, buf64: Any, ctl: Any, cnt: Any, flt: Any, hist: Any) -> int:
    """The libaio engine (fio --ioengine=libaio): free slots are filled and
    submitted with io_submit (batches of ``SUBMIT_BATCH``), then io_getevents
    waits for at least one completion (when pacing, only until the next I/O is
    due) and takes every one ready. Returns the I/Os done."""
    clock = np.zeros(N_CLOCK, dtype=np.int64)
    errno = numba.carray(_errno_location(), 1, np.int32)
    depth = job[J_DEPTH]
    slots, cur, rng = new_queue(job, depth, clock)
    fd, buf, bs = job[J_FD], job[J_BUF], job[J_BS]
    # struct iocb is 64 bytes = 8 words; io_event is 32 bytes = 4 words.
    iocbs = np.zeros(depth * 8, dtype=np.uint64)
    iocb_base = iocbs.ctypes.data
    ptrs = np.zeros(depth, dtype=np.uint64)  # the iocbs to submit, in order
    events = np.zeros(depth * 4, dtype=np.int64)
    timeout = np.zeros(2, dtype=np.int64)  # used when pacing: wake when the next I/O is due
    inflight = 0
    while True:
        nsub = 0
        while True:
            s = claim(job, cur, slots, inflight + nsub, buf64, clock, ctl, rng)
            if s < 0:
                break
            b = s * 8
            iocbs[b + 0] = s
            iocbs[b + 2] = np.uint64(slots[S_DIR, s]) | (np.uint64(fd) << np.uint64(32))
            iocbs[b + 3] = buf + s * bs
            iocbs[b + 4] = slots[S_LEN, s]
            iocbs[b + 5] = slots[S_OFF, s]
            ptrs[nsub] = iocb_base + s * 64
            nsub += 1
        if nsub > 0:
            # In batches: io_submit can do the I/O itself (buffered AIO, some
            # filesystems), so one call for 1024 slots could outlast a stop.
            sent = 0
            err = 0
            while sent < nsub:
                if sent > 0 and ctl[K_STOP] != 0:
                    break
                batch = min(nsub - sent, SUBMIT_BATCH)
                t_sub = now_ns(clock)
                for k in range(sent, sent + batch):
                    slots[S_START, (int(ptrs[k]) - iocb_base) // 64] = t_sub
                r = _syscall(SYS_IO_SUBMIT, ctx_id, batch, ptrs.ctypes.data + sent * 8, 0, 0, 0)
                if r <= 0:
                    err = errno[0] if r < 0 else EAGAIN
                    break
                sent += r
            inflight += sent
            for k in range(sent, nsub):
                release(job, cur, slots, (int(ptrs[k]) - iocb_base) // 64, err, cnt, ctl)
        if inflight == 0:
            if cur[Q_FINISHED] != 0 or ctl[K_STOP] != 0:
                break
            continue
        timeout_addr = 0
        if job[J_GAP_NS] > 0 and cur[Q_NFREE] > 0 and cur[Q_FINISHED] == 0:
            wait = max(cur[Q_DUE] - now_ns(clock), 1000)
            timeout[0] = wait // 1_000_000_000
            timeout[1] = wait % 1_000_000_000
            timeout_addr = timeout.ctypes.data
        got = _syscall(SYS_IO_GETEVENTS, ctx_id, 1, depth, events.ctypes.data, timeout_addr, 0)
        if got < 0:
            continue  # EINTR
        t_done = now_ns(clock)
        for e in range(got):
            complete(
                job, cur, slots, events[e * 4], events[e * 4 + 2], t_done,
                buf64, ctl, cnt, flt, hist,
            )  # fmt: skip
        inflight -= got
        publish_progress(job, cur, slots, ctl)
    return cur[Q_DONE]


@numba.njit(nogil=True, cache=CACHE)
def uring_loop(
    job: Any, layout: Any, sq: Any, sqe: Any, cq32: Any, cq64: Any,
    buf64: Any, ctl: Any, cnt: Any, flt: Any, hist: Any,
) -> int:  # fmt: skip
    """The io_uring engine (fio --ioengine=io_uring): one ring per job (probes/
    disk/uring.py), IORING_OP_READ/WRITE; free slots are filled and submitted
    in one io_uring_enter call, a second waits for at least one completion
    (when pacing, only until the next I/O is due, where the kernel has
    EXT_ARG, 5.11+), then every completion ready is reaped. Returns the I/Os
    done."""
    clock = np.zeros(N_CLOCK, dtype=np.int64)
    errno = numba.carray(_errno_location(), 1, np.int32)
    depth = job[J_DEPTH]
    slots, cur, rng = new_queue(job, depth, clock)
    fd, buf, bs = job[J_FD], job[J_BUF], job[J_BS]
    ring_fd = layout[L_FD]
    sq_head_i = layout[L_SQ_HEAD]
    sq_tail_i = layout[L_SQ_TAIL]
    sq_array_i = layout[L_SQ_ARRAY]
    cq_head_i = layout[L_CQ_HEAD]
    cq_tail_i = layout[L_CQ_TAIL]
    cqes_w = layout[L_CQES]
    sq_mask = np.int64(sq[layout[L_SQ_MASK]])
    cq_mask = np.int64(cq32[layout[L_CQ_MASK]])
    # io_uring_getevents_arg {u64 sigmask; u32 sigmask_sz, pad; u64 ts} and
    # the timeout it points to: used when pacing, where the kernel has EXT_ARG.
    timeout = np.zeros(2, dtype=np.int64)
    wait_arg = np.zeros(3, dtype=np.int64)
    wait_arg[2] = timeout.ctypes.data
    timed_waits = layout[L_EXT_ARG] != 0 and job[J_GAP_NS] > 0
    tail = np.int64(sq[sq_tail_i])
    inflight = 0  # submitted, not completed
    pending = 0  # in the submission ring, not yet taken by the kernel
    while True:
        first = tail
        while True:
            queued = inflight + pending + ((tail - first) & 0xFFFFFFFF)
            s = claim(job, cur, slots, queued, buf64, clock, ctl, rng)
            if s < 0:
                break
            b = s * 8  # an SQE is 64 bytes = 8 words; slot s uses SQE s
            op = OP_READ if slots[S_DIR, s] == READ else OP_WRITE
            sqe[b + 0] = np.uint64(op) | (np.uint64(fd) << np.uint64(32))
            sqe[b + 1] = slots[S_OFF, s]
            sqe[b + 2] = buf + s * bs
            sqe[b + 3] = slots[S_LEN, s]  # len; rw_flags 0
            sqe[b + 4] = s  # user_data
            sqe[b + 5] = 0
            sqe[b + 6] = 0
            sqe[b + 7] = 0
            sq[sq_array_i + (tail & sq_mask)] = s
            tail = (tail + 1) & 0xFFFFFFFF
        if tail != first:
            # Stamped once all are queued: ``claim`` may have slept (pacing).
            t_sub = now_ns(clock)
            k = first
            while k != tail:
                slots[S_START, np.int64(sq[sq_array_i + (k & sq_mask)])] = t_sub
                k = (k + 1) & 0xFFFFFFFF
            sq[sq_tail_i] = tail  # publish; the system call below orders it
            pending += (tail - first) & 0xFFFFFFFF
        if inflight + pending == 0:
            if cur[Q_FINISHED] != 0 or ctl[K_STOP] != 0:
                break
            continue
        # Submit, then wait for a completion in a second call, as fio does:
        # measured here, one combined call (submit + wait) made the kernel
        # sleep right after queueing and was up to 25 % slower at depth 32.
        ret = 0
        if pending > 0:
            ret = _syscall(SYS_IO_URING_ENTER, ring_fd, pending, 0, 0, 0, 0)
        if ret >= 0:
            pending -= ret
            inflight += ret
        else:
            err = errno[0]
            if err != EINTR and err != ETIME and err != EAGAIN and err != EBUSY:
                # The kernel refuses what is queued: take it back (it never
                # started) and free its slots.
                head = np.int64(sq[sq_head_i])
                while head != tail:
                    s = np.int64(sq[sq_array_i + (head & sq_mask)])
                    release(job, cur, slots, s, err, cnt, ctl)
                    head = (head + 1) & 0xFFFFFFFF
                tail = np.int64(sq[sq_head_i])
                sq[sq_tail_i] = tail
                pending = 0
        if inflight > 0:
            # EINTR or a pacing timeout (ETIME) just loop; completions ready
            # are reaped below either way.
            if timed_waits and cur[Q_NFREE] > 0 and cur[Q_FINISHED] == 0:
                wait = max(cur[Q_DUE] - now_ns(clock), 1000)
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
            t_done = now_ns(clock)
            while head != ctail:
                w = cqes_w + (head & cq_mask) * 2  # a CQE is 16 bytes = 2 words
                res = np.int64(cq64[w + 1] & np.uint64(0xFFFFFFFF))
                if res >= 0x80000000:
                    res -= 0x100000000  # the low word is the signed 32-bit result
                complete(
                    job, cur, slots, np.int64(cq64[w]), res, t_done,
                    buf64, ctl, cnt, flt, hist,
                )  # fmt: skip
                inflight -= 1
                head = (head + 1) & 0xFFFFFFFF
            cq32[cq_head_i] = head
        publish_progress(job, cur, slots, ctl)
    return cur[Q_DONE]


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
