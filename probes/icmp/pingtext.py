"""ping's text, as iputils 20221126 prints it: the ``PING`` header, the
per-reply lines, flood's dots, and the statistics block.

Contract:
- ``Reply`` is one echo reply (or duplicate) the native loop logged;
  ``ReplyListener`` is what a probe tells as it runs (``started`` once the
  target is resolved, ``replies`` from a stream thread as they arrive,
  ``interval`` once per interval from the event loop).
- ``PingWriter`` is the listener that writes ping's live lines to a text
  stream: the header, a line per reply (unless quiet; ``-D`` prefixes the
  arrival time), and for a flood ping -f's dots (one per request lost so
  far: what its ``.`` per request and backspace per reply leave on a
  terminal).
- ``statistics_block(...)`` is ping's end: a blank line, ``--- HOST ping
  statistics ---``, the totals line and the ``rtt`` line (``rtt_line``:
  with its ``pipe N`` and ``ipg/ewma`` tail), in ping's formats
  (RTT in ms with 3 decimals, truncated to the µs as ping's integer µs are;
  loss with ``%g``), with probetop's own lines between the blank line and
  the ``---`` line, where neither ``jc --ping`` nor ``pingparsing`` reads.
- ``icmp_errors`` writes ping's ``From ROUTER icmp_seq=N Destination Host
  Unreachable`` line per ICMP error about a request (``error_line``), at the
  end of the interval it arrived in.
- ``ping_ms(us)`` is ping's time= field for an RTT in whole µs.

Imports nothing heavy; the numpy rows are read with ``int()``.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO


@dataclass(frozen=True, slots=True)
class Reply:
    """One logged echo reply: its stream, sequence (from 0, the stream's own
    count; ping numbers from 1), TTL (None unknown), ICMP bytes, RTT (ns),
    arrival (wall-clock seconds) and whether it was a duplicate."""

    stream: int
    seq: int
    ttl: int | None
    nbytes: int
    rtt_ns: int
    at_s: float
    duplicate: bool
    no_answer: bool = False  # ping -O's line for request ``seq``: no reply fields


class ReplyListener(Protocol):
    """What an ICMP probe tells as it runs (see the module docstring)."""

    def started(
        self,
        host: str,
        address: str,
        size: int,
        v6: bool,
        bound: tuple[str, str] | None = None,
        pattern: str | None = None,
    ) -> None: ...

    def replies(self, replies: Sequence[Reply], dropped: int) -> None: ...

    def interval(self, sent: int, received: int, lost: int, late: int) -> None: ...

    def icmp_errors(self, errors: Sequence[IcmpErrorLine]) -> None: ...


@dataclass(frozen=True, slots=True)
class IcmpErrorLine:
    """One ICMP error about one of our requests: the reporting router, the
    request's sequence (from 0, as ``Reply.seq``; None unknown), type and code."""

    router: str | None
    seq: int | None
    icmp_type: int
    code: int
    v6: bool


# iputils ping's words for an ICMP error (pr_icmph / pr_icmph6), by (type, code).
_V4_WORDS = {
    (3, 0): "Destination Net Unreachable",
    (3, 1): "Destination Host Unreachable",
    (3, 2): "Destination Protocol Unreachable",
    (3, 3): "Destination Port Unreachable",
    (3, 4): "Frag needed and DF set",
    (3, 5): "Source Route Failed",
    (3, 6): "Destination Net Unknown",
    (3, 7): "Destination Host Unknown",
    (3, 8): "Source Host Isolated",
    (3, 9): "Destination Net Prohibited",
    (3, 10): "Destination Host Prohibited",
    (3, 11): "Destination Net Unreachable for Type of Service",
    (3, 12): "Destination Host Unreachable for Type of Service",
    (3, 13): "Packet filtered",
    (3, 14): "Precedence Violation",
    (3, 15): "Precedence Cutoff",
    (11, 0): "Time to live exceeded",
    (11, 1): "Frag reassembly time exceeded",
}
_V6_WORDS = {
    (1, 0): "Destination unreachable: No route",
    (1, 1): "Destination unreachable: Administratively prohibited",
    (1, 2): "Destination unreachable: Beyond scope of source address",
    (1, 3): "Destination unreachable: Address unreachable",
    (1, 4): "Destination unreachable: Port unreachable",
    (2, 0): "Packet too big",
    (3, 0): "Time exceeded: Hop limit",
    (3, 1): "Time exceeded: Defragmentation failure",
}


