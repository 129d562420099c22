"""The ICMP loop's shared memory layout: what each slot of its arrays means.

Contract: the native loop (engine.py) and the Python side that reads its
arrays (stats.py, probe.py) index them only through these names. The module
imports nothing heavy (no numba, no numpy), so reading the layout never
loads the JIT. The RTT histogram is log-linear: exact below ``HIST_LINEAR`` ns,
then ``HIST_SUB`` buckets per power of two (< 3.2 % wide);
``hist_bucket_bounds`` is its inverse for percentiles.
"""

from __future__ import annotations

import errno as errno_mod

CLOCK_REALTIME = 0  # the clock of the kernel's receive timestamps
CLOCK_MONOTONIC = 1  # the clock time.monotonic_ns() reads
MSG_DONTWAIT = 0x40
# Kernel receive timestamps (as ping): SO_TIMESTAMPNS on the socket makes
# recvmsg add a SOL_SOCKET / SCM_TIMESTAMPNS cmsg (a 64-bit struct timespec).
SOL_SOCKET = 1
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
POLLIN = 1
EAGAIN = errno_mod.EAGAIN
EINTR = errno_mod.EINTR
# sendto errors that say the local queue or memory is full, not the path: the
# request was never made, so (as ping) it neither counts as sent nor lost.
ENOBUFS = errno_mod.ENOBUFS
ENOMEM = errno_mod.ENOMEM

SLICE_DEADLINE = 0
SLICE_DONE = 1
# A paced loop with a reply log that returns at each logged reply (C_LOG_RETURN),
# so the caller prints ping's per-reply line as the reply arrives.
SLICE_REPLY = 2
RUN, DRAIN, ABORT = 0, 1, 2  # control[0]

# Idle flood sender: like ping -f, send anyway when no reply came for 10 ms.
FLOOD_IDLE_NS = 10_000_000
CONTROL_POLL_NS = 20_000_000
# Paced senders catch up after a stall of at most this long (see run_slice).
MAX_BACKLOG_NS = 100_000_000
# Below this much waiting time the loop spins instead of sleeping in ppoll:
# waking from ppoll costs tens of microseconds, which would blur the pacing.
SPIN_NS = 60_000
# At an interval's edge the loop reads what is already queued on the socket
# (replies that arrived in the interval) before it returns: at most this many.
EDGE_READS = 4096
# The realtime - monotonic offset (which turns kernel stamps into monotonic
# time) is read up to this many times per slice, keeping the narrowest
# bracket; a bracket this tight (a few vDSO reads) ends the tries early.
OFFSET_TRIES = 8
OFFSET_TIGHT_NS = 2_000
# A preload burst (ping -l N) goes out without reads between its requests, at
# most this many bytes of replies' buffer space (each reply taking its length
# and about this much more in the kernel): a bounded share of the 4 MiB
# receive buffer (sockets.RECV_BUFFER_BYTES).
BURST_BYTES = 1 << 20
BURST_PACKET_OVERHEAD = 1024

# -- slot states ---------------------------------------------------------------
FREE, IN_FLIGHT, REPLIED, LOST, LATE = 0, 1, 2, 3, 4
SLOTS = 1 << 16

# -- config (int64 array, read-only for the loop) ------------------------------
C_FD, C_V6, C_RAW, C_IDENT, C_PACED, C_PERIOD, C_PRELOAD, C_COUNT, C_GRACE = range(9)
C_PKTLEN, C_CSUM_PARTIAL, C_CHECK_IDENT, C_ADDRLEN = range(9, 13)
# The reply log (ping's per-reply lines): rows it holds per slice (0: off),
# and whether the loop returns at each logged reply (SLICE_REPLY).
C_LOG, C_LOG_RETURN = 13, 14
# What C_COUNT counts: 0 requests sent (ping -c N), 1 echo replies received
# (ping -c N -w S: sending goes on until N are answered or the deadline).
C_COUNT_REPLIES = 15
# The run's deadline (ping -w S; monotonic ns, 0: none): no request is sent at
# or after it, as ping sends none after its deadline. It ends sending only; the
# run itself ends when the runner stops it at --time (the same instant, from
# its own clock), so a late stop can no longer add a request at the edge.
C_SEND_UNTIL = 16
# ping -A (adaptive): once a reply came, the period is ping's RTT ewma rounded
# to whole ms (0: paced by the replies, as a flood), at least C_ADAPT_FLOOR ns
# (ping's 2 ms for a user other than root); before it, C_PERIOD's.
C_ADAPTIVE, C_ADAPT_FLOOR = 17, 18
# ping -O: before each request, a row in the reply log if the one before it
# is still unanswered (ping's "no answer yet for icmp_seq=N").
C_OUTSTANDING = 19
N_CONFIG = 20

