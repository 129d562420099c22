"""The Python side of one stream's native loop: the arrays it keeps across
slices and those it adds to in an interval.

Contract: ``make_config(...)`` builds the loop's config array;
``LoopState(config, packet, addr, start_ns, control)`` holds every array
``engine.run_slice`` reads and writes and calls it once per slice
(``run_slice(deadline_ns)``: one native call, no Python per packet);
``LoopState.interval`` is an ``IntervalArrays``, which ``take()`` copies and
zeroes between slices. The loop itself is ``engine``'s ``run_slice``: the
object code ``probetop compile`` kept (``core.native_objects``: loaded in
milliseconds, numba not imported) when it was built from these sources on
this CPU, else numba's (the same code); ``keep_loop()`` keeps it. This
module imports numpy: import it lazily.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from probetop.probes.core import native_objects
from probetop.probes.icmp.layout import (
    ADDR_BYTES,
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
    CONTROL_WORDS,
    ERR_BYTES,
    ERR_RING,
    FLOOD_IDLE_NS,
    HIST_SIZE,
    K_RTT_MIN,
    M_CONTROL,
    M_IOV,
    M_IOVLEN,
    M_NAME,
    MAX_IP_HEADER,
    N_CONFIG,
    N_COUNTERS,
    N_LOG,
    N_MSGHDR,
    N_STATE,
    N_SUMS,
    S_EWMA8,
    S_FIRST_SEND,
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
    S_RETURNED,
    S_SEND_END,
    S_TAIL,
    S_USER_STAMPED,
    SLOTS,
)


@dataclass
class IntervalArrays:
    """What one stream's loop adds to during an interval; ``take`` snapshots and zeroes."""

    counters: np.ndarray = field(default_factory=lambda: _fresh_counters())
    rtt_sums: np.ndarray = field(default_factory=lambda: own_lines(N_SUMS, np.float64))
    histogram: np.ndarray = field(default_factory=lambda: own_lines(HIST_SIZE, np.int64))
    send_errnos: np.ndarray = field(default_factory=lambda: np.zeros(256, np.int64))
    recv_errnos: np.ndarray = field(default_factory=lambda: np.zeros(256, np.int64))
    icmp_types: np.ndarray = field(default_factory=lambda: np.zeros(256, np.int64))
    err_ring: np.ndarray = field(default_factory=lambda: np.zeros((ERR_RING, ERR_BYTES), np.uint8))
    err_len: np.ndarray = field(default_factory=lambda: np.zeros(ERR_RING, np.int64))
    err_src: np.ndarray = field(default_factory=lambda: np.zeros((ERR_RING, ADDR_BYTES), np.uint8))

    def take(self) -> IntervalArrays:
        """A copy of the arrays; the originals are zeroed for the next interval."""
        snap = IntervalArrays(
            self.counters.copy(),
            self.rtt_sums.copy(),
            self.histogram.copy(),
            self.send_errnos.copy(),
            self.recv_errnos.copy(),
            self.icmp_types.copy(),
            self.err_ring.copy(),
            self.err_len.copy(),
            self.err_src.copy(),
        )
        self.counters[:] = _fresh_counters()
        for arr in (
            self.rtt_sums,
            self.histogram,
            self.send_errnos,
            self.recv_errnos,
            self.icmp_types,
            self.err_len,
        ):
            arr[:] = 0
        return snap


#: A cache line (x86-64, and the most a common CPU uses).
CACHE_LINE = 64