def error_line(e: IcmpErrorLine) -> str:
    """ping's line for an ICMP error: ``From ROUTER icmp_seq=N WORDS``."""
    words = (_V6_WORDS if e.v6 else _V4_WORDS).get((e.icmp_type, e.code))
    if words is None:
        words = f"Bad ICMP type: {e.icmp_type}" if not e.v6 else f"ICMP type: {e.icmp_type}"
    seq = "" if e.seq is None else f" icmp_seq={(e.seq + 1) & 0xFFFF}"
    return f"From {e.router or '?'}{seq} {words}"


def ping_ms(us: int) -> str:
    """ping's ``time=`` value (without `` ms``) for an RTT of ``us`` whole µs:
    3 decimals below 1 ms, 2 below 10 ms, 1 below 100 ms, none above."""
    if us >= 100000 - 50:
        return f"{(us + 500) // 1000}"
    if us >= 10000 - 5:
        return f"{(us + 50) // 1000}.{((us + 50) % 1000) // 100}"
    if us >= 1000:
        return f"{(us + 5) // 1000}.{((us + 5) % 1000) // 10:02d}"
    return f"{us // 1000}.{us % 1000:03d}"


def ms3(us: float) -> str:
    """An RTT summary figure as ping prints it: whole µs (truncated) as ms.ddd."""
    whole = max(0, int(us))
    return f"{whole // 1000}.{whole % 1000:03d}"


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def header_line(
    host: str, address: str, size: int, v6: bool, bound: tuple[str, str] | None = None
) -> str:
    """``PING host (addr) 56(84) bytes of data.`` / ``PING ::1(::1) 56 data bytes``;
    with ping -I (``bound``: the source address and the interface, "" for
    -I ADDR) ``PING host (addr) from SRC IFACE: 56(84) bytes of data.``"""
    via = f"from {bound[0]} {bound[1]}: " if bound is not None else ""
    if v6:
        shown = address if _is_address(host) else f"{host} ({address})"
        return f"PING {host}({shown}) {via}{size} data bytes"
    return f"PING {host} ({address}) {via}{size}({size + 28}) bytes of data."


