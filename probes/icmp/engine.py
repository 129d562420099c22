"""The native ICMP echo send/receive loop (numba ``nogil``), one call per time slice.

Contract:
- ``run_slice(...)`` sends and receives on one socket until ``deadline_ns``
  (monotonic), reads what is already queued on the socket (replies that
  arrived in the interval count in it) and returns ``SLICE_DEADLINE``, or
  returns ``SLICE_DONE`` once sending has stopped (count reached, or
  ``control[0]`` set to ``DRAIN``; with ``cfg[C_COUNT_REPLIES]`` the count
  is of echo replies, as ping -c N -w S) and nothing is in flight, or at once
  when ``control[0]`` is ``ABORT``. No request is sent at or after
  ``cfg[C_SEND_UNTIL]`` (the run's deadline, ping -w S; 0: none): the loop
  then only receives until it is drained (the runner's stop at --time).
  Another thread may write ``control`` at any time: the loop re-reads it
  every turn.
  Every send is followed by a read, so sending can never starve receiving.
  It never holds the GIL, so several streams run on several cores, and it
  returns only at interval ends: each return must re-take the GIL, which a
  busy UI thread may hold for up to the 5 ms switch interval.
- Every per-packet cost (sendto, recvmsg, the clock, sequence bookkeeping,
  the RTT histogram) is native: libc is called through ctypes function
  pointers that numba compiles into the loop. No Python, no scapy, per packet.
- RTT is ping's: from the CLOCK_MONOTONIC time just before sendto to the
  kernel's receive timestamp of the reply (SO_TIMESTAMPNS, CLOCK_REALTIME,
  converted with the realtime - monotonic offset read once per slice), so it
  leaves out the receiver's wake-up. A reply without a plausible stamp (none,
  or before its request or after recvmsg returned: a clock step) is timed by
  the monotonic clock read after recvmsg, once, and counted in
  ``S_USER_STAMPED``.
- The loop only adds to the interval arrays (``counters``, ``rtt_sums``,
  ``histogram``, errno tallies, the error-packet ring); the calling thread
  copies and zeroes them between slices (``loopstate.IntervalArrays.take``;
  ``loopstate.LoopState`` holds every array and makes the call).
- With the reply log on (``cfg[C_LOG]`` rows, headless text without -q),
  each echo reply and duplicate is logged (seq, TTL, ICMP bytes, RTT,
  arrival: layout.L_*) for ping's per-reply lines; with ``C_LOG_RETURN``
  the loop returns ``SLICE_REPLY`` after each, so the line is printed as the
  reply arrives. ``state[S_LAST_TTL]`` is the last reply's TTL: a raw IPv4
  reply's header byte, else the IP_TTL / IPV6_HOPLIMIT cmsg.
- Sequence space: 16 bits on the wire, 64 bits in ``state``. A request is
  *in flight* until its reply arrives or ``grace_ns`` passes (then *lost*). If
  the 16-bit slot is needed again before that (65536 sends within the grace
  period), the old request is declared lost early and counted in ``wrapped``.

This module imports numba and numpy at the top: import it lazily.
"""

from __future__ import annotations

from typing import Any

from probetop.probes.core import native_cache, numba_target

