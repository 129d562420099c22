"""ICMP echo probe: ping -f and hping3 -i in one, with honest counting.

Contract:
- ``IcmpProbe(settings)`` (``IcmpSettings``, settings.py) follows the Probe
  protocol (probes/core/base.py). ``prepare`` resolves and checks the target
  (route, MTU, broadcast), picks the socket mode (datagram where
  ping_group_range allows, else raw) and compiles the native loop, or raises
  a ProbeError that says what to do.
- ``run`` starts one thread per stream (``stream.Stream``); each thread
  opens its own socket and calls the nogil loop (probes/icmp/engine.py) once
  per interval, and hands each interval over as a ``stream.StreamInterval``
  (queued to the event loop by ``_hand_over``).
  Every stream closes its intervals on the same absolute boundaries; ``run``
  merges them and emits one Sample per interval (an ``IcmpInterval``,
  records.py, which owns the Sample layout).
- On cancellation (Ctrl-C, --time) the streams stop sending, wait up to the
  grace period for replies still in flight, emit the last interval, and are
  joined before ``run`` returns: nothing is left behind, nothing in flight
  is counted lost.
- Heavy imports (numpy, numba, scapy) happen inside methods, never at import.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Emit, ProbeError
from probetop.probes.core.intervallog import MAX_KEPT_INTERVALS, IntervalLog
from probetop.probes.core.machine import thread_stack
from probetop.probes.core.sample import Status, now_ns
from probetop.probes.icmp.pingtext import IcmpErrorLine
from probetop.probes.icmp.records import KIND, METRICS, IntervalRow
from probetop.probes.icmp.settings import (
    STOP_DRAIN_S,
    STREAM_STACK_BYTES,
    IcmpSettings,
    reference_command,
)
from probetop.probes.icmp.stream import (
    Stream,
    StreamInterval,
    StreamPlan,
    StreamProgress,
    dissect_kept,
    interval_seconds,
    warm_up_engine,
)
from probetop.probes.icmp.summary import (
    IcmpParams,
    IcmpSummary,
    IcmpTotals,
    ResolvedTarget,
    StreamTotals,
)

# How long ending streams get to leave their native loop (they re-read the
# control word at least every CONTROL_POLL_NS = 20 ms).
STREAM_EXIT_WAIT_S = 0.5
# The summary's ``intervals``: the last this many (10 minutes at 1 s, every
# family's bound), older ones counted as ``intervals_dropped``. Keeping all
# grew the process by ~10 MiB an hour (tracemalloc, soak.py).
KEEP_INTERVAL_ROWS = MAX_KEPT_INTERVALS
DRAIN_MARGIN_S = 0.05
# Raw sockets' echo id: random per process, +index per stream (ping uses its
# pid), so two probetops to one host do not take each other's replies.
_RUN_IDENT = random.SystemRandom().randrange(0, 0x10000)

if TYPE_CHECKING:
    from probetop.probes.icmp.pingtext import ReplyListener
    from probetop.probes.icmp.sockets import Target
    from probetop.probes.icmp.stats import IntervalTotals


class IcmpProbe:
    """ICMP echo probe. See the module docstring."""

    kind = KIND
    metrics = METRICS

    def __init__(
        self,
        settings: IcmpSettings,
        *,
        idle_reason: str | None = None,
        listener: ReplyListener | None = None,
    ) -> None:
        self.settings = settings
        # ping's live text (headless): told the target, each reply, each interval.
        self.listener = listener
        self.id = f"{KIND}:{settings.host}"
        self.idle_reason = idle_reason
        self.target: Target | None = None
        self.mode: str | None = None
        self.start_ns = 0
        self.totals: IntervalTotals | None = None
        self.interval_rows: IntervalLog[IntervalRow] = IntervalLog(KEEP_INTERVAL_ROWS)
        self.stream_totals: list[IntervalTotals] = []
        self.progress: dict[int, StreamProgress] = {}
        self.elapsed_s = 0.0
        self.stopped_by = "finished"
        self._queue: asyncio.Queue[StreamInterval] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._streams: list[Stream] = []
        self._active: set[int] = set()
        self._pending: dict[int, dict[int, StreamInterval]] = {}
        # The demo's idle pane: nothing to run, so never keep a headless run alive.
        self.background = idle_reason is not None

    @property
    def logs_replies(self) -> bool:
        """Whether the loop logs each reply: ping's per-reply lines (not with
        -q unless -O, whose lines ping prints even then; not for a flood,
        whose ping -f prints dots instead)."""
        o = self.settings
        return self.listener is not None and not o.flood and (not o.quiet or o.outstanding)

    # -- Probe protocol --------------------------------------------------
    def prepare(self) -> None:
        if self.idle_reason is not None:
            return
        from probetop.probes.icmp.sockets import check_size, choose_mode, resolve_target

        opts = self.settings
        opts.validate()
        family = None
        if opts.family is not None:
            import socket

            family = socket.AF_INET6 if opts.family == 6 else socket.AF_INET
        self.target = resolve_target(opts.host, family, opts.source, opts.broadcast)
        if opts.pmtudisc is None:  # with ping's -M, the kernel decides, as for ping
            check_size(self.target, opts.size)
        self.mode = choose_mode(opts.socket_mode)
        # Open (and close) one socket now: a permission problem must stop us before any UI.
        sock, _ = self._open(0)
        sock.close()
        warm_up_engine()

    def params(self) -> Mapping[str, Any]:
        target = None
        if self.target is not None:
            t = self.target
            target = ResolvedTarget(t.address, t.interface, t.source, t.mtu)
        return IcmpParams(self.settings, self.mode, target, self.idle_reason).to_params()

    def reference_command(self) -> str | None:
        return reference_command(self.settings, self.target.address if self.target else None)

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
        self.interval_rows = IntervalLog(KEEP_INTERVAL_ROWS)
        self.stream_totals = [IntervalTotals() for _ in range(self.settings.streams)]
        self.progress = {}
        counts = _split(self.settings.count or 0, self.settings.streams)
        assert self.mode is not None
        plan = StreamPlan(
            self.settings,
            self.target,
            self.mode,
            self._hand_over,
            self.listener,
            self.logs_replies,
        )
        self._streams = []
        try:
            for i in range(self.settings.streams):
                sock, ident = self._open(i)
                self._streams.append(Stream(plan, i, sock, ident, counts[i]))
        except BaseException:
            for s in self._streams:
                s.sock.close()
            raise
        self._active = {s.index for s in self._streams}
        self._pending = {}
        if self.listener is not None:
            t = self.target
            # ping -I: "from SRC IFACE: " (IFACE empty for -I ADDR)
            bound = (t.source, t.device or "") if self.settings.source else None
            self.listener.started(
                self.settings.host,
                t.address,
                self.settings.size,
                t.v6,
                bound,
                pattern=self.settings.pattern,
            )
        self.start_ns = now_ns()
        with thread_stack(STREAM_STACK_BYTES):
            for s in self._streams:
                s.launch(self.start_ns)
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
            # Replies in flight get at most min(--grace + a margin, STOP_DRAIN_S);
            # then the streams abort and what is unanswered stays "in flight".
            # The margin lets a grace below STOP_DRAIN_S resolve every request
            # (the last one was sent a moment before the drain began).
            drain_s = min(self.settings.grace_s + DRAIN_MARGIN_S, STOP_DRAIN_S)
            collector = asyncio.ensure_future(self._collect(emit))
            try:
                # asyncio.wait, not wait_for: bounded whatever the collector does
                await asyncio.wait({collector}, timeout=drain_s)
            finally:
                collector.cancel()
                for s in self._streams:
                    s.abort()
                await self._merge_last(emit)
            raise
        finally:
            for s in self._streams:
                s.drain()
            await self._join(STREAM_EXIT_WAIT_S)

    def summary(self) -> Mapping[str, Any]:
        return self.summary_record().to_dict()

    def summary_record(self) -> IcmpSummary:
        """The run so far, typed (``summary()`` is its JSON-safe layout)."""
        t = self.totals
        opts = self.settings
        totals = None
        if t is not None:
            c = t.counters
            secs = self.sending_s
            per_s = (lambda n: n / secs) if secs > 0 else (lambda n: None)
            replies_ps = per_s(c["received"])
            jitter_avg, jitter_max = t.jitter_us()
            hint = t.rate_limit_hint()
            totals = IcmpTotals(
                sent=c["sent"],
                received=c["received"],
                duplicates=c["duplicates"],
                reordered=c["reordered"],
                lost=c["lost"],
                late=c["late"],
                lost_early_by_wrap=c["wrapped"],
                pacing_missed=c["missed"],
                in_flight_at_end=t.in_flight,
                loss_pct=self._loss_pct(c["lost"], c["received"], self.progress.values()),
                replies_per_second=replies_ps,
                requests_per_second=per_s(c["sent"]),
                pps=None if replies_ps is None else 2.0 * replies_ps,
                rtt=t.rtt(),
                errors=t.errors(),
                error_routers=t.routers,
                duration_s=secs,
                grace_s=opts.grace_s,
                streams=opts.streams,
                intervals=tuple(self.interval_rows),
                intervals_dropped=self.interval_rows.dropped,
                stopped_by=self.stopped_by,
                jitter_avg_us=jitter_avg,
                jitter_max_us=jitter_max,
                outage_s=t.outage_s(self._request_interval_s(c["sent"], secs)),
                drain_s=max(0.0, self.elapsed_s - secs),
                requests_span_s=self.requests_span_s,
                pipe=self.pipe,
                ipg_us=self.ipg_us(c["sent"]),
                rtt_ewma_us=self.rtt_ewma_us,
                rate_limit=None if hint is None else hint.text,
                per_stream=self._per_stream(secs) if opts.streams > 1 else None,
            )
        return IcmpSummary(
            target=opts.host,
            address=self.target.address if self.target else None,
            mode=self.mode,
            pacing="adaptive"
            if opts.adaptive
            else ("flood" if opts.paced_by_replies else "fixed rate"),
            reference_command=self.reference_command(),
            idle_reason=self.idle_reason,
            totals=totals,
        )

    @property
    def sending_s(self) -> float:
        """Seconds from the start until every stream stopped sending (the
        rates' denominator); the run so far while any stream still sends.
        ``--count N`` at period P sends for N x P (the last request's period
        is part of it), even when the last reply came back sooner and the
        run ended before that period did: clamped to the run, ``-c 30 -i
        0.1`` read 2.90 s and 10.3 requests/s."""
        ends = [p.send_end_ns for p in self.progress.values()]
        if not ends or 0 in ends or len(ends) < len(self._streams):
            return self.elapsed_s
        return max(0.0, (max(ends) - self.start_ns) / 1e9)

    @property
    def requests_span_s(self) -> float | None:
        """Seconds from the first request any stream sent to the last (None
        before one): ping's ``time``, which runs from its start, just before
        its first request, to its last (``cur_time``, set as each request
        goes out); not from the run's start (a stream thread may start
        late under load), nor to its end."""
        sends = [p.sends_ns for p in self.progress.values() if p.sends_ns[0]]
        if not sends:
            return None
        return max(0.0, (max(last for _, last in sends) - min(f for f, _ in sends)) / 1e9)

    @property
    def pipe(self) -> int | None:
        """ping's ``pipe``: the most requests a stream had out when one of its
        replies came back (None before a reply)."""
        return max((p.pipe for p in self.progress.values() if p.pipe), default=None)

    def ipg_us(self, sent: int) -> int | None:
        """ping's ``ipg``: the span of the requests (``requests_span_s``, in
        whole us) integer-divided by the gaps between them; None below 2 sent."""
        sends = [p.sends_ns for p in self.progress.values() if p.sends_ns[0]]
        if sent < 2 or not sends:
            return None
        span_ns = max(last for _, last in sends) - min(first for first, _ in sends)
        return max(0, span_ns) // 1000 // (sent - 1)

    @property
    def rtt_ewma_us(self) -> float | None:
        """ping's ``ewma`` (us): its integer x 8 moving average / 8; with
        several streams, the mean of theirs (None before a reply)."""
        ewmas = [p.ewma8 for p in self.progress.values() if p.ewma8]
        return sum(ewmas) / len(ewmas) / 8 if ewmas else None

    def _request_interval_s(self, sent: int, sending_s: float) -> float | None:
        """Time between requests to the target (fping's interval, for the
        outage time): the set period, or a flood's mean."""
        rate = self.settings.total_rate
        if rate is not None and not self.settings.adaptive:
            return 1.0 / rate
        return sending_s / sent if sent else None

    @staticmethod
    def _loss_pct(lost: int, received: int, progress: Any) -> float | None:
        """Lost / resolved, where resolved counts requests in send order up to
        the oldest one still in flight: replies to later requests are left out,
        else a stop would count their answered neighbours and not their lost
        ones, and under-state loss. Equal to lost / (lost + received) once
        nothing is in flight."""
        resolved = sum(p.resolved for p in progress)
        if resolved <= 0:
            resolved = lost + received
        return 100.0 * lost / resolved if resolved else None

    def _per_stream(self, secs: float) -> tuple[StreamTotals, ...]:
        from probetop.probes.icmp.settings import stream_settings

        address = self.target.address if self.target else None
        rows = []
        for i, (t, alone) in enumerate(
            zip(self.stream_totals, stream_settings(self.settings), strict=True)
        ):
            c = t.counters
            progress = [self.progress[i]] if i in self.progress else []
            rows.append(
                StreamTotals(
                    stream=i,
                    sent=c["sent"],
                    received=c["received"],
                    lost=c["lost"],
                    loss_pct=self._loss_pct(c["lost"], c["received"], progress),
                    replies_per_second=c["received"] / secs if secs > 0 else None,
                    rtt_avg_us=t.rtt().avg_us,
                    jitter_avg_us=t.jitter_us()[0],
                    reference_command=reference_command(alone, address),
                )
            )
        return tuple(rows)

    # -- internals ---------------------------------------------------------
    def _open(self, index: int) -> tuple[Any, int]:
        from probetop.probes.icmp.sockets import open_icmp_socket

        assert self.target is not None and self.mode is not None
        # Raw sockets: a random id per run, +index per stream (ping uses its pid).
        ident = (_RUN_IDENT + index) & 0xFFFF
        return open_icmp_socket(
            self.target,
            self.mode,
            ident=ident,
            ttl=self.settings.ttl,
            source=self.settings.source,
            pmtudisc=self.settings.pmtudisc,
            tos=self.settings.tos,
            mark=self.settings.mark,
            sndbuf=self.settings.sndbuf,
        )

    def _describe_pace(self) -> str:
        o = self.settings
        pace = "flood" if o.paced_by_replies else f"{o.total_rate:g} requests/s"
        if o.adaptive:
            pace = f"adaptive (ping -A), {pace} until the first reply"
        if o.streams > 1:
            pace += f" over {o.streams} streams"
        return pace

    def _hand_over(self, item: StreamInterval) -> None:
        """The streams' ``Deliver``: called from their threads, queues an
        interval for ``_collect`` on the event loop."""
        loop, queue = self._loop, self._queue
        if loop is None or queue is None:
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # loop closed: nobody is listening any more
            pass

    async def _collect(self, emit: Emit) -> None:
        """Merge stream snapshots per interval and emit them, until every stream is done."""
        from probetop.probes.icmp import layout as eng
        from probetop.probes.icmp.stats import IntervalTotals

        assert self._queue is not None and self.totals is not None and self.target is not None
        v6 = self.target.v6
        active, pending = self._active, self._pending
        while active:
            item = await self._queue.get()
            index = item.stream
            if item.snapshot is None:  # the thread failed
                active.discard(index)
                error = self._streams[index].error
                emit(Status(self.id, now_ns(), "error", f"stream {index} failed: {error}"))
                continue
            pending.setdefault(item.k, {})[index] = item
            self.progress[index] = item.progress
            if item.done:
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
                for i, got_i in got.items():
                    snap_i, progress_i, errs_i = got_i.snapshot, got_i.progress, got_i.errors
                    t_from_i, t_to_i = got_i.span_ns
                    interval.add_snapshot(snap_i, v6)
                    interval.in_flight += progress_i.in_flight
                    own = IntervalTotals()
                    own.add_snapshot(snap_i, v6, detail=False)
                    own.in_flight = progress_i.in_flight
                    self.stream_totals[i].merge(own)
                    interval.add_routers(errs_i)
                    for d in errs_i:  # datagram sockets: errors come from the error queue
                        interval.icmp_errors[d["name"]] = interval.icmp_errors.get(d["name"], 0) + 1
                        interval.counters["icmp_errors"] += 1
                    t_end = max(t_end, t_to_i)
                    # A count's last request has its period, as in sending_s: a
                    # run that ended before that period did (-c 5 -i 0.2: 0.8 s
                    # after the first request) read 6.24 requests/s for 5.
                    spans.append(max(t_to_i, progress_i.send_end_ns) - t_from_i)
                    dissect.append((snap_i, int(snap_i.counters[eng.K_ICMP_ERRS])))
                shown = [d for got_i in got.values() for d in got_i.errors]
                if interval.counters["icmp_errors"] and self.mode == "raw":
                    kept = await asyncio.to_thread(dissect_kept, dissect, v6)
                    interval.add_routers(kept)
                    shown = kept
                if self.listener is not None and self.logs_replies and shown:
                    self.listener.icmp_errors(_error_lines(shown, v6))
                seconds = interval_seconds(spans)
                if self.listener is not None and self.settings.flood:
                    c = interval.counters
                    self.listener.interval(c["sent"], c["received"], c["lost"], c["late"])
                self.elapsed_s = (t_end - self.start_ns) / 1e9
                self.totals.merge(interval)
                if not active and not any(interval.counters.values()) and self.interval_rows:
                    # The streams ended right after an edge and did nothing since
                    # (the edge read counted the last replies): no sample of
                    # nothing, which would read 0 replies/s.
                    continue
                period = None if self.settings.adaptive else self.settings.total_rate
                record = interval.record(
                    seconds,
                    self.mode,
                    request_interval_s=None if period is None else 1.0 / period,
                    rate_limit=self.totals.rate_limit_hint(),
                )
                ttls = [p.last_ttl for p in self.progress.values() if p.last_ttl is not None]
                if ttls:
                    record = dataclasses.replace(record, ttl=ttls[-1])
                self.interval_rows.append(IntervalRow(round(self.elapsed_s, 6), record))
                emit(record.to_sample(self.id, t_end, seconds))

    async def _merge_last(self, emit: Emit) -> None:
        """After an abort: merge what the streams delivered as they returned
        (each sends its last snapshot, ``done``), for at most a moment."""
        deadline = now_ns() + int(STREAM_EXIT_WAIT_S * 1e9)
        while self._active and now_ns() < deadline:
            collector = asyncio.ensure_future(self._collect(emit))
            try:
                await asyncio.wait({collector}, timeout=0.02)
            finally:
                collector.cancel()
                await asyncio.gather(collector, return_exceptions=True)

    async def _join(self, timeout: float) -> None:
        """Wait (polling, never blocking the loop) for the stream threads to
        end; abort any that are still sending halfway through the budget.
        Threads still alive after ``timeout`` are daemon threads: left."""
        deadline = now_ns() + int(timeout * 1e9)
        half = now_ns() + int(timeout * 0.5e9)
        while any(s.is_alive() for s in self._streams) and now_ns() < deadline:
            if now_ns() >= half:
                for s in self._streams:
                    s.abort()
            await asyncio.sleep(0.005)


def _error_lines(errors: list[dict[str, Any]], v6: bool) -> list[IcmpErrorLine]:
    """ping's ``From`` lines of the dissected errors (not the undissectable)."""
    return [
        IcmpErrorLine(d.get("router"), d.get("seq"), int(d["type"]), int(d["code"]), v6)
        for d in errors
        if "type" in d and "code" in d
    ]


def _split(total: int, parts: int) -> list[int]:
    """Split a request count over streams (0 = unlimited for all)."""
    if total <= 0:
        return [0] * parts
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]
