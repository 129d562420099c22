"""The values of ``--metrics [ADDR:]PORT`` and ``--textfile DIR``, parsed.

Light on purpose: ``tui/plan.py`` imports it for every command line, so it
imports neither prometheus_client nor a probe family.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import OptionValueError

DEFAULT_HOST = "127.0.0.1"


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
    example = "use PORT or ADDR:PORT, e.g. 9100, 127.0.0.1:9100 or 0.0.0.0:9100"
    raw = text.strip()
    host, port_text = DEFAULT_HOST, raw
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0 or raw[end + 1 : end + 2] != ":":
            raise OptionValueError(f"not an address: {text!r} ({example}, [::1]:9100)")
        host, port_text = raw[1:end], raw[end + 2 :]
    elif ":" in raw:
        host, _, port_text = raw.rpartition(":")
        if not host:
            raise OptionValueError(
                f"no address before the port in {text!r}: give the port alone for "
                "127.0.0.1, or 0.0.0.0:PORT to listen on every interface"
            )
        if ":" in host:
            raise OptionValueError(f"an IPv6 address goes in brackets: [{host}]:{port_text}")
    if not port_text.isdigit():
        raise OptionValueError(f"not a port: {text!r} ({example})")
    port = int(port_text)
    if port > 65535:
        raise OptionValueError(f"port {port} is out of range (1-65535, or 0 for any free port)")
    if not host or any(c.isspace() for c in host):
        raise OptionValueError(f"not an address: {text!r} ({example})")
    return MetricsAddress(host, port)


def parse_textfile_dir(text: str) -> Path:
    """The --textfile directory (checked when the exporter opens)."""
    if not text.strip():
        raise OptionValueError("an empty directory name")
    return Path(text).expanduser()
