"""The ICMP probe's streams: a thread each that runs the native loop on its
own socket, an interval at a time, and what they hand over.

Contract: ``Stream(plan, index, sock, ident, count)``, once ``launch``ed
with the run's start, calls the nogil loop (probes/icmp/engine.py) once per
interval, on the run's absolute interval boundaries, and hands each interval
over as a ``StreamInterval`` to ``plan.deliver``, from its own thread;
``drain()`` stops sending (finishing within the grace period), ``abort()``
returns from the loop now; a failure is delivered (``snapshot`` None, the
exception in ``Stream.error``), never raised in the thread. The stream reads
nothing of its caller but the ``StreamPlan``. ``interval_seconds`` is an
interval's length from the streams' spans; ``dissect_kept`` reads the error
packets a raw loop kept. ``warm_up_engine()`` compiles the loop once before
any clock. Heavy imports (numpy, numba, scapy) happen inside functions,
never at import.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probetop.probes.core import stopsignals
from probetop.probes.core.sample import now_ns

if TYPE_CHECKING:
    from probetop.probes.icmp.pingtext import ReplyListener
    from probetop.probes.icmp.settings import IcmpSettings
    from probetop.probes.icmp.sockets import Target

# ping's per-reply lines: replies the native loop logs per slice (more in one
# slice are counted, not shown), and the slowest pace at which it returns at
# each reply so its line is printed as it arrives.
REPLY_LOG_ROWS = 4096
LOG_RETURN_MIN_PERIOD_NS = 1_000_000
# ping -A's shortest period for a user other than root (iputils MINUSERINTERVAL).
ADAPTIVE_USER_FLOOR_NS = 2_000_000


@dataclass(frozen=True, slots=True)
class StreamProgress:
    """Where one stream's loop stood when it handed over an interval."""

    in_flight: int = 0
    resolved: int = 0  # requests resolved in send order (loopstate.LoopState.resolved)
    send_end_ns: int = 0  # when sending stopped; 0 while it goes on
    last_ttl: int | None = None  # the last echo reply's TTL / hop limit (None: none yet)
    # when the first and the last request went out; (0, 0) before the first
    sends_ns: tuple[int, int] = (0, 0)
    pipe: int = 0  # ping's pipe: the most requests out when a reply came
    ewma8: int = 0  # ping's RTT ewma, whole us x 8 (0: no reply yet)


@dataclass(frozen=True, slots=True)
class StreamInterval:
    """What one stream hands over at the end of an interval (or when it failed)."""

    stream: int  # the stream's index
    k: int  # the interval, from 1 (the run's k-th boundary); -1 when the thread failed
    span_ns: tuple[int, int]  # [from, to): where this stream's counting began and ended
    # The loop's counters for the interval (engine's snapshot); None: the thread
    # failed, and ``Stream.error`` says why.
    snapshot: Any | None
    progress: StreamProgress
    # Datagram sockets: the ICMP errors read from the error queue (type, code,
    # name, router, seq); raw sockets keep theirs in the snapshot.
    errors: list[dict[str, Any]]
    done: bool  # the stream's last interval: its count reached, drained or aborted


# The errnos a socket's pending error takes from an ICMP error
# (icmp_err_convert, icmpv6_err_convert): unreachable (net, host, port,
# protocol, prohibited), fragmentation needed, time exceeded, parameter problem.
ICMP_ERRNOS = tuple(
    sorted(
        {
            errno.ENETUNREACH,
            errno.EHOSTUNREACH,
            errno.ECONNREFUSED,
            errno.ENOPROTOOPT,
            errno.EMSGSIZE,
            errno.EOPNOTSUPP,
            errno.ENONET,
            errno.EACCES,
            errno.EPROTO,
        }
    )
)


class ErrorEchoes:
    """Counts each ICMP error once, as ping does.

    The kernel reports an ICMP error about our request twice: as the error
    itself (a raw socket's error packet; a datagram socket's error queue)
    and as the socket's pending error, which the loop's next receive returns
    (EHOSTUNREACH for a time exceeded or a host unreachable; a raw socket
    only for the fatal kinds). ``cancel`` takes one such receive error off
    the interval for each ICMP error counted, in that interval or, for one
    that came after the loop's last receive, in the next; a receive error
    no ICMP error explains stays counted."""

    def __init__(self) -> None:
        self._carried = 0  # ICMP errors of the last interval whose echo has not come yet

    def cancel(self, snap: Any, icmp_errors: int) -> None:
        from probetop.probes.icmp.layout import K_RECV_ERRS

        budget = self._carried + icmp_errors
        for e in ICMP_ERRNOS:
            if budget == 0:
                break
            echoes = min(budget, int(snap.recv_errnos[e]))
            if echoes:
                snap.recv_errnos[e] -= echoes
                snap.counters[K_RECV_ERRS] -= echoes
                budget -= echoes
        self._carried = min(budget, icmp_errors)  # an echo comes at most one interval late


