"""ICMP echo probe: ping -f and hping3 -i in one, with honest counting.

Contract:
- ``IcmpOptions`` holds what the user asked for; ``IcmpProbe(options)``
  follows the Probe protocol (probes/core/base.py). ``prepare`` resolves and
  checks the target (route, MTU, broadcast), picks the socket mode (datagram
  where ping_group_range allows, else raw) and compiles the native loop, or
  raises a ProbeError that says what to do.
- ``run`` starts one thread per stream; each thread opens its own socket and
  calls the nogil loop (probes/icmp/engine.py) once per interval.
  Every stream closes its intervals on the same absolute boundaries; ``run``
  merges them and emits one Sample per interval.
- On cancellation (Ctrl-C, --time) the streams stop sending, wait up to the
  grace period for replies still in flight, emit the last interval, and are
  joined before ``run`` returns: nothing is left behind, nothing in flight
  is counted lost.
- Heavy imports (numpy, numba, scapy) happen inside methods, never at import.
"""

from __future__ import annotations

import asyncio
import math
import random
import shlex
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Emit, MetricSpec, ProbeError, UsageProbeError
from probetop.probes.core.sample import Sample, Status, now_ns

if TYPE_CHECKING:
    from probetop.probes.icmp.sockets import Target
    from probetop.probes.icmp.stats import IntervalTotals

DEFAULT_PERIOD_S = 1.0
UNSOLICITED_MAX_PPS = 100.0  # above this, --flood or an explicit --rate is required
MAX_SIZE = 65507  # largest ICMP payload in one IPv4 datagram

METRICS = (
    MetricSpec("pps", "pkt/s", "packets through the target: 2 x replies/s", True),
    MetricSpec("replies_per_s", "/s", "echo replies received per second (unique)", True),
    MetricSpec("requests_per_s", "/s", "echo requests sent per second"),
    MetricSpec(
        "loss_pct", "%", "lost / (lost + received) over requests resolved in the interval", True
    ),
    MetricSpec("lost", "", "requests unanswered for longer than the grace period"),
    MetricSpec("duplicates", "", "extra replies to a request already answered"),
    MetricSpec("reordered", "", "replies that arrived after a reply to a later request"),
    MetricSpec("late", "", "replies that arrived after their request was counted lost"),
    MetricSpec("icmp_errors", "", "ICMP errors about our requests (unreachable, time exceeded)"),
    MetricSpec("send_errors", "", "local send/receive errors (errno), e.g. EMSGSIZE"),
    MetricSpec("in_flight", "", "requests sent and not yet resolved at the interval's end"),
    MetricSpec("missed", "", "--rate: sends skipped because the sender was stalled > 100 ms"),
    MetricSpec("rtt_min_us", "µs", "smallest round-trip time"),
    MetricSpec("rtt_avg_us", "µs", "mean round-trip time", True),
    MetricSpec("rtt_max_us", "µs", "largest round-trip time"),
    MetricSpec("rtt_mdev_us", "µs", "ping's mdev: sqrt(mean(rtt²) - mean(rtt)²)"),
    MetricSpec("rtt_p50_us", "µs", "median round-trip time (histogram bucket, < 3.2 % wide)"),
    MetricSpec("rtt_p90_us", "µs", "90th percentile round-trip time"),
    MetricSpec("rtt_p99_us", "µs", "99th percentile round-trip time"),
)