# Before numba loads: its cache goes to a per-user directory (or is off), so
# any user can run the flood (nobody without a home got a RuntimeError).
CACHE = native_cache.enabled()
native_cache.claim(__file__)  # this tree's entry: kept while we run; stale ones pruned

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import types  # noqa: E402
from probetop.probes.icmp.layout import (  # noqa: E402
    ABORT,
    BURST_BYTES,
    BURST_PACKET_OVERHEAD,
    C_ADAPT_FLOOR,
    C_ADAPTIVE,
    C_ADDRLEN,
    C_CHECK_IDENT,
    C_COUNT,
    C_COUNT_REPLIES,
    C_CSUM_PARTIAL,
    C_FD,
    C_GRACE,
    C_IDENT,
    C_LOG,
    C_LOG_RETURN,
    C_OUTSTANDING,
    C_PACED,
    C_PERIOD,
    C_PKTLEN,
    C_PRELOAD,
    C_RAW,
    C_SEND_UNTIL,
    C_V6,
    CLOCK_MONOTONIC,
    CLOCK_REALTIME,
    CONTROL_POLL_NS,
    DRAIN,
    EAGAIN,
    EDGE_READS,
    EINTR,
    ENOBUFS,
    ENOMEM,
    ERR_BYTES,
    ERR_RING,
    FLOOD_IDLE_NS,
    HIST_LINEAR,
    HIST_SIZE,
    HIST_SUB,
    HIST_SUB_BITS,
    IN_FLIGHT,
    IP_TTL,
    IPPROTO_IP,
    IPPROTO_IPV6,
    IPV6_HOPLIMIT,
    K_DUPS,
    K_ICMP_ERRS,
    K_JITTER_MAX,
    K_JITTER_N,
    K_LATE,
    K_LOSS_RUN_SUM,
    K_LOSS_RUN_SUMSQ,
    K_LOSS_RUNS,
    K_LOST,
    K_MISSED,
    K_RECEIVED,
    K_RECV_ERRS,
    K_REORDERED,
    K_REPLY_RUN_SUM,
    K_REPLY_RUN_SUMSQ,
    K_REPLY_RUNS,
    K_RTT_MAX,
    K_RTT_MIN,
    K_SEND_ERRS,
    K_SENT,
    K_STRAY,
    K_WRAPPED,
    L_AT,
    L_BYTES,
    L_KIND,
    L_RTT,
    L_SEQ,
    L_TTL,
    LATE,
    LOST,
    M_CONTROLLEN,
    M_NAMELEN,
    MAX_BACKLOG_NS,
    MSG_DONTWAIT,
    OFFSET_TIGHT_NS,
    OFFSET_TRIES,
    POLLIN,
    R_JITTER,
    R_SUM,
    R_SUMSQ,
    REPLIED,
    ROW_DUPLICATE,
    ROW_NO_ANSWER,
    ROW_REPLY,
    S_EWMA8,
    S_FIRST_RUN_DONE,
    S_FIRST_SEND,
    S_HEAD,
    S_IN_FLIGHT,
    S_LAST_RTT,
    S_LAST_SEND,
    S_LAST_TTL,
    S_LOG_DROPPED,
    S_LOG_N,
    S_MAX_RX,
    S_NEXT_SEND,
    S_PIPE,
    S_PREV_OUTCOME,
    S_REPLIES,
    S_RETURNED,
    S_RUN_LEN,
    S_SEND_END,
    S_TAIL,
    S_USER_STAMPED,
    SCM_TIMESTAMPNS,
    SLICE_DEADLINE,
    SLICE_DONE,
    SLICE_REPLY,
    SLOTS,
    SOL_SOCKET,
    SPIN_NS,
)

# numba's CPU target filled now, without scipy.linalg (0.25 s of CPU): see
# probes/core/numba_target.py.
numba_target.load()

# -- libc, by symbol name: numba links the calls into the loop and, unlike ctypes
# function pointers, can cache the compiled loop on disk (no JIT on later runs).
# Pointers are passed as intp (the same ABI as void * on Linux).
_ptr, _int, _size = types.intp, types.int32, types.uintp
_sendto: Any = types.ExternalFunction(
    "sendto", types.intp(_int, _ptr, _size, _int, _ptr, types.uint32)
)
_recvmsg: Any = types.ExternalFunction("recvmsg", types.intp(_int, _ptr, _int))
_clock_gettime: Any = types.ExternalFunction("clock_gettime", _int(_int, _ptr))
_ppoll: Any = types.ExternalFunction("ppoll", _int(_ptr, types.uint64, _ptr, _ptr))
_errno_location: Any = types.ExternalFunction("__errno_location", _ptr())
_memcpy: Any = types.ExternalFunction("memcpy", _ptr(_ptr, _ptr, _size))


@numba.njit(nogil=True, cache=CACHE)
def hist_index(value: int) -> int:
    """Histogram bucket of a non-negative value (ns)."""
    if value < HIST_LINEAR:
        return max(value, 0)
    bits = HIST_SUB_BITS + 1
    while (value >> (bits + 1)) != 0:
        bits += 1
    sub = (value >> (bits - HIST_SUB_BITS)) & (HIST_SUB - 1)
    idx = HIST_LINEAR + (bits - HIST_SUB_BITS - 1) * HIST_SUB + sub
    return min(idx, HIST_SIZE - 1)


@numba.njit(nogil=True, inline="always", cache=CACHE)
def _now_at(ts: Any, ts_ptr: int) -> int:
    """CLOCK_MONOTONIC ns, read through ``ts`` whose address ``ts_ptr`` the caller
    took once: each ``.ctypes`` of an array takes and drops a reference (two
    atomic operations), which per packet costs more than the vDSO clock read."""
    _clock_gettime(CLOCK_MONOTONIC, ts_ptr)
    return ts[0] * 1_000_000_000 + ts[1]