# -- persistent loop state (int64 array) ---------------------------------------
S_HEAD, S_TAIL, S_NEXT_SEND, S_LAST_SEND, S_IN_FLIGHT, S_MAX_RX = range(6)
# When the loop last returned: the edge of an interval's counts (the caller may
# then wait for the GIL, while packets due keep their deadlines).
S_RETURNED = 6
# When sending stopped (drain seen, or --count reached); 0 while sending. Rates
# are per second of sending, so the wait for the last replies does not dilute them.
S_SEND_END = 7
# The previous reply's RTT (ns, -1 before the first): jitter is |rtt - previous|.
S_LAST_RTT = 8
# Outcome of the last request the sweep resolved (1 replied, 0 lost, -1 none
# yet), how many in a row had it, and whether the first run (which holds a
# rate limiter's initial burst) has been left out yet.
S_PREV_OUTCOME, S_RUN_LEN, S_FIRST_RUN_DONE = 9, 10, 11
# Echo replies timed by the user-space clock after recvmsg because the kernel
# stamp was missing or implausible (a clock step): a diagnostic, 0 normally.
S_USER_STAMPED = 12
# The last echo reply's IP TTL / hop limit (-1 before the first or unknown),
# the rows in the reply log, and replies the full log left out.
S_LAST_TTL, S_LOG_N, S_LOG_DROPPED = 13, 14, 15
# Unique echo replies received over the run (what C_COUNT_REPLIES counts).
S_REPLIES = 16
# When the first request went out (monotonic ns; 0 before it): ping's ``time``
# runs from its first request to its last (S_LAST_SEND once one went out).
S_FIRST_SEND = 17
# ping's ``pipe`` and ``ewma`` (iputils finish()), kept as each accepted reply
# (the first, within --grace) is counted: the most requests that were out when
# a reply came back (requests sent then - the reply's seq from 1 + 1), and the
# RTT's moving average in whole us x 8 (the first reply's rtt x 8, then
# += rtt - ewma / 8; 0: none yet, as ping's).
S_PIPE, S_EWMA8 = 18, 19
N_STATE = 20

# -- the reply log (int64 rows; the caller takes and empties it each return) ---
L_SEQ, L_TTL, L_BYTES, L_RTT, L_AT, L_KIND = range(6)
N_LOG = 6
# L_KIND: an echo reply, a duplicate (ping's DUP!), or ping -O's "no answer
# yet" for request L_SEQ (L_AT: when the next request was due; no reply fields).
ROW_REPLY, ROW_DUPLICATE, ROW_NO_ANSWER = 0, 1, 2
# Where a reply's TTL is when the IP header is not delivered (datagram and
# IPv6 sockets): an IP_TTL / IPV6_HOPLIMIT cmsg (IP_RECVTTL, IPV6_RECVHOPLIMIT).
IPPROTO_IP, IP_TTL, IP_RECVTTL = 0, 2, 12
IPPROTO_IPV6, IPV6_HOPLIMIT, IPV6_RECVHOPLIMIT = 41, 52, 51