@dataclass
class IcmpOptions:
    """What to send where. ``period_s`` None and ``flood`` False = 1 request/s."""

    host: str
    flood: bool = False
    rate: float | None = None  # requests/s over all streams
    period_s: float | None = None  # seconds between requests (ping -i), over all streams
    size: int = 56  # ICMP payload bytes, as ping -s
    streams: int = 1
    count: int | None = None
    ttl: int | None = None
    family: int | None = None  # 4, 6 or None (whatever the name resolves to first)
    source: str | None = None
    broadcast: bool = False
    preload: int = 1  # flood: requests kept outstanding per stream (ping -l)
    grace_s: float = 1.0
    socket_mode: str = "auto"  # auto, raw, datagram
    interval_s: float = 1.0  # sampling interval

    def validate(self) -> None:
        """Raise UsageProbeError on contradictions and out-of-range values."""
        if self.flood and (self.rate is not None or self.period_s is not None):
            raise UsageProbeError("--flood sends as fast as replies come back: drop --rate/-i")
        if self.rate is not None and self.period_s is not None:
            raise UsageProbeError("give either --rate or -i/--send-interval, not both")
        if self.rate is not None and not (0 < self.rate <= 10_000_000 and math.isfinite(self.rate)):
            raise UsageProbeError(
                f"--rate must be within (0, 10000000] requests/s, got {self.rate}"
            )
        if self.period_s is not None and not (0 < self.period_s <= 3600):
            raise UsageProbeError(
                f"the send interval must be within (0, 3600] s, got {self.period_s}"
            )
        if not 0 <= self.size <= MAX_SIZE:
            raise UsageProbeError(f"--size must be within 0..{MAX_SIZE} bytes, got {self.size}")
        if not 1 <= self.streams <= 64:
            raise UsageProbeError(f"--streams must be within 1..64, got {self.streams}")
        if self.count is not None and self.count < 1:
            raise UsageProbeError(f"--count must be at least 1, got {self.count}")
        if self.count is not None and self.count < self.streams:
            raise UsageProbeError("--count must be at least --streams (each stream sends one)")
        if self.ttl is not None and not 1 <= self.ttl <= 255:
            raise UsageProbeError(f"--ttl must be within 1..255, got {self.ttl}")
        if not 1 <= self.preload <= 65536:
            raise UsageProbeError(f"--preload must be within 1..65536, got {self.preload}")
        if not 0 < self.grace_s <= 60:
            raise UsageProbeError(f"--grace must be within (0, 60] s, got {self.grace_s}")
        if self.socket_mode not in ("auto", "raw", "datagram"):
            raise UsageProbeError(f"unknown socket mode {self.socket_mode!r}")

    @property
    def total_rate(self) -> float | None:
        """Requests/s over all streams, or None for flood."""
        if self.flood:
            return None
        if self.rate is not None:
            return self.rate
        return 1.0 / (self.period_s or DEFAULT_PERIOD_S)


class _Stream(threading.Thread):
    """One socket and one native loop; delivers (stream, interval k, snapshot, done)."""

    def __init__(self, probe: IcmpProbe, index: int, sock: Any, ident: int, count: int) -> None:
        super().__init__(name=f"icmp-stream-{index}", daemon=True)
        self.probe = probe
        self.index = index
        self.sock = sock
        self.echo_id = ident
        self.count = count
        import numpy as np

        # Written by the event loop's thread, read by the native loop every turn.
        self.control = np.zeros(1, np.int64)
        self.error: BaseException | None = None

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
        from probetop.probes.icmp import engine as eng
        from probetop.probes.icmp.packet import checksum_partial, echo_request

        p = self.probe
        target = p.target
        assert target is not None
        try:
            rate = p.options.total_rate
            period_ns = 0 if rate is None else max(1, round(1e9 * p.options.streams / rate))
            packet = echo_request(self.echo_id, p.options.size, target.v6)
            addr = target.sockaddr()
            config = eng.make_config(
                fd=self.sock.fileno(),
                v6=target.v6,
                raw=p.mode == "raw",
                ident=self.echo_id,
                period_ns=period_ns,
                preload=p.options.preload,
                count=self.count,
                grace_ns=int(p.options.grace_s * 1e9),
                packet_len=len(packet),
                checksum_partial=checksum_partial(packet),
                addr_len=len(addr),
            )
            # Spread paced streams over one period so N streams are not N-packet bursts.
            offset = period_ns * self.index // max(1, p.options.streams)
            loop = eng.LoopState(config, packet, addr, p.start_ns + offset, self.control)
            interval_ns = int(p.options.interval_s * 1e9)
            k = 1
            t_prev = p.start_ns
            while True:
                boundary = p.start_ns + k * interval_ns
                done = False
                while not self.aborted and now_ns() < boundary:
                    # One call per interval: each return has to re-take the GIL.
                    if loop.run_slice(boundary) == eng.SLICE_DONE:
                        done = True
                        break
                done = done or self.aborted
                # The interval ends where the loop stopped counting, not where this
                # thread got the GIL back (packets due meanwhile keep their deadlines).
                t_snap = loop.returned_ns if loop.returned_ns > t_prev else now_ns()
                snap = loop.interval.take()
                errs = self._read_error_queue() if p.mode == "datagram" else []
                p._deliver(self.index, k, (t_prev, t_snap), snap, loop.in_flight, errs, done)
                t_prev = t_snap
                if done:
                    return
                k += 1
        except BaseException as exc:  # reported by run(); the thread must never die silently
            self.error = exc
            p._deliver(self.index, -1, (now_ns(), now_ns()), None, 0, [], True)
        finally:
            self.sock.close()

    def _read_error_queue(self) -> list[dict[str, Any]]:
        """Datagram sockets report ICMP errors on the error queue (IP_RECVERR)."""
        import socket
        import struct

        from probetop.probes.icmp.packet import error_name, sockaddr_address

        out: list[dict[str, Any]] = []
        for _ in range(64):
            try:
                _data, ancdata, _flags, _addr = self.sock.recvmsg(
                    64, 512, socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT
                )
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
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
                    }
                )
        return out