class PingWriter:
    """ping's live lines on ``out`` (see the module docstring). Thread-safe:
    stream threads call ``replies``, the event loop ``interval``."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        quiet: bool = False,
        timestamps: bool = False,
        audible: bool = False,
    ) -> None:
        self.out = out if out is not None else sys.stdout
        self.quiet = quiet
        self.timestamps = timestamps
        self.bell = "\a" if audible else ""  # ping -a: BEL before a reply line's newline
        self.source = ""
        self.flood_dots = 0
        self.dropped = 0
        self._lock = threading.Lock()

    def started(
        self,
        host: str,
        address: str,
        size: int,
        v6: bool,
        bound: tuple[str, str] | None = None,
        pattern: str | None = None,
    ) -> None:
        """ping's first lines: ``PATTERN: 0x...`` for -p (not with -q), then ``PING ...``."""
        if pattern is not None and not self.quiet:
            self._write(f"PATTERN: 0x{pattern}\n")
        # ping names the reply's sender by its reverse lookup unless given
        # an address; for a name the usual sender is the target, looked up once.
        self.source = address
        if not _is_address(host):
            try:
                name = socket.getnameinfo((address, 0), socket.NI_NAMEREQD)[0]
            except OSError:
                name = address
            self.source = f"{name} ({address})"
        self._write(header_line(host, address, size, v6, bound) + "\n")

    def replies(self, replies: Sequence[Reply], dropped: int) -> None:
        lines = []
        for r in replies:
            stamp = f"[{r.at_s:.6f}] " if self.timestamps else ""
            if r.no_answer:  # ping -O prints it with -q too
                lines.append(f"{stamp}no answer yet for icmp_seq={(r.seq + 1) & 0xFFFF}\n")
                continue
            if self.quiet:
                continue
            ttl = "" if r.ttl is None else f" ttl={r.ttl}"
            dup = " (DUP!)" if r.duplicate else ""
            dup += self.bell
            lines.append(
                f"{stamp}{r.nbytes} bytes from {self.source}: icmp_seq={(r.seq + 1) & 0xFFFF}"
                f"{ttl} time={ping_ms(r.rtt_ns // 1000)} ms{dup}\n"
            )
        self.dropped += dropped
        self._write("".join(lines))

    def interval(self, sent: int, received: int, lost: int, late: int) -> None:
        """A flood's dots: one per request lost, one taken back per late reply."""
        if self.quiet:
            return
        text = "." * lost + "\b \b" * min(late, self.flood_dots + lost)
        self.flood_dots += lost - min(late, self.flood_dots + lost)
        self._write(text)

    def icmp_errors(self, errors: Sequence[IcmpErrorLine]) -> None:
        """ping's ``From ...`` line per ICMP error."""
        if self.quiet or not errors:
            return
        self._write("".join(error_line(e) + "\n" for e in errors))

    def _write(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            try:
                self.out.write(text)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass  # `| head`: the reader left; the run and its exit status go on


def rows_to_replies(rows: Any, stream: int, wall_offset_ns: int) -> list[Reply]:
    """The native loop's log rows (layout.L_*; arrival in monotonic ns) as Replies."""
    from probetop.probes.icmp.layout import (
        L_AT,
        L_BYTES,
        L_KIND,
        L_RTT,
        L_SEQ,
        L_TTL,
        ROW_DUPLICATE,
        ROW_NO_ANSWER,
    )

    out = []
    for row in rows:
        ttl = int(row[L_TTL])
        out.append(
            Reply(
                stream=stream,
                seq=int(row[L_SEQ]),
                ttl=ttl if ttl >= 0 else None,
                nbytes=int(row[L_BYTES]),
                rtt_ns=max(0, int(row[L_RTT])),
                at_s=(int(row[L_AT]) + wall_offset_ns) / 1e9,
                duplicate=int(row[L_KIND]) == ROW_DUPLICATE,
                no_answer=int(row[L_KIND]) == ROW_NO_ANSWER,
            )
        )
    return out


def wall_offset_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC now (ns): monotonic stamps to wall time."""
    return time.time_ns() - time.monotonic_ns()


def _f32(x: float) -> float:
    """``x`` through a C float, as ping's ``(float)`` cast before ``%g``."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


@dataclass(frozen=True, slots=True)
class PingTotals:
    """What ping's statistics block shows."""

    host: str
    transmitted: int
    received: int
    duplicates: int
    errors: int
    loss_pct: float | None
    time_ms: int
    rtt_min_us: float | None
    rtt_avg_us: float | None
    rtt_max_us: float | None
    rtt_mdev_us: float | None
    # The rtt line's tail (iputils finish()): ``, pipe N`` when N > 1, and
    # ``, ipg/ewma I/E ms`` when ``show_ipg`` (a flood) and both are known.
    pipe: int | None = None
    ipg_us: int | None = None
    ewma_us: float | None = None
    show_ipg: bool = False


def statistics_block(t: PingTotals, extras: Iterable[str] = ()) -> str:
    """ping's end of output (see the module docstring); ``extras`` are
    probetop's lines, placed between the blank line and ``---``."""
    lines = ["", *(f"probetop: {x}" for x in extras), f"--- {t.host} ping statistics ---"]
    totals = f"{t.transmitted} packets transmitted, {t.received} received"
    if t.duplicates:
        totals += f", +{t.duplicates} duplicates"
    if t.errors:
        totals += f", +{t.errors} errors"
    if t.transmitted:
        loss = t.loss_pct if t.loss_pct is not None else 0.0
        totals += f", {_f32(loss):g}% packet loss, time {t.time_ms}ms"
    lines.append(totals)
    lines.append(rtt_line(t))
    return "\n".join(lines) + "\n"


def rtt_line(t: PingTotals) -> str:
    """ping's last line: ``rtt min/avg/max/mdev = a/b/c/d ms``, then
    ``pipe N`` when more than one request was out as a reply came, then
    ``ipg/ewma I/E ms`` for a flood with a reply and more than one request
    sent, each after ``, `` when something precedes it (iputils finish());
    empty when none of them applies."""
    parts = []
    rtt = (t.rtt_min_us, t.rtt_avg_us, t.rtt_max_us, t.rtt_mdev_us)
    if t.received and all(v is not None for v in rtt):
        parts.append("rtt min/avg/max/mdev = " + "/".join(ms3(v or 0.0) for v in rtt) + " ms")
    if t.pipe is not None and t.pipe > 1:
        parts.append(f"pipe {t.pipe}")
    if t.show_ipg and t.received and t.transmitted > 1 and t.ipg_us is not None:
        parts.append(f"ipg/ewma {ms3(t.ipg_us)}/{ms3(t.ewma_us or 0.0)} ms")
    return ", ".join(parts)