# -- interval counters (int64 array, zeroed by the caller each interval) --------
K_SENT, K_RECEIVED, K_DUPS, K_REORDERED, K_LOST, K_LATE, K_WRAPPED = range(7)
K_SEND_ERRS, K_RECV_ERRS, K_ICMP_ERRS, K_STRAY, K_RTT_MIN, K_RTT_MAX = range(7, 13)
K_MISSED = 13  # paced sends skipped after a stall longer than MAX_BACKLOG_NS
# Jitter (as trippy/smokeping): |rtt - previous rtt| over consecutive replies.
K_JITTER_N, K_JITTER_MAX = 14, 15
# The loss pattern, in send order, as the sweep resolves requests: runs of
# replied and of lost requests (count, sum and sum of squares of their
# lengths; the first run of the stream is left out). Independent loss makes
# run lengths geometric (coefficient of variation sqrt(p) >= 0.7 for the more
# common outcome); a token bucket (a target's ICMP rate limit) makes them
# nearly constant. stats.rate_limit_hint reads them.
K_REPLY_RUNS, K_REPLY_RUN_SUM, K_REPLY_RUN_SUMSQ = 16, 17, 18
K_LOSS_RUNS, K_LOSS_RUN_SUM, K_LOSS_RUN_SUMSQ = 19, 20, 21
N_COUNTERS = 22
COUNTER_NAMES = (
    "sent",
    "received",
    "duplicates",
    "reordered",
    "lost",
    "late",
    "wrapped",
    "send_errors",
    "recv_errors",
    "icmp_errors",
    "stray",
    "rtt_min_ns",
    "rtt_max_ns",
    "missed",
    "jitter_n",
    "jitter_max_ns",
    "reply_runs",
    "reply_run_sum",
    "reply_run_sumsq",
    "loss_runs",
    "loss_run_sum",
    "loss_run_sumsq",
)
# float64 sums: RTT sum and sum of squares (ns, ns^2) for mean and ping's mdev,
# and the sum of |rtt - previous rtt| (ns) for the mean jitter.
R_SUM, R_SUMSQ, R_JITTER = 0, 1, 2
N_SUMS = 3

# -- RTT histogram: exact below 64 ns, then 32 buckets per power of two (< 3.2 %) --
HIST_SUB_BITS = 5
HIST_SUB = 1 << HIST_SUB_BITS
HIST_LINEAR = 2 * HIST_SUB
HIST_MAX_BITS = 42  # ~73 minutes in ns: beyond any grace period
HIST_SIZE = HIST_LINEAR + (HIST_MAX_BITS - HIST_SUB_BITS - 1) * HIST_SUB

# -- error packets kept for dissection (per interval) --------------------------
ERR_RING = 16
ERR_BYTES = 576  # IPv4 minimum MTU: a whole ICMP error fits
MAX_IP_HEADER = 60  # IPv4's header with every option (IHL 15); raw sockets deliver it
ADDR_BYTES = 28  # sockaddr_in6

# -- recvmsg's arguments, laid out once per stream in int64 arrays (64-bit Linux) --
# struct msghdr, one word per field: name, namelen, iov, iovlen, control,
# controllen, flags. The kernel rewrites namelen, controllen and flags.
M_NAME, M_NAMELEN, M_IOV, M_IOVLEN, M_CONTROL, M_CONTROLLEN, M_FLAGS = range(7)
N_MSGHDR = 7
# The control buffer: room for the timestamp cmsg (16-byte header + timespec),
# the TTL cmsg (16 + 8) and another of the largest size, should the kernel add one.
CONTROL_WORDS = 12


def hist_bucket_bounds(idx: int) -> tuple[float, float]:
    """[low, high) of a histogram bucket, in ns (Python side, for percentiles)."""
    if idx < HIST_LINEAR:
        return float(idx), float(idx + 1)
    rel = idx - HIST_LINEAR
    bits = rel // HIST_SUB + HIST_SUB_BITS + 1
    sub = rel % HIST_SUB
    shift = bits - HIST_SUB_BITS
    low = (HIST_SUB + sub) << shift
    return float(low), float(low + (1 << shift))
