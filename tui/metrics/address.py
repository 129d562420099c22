"""The values of ``--metrics [ADDR:]PORT`` and ``--textfile DIR``, parsed.

Light on purpose: ``tui/cli/plan.py`` imports it for every command line, so it
imports neither prometheus_client nor a probe family.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import OptionValueError, user_path

DEFAULT_HOST = "127.0.0.1"
TEXTFILE_NAME = "probetop.prom"
"""The file ``--textfile DIR`` writes in DIR."""


class MetricsError(UsageProbeError):
    """The metrics endpoint or the textfile cannot be set up (exit 2)."""

    code = "metrics"


@dataclass(frozen=True, slots=True)
class MetricsAddress:
    """Where ``--metrics`` serves: a host (an IP address or a name) and a port
    (0: any free port, said on stderr)."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_metrics_address(text: str) -> MetricsAddress:
    """``9100``, ``127.0.0.1:9100``, ``0.0.0.0:9100``, ``[::1]:9100``,
    ``localhost:9100``. A bare port binds 127.0.0.1."""
    shown = text if len(text) <= 80 else f"{text[:60]}...({len(text)} characters)"
    example = "use PORT or ADDR:PORT, e.g. 9100, 127.0.0.1:9100 or 0.0.0.0:9100"
    raw = text.strip()
    host, port_text = DEFAULT_HOST, raw
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0 or raw[end + 1 : end + 2] != ":":
            raise OptionValueError(f"not an address: {shown!r} ({example}, [::1]:9100)")
        host, port_text = raw[1:end], raw[end + 2 :]
    elif ":" in raw:
        host, _, port_text = raw.rpartition(":")
        if not host:
            raise OptionValueError(
                f"no address before the port in {shown!r}: give the port alone for "
                "127.0.0.1, or 0.0.0.0:PORT to listen on every interface"
            )
        if ":" in host:
            raise OptionValueError(f"an IPv6 address goes in brackets: [{host}]:{port_text}")
    if not (port_text.isascii() and port_text.isdigit()):  # "²".isdigit() is True
        raise OptionValueError(f"not a port: {shown!r} ({example})")
    port = int(port_text)
    if port > 65535:
        raise OptionValueError(f"port {port} is out of range (1-65535, or 0 for any free port)")
    if not _is_host(host):
        raise OptionValueError(
            f"not an address: {shown!r} (the address is an IPv4 or IPv6 address written "
            f"in full, or a host name; {example})"
        )
    return MetricsAddress(host, port)


_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def _is_host(host: str) -> bool:
    """An IP address in full, or a DNS host name (ASCII labels of 1-63
    characters, 253 in all, one letter at least). Anything else would reach
    getaddrinfo, which raises on a too-long label or undecodable bytes and
    reads "0" or "127.1" as 0.0.0.0 and 127.0.0.1."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0] if ":" in host else host)
        return True
    except ValueError:
        pass
    if not host.isascii() or len(host) > 253 or not any(c.isalpha() for c in host):
        return False
    return all(_LABEL.match(label) for label in host.removesuffix(".").split("."))


def parse_textfile_dir(text: str) -> Path:
    """The --textfile directory (checked when the exporter opens)."""
    if not text.strip():
        raise OptionValueError("an empty directory name")
    return user_path(text)
