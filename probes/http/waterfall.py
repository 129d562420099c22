"""Plain-text rendering of one-off HTTP exchanges for the terminal: the waterfall.

Contract: pure functions from data to a string. ANSI colours only when asked
(``use_colour``: a terminal and no ``NO_COLOR``); piped output is plain text.
No Rich or Textual here (this lives beside the probes, which must stay
headless, and a one-off request must not pay for importing a UI toolkit).
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from probetop.probes.http.transfer import PHASES, Exchange, Hop
from probetop.probes.record import redact_url

BAR_WIDTH = 40
PHASE_NAMES = {"dns": "DNS", "tcp": "TCP", "tls": "TLS", "server": "server", "transfer": "transfer"}
# The libcurl stamp that ends each phase (curl -w %{time_...} names).
PHASE_END = {
    "dns": "namelookup",
    "tcp": "connect",
    "tls": "appconnect",
    "server": "starttransfer",
    "transfer": "total",
}
_COLOURS = {"dns": "36", "tcp": "32", "tls": "33", "server": "35", "transfer": "34"}


def use_colour(stream: TextIO) -> bool:
    """Colours on a terminal unless NO_COLOR is set (https://no-color.org)."""
    return bool(stream.isatty()) and not os.environ.get("NO_COLOR")


def paint(text: str, code: str, colour: bool) -> str:
    """``text`` in an ANSI colour (SGR ``code``) when ``colour``, else as is."""
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def ms(us: int | float | None) -> str:
    """Microseconds as milliseconds with microsecond resolution."""
    return "-" if us is None else f"{us / 1000:.3f} ms"


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _starts(hop: Hop) -> dict[str, int]:
    """Where each phase starts on the hop's time line (us)."""
    s = hop.stamps_us
    tls_end = s.get("appconnect") or s.get("connect", 0)
    return {
        "dns": 0,
        "tcp": s.get("namelookup", 0),
        "tls": s.get("connect", 0),
        "server": s.get("pretransfer", 0) or tls_end,
        "transfer": s.get("starttransfer", 0),
    }


def render_hop(hop: Hop, *, colour: bool, title: str | None = None) -> str:
    """One hop: request line, status, addresses, TLS, body, and the phase waterfall."""
    info = hop.info
    lines = []
    head = title or f"{hop.method} {redact_url(hop.url)}"
    lines.append(paint(head, "1", colour))
    if hop.http_code:
        ok = hop.http_code < 400
        status = hop.status_line or str(hop.http_code)
        lines.append("  " + paint(status, "32" if ok else "31;1", colour))
    if hop.error:
        lines.append("  " + paint(f"error ({hop.error}): {hop.message}", "31;1", colour))
    if info.get("primary_ip"):
        remote = _addr(info.get("primary_ip"), info.get("primary_port"))
        local = _addr(info.get("local_ip"), info.get("local_port"))
        version = f"HTTP/{hop.http_version}" if hop.http_version else "HTTP/?"
        conns = info.get("num_connects")
        reused = "  (reused connection)" if conns == 0 else ""
        lines.append(f"  remote {remote}  local {local}  {version}{reused}")
    if hop.tls:
        tls = hop.tls
        expiry = f"  certificate expires {tls.cert_expiry}" if tls.cert_expiry else ""
        lines.append(f"  TLS {tls.version or '?'}  {tls.cipher or '?'}{expiry}")
    if hop.http_code:
        size = float(info.get("size_download") or 0)
        speed = float(info.get("speed_download") or 0)
        ctype = info.get("content_type")
        kind = f"  {ctype}" if ctype else ""
        lines.append(f"  body {human_bytes(size)}, {human_bytes(speed)}/s{kind}")
    lines.append("")
    lines.append(f"  {'phase':<9}{'duration':>13}   {'cumulative':>13}  {'(curl -w)':<16}")
    phases = hop.phases_us
    total = max(1, hop.stamps_us.get("total", 0))
    starts = _starts(hop)
    for phase in PHASES:
        us = phases[phase]
        end_name = PHASE_END[phase]
        end = hop.stamps_us.get(end_name, 0)
        cumulative = ms(end) if us is not None and (end or phase == "dns") else "-"
        bar = ""
        if us is not None:
            offset = int(starts[phase] / total * BAR_WIDTH)
            width = max(1 if us > 0 else 0, round(us / total * BAR_WIDTH))
            bar = " " * min(offset, BAR_WIDTH - 1) + paint("█" * width, _COLOURS[phase], colour)
        label = PHASE_NAMES[phase]
        if hop.http_version == "3" and phase == "tcp":
            label = "connect"  # QUIC over UDP: there is no TCP handshake
        name = paint(f"{label:<9}", _COLOURS[phase], colour)
        lines.append(f"  {name}{ms(us):>13}   {cumulative:>13}  {end_name:<14}|{bar}")
    if hop.http_version == "3":
        lines.append("  (HTTP/3: 'connect' and 'TLS' are libcurl's stamps for the QUIC connection)")
    pre = hop.stamps_us.get("pretransfer", 0)
    if pre and phases["server"] is not None:
        lines.append(f"  {'':<9}{'':>13}   {ms(pre):>13}  {'pretransfer':<14}(request sent)")
    return "\n".join(lines) + "\n"


def _addr(ip: Any, port: Any) -> str:
    if not ip:
        return "-"
    return f"[{ip}]:{port}" if ":" in str(ip) else f"{ip}:{port}"


def render_exchange(exchange: Exchange, *, colour: bool) -> str:
    """The waterfall of every hop; with redirects a line of curl's summed totals."""
    hops = exchange.hops
    if len(hops) == 1:
        return render_hop(hops[0], colour=colour)
    parts = []
    for n, hop in enumerate(hops, 1):
        title = f"hop {n}/{len(hops)}: {hop.method} {redact_url(hop.url)}"
        parts.append(render_hop(hop, colour=colour, title=title))
    total = sum(h.stamps_us.get("total", 0) for h in hops)
    ttfb = sum(h.stamps_us.get("starttransfer", 0) for h in hops)
    parts.append(
        f"{len(hops) - 1} redirect(s); curl -L would report time_starttransfer "
        f"{ms(ttfb)} and time_total {ms(total)} (summed over hops)\n"
    )
    return "\n".join(parts)