def own_lines(n: int, dtype: Any) -> np.ndarray:
    """A zeroed 1-D array of ``n`` ``dtype`` that shares no cache line with
    any other allocation: it starts on a line and its last line is padding
    of its own. The loop writes its state, counters and histogram, and the
    kernel its msghdr and buffers, on every reply; two streams' arrays built
    side by side by the allocator could share a line, which the two cores
    then pass to and fro on every write (false sharing). Two streams in one
    process spent ~6 % more CPU per reply than the same two streams in two
    processes (perf cpu-clock, load 11-13)."""
    size = np.dtype(dtype).itemsize * max(1, n)
    raw = np.zeros(size + 2 * CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    return raw[start : start + size].view(dtype)[:n]


def _fresh_counters() -> np.ndarray:
    counters = own_lines(N_COUNTERS, np.int64)
    counters[K_RTT_MIN] = -1  # "no reply yet"
    return counters


class LoopState:
    """The arrays one stream's loop keeps across slices (besides the interval ones)."""

    def __init__(
        self,
        config: np.ndarray,
        packet: bytes,
        addr: bytes,
        start_ns: int,
        control: np.ndarray | None = None,
    ) -> None:
        self.config = config
        self.state = own_lines(N_STATE, np.int64)
        self.state[S_NEXT_SEND] = start_ns
        self.state[S_LAST_SEND] = start_ns - FLOOD_IDLE_NS
        self.state[S_MAX_RX] = -1
        self.state[S_LAST_RTT] = -1
        self.state[S_LAST_TTL] = -1
        self.state[S_PREV_OUTCOME] = -1
        self.packet = own_lines(len(packet), np.uint8)
        self.packet[:] = np.frombuffer(packet, np.uint8)
        self.addr = own_lines(ADDR_BYTES, np.uint8)
        self.addr[: len(addr)] = np.frombuffer(addr, np.uint8)
        # Room for the whole reply (a raw IPv4 socket adds an IP header of up
        # to 60 bytes): recvmsg cuts a longer datagram to the buffer, and the
        # reply's length (ping's "N bytes from") is what it returns.
        self.buf = own_lines(max(ERR_BYTES, MAX_IP_HEADER + len(packet)), np.uint8)
        self.src = own_lines(ADDR_BYTES, np.uint8)
        # recvmsg's msghdr and iovec point at these arrays: set once, kept alive here.
        self.cmsg = own_lines(CONTROL_WORDS, np.int64)
        self.iov = np.array([self.buf.ctypes.data, self.buf.shape[0]], np.int64)
        self.msg = own_lines(N_MSGHDR, np.int64)
        self.msg[M_NAME] = self.src.ctypes.data
        self.msg[M_IOV] = self.iov.ctypes.data
        self.msg[M_IOVLEN] = 1
        self.msg[M_CONTROL] = self.cmsg.ctypes.data
        self.slot_state = np.zeros(SLOTS, np.uint8)
        self.slot_sent = np.zeros(SLOTS, np.int64)
        self.ts = own_lines(2, np.int64)
        self.pollfd = own_lines(2, np.int32)
        self.pollfd[0] = int(config[C_FD])
        self.scratch = own_lines(1, np.int32)
        self.control = control if control is not None else np.zeros(1, np.int64)
        self.control_copy = own_lines(1, np.int64)
        self.interval = IntervalArrays()
        self.log = np.zeros((max(1, int(config[C_LOG])), N_LOG), np.int64)

    def run_slice(self, deadline_ns: int) -> int:
        """Run until ``deadline_ns``; see the module docstring (``self.control``)."""
        iv = self.interval
        return int(
            _run_slice()(
                deadline_ns,
                self.control,
                self.control_copy,
                self.config,
                self.state,
                self.packet,
                self.addr,
                self.buf,
                self.src,
                self.msg,
                self.cmsg,
                self.slot_state,
                self.slot_sent,
                iv.counters,
                iv.rtt_sums,
                iv.histogram,
                iv.send_errnos,
                iv.recv_errnos,
                iv.icmp_types,
                iv.err_ring,
                iv.err_len,
                iv.err_src,
                self.log,
                self.ts,
                self.pollfd,
                self.scratch,
            )
        )

    def take_log(self) -> tuple[np.ndarray, int]:
        """The reply log's rows since the last take (a copy; layout.L_*) and
        how many replies a full log left out; both are emptied."""
        n = int(self.state[S_LOG_N])
        dropped = int(self.state[S_LOG_DROPPED])
        rows = self.log[:n].copy()
        self.state[S_LOG_N] = 0
        self.state[S_LOG_DROPPED] = 0
        return rows, dropped

    @property
    def last_ttl(self) -> int | None:
        """The last echo reply's IP TTL / hop limit (None before one, or unknown)."""
        ttl = int(self.state[S_LAST_TTL])
        return ttl if ttl >= 0 else None

    @property
    def returned_ns(self) -> int:
        """Monotonic time of the loop's last return (0 before the first call)."""
        return int(self.state[S_RETURNED])

    @property
    def user_stamped(self) -> int:
        """Echo replies timed in user space (no plausible kernel stamp) so far."""
        return int(self.state[S_USER_STAMPED])

    @property
    def in_flight(self) -> int:
        return int(self.state[S_IN_FLIGHT])

    @property
    def sends_ns(self) -> tuple[int, int]:
        """When the loop first and last sent (or tried to send) a request;
        (0, 0) before the first. ping's ``time`` is the span between them."""
        first = int(self.state[S_FIRST_SEND])
        return (first, int(self.state[S_LAST_SEND])) if first else (0, 0)

    @property
    def pipe(self) -> int:
        """ping's ``pipe``: the most requests out when a reply came (0 before one)."""
        return int(self.state[S_PIPE])

    @property
    def ewma8(self) -> int:
        """ping's RTT ``ewma`` in whole us x 8 (0 before a reply)."""
        return int(self.state[S_EWMA8])

    @property
    def send_end_ns(self) -> int:
        """When sending stopped (0 while it goes on)."""
        return int(self.state[S_SEND_END])

    @property
    def resolved(self) -> int:
        """Requests resolved in send order: every request before the oldest
        one still in flight was answered or counted lost."""
        return int(self.state[S_TAIL])


def make_config(
    *,
    fd: int,
    v6: bool,
    raw: bool,
    ident: int,
    period_ns: int,
    preload: int,
    count: int,
    grace_ns: int,
    packet_len: int,
    checksum_partial: int,
    addr_len: int,
    log_rows: int = 0,
    log_return: bool = False,
    count_replies: bool = False,
    send_until_ns: int = 0,
    adaptive: bool = False,
    adaptive_floor_ns: int = 0,
    outstanding: bool = False,
) -> np.ndarray:
    """The loop's config array. ``period_ns`` 0 = flood (send as replies arrive).
    ``log_rows`` > 0 turns the reply log on (rows per slice); ``log_return``
    makes the loop return at each logged reply. ``count_replies``: ``count``
    is of echo replies, not requests (ping -c N -w S). ``send_until_ns``:
    the run's deadline (monotonic ns; 0: none), after which no request goes
    out (ping -w S). ``outstanding``: ping -O's "no answer yet" rows in the
    reply log (with ``log_rows`` only)."""
    cfg = np.zeros(N_CONFIG, np.int64)
    cfg[C_FD] = fd
    cfg[C_V6] = int(v6)
    cfg[C_RAW] = int(raw)
    cfg[C_IDENT] = ident
    cfg[C_PACED] = int(period_ns > 0)
    cfg[C_PERIOD] = period_ns
    cfg[C_PRELOAD] = preload
    cfg[C_COUNT] = count
    cfg[C_GRACE] = grace_ns
    cfg[C_PKTLEN] = packet_len
    cfg[C_CSUM_PARTIAL] = checksum_partial
    # Datagram sockets: the kernel picks the id and only delivers our replies.
    cfg[C_CHECK_IDENT] = int(raw)
    cfg[C_ADDRLEN] = addr_len
    cfg[C_LOG] = log_rows
    cfg[C_LOG_RETURN] = int(log_return and log_rows > 0)
    cfg[C_COUNT_REPLIES] = int(count_replies)
    cfg[C_SEND_UNTIL] = max(0, send_until_ns)
    cfg[C_ADAPTIVE] = int(adaptive)
    cfg[C_ADAPT_FLOOR] = max(0, adaptive_floor_ns)
    cfg[C_OUTSTANDING] = int(outstanding)
    return cfg


#: The files the loop's code and constants come from (a change makes the kept code stale).
_SOURCES = tuple(
    os.path.join(os.path.dirname(__file__), name) for name in ("engine.py", "layout.py")
)
# Pinned now, as this process binds the constants the loop is built with
# (native_objects.pin_sources): an upgrade landing later is another build.
native_objects.pin_sources(_SOURCES)
_KEPT_NAME = "icmp.run_slice"
_loop_lock = threading.Lock()
_loop: list[Any] = []


def _run_slice() -> Any:
    """The loop: kept object code when there is a fresh one, else numba's."""
    if _loop:
        return _loop[0]
    with _loop_lock:
        if not _loop:
            kept = native_objects.load(_KEPT_NAME, _SOURCES)
            if kept is None:
                from probetop.probes.icmp.engine import run_slice  # numba

                _loop.append(run_slice)
            else:
                _loop.append(kept)
    return _loop[0]


def loop_kept() -> bool:
    """Whether the loop in use is the kept object code."""

    return isinstance(_run_slice(), native_objects.Loop)


def keep_loop(run_once: Any) -> bool:
    """``probetop compile``: numba's loop run once (``run_once``), kept as
    object code, then used from it in this process too. False when it cannot
    be kept (numba's cache is off, or its code needs numba's runtime)."""
    from probetop.probes.core import native_cache, native_objects

    if loop_kept():  # kept already, from these sources on this CPU
        run_once()
        return True
    from probetop.probes.icmp.engine import run_slice

    with _loop_lock:
        _loop[:] = [run_slice]
    run_once()
    if not native_cache.enabled():
        return False
    try:
        native_objects.build(_KEPT_NAME, run_slice, _SOURCES)
    except ValueError:  # cannot be kept (native_objects.build): numba's loop serves
        return False
    with _loop_lock:
        _loop.clear()
    run_once()
    return loop_kept()
