"""The ``probetop icmp`` report: ping-style text, or one JSON document.

Contract:
- ``format_report(summary, error=...)`` is the headless text's end, as
  ping (iputils) prints it (pingtext.statistics_block): ``--- HOST ping
  statistics ---``, ``N packets transmitted, M received, X% packet loss,
  time Tms`` and ``rtt min/avg/max/mdev = a/b/c/d ms`` with ping's tail
  (``, pipe N``, ``, ipg/ewma I/E ms`` for a flood), so ``jc --ping`` and
  ``pingparsing`` read the JSON's sent, received, loss_pct and rtt_us from
  it. probetop's lines (``probetop: ...``: socket, replies/s and packets/s,
  reordered/late, requests in flight at the end, p50/p90/p99, jitter and
  outage, per-stream figures, errors with their routers, the equivalent
  command) come before the ``---`` line, where those parsers do not read.
- ``json_document(probe_id, summary, ...)`` is the ``--json`` output: the
  summary as the probe wrote it, between ``probe`` and ``reason``/``error``.
- ``exit_code(summary, error, want_replies=)`` follows ping: 0 when replies
  came back (also after Ctrl-C), 1 when requests went unanswered, when
  fewer than ``want_replies`` came back (ping -c N -w S), or the probe failed.
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from probetop.probes.icmp.pingtext import PingTotals, header_line, ms3, statistics_block
from probetop.probes.icmp.summary import IcmpSummary, IcmpTotals


def _ms(value_us: float | None) -> str:
    return "-" if value_us is None else ms3(value_us)


def _icmp_error_total(errors: Mapping[str, int]) -> int:
    """ping's ``+N errors``: ICMP errors received, and requests too long for
    the path MTU (EMSGSIZE: ping reads the kernel's queued local error and
    counts it, ``local error: message too long, mtu=N``); not the other
    local send/receive errnos, which ping only prints."""
    return sum(
        n
        for name, n in errors.items()
        if name == "send EMSGSIZE" or not name.startswith(("send ", "receive "))
    )


def _local_error_words(name: str, n: int) -> str | None:
    """A local send/receive errno (``send EPERM``) in ping's words
    (``sendmsg: Operation not permitted``) with its count; None for ICMP errors."""
    call, _, code = name.partition(" ")
    if call not in ("send", "receive"):
        return None
    number = getattr(errno, code, None)
    words = os.strerror(number) if isinstance(number, int) else code
    times = "request" if n == 1 else "requests"
    return f"error: {'sendmsg' if call == 'send' else 'recvmsg'}: {words} ({n} {times})"


def extra_lines(s: IcmpSummary, error: str | None, notes: Sequence[str] = ()) -> list[str]:
    """probetop's lines of the report, beyond what ping prints."""
    lines = [f"{s.mode or '?'} socket, {s.pacing or '?'}"]
    if error:
        lines.append(f"error: {error}")
    lines.extend(f"note: {note}" for note in notes)
    t = s.totals
    if t is not None:
        if t.replies_per_second is not None:
            lines.append(
                f"{t.replies_per_second:,.0f} replies/s, {t.pps or 0.0:,.0f} packets/s "
                f"through the target over {t.duration_s:.3f} s of sending"
            )
        if t.reordered or t.late or t.lost_early_by_wrap:
            lines.append(
                f"{t.reordered} reordered, {t.late} late (after their request was counted "
                f"lost), {t.lost_early_by_wrap} lost early (sequence wrap)"
            )
        if t.in_flight_at_end:
            lines.append(
                f"{t.in_flight_at_end} requests still in flight at the end: not counted "
                "lost (ping counts them), so packet loss covers the requests resolved"
            )
        r = t.rtt
        if r.p50_us is not None:
            lines.append(f"rtt p50/p90/p99 = {_ms(r.p50_us)}/{_ms(r.p90_us)}/{_ms(r.p99_us)} ms")
        if t.jitter_avg_us is not None or t.outage_s is not None:
            outage = "-" if t.outage_s is None else f"{t.outage_s:.3f}"
            lines.append(
                f"jitter avg/max = {_ms(t.jitter_avg_us)}/{_ms(t.jitter_max_us)} ms, "
                f"outage {outage} s"
            )
        if t.rate_limit:
            lines.append(f"note: {t.rate_limit}")
        for row in t.per_stream or ():
            rloss = "-" if row.loss_pct is None else f"{row.loss_pct:.3f}"
            rps = "-" if row.replies_per_second is None else f"{row.replies_per_second:,.0f}"
            lines.append(
                f"stream {row.stream}: {row.sent} sent, {row.received} received, "
                f"{row.lost} lost ({rloss}% loss), {rps} replies/s, "
                f"rtt avg {_ms(row.rtt_avg_us)} ms, jitter avg {_ms(row.jitter_avg_us)} ms"
            )
        for name, n in t.errors.items():
            local = _local_error_words(name, n)
            if local is not None:
                lines.append(local)
                continue
            routers = t.error_routers.get(name)
            where = f" from {', '.join(sorted(routers))}" if routers else ""
            lines.append(f"error: {name}: {n}{where}")
    per_stream = t.per_stream if t is not None else None
    if per_stream:
        lines.append(f"equivalent: {len(per_stream)} commands run together:")
        lines.extend(f"  {row.reference_command} &" for row in per_stream)
        lines.append("  wait")
    else:
        lines.append(f"equivalent: {s.reference_command}")
    return lines