@numba.njit(nogil=True, cache=CACHE)
def _now(ts: Any) -> int:
    return _now_at(ts, ts.ctypes.data)


@numba.njit(nogil=True, cache=CACHE)
def _clock_offset(ts: Any) -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC (ns): the realtime read between two
    monotonic ones, from the narrowest of a few tries.

    One try is off by as long as the thread lost the CPU between its reads; on
    a loaded host that is longer than a loopback RTT, and every stamp of the
    slice would then fall outside [sent, now] and be timed in user space.
    """
    best_width = -1
    best = 0
    for _ in range(OFFSET_TRIES):
        before = _now(ts)
        _clock_gettime(CLOCK_REALTIME, ts.ctypes.data)
        real = ts[0] * 1_000_000_000 + ts[1]
        after = _now(ts)
        width = after - before
        if best_width < 0 or width < best_width:
            best_width = width
            best = real - (before + width // 2)
        if width <= OFFSET_TIGHT_NS:
            break
    return best


@numba.njit(nogil=True, cache=CACHE)
def _find_cmsg(msg: Any, cmsg: Any, level: int, kind: int, data_bytes: int) -> int:
    """The word index of the data of the last recvmsg's (level, kind) cmsg,
    or -1 if absent or shorter than ``data_bytes`` (cut short: MSG_CTRUNC)."""
    end = min(msg[M_CONTROLLEN], cmsg.shape[0] * 8)
    w = 0
    while w * 8 + 16 <= end:
        length = cmsg[w]
        if length < 16:
            break  # malformed: the walk could not advance
        head = cmsg[w + 1]  # cmsg_level, then cmsg_type (little-endian int32s)
        if (head & 0xFFFFFFFF) == level and (head >> 32) == kind:
            if length < 16 + data_bytes or w * 8 + 16 + data_bytes > end:
                return -1
            return w + 2
        w += (length + 7) >> 3  # CMSG_NXTHDR: headers are 8-byte aligned
    return -1


@numba.njit(nogil=True, cache=CACHE)
def kernel_stamp(msg: Any, cmsg: Any, offset: int) -> int:
    """The SCM_TIMESTAMPNS cmsg of the last recvmsg as monotonic ns, or -1 if absent.

    ``msg`` and ``cmsg`` are the int64 msghdr and control buffer
    (layout.M_*); ``offset`` is realtime - monotonic (``_clock_offset``).
    """
    w = _find_cmsg(msg, cmsg, SOL_SOCKET, SCM_TIMESTAMPNS, 16)
    if w < 0:
        return -1
    return cmsg[w] * 1_000_000_000 + cmsg[w + 1] - offset


@numba.njit(nogil=True, cache=CACHE)
def cmsg_ttl(msg: Any, cmsg: Any, v6: bool) -> int:
    """The IP_TTL (IPv4) / IPV6_HOPLIMIT cmsg of the last recvmsg, or -1 if absent."""
    if v6:
        w = _find_cmsg(msg, cmsg, IPPROTO_IPV6, IPV6_HOPLIMIT, 4)
    else:
        w = _find_cmsg(msg, cmsg, IPPROTO_IP, IP_TTL, 4)
    return -1 if w < 0 else cmsg[w] & 0xFF  # the int's low byte (TTL <= 255)


@numba.njit(nogil=True, cache=CACHE)
def reply_time(sent: int, kernel: int, now: int) -> int:
    """When a reply arrived: the kernel stamp if it lies in [sent, now], else ``now``."""
    if kernel >= sent and kernel <= now:
        return kernel
    return now


@numba.njit(nogil=True, cache=CACHE)
def _errno(scratch: Any) -> int:
    _memcpy(scratch.ctypes.data, _errno_location(), 4)
    return scratch[0]


@numba.njit(nogil=True, cache=CACHE)
def _resolved(st: Any, ctr: Any, replied: bool) -> None:
    """Count the loss pattern as requests resolve in send order (K_REPLY_RUNS...)."""
    outcome = 1 if replied else 0
    if st[S_PREV_OUTCOME] == outcome:
        st[S_RUN_LEN] += 1
        return
    if st[S_PREV_OUTCOME] >= 0:
        n = st[S_RUN_LEN]
        if st[S_FIRST_RUN_DONE] == 0:
            st[S_FIRST_RUN_DONE] = 1
        elif st[S_PREV_OUTCOME] == 1:
            ctr[K_REPLY_RUNS] += 1
            ctr[K_REPLY_RUN_SUM] += n
            ctr[K_REPLY_RUN_SUMSQ] += n * n
        else:
            ctr[K_LOSS_RUNS] += 1
            ctr[K_LOSS_RUN_SUM] += n
            ctr[K_LOSS_RUN_SUMSQ] += n * n
    st[S_PREV_OUTCOME] = outcome
    st[S_RUN_LEN] = 1


@numba.njit(nogil=True, cache=CACHE)
def _sweep(now: int, cfg: Any, st: Any, slot_state: Any, slot_sent: Any, ctr: Any) -> None:
    """Resolve the oldest requests: replied ones leave, unanswered ones past grace are lost."""
    grace = cfg[C_GRACE]
    while st[S_TAIL] < st[S_HEAD]:
        slot = st[S_TAIL] & (SLOTS - 1)
        state = slot_state[slot]
        if state == IN_FLIGHT:
            if now - slot_sent[slot] < grace:
                return
            slot_state[slot] = LOST
            ctr[K_LOST] += 1
            st[S_IN_FLIGHT] -= 1
            _resolved(st, ctr, False)
        else:
            _resolved(st, ctr, state == REPLIED)
        st[S_TAIL] += 1


@numba.njit(nogil=True, cache=CACHE)
def _on_packet(
    now: int,
    kernel: int,
    ttl: int,
    n: int,
    buf: Any,
    src: Any,
    cfg: Any,
    st: Any,
    slot_state: Any,
    slot_sent: Any,
    ctr: Any,
    rtt_sums: Any,
    hist: Any,
    icmp_types: Any,
    err_ring: Any,
    err_len: Any,
    err_src: Any,
    log: Any,
) -> None:
    """Account one received datagram (echo reply or ICMP error); ``now`` is the
    monotonic time after recvmsg returned, ``kernel`` the kernel's receive
    stamp in the same clock (-1: none), ``ttl`` the reply's TTL (-1: unknown
    yet; a raw IPv4 reply carries it in its header). With the reply log on
    (``cfg[C_LOG]`` rows), each echo reply and duplicate is logged."""
    v6 = cfg[C_V6] != 0
    off = 0
    if cfg[C_RAW] != 0 and not v6:
        off = (buf[0] & 0x0F) * 4  # raw IPv4 sockets deliver the IP header too
    if n < off + 8:
        ctr[K_STRAY] += 1
        return
    icmp_type = buf[off]
    reply_type = 129 if v6 else 0
    if icmp_type != reply_type:
        # An ICMP error quoting one of our requests: check the quoted id.
        inner = off + 8
        if v6:
            if n < inner + 48 or buf[inner + 6] != 58:
                ctr[K_STRAY] += 1
                return
            q = inner + 40
            quoted_type = 128
        else:
            if n < inner + 28:
                ctr[K_STRAY] += 1
                return
            q = inner + (buf[inner] & 0x0F) * 4
            quoted_type = 8
            if n < q + 8:
                ctr[K_STRAY] += 1
                return
        quoted_id = (np.int64(buf[q + 4]) << 8) | buf[q + 5]
        if buf[q] != quoted_type or (cfg[C_CHECK_IDENT] != 0 and quoted_id != cfg[C_IDENT]):
            ctr[K_STRAY] += 1
            return
        ctr[K_ICMP_ERRS] += 1
        icmp_types[icmp_type] += 1
        k = ctr[K_ICMP_ERRS] - 1
        if k < ERR_RING:
            m = min(n, ERR_BYTES)
            err_ring[k, :m] = buf[:m]
            err_len[k] = m
            err_src[k, :] = src[:]
        return
    ident = (np.int64(buf[off + 4]) << 8) | buf[off + 5]
    if cfg[C_CHECK_IDENT] != 0 and ident != cfg[C_IDENT]:
        ctr[K_STRAY] += 1
        return
    seq16 = (np.int64(buf[off + 6]) << 8) | buf[off + 7]
    newest = st[S_HEAD] - 1
    seq = newest - ((newest - seq16) & (SLOTS - 1))
    if seq < 0:
        ctr[K_STRAY] += 1
        return
    state = slot_state[seq16]
    if off > 0:
        ttl = buf[8]  # the IPv4 header's TTL
    if state == IN_FLIGHT or state == REPLIED:  # noqa: SIM109 (numba: plain compares)
        st[S_LAST_TTL] = ttl
        if cfg[C_LOG] > 0:
            # ping's per-reply line: seq, ttl, ICMP bytes, rtt, arrival (and DUP!)
            sent = slot_sent[seq16]
            at = reply_time(sent, kernel, now)
            row = st[S_LOG_N]
            if row < cfg[C_LOG]:
                log[row, L_SEQ] = seq
                log[row, L_TTL] = ttl
                log[row, L_BYTES] = n - off
                log[row, L_RTT] = at - sent
                log[row, L_AT] = at
                log[row, L_KIND] = ROW_DUPLICATE if state == REPLIED else ROW_REPLY
                st[S_LOG_N] = row + 1
            else:
                st[S_LOG_DROPPED] += 1
    if state == IN_FLIGHT:
        sent = slot_sent[seq16]
        at = reply_time(sent, kernel, now)
        if at != kernel:
            st[S_USER_STAMPED] += 1
        rtt = at - sent
        slot_state[seq16] = REPLIED
        st[S_IN_FLIGHT] -= 1
        st[S_REPLIES] += 1
        ctr[K_RECEIVED] += 1
        if ctr[K_RTT_MIN] < 0 or rtt < ctr[K_RTT_MIN]:
            ctr[K_RTT_MIN] = rtt
        if rtt > ctr[K_RTT_MAX]:
            ctr[K_RTT_MAX] = rtt
        f = np.float64(rtt)
        rtt_sums[R_SUM] += f
        rtt_sums[R_SUMSQ] += f * f
        if st[S_LAST_RTT] >= 0:
            jitter = abs(rtt - st[S_LAST_RTT])
            ctr[K_JITTER_N] += 1
            rtt_sums[R_JITTER] += np.float64(jitter)
            if jitter > ctr[K_JITTER_MAX]:
                ctr[K_JITTER_MAX] = jitter
        st[S_LAST_RTT] = rtt
        # ping's pipe: requests out when this reply came (sent - seq from 1 + 1),
        # within half the 16-bit sequence space, as iputils acknowledge() counts.
        pipe = st[S_HEAD] - seq
        if pipe > st[S_PIPE] and pipe <= 0x8000:
            st[S_PIPE] = pipe
        # ping's ewma: whole us x 8; the first reply (or a decay to 0) restarts it.
        us = rtt // 1000
        if st[S_EWMA8] == 0:
            st[S_EWMA8] = us * 8
        else:
            st[S_EWMA8] += us - st[S_EWMA8] // 8
        hist[hist_index(rtt)] += 1
        if seq < st[S_MAX_RX]:
            ctr[K_REORDERED] += 1
        else:
            st[S_MAX_RX] = seq
    elif state == REPLIED or state == LATE:  # noqa: SIM109 (numba: plain compares)
        ctr[K_DUPS] += 1
    elif state == LOST:
        slot_state[seq16] = LATE
        ctr[K_LATE] += 1
    else:
        ctr[K_STRAY] += 1


@numba.njit(nogil=True, inline="always", cache=CACHE)
def _receive(
    fd: int,
    ts: Any,
    ts_ptr: int,
    msg: Any,
    msg_ptr: int,
    cmsg: Any,
    offset: int,
    buf: Any,
    src: Any,
    cfg: Any,
    st: Any,
    slot_state: Any,
    slot_sent: Any,
    ctr: Any,
    rtt_sums: Any,
    hist: Any,
    icmp_types: Any,
    err_ring: Any,
    err_len: Any,
    err_src: Any,
    log: Any,
) -> tuple[int, int]:
    """Read one datagram without waiting and account it (``_on_packet``);
    (its length or -1 with errno set, the time read just after the call).
    ``msg`` already points at ``src``, ``buf`` (one iovec) and ``cmsg``."""
    # The kernel rewrites the in/out lengths on every call.
    msg[M_NAMELEN] = src.shape[0]
    msg[M_CONTROLLEN] = cmsg.shape[0] * 8
    n = _recvmsg(fd, msg_ptr, MSG_DONTWAIT)
    now = _now_at(ts, ts_ptr)
    if n >= 0:
        # Raw IPv4 replies carry their TTL in the header (_on_packet reads
        # it); other sockets get it as a cmsg, walked only for them.
        ttl = -1 if cfg[C_RAW] != 0 and cfg[C_V6] == 0 else cmsg_ttl(msg, cmsg, cfg[C_V6] != 0)
        _on_packet(
            now, kernel_stamp(msg, cmsg, offset), ttl, n, buf, src, cfg, st, slot_state,
            slot_sent, ctr, rtt_sums, hist, icmp_types, err_ring, err_len, err_src, log,
        )  # fmt: skip
    return n, now


@numba.njit(nogil=True, cache=CACHE)
def run_slice(
    deadline_ns: int,
    control: Any,
    control_copy: Any,
    cfg: Any,
    st: Any,
    packet: Any,
    addr: Any,
    buf: Any,
    src: Any,
    msg: Any,
    cmsg: Any,
    slot_state: Any,
    slot_sent: Any,
    ctr: Any,
    rtt_sums: Any,
    hist: Any,
    send_errnos: Any,
    recv_errnos: Any,
    icmp_types: Any,
    err_ring: Any,
    err_len: Any,
    err_src: Any,
    log: Any,
    ts: Any,
    pollfd: Any,
    scratch: Any,
) -> int:
    """Send and receive until the deadline; see the module docstring."""
    fd = cfg[C_FD]
    paced = cfg[C_PACED] != 0
    period = cfg[C_PERIOD]
    preload = cfg[C_PRELOAD]
    count = cfg[C_COUNT]
    count_replies = cfg[C_COUNT_REPLIES] != 0
    pktlen = cfg[C_PKTLEN]
    fix_checksum = cfg[C_RAW] != 0 and cfg[C_V6] == 0
    partial = cfg[C_CSUM_PARTIAL]
    log_return = cfg[C_LOG_RETURN] != 0
    send_until = cfg[C_SEND_UNTIL]
    adaptive = cfg[C_ADAPTIVE] != 0
    adapt_floor = cfg[C_ADAPT_FLOOR]
    outstanding = cfg[C_OUTSTANDING] != 0 and cfg[C_LOG] > 0
    # Once per slice: the clocks only drift apart by a step, which the
    # plausibility check in _on_packet catches.
    offset = _clock_offset(ts)
    # Buffer addresses read once: every `.ctypes` in the loop would cost a
    # reference taken and dropped (two atomic operations) per packet.
    ts_ptr = ts.ctypes.data
    msg_ptr = msg.ctypes.data
    packet_ptr = packet.ctypes.data
    addr_ptr = addr.ctypes.data
    control_ptr = control.ctypes.data
    copy_ptr = control_copy.ctypes.data
    now = _now_at(ts, ts_ptr)
    # Requests sent in a row without a read (ping -l N's burst, see below).
    burst = 0
    burst_cap = max(1, BURST_BYTES // (pktlen + BURST_PACKET_OVERHEAD))
    while True:
        if now >= deadline_ns:
            # Replies already queued on the socket arrived in this interval:
            # count them here, not in the next one (bounded: strays cannot hold
            # the loop past the edge for long).
            for _ in range(EDGE_READS):
                n, at = _receive(
                    fd, ts, ts_ptr, msg, msg_ptr, cmsg, offset, buf, src, cfg, st, slot_state,
                    slot_sent, ctr, rtt_sums, hist, icmp_types, err_ring, err_len, err_src, log,
                )  # fmt: skip
                if n < 0:
                    break
                now = at
            st[S_RETURNED] = now
            return SLICE_DEADLINE
        # An opaque copy, so the compiler cannot hoist the read out of the loop.
        _memcpy(copy_ptr, control_ptr, 8)
        command = control_copy[0]
        if command == ABORT:
            st[S_RETURNED] = now
            return SLICE_DEADLINE
        _sweep(now, cfg, st, slot_state, slot_sent, ctr)
        answered = count_replies and count > 0 and st[S_REPLIES] >= count
        counted = count > 0 and (answered or (not count_replies and st[S_HEAD] >= count))
        # ping -w S: nothing is sent at or after the deadline (the loop, not
        # the runner's stop a moment later, decides: that stop came late
        # under load and let one more request out, counted sent and lost).
        expired = send_until > 0 and now >= send_until
        sending = command != DRAIN and not counted and not expired
        # ping -A (iputils update_interval): once a reply came, the period is
        # the RTT ewma in whole ms ((ewma + 500 us) / 1 ms), at least the floor
        # (2 ms for a user, none for root); 0 paces by the replies, as a flood.
        # Before the first reply, -i's period (1 s by default).
        adapted = adaptive and st[S_EWMA8] > 0
        paced_now = paced
        period_now = period
        if adapted:
            period_now = max(((st[S_EWMA8] // 8 + 500) // 1000) * 1000000, adapt_floor)
            paced_now = period_now > 0
        if not sending and st[S_SEND_END] == 0:
            # --count reached: sending ended one period after the last request
            # (ping -c N -i P takes N x P); the deadline: at it; a drain or N
            # replies: now.
            st[S_SEND_END] = now
            if command != DRAIN and counted and paced_now and st[S_HEAD] > 0 and not answered:
                st[S_SEND_END] = st[S_LAST_SEND] + period_now
            elif command != DRAIN and not counted:
                st[S_SEND_END] = send_until
        # After N replies (ping -c N -w S) the requests still unanswered are
        # awaited (at most --grace, and the deadline) as after -c N requests:
        # ping exits at the Nth reply and counts them lost; ending here would
        # leave them in flight, never lost, and print 0 % where ping said 40 %.
        # Past the deadline alone the loop goes on receiving: the run ends
        # when the runner stops it at --time, as it did before the deadline.
        if not sending and st[S_IN_FLIGHT] == 0 and (command == DRAIN or counted):
            st[S_RETURNED] = now
            return SLICE_DONE
        # -- send --------------------------------------------------------
        if sending:
            if adapted and paced_now:
                due = now >= st[S_LAST_SEND] + period_now
            elif paced_now:
                due = now >= st[S_NEXT_SEND]
            else:
                # ping -f (iputils): the window is the requests sent after the
                # newest one answered, so a lost request stops holding it as
                # soon as a later one is answered (it stays in the slot table
                # until the grace decides it, and a late reply still matches);
                # with the window full, a request goes out after 10 ms anyway.
                window = st[S_HEAD] - 1 - st[S_MAX_RX]
                due = window < preload or now - st[S_LAST_SEND] >= FLOOD_IDLE_NS
            if due and send_until > 0 and _now_at(ts, ts_ptr) >= send_until:
                due = False  # the deadline passed since ``now`` was read
            if due:
                head = st[S_HEAD]
                if head - st[S_TAIL] >= SLOTS:
                    # The slot is needed again before its grace ran out.
                    old = st[S_TAIL] & (SLOTS - 1)
                    if slot_state[old] == IN_FLIGHT:
                        slot_state[old] = LOST
                        ctr[K_LOST] += 1
                        ctr[K_WRAPPED] += 1
                        st[S_IN_FLIGHT] -= 1
                        _resolved(st, ctr, False)
                    else:
                        _resolved(st, ctr, slot_state[old] == REPLIED)
                    st[S_TAIL] += 1
                if outstanding and head > 0:
                    # ping -O (iputils pinger): the request before this one
                    # not answered yet (a late reply counts, as ping's
                    # rcvd_test) gets its line now, before this one goes out.
                    before = slot_state[(head - 1) & (SLOTS - 1)]
                    if before != REPLIED and before != LATE:
                        row = st[S_LOG_N]
                        if row < cfg[C_LOG]:
                            log[row, L_SEQ] = head - 1
                            log[row, L_TTL] = -1
                            log[row, L_BYTES] = 0
                            log[row, L_RTT] = 0
                            log[row, L_AT] = now
                            log[row, L_KIND] = ROW_NO_ANSWER
                            st[S_LOG_N] = row + 1
                        else:
                            st[S_LOG_DROPPED] += 1
                seq16 = head & (SLOTS - 1)
                packet[6] = seq16 >> 8
                packet[7] = seq16 & 0xFF
                if fix_checksum:
                    s = partial + seq16
                    s = (s & 0xFFFF) + (s >> 16)
                    s = (s & 0xFFFF) + (s >> 16)
                    c = (~s) & 0xFFFF
                    packet[2] = c >> 8
                    packet[3] = c & 0xFF
                t_send = _now_at(ts, ts_ptr)
                if st[S_FIRST_SEND] == 0:
                    st[S_FIRST_SEND] = t_send
                r = _sendto(fd, packet_ptr, pktlen, MSG_DONTWAIT, addr_ptr, cfg[C_ADDRLEN])
                if r < 0:
                    e = _errno(scratch)
                    if e != EINTR:
                        ctr[K_SEND_ERRS] += 1
                        send_errnos[min(e, send_errnos.shape[0] - 1)] += 1
                    if e != EINTR and e != EAGAIN and e != ENOBUFS and e != ENOMEM:
                        # A hard local error (no route, blackhole, EMSGSIZE,
                        # firewall): as ping, the request counts as sent and
                        # is lost at once, and it uses up one of --count, so
                        # loss % and the duration mean what ping's do (before,
                        # 10 of 30 unsendable requests read 0 % loss, 40 sends).
                        slot_state[seq16] = LOST
                        slot_sent[seq16] = t_send
                        st[S_HEAD] = head + 1
                        ctr[K_SENT] += 1
                        ctr[K_LOST] += 1
                else:
                    slot_state[seq16] = IN_FLIGHT
                    slot_sent[seq16] = t_send
                    st[S_HEAD] = head + 1
                    st[S_IN_FLIGHT] += 1
                    ctr[K_SENT] += 1
                st[S_LAST_SEND] = t_send
                # The grid starts at the first request actually sent, as
                # ping's: anchored at the stream's planned start, a first
                # request late by the thread's start (6 ms under load) pulled
                # every later one that much earlier, and -c 3 -i 0.2 took
                # 394 ms where ping takes 400.
                if head == 0 and paced_now and not adapted:
                    st[S_NEXT_SEND] = max(st[S_NEXT_SEND], t_send)
                # ping -l N, paced: the first N requests go out at once (its
                # token bucket starts with N - 1 intervals), then one a period.
                if adapted and paced_now:
                    st[S_NEXT_SEND] = t_send + period_now
                elif paced_now and head + 1 >= preload:
                    nxt = st[S_NEXT_SEND] + period
                    # Absolute deadlines keep the long-run rate exact: after a short
                    # stall (preemption) the loop catches up at full speed; after a
                    # stall longer than MAX_BACKLOG_NS it resumes from now instead.
                    if t_send - nxt > MAX_BACKLOG_NS:
                        ctr[K_MISSED] += (t_send - nxt) // period
                        nxt = t_send
                    st[S_NEXT_SEND] = nxt
                # ping -l N: its N requests go out back to back, before it reads
                # (on loopback each reply is queued during sendto, so reading
                # between them kept one request out, ping's ``pipe`` 1 where
                # ping's is N). Only while the window has room and at most
                # ``burst_cap`` requests (a bounded share of the receive
                # buffer); otherwise no `continue`: a send is followed by a
                # read, so a sender that is always due (a paced rate above
                # what the loop can send) cannot starve the receiver (issue:
                # 0 replies/s in a flood's interval, replies dropped by a full
                # socket buffer).
                if paced_now:
                    room = head + 1 < preload and st[S_NEXT_SEND] <= t_send
                else:
                    room = st[S_HEAD] - 1 - st[S_MAX_RX] < preload
                if r >= 0 and room and burst + 1 < burst_cap:
                    burst += 1
                    now = _now_at(ts, ts_ptr)
                    continue
        burst = 0
        # -- receive -----------------------------------------------------
        n, now = _receive(
            fd, ts, ts_ptr, msg, msg_ptr, cmsg, offset, buf, src, cfg, st, slot_state, slot_sent,
            ctr, rtt_sums, hist, icmp_types, err_ring, err_len, err_src, log,
        )  # fmt: skip
        if n >= 0:
            if log_return and st[S_LOG_N] > 0:
                st[S_RETURNED] = now
                return SLICE_REPLY
            continue
        e = _errno(scratch)
        if e != EAGAIN and e != EINTR:
            ctr[K_RECV_ERRS] += 1
            recv_errnos[min(e, recv_errnos.shape[0] - 1)] += 1
            continue
        if log_return and st[S_LOG_N] > 0:
            # A row logged at a send (ping -O's line) is printed before the
            # loop sleeps, not at the next reply or the interval's end.
            st[S_RETURNED] = now
            return SLICE_REPLY
        # -- nothing to read: wait until the next thing to do -------------
        # Sleep at most CONTROL_POLL_NS, so a drain or abort request is seen soon.
        wake = min(deadline_ns, now + CONTROL_POLL_NS)
        if sending:
            if adapted and paced_now:
                wake = min(wake, st[S_LAST_SEND] + period_now)
            elif paced_now:
                wake = min(wake, st[S_NEXT_SEND])
            elif st[S_HEAD] - 1 - st[S_MAX_RX] < preload:
                wake = now  # the preload window has room: send on at once
            else:
                wake = min(wake, st[S_LAST_SEND] + FLOOD_IDLE_NS)
        if st[S_TAIL] < st[S_HEAD]:
            wake = min(wake, slot_sent[st[S_TAIL] & (SLOTS - 1)] + cfg[C_GRACE])
        wait = wake - now
        if wait > SPIN_NS:
            wait -= SPIN_NS // 2
            ts[0] = wait // 1_000_000_000
            ts[1] = wait % 1_000_000_000
            pollfd[1] = POLLIN
            _ppoll(pollfd.ctypes.data, 1, ts_ptr, 0)
            now = _now_at(ts, ts_ptr)