class IcmpProbe:
    """ICMP echo probe. See the module docstring."""

    kind = "icmp"
    metrics = METRICS

    def __init__(self, options: IcmpOptions, *, idle_reason: str | None = None) -> None:
        self.options = options
        self.id = f"icmp:{options.host}"
        self.idle_reason = idle_reason
        self.target: Target | None = None
        self.mode: str | None = None
        self.start_ns = 0
        self.totals: IntervalTotals | None = None
        self.interval_rows: list[dict[str, Any]] = []
        self.elapsed_s = 0.0
        self.stopped_by = "finished"
        self._queue: asyncio.Queue[tuple[Any, ...]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._streams: list[_Stream] = []
        self._active: set[int] = set()
        self._pending: dict[int, dict[int, tuple[Any, ...]]] = {}
        # The demo's idle pane: nothing to run, so never keep a headless run alive.
        self.background = idle_reason is not None

    # -- Probe protocol --------------------------------------------------
    def prepare(self) -> None:
        if self.idle_reason is not None:
            return
        from probetop.probes.icmp.sockets import check_size, choose_mode, resolve_target

        opts = self.options
        opts.validate()
        family = None
        if opts.family is not None:
            import socket

            family = socket.AF_INET6 if opts.family == 6 else socket.AF_INET
        self.target = resolve_target(opts.host, family, opts.source, opts.broadcast)
        check_size(self.target, opts.size)
        self.mode = choose_mode(opts.socket_mode)
        # Open (and close) one socket now: a permission problem must stop us before any UI.
        sock, _ = self._open(0)
        sock.close()
        warm_up_engine()

    def params(self) -> Mapping[str, Any]:
        d = asdict(self.options)
        d["mode"] = self.mode
        if self.target is not None:
            d["address"] = self.target.address
            d["interface"] = self.target.interface
            d["source_address"] = self.target.source
            d["path_mtu"] = self.target.mtu
        if self.idle_reason:
            d["idle_reason"] = self.idle_reason
        return d

    def reference_command(self) -> str | None:
        return reference_command(self.options, self.target.address if self.target else None)

    async def run(self, emit: Emit) -> None:
        if self.idle_reason is not None:
            emit(Status(self.id, now_ns(), "warning", f"idle: {self.idle_reason}"))
            await asyncio.Event().wait()  # until cancelled
            return
        from probetop.probes.icmp.stats import IntervalTotals

        assert self.target is not None, "prepare() first"
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self.totals = IntervalTotals()
        self.interval_rows = []
        counts = _split(self.options.count or 0, self.options.streams)
        self._streams = []
        try:
            for i in range(self.options.streams):
                sock, ident = self._open(i)
                self._streams.append(_Stream(self, i, sock, ident, counts[i]))
        except BaseException:
            for s in self._streams:
                s.sock.close()
            raise
        self._active = {s.index for s in self._streams}
        self._pending = {}
        self.start_ns = now_ns()
        for s in self._streams:
            s.start()
        emit(
            Status(
                self.id,
                now_ns(),
                "info",
                f"{self.mode} socket, {self._describe_pace()} to {self.target.address}"
                f" via {self.target.interface or '?'}",
            )
        )
        try:
            await self._collect(emit)
            failed = [f"stream {s.index}: {s.error!r}" for s in self._streams if s.error]
            if failed:
                raise ProbeError("ICMP stream failed: " + "; ".join(failed))
        except asyncio.CancelledError:
            self.stopped_by = "stopped"
            for s in self._streams:
                s.drain()
            try:
                await asyncio.wait_for(self._collect(emit), self.options.grace_s + 1.0)
            except (asyncio.CancelledError, asyncio.TimeoutError):
                pass
            raise
        finally:
            for s in self._streams:
                s.drain()
            await asyncio.to_thread(self._join)

    def summary(self) -> Mapping[str, Any]:
        t = self.totals
        opts = self.options
        base: dict[str, Any] = {
            "target": opts.host,
            "address": self.target.address if self.target else None,
            "mode": self.mode,
            "pacing": "flood" if opts.flood else "fixed rate",
            "reference_command": self.reference_command(),
        }
        if self.idle_reason:
            base["idle_reason"] = self.idle_reason
        if t is None:
            return base
        c = t.counters
        secs = self.elapsed_s
        replies_ps = c["received"] / secs if secs > 0 else None
        base.update(
            {
                "sent": c["sent"],
                "received": c["received"],
                "duplicates": c["duplicates"],
                "reordered": c["reordered"],
                "lost": c["lost"],
                "late": c["late"],
                "lost_early_by_wrap": c["wrapped"],
                "pacing_missed": c["missed"],
                "in_flight_at_end": t.in_flight,
                "loss_pct": t.loss_pct,
                "replies_per_second": replies_ps,
                "requests_per_second": c["sent"] / secs if secs > 0 else None,
                "pps": None if replies_ps is None else 2.0 * replies_ps,
                "rtt_us": t.rtt_us(),
                "errors": t.errors(),
                "error_routers": t.routers,
                "duration_s": secs,
                "grace_s": opts.grace_s,
                "streams": opts.streams,
                "intervals": self.interval_rows,
                "stopped_by": self.stopped_by,
            }
        )
        return base

    # -- internals ---------------------------------------------------------
    def _open(self, index: int) -> tuple[Any, int]:
        from probetop.probes.icmp.sockets import open_icmp_socket

        assert self.target is not None and self.mode is not None
        # Raw sockets: a random id per run, +index per stream (ping uses its pid).
        ident = (_RUN_IDENT + index) & 0xFFFF
        return open_icmp_socket(
            self.target, self.mode, ident=ident, ttl=self.options.ttl, source=self.options.source
        )

    def _describe_pace(self) -> str:
        o = self.options
        pace = "flood" if o.flood else f"{o.total_rate:g} requests/s"
        if o.streams > 1:
            pace += f" over {o.streams} streams"
        return pace

    def _deliver(self, *item: Any) -> None:
        """Called from stream threads: hand a snapshot to the event loop."""
        loop, queue = self._loop, self._queue
        if loop is None or queue is None:
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # loop closed: nobody is listening any more
            pass

    async def _collect(self, emit: Emit) -> None:
        """Merge stream snapshots per interval and emit them, until every stream is done."""
        from probetop.probes.icmp import engine as eng
        from probetop.probes.icmp.stats import IntervalTotals

        assert self._queue is not None and self.totals is not None and self.target is not None
        v6 = self.target.v6
        active, pending = self._active, self._pending
        while active:
            index, k, t_ns, snap, in_flight, errs, done = await self._queue.get()
            stream = self._streams[index]
            if snap is None:  # the thread failed
                active.discard(index)
                emit(Status(self.id, now_ns(), "error", f"stream {index} failed: {stream.error}"))
                continue
            pending.setdefault(k, {})[index] = (t_ns, snap, in_flight, errs)
            if done:
                active.discard(index)
            for kk in sorted(pending):
                got = pending[kk]
                if not active <= set(got):
                    break
                del pending[kk]
                interval = IntervalTotals()
                t_end = 0
                spans: list[int] = []
                dissect: list[tuple[Any, int]] = []
                for (t_from_i, t_to_i), snap_i, in_flight_i, errs_i in got.values():
                    interval.add_snapshot(snap_i, v6)
                    interval.in_flight += in_flight_i
                    interval.add_routers(errs_i)
                    for d in errs_i:  # datagram sockets: errors come from the error queue
                        interval.icmp_errors[d["name"]] = interval.icmp_errors.get(d["name"], 0) + 1
                        interval.counters["icmp_errors"] += 1
                    t_end = max(t_end, t_to_i)
                    spans.append(t_to_i - t_from_i)
                    dissect.append((snap_i, int(snap_i.counters[eng.K_ICMP_ERRS])))
                if interval.counters["icmp_errors"] and self.mode == "raw":
                    interval.add_routers(await asyncio.to_thread(_dissect_kept, dissect, v6))
                # Each stream counted over its own span (snapshot to snapshot).
                seconds = max(1e-9, sum(spans) / len(spans) / 1e9)
                self.elapsed_s = (t_end - self.start_ns) / 1e9
                self.totals.merge(interval)
                values = interval.values(seconds)
                self.interval_rows.append(
                    {"t_s": round(self.elapsed_s, 6), **{k2: v for k2, v in values.items()}}
                )
                extra: dict[str, Any] = {"mode": self.mode}
                if interval.counters["received"]:
                    from probetop.probes.icmp.stats import coarse_histogram

                    extra["rtt_hist_us"] = coarse_histogram(interval.histogram)
                if interval.errors():
                    extra["errors"] = interval.errors()
                if interval.routers:
                    extra["error_routers"] = interval.routers
                emit(Sample(self.id, t_end, seconds, values, extra))

    def _join(self) -> None:
        for s in self._streams:
            s.join(timeout=self.options.grace_s + 2.0)
            if s.is_alive():
                s.abort()
                s.join()


def _split(total: int, parts: int) -> list[int]:
    """Split a request count over streams (0 = unlimited for all)."""
    if total <= 0:
        return [0] * parts
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _dissect_kept(kept: list[tuple[Any, int]], v6: bool) -> list[dict[str, Any]]:
    """Dissect the error packets the loop kept (scapy; off the event loop)."""
    from probetop.probes.icmp import engine as eng
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


_RUN_IDENT = random.SystemRandom().randrange(0, 0x10000)
_warm = threading.Lock()
_warmed = False


def warm_up_engine() -> None:
    """Import and compile the native loop once (cached on disk by numba after the first run)."""
    global _warmed
    with _warm:
        if _warmed:
            return
        from probetop.probes.icmp import engine as eng

        cfg = eng.make_config(
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
        eng.LoopState(cfg, bytes(8), bytes(16), 0).run_slice(0)  # deadline passed: no I/O
        _warmed = True


def reference_command(options: IcmpOptions, address: str | None = None) -> str:
    """The ping (flood, or up to 100/s) or hping3 (faster fixed rates) equivalent."""
    o = options
    host = address or o.host
    fam = ["-6"] if o.family == 6 else (["-4"] if o.family == 4 else [])
    rate = o.total_rate
    if rate is not None and rate > UNSOLICITED_MAX_PPS and o.family != 6 and ":" not in host:
        usec = max(1, round(1e6 / rate))
        cmd = ["hping3", "-q", "--icmp", "-i", f"u{usec}", "-d", str(o.size)]
        if o.count:
            cmd += ["-c", str(o.count)]
        if o.ttl:
            cmd += ["-t", str(o.ttl)]
        return shlex.join([*cmd, host])
    cmd = ["ping", "-q", *fam]
    if o.flood:
        cmd += ["-f"]
        if o.preload > 1:
            cmd += ["-l", str(o.preload)]
    elif rate is not None and rate != 1.0:
        cmd += ["-i", f"{1.0 / rate:g}"]
    cmd += ["-s", str(o.size)]
    if o.count:
        cmd += ["-c", str(o.count)]
    if o.ttl:
        cmd += ["-t", str(o.ttl)]
    if o.source:
        cmd += ["-I", o.source]
    if o.broadcast:
        cmd += ["-b"]
    return shlex.join([*cmd, host])