def format_report(
    summary: Mapping[str, Any],
    *,
    error: str | None = None,
    header: bool = True,
    notes: Sequence[str] = (),
) -> str:
    """ping's statistics block of an ICMP summary, probetop's lines before
    its ``---`` line (see the module docstring); ``header``: ping's ``PING``
    line first (False when it was printed as the run started); ``notes``:
    more probetop lines (``note: ...``), which do not change the exit code."""
    s = IcmpSummary.from_summary(summary)
    host = s.target or "?"
    address = s.address or host
    out = ""
    if header:
        out = header_line(host, address, _size(summary), ":" in address) + "\n"
    t = s.totals
    totals = PingTotals(
        host=host,
        transmitted=t.sent if t else 0,
        received=t.received if t else 0,
        duplicates=t.duplicates if t else 0,
        errors=_icmp_error_total(t.errors) if t else 0,
        loss_pct=_loss_pct(t),
        time_ms=_time_ms(t) if t else 0,
        rtt_min_us=t.rtt.min_us if t else None,
        rtt_avg_us=t.rtt.avg_us if t else None,
        rtt_max_us=t.rtt.max_us if t else None,
        rtt_mdev_us=t.rtt.mdev_us if t else None,
        pipe=t.pipe if t else None,
        ipg_us=t.ipg_us if t else None,
        ewma_us=t.rtt_ewma_us if t else None,
        show_ipg=s.pacing in ("flood", "adaptive"),
    )
    return out + statistics_block(totals, extra_lines(s, error, notes))


def _loss_pct(t: IcmpTotals | None) -> float | None:
    """The JSON's loss_pct (requests resolved); ping's (sent - received) / sent
    when none was resolved (every request still in flight at the stop)."""
    if t is None:
        return None
    if t.loss_pct is not None:
        return t.loss_pct
    return 100.0 * (t.sent - t.received) / t.sent if t.sent else None


def _time_ms(t: IcmpTotals) -> int:
    """ping's ``time``: from the first request sent to the last, in ms
    rounded half up (iputils ``finish``: ``cur_time - start_time``; its
    start just before the first request, ``cur_time`` set as each request
    goes out), whatever ended the run
    (-c, -w, -f, Ctrl-C): neither the wait for the last replies nor the
    rest of the last period counts. Summaries written before
    ``requests_span_s`` fall back to where the last interval ended."""
    if t.requests_span_s is not None:
        return math.floor(t.requests_span_s * 1000 + 0.5)
    if t.intervals:
        return round(1000 * t.intervals[-1].t_s)
    return round(1000 * (t.duration_s + (t.drain_s or 0.0)))


def _size(summary: Mapping[str, Any]) -> int:
    """The payload size, read from the reference command (the summary has no field of it)."""
    command = summary.get("reference_command")
    if isinstance(command, str):
        words = command.split()
        for flag in ("-s", "-d"):
            if flag in words and words.index(flag) + 1 < len(words):
                value = words[words.index(flag) + 1]
                if value.isdigit():
                    return int(value)
    return 56


def json_document(
    probe_id: str, summary: Mapping[str, Any], *, reason: str | None, error: str | None
) -> dict[str, Any]:
    """The ``--json`` document: ``probe``, the summary's fields, ``reason``, ``error``."""
    return {"probe": probe_id, **summary, "reason": reason, "error": error}


def exit_code(
    summary: Mapping[str, Any], error: str | None, *, want_replies: int | None = None
) -> int:
    """1 on a probe error or when requests were sent and none was answered;
    with ``want_replies`` (ping -c N -w S: N), also when fewer than N replies
    came back by the deadline; else 0."""
    if error:
        return 1
    t = IcmpSummary.from_summary(summary).totals
    if t is not None and want_replies is not None and t.received < want_replies:
        return 1
    return 1 if t is not None and t.sent and not t.received else 0