Deliver = Callable[[StreamInterval], None]
"""Where a stream hands its intervals: called from the stream's thread, so
it must be thread-safe and return at once (the loop's clock keeps running)."""


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What every stream of one run shares."""

    settings: IcmpSettings
    target: Target
    mode: str  # "raw" or "datagram"
    deliver: Deliver
    # ping's per-reply lines: the listener told each reply (None: nobody listens).
    listener: ReplyListener | None = None
    logs_replies: bool = False  # whether the loop logs replies for the listener


class Stream(threading.Thread):
    """One socket and one native loop; hands over a ``StreamInterval`` per interval."""

    def __init__(self, plan: StreamPlan, index: int, sock: Any, ident: int, count: int) -> None:
        super().__init__(name=f"icmp-stream-{index}", daemon=True)
        self.plan = plan
        self.index = index
        self.sock = sock
        self.echo_id = ident
        self.count = count
        self.start_ns = 0
        import numpy as np

        # Written by the event loop's thread, read by the native loop every turn.
        self.control = np.zeros(1, np.int64)
        self.error: BaseException | None = None

    def launch(self, start_ns: int) -> None:
        """Start the thread; the run's intervals are counted from ``start_ns``
        (``now_ns`` clock), the same for every stream of the run."""
        self.start_ns = start_ns
        self.start()

    def drain(self) -> None:
        """Stop sending; finish once nothing is in flight (at most the grace period)."""
        self.control[0] = max(int(self.control[0]), 1)

    def abort(self) -> None:
        """Return from the native loop now."""
        self.control[0] = 2

    @property
    def aborted(self) -> bool:
        return int(self.control[0]) == 2

    def run(self) -> None:
        from probetop.probes.icmp import layout as eng
        from probetop.probes.icmp import loopstate
        from probetop.probes.icmp.packet import checksum_partial, echo_request

        p = self.plan
        target = p.target
        start_ns = self.start_ns
        try:
            rate = p.settings.total_rate
            period_ns = 0 if rate is None else max(1, round(1e9 * p.settings.streams / rate))
            packet = echo_request(
                self.echo_id, p.settings.size, target.v6, pattern=p.settings.pattern
            )
            addr = target.sockaddr()
            config = loopstate.make_config(
                fd=self.sock.fileno(),
                v6=target.v6,
                raw=p.mode == "raw",
                ident=self.echo_id,
                period_ns=period_ns,
                preload=p.settings.preload,
                count=self.count,
                grace_ns=int(p.settings.grace_s * 1e9),
                packet_len=len(packet),
                checksum_partial=checksum_partial(packet),
                addr_len=len(addr),
                log_rows=REPLY_LOG_ROWS if p.logs_replies else 0,
                # Each reply's line as it arrives, up to 1000 replies/s a stream;
                # faster, the lines of a slice go out together at its end.
                log_return=period_ns >= LOG_RETURN_MIN_PERIOD_NS and not p.settings.adaptive,
                count_replies=p.settings.counts_replies,
                adaptive=p.settings.adaptive,
                outstanding=p.settings.outstanding,
                # iputils' MINUSERINTERVAL: 2 ms for a user other than root
                adaptive_floor_ns=0 if os.getuid() == 0 else ADAPTIVE_USER_FLOOR_NS,
                # ping -w S: the loop sends nothing from the deadline on
                send_until_ns=start_ns + round(p.settings.deadline_s * 1e9)
                if p.settings.deadline_s
                else 0,
            )
            # Spread paced streams over one period so N streams are not N-packet bursts.
            offset = period_ns * self.index // max(1, p.settings.streams)
            loop = loopstate.LoopState(config, packet, addr, start_ns + offset, self.control)
            interval_ns = int(p.settings.interval_s * 1e9)
            k = 1
            t_prev = start_ns
            echoes = ErrorEchoes()
            while True:
                boundary = start_ns + k * interval_ns
                done = False
                while not self.aborted and now_ns() < boundary:
                    # One call per interval: each return has to re-take the GIL
                    # (and, with ping's per-reply lines, one per reply when paced).
                    outcome = loop.run_slice(boundary)
                    if p.logs_replies:
                        self._pass_replies(loop)
                    if outcome == eng.SLICE_DONE:
                        done = True
                        break
                done = done or self.aborted
                # The interval ends where the loop stopped counting, not where this
                # thread got the GIL back (packets due meanwhile keep their deadlines).
                t_snap = loop.returned_ns if loop.returned_ns > t_prev else now_ns()
                snap = loop.interval.take()
                errs = self._read_error_queue() if p.mode == "datagram" else []
                echoes.cancel(snap, len(errs) if errs else int(snap.counters[eng.K_ICMP_ERRS]))
                progress = StreamProgress(
                    loop.in_flight,
                    loop.resolved,
                    loop.send_end_ns,
                    loop.last_ttl,
                    loop.sends_ns,
                    loop.pipe,
                    loop.ewma8,
                )
                span = (t_prev, t_snap)
                p.deliver(StreamInterval(self.index, k, span, snap, progress, errs, done))
                t_prev = t_snap
                if done:
                    return
                k += 1
        except BaseException as exc:  # reported by run(); the thread must never die silently
            self.error = exc
            at = now_ns()
            p.deliver(StreamInterval(self.index, -1, (at, at), None, StreamProgress(), [], True))
        finally:
            self.sock.close()

    def _pass_replies(self, loop: Any) -> None:
        """Hand the loop's logged replies to the run's listener (ping's lines)."""
        from probetop.probes.icmp.pingtext import rows_to_replies, wall_offset_ns

        rows, dropped = loop.take_log()
        listener = self.plan.listener
        if listener is not None and (len(rows) or dropped):
            listener.replies(rows_to_replies(rows, self.index, wall_offset_ns()), dropped)

    def _read_error_queue(self) -> list[dict[str, Any]]:
        """Datagram sockets report ICMP errors on the error queue (IP_RECVERR)."""
        import socket
        import struct

        from probetop.probes.icmp.packet import error_name, sockaddr_address

        out: list[dict[str, Any]] = []
        # Until it is empty: each entry left would leave its receive echo
        # counted as a receive error (ErrorEchoes). The socket's buffer bounds it.
        while True:
            try:
                _data, ancdata, _flags, _addr = self.sock.recvmsg(
                    64, 512, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT
                )
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            # A ping socket's queued error carries the request it is about (ICMP header first).
            seq = int(struct.unpack_from("!H", _data, 6)[0]) if len(_data) >= 8 else None
            for _level, _type, cdata in ancdata:
                if len(cdata) < 16:
                    continue
                _ee_errno, origin, icmp_type, code = struct.unpack_from("=IBBB", cdata)
                if origin not in (2, 3):  # SO_EE_ORIGIN_ICMP / ICMP6
                    continue
                v6 = origin == 3
                out.append(
                    {
                        "type": icmp_type,
                        "code": code,
                        "name": error_name(icmp_type, v6),
                        "router": sockaddr_address(cdata[16:]),
                        "seq": seq,
                    }
                )
        return out


def interval_seconds(spans_ns: list[int]) -> float:
    """The length of an interval the streams counted over (each its own span,
    snapshot to snapshot, ns): the longest, the interval's wall-clock length.
    Not their mean: a stream that ended early in the interval (its count
    reached) has a short span, and a mean of spans made the rate of every
    packet in that interval read up to N x too high (N streams)."""
    return max(1e-9, max(spans_ns, default=0) / 1e9)


def dissect_kept(kept: list[tuple[Any, int]], v6: bool) -> list[dict[str, Any]]:
    """The error packets a raw loop kept, dissected (scapy: call it off the
    event loop). ``kept`` is (snapshot, ICMP errors it counted) per stream;
    a packet that cannot be dissected is an ``undissectable`` entry."""
    from probetop.probes.icmp import layout as eng
    from probetop.probes.icmp.packet import dissect_error

    out = []
    for snap, n_errors in kept:
        for i in range(min(n_errors, eng.ERR_RING)):
            data = bytes(snap.err_ring[i, : snap.err_len[i]])
            src = bytes(snap.err_src[i])
            try:
                out.append(dissect_error(data, src, v6, has_ip_header=not v6))
            except Exception as exc:  # a malformed packet is data, not a crash
                out.append({"name": "undissectable", "router": None, "detail": str(exc)})
    return out


_warm = threading.Lock()
_warmed = False


def warm_up_engine() -> None:
    """Load the native loop once (the kept object code, else numba's: compiled
    the first time, then cached on disk); a stop signal ends the wait at once
    (``run_stoppable``)."""
    stopsignals.run_stoppable(_warm_up_engine)


def keep_engine() -> bool:
    """``probetop compile``: the loop compiled by numba, run once, kept as
    object code (``loopstate.keep_loop``); True when kept."""
    from probetop.probes.icmp import loopstate

    global _warmed
    with _warm:
        kept = loopstate.keep_loop(_run_once)
        _warmed = True
        return kept


def _warm_up_engine() -> None:
    global _warmed
    with _warm:
        if _warmed:
            return
        _run_once()
        _warmed = True


def _run_once() -> None:
    """The loop called once with a deadline passed: loaded (or compiled), no I/O."""
    from probetop.probes.icmp import loopstate

    cfg = loopstate.make_config(
        fd=-1,
        v6=False,
        raw=True,
        ident=0,
        period_ns=0,
        preload=1,
        count=0,
        grace_ns=1,
        packet_len=8,
        checksum_partial=0,
        addr_len=16,
    )
    loopstate.LoopState(cfg, bytes(8), bytes(16), 0).run_slice(0)  # deadline passed: no I/O
