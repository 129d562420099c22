"""The ICMP family's front door: ICMP echo like ping, ping -f and hping3 -i.

Everything outside ``probes/icmp/`` imports from here, never from the
modules behind it:

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py lists it)
- ``SPEC``: the ``probetop icmp`` options (declarative; CLI, prompt, docs)
- ``IcmpSettings``: what one probe runs with (frozen, validated)
- ``IcmpProbe``: the probe (a native send/receive loop per stream, GIL-free)
- ``IcmpInterval``, ``RttStats``, ``RttBucket``, ``METRICS`` and the metric
  names: what an ICMP sample carries, typed; ``IcmpParams``: its header
  params; ``IcmpSummary``: its summary
- ``format_report``, ``json_document``, ``exit_code``: the headless report
- ``PingWriter``, ``ReplyListener``, ``Reply``: ping's live lines (headless text)
- ``reference_command``: the equivalent ping / hping3 command line
- ``TRACKER``: its Prometheus metrics (``core.tracker.Tracker``); ``CHECKS``:
  what ``--assert`` reads from its summary, typed (``IcmpFigures``), and how
  ``compare`` reads its samples (``core.checks.Checks``)

Importing this package is cheap: numpy, numba and scapy load when a probe
prepares or runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetop.probes.icmp.family import FAMILY
from probetop.probes.icmp.pingtext import IcmpErrorLine, PingWriter, Reply, ReplyListener
from probetop.probes.icmp.probe import IcmpProbe
from probetop.probes.icmp.records import (
    DUPLICATES,
    ICMP_ERRORS,
    IN_FLIGHT,
    KIND,
    LATE,
    LOSS_PCT,
    LOST,
    METRICS,
    MISSED,
    PPS,
    REORDERED,
    REPLIES_PER_S,
    REQUESTS_PER_S,
    RTT_AVG_US,
    RTT_MAX_US,
    RTT_MDEV_US,
    RTT_MIN_US,
    RTT_P50_US,
    RTT_P90_US,
    RTT_P99_US,
    SEND_ERRORS,
    IcmpInterval,
    IntervalRow,
    RttBucket,
    RttStats,
)
from probetop.probes.icmp.report import exit_code, format_report, json_document
from probetop.probes.icmp.settings import (
    MAX_SIZE,
    SPEC,
    UNSOLICITED_MAX_PPS,
    IcmpSettings,
    reference_command,
)
from probetop.probes.icmp.stream import REPLY_LOG_ROWS
from probetop.probes.icmp.summary import IcmpParams, IcmpSummary, IcmpTotals, ResolvedTarget


def compile_native() -> None:
    """Compile the native send/receive loop into numba's per-user cache
    (``probetop compile``, ``make setup``), so the first ICMP run starts at
    once. Idempotent; needs no socket and sends nothing."""
    from probetop.probes.icmp.stream import warm_up_engine

    warm_up_engine()


if TYPE_CHECKING:
    from probetop.probes.icmp.checks import CHECKS, IcmpFigures
    from probetop.probes.icmp.metrics import TRACKER


def __getattr__(name: str) -> Any:
    """``TRACKER``, ``CHECKS`` and ``IcmpFigures`` on first use: a run without
    --metrics, --textfile or --assert does not build them (start-up)."""
    if name == "TRACKER":
        from probetop.probes.icmp.metrics import TRACKER as value
    elif name in ("CHECKS", "IcmpFigures"):
        from probetop.probes.icmp import checks

        value = getattr(checks, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "CHECKS",
    "DUPLICATES",
    "FAMILY",
    "ICMP_ERRORS",
    "IN_FLIGHT",
    "KIND",
    "LATE",
    "LOSS_PCT",
    "LOST",
    "MAX_SIZE",
    "METRICS",
    "MISSED",
    "PPS",
    "REORDERED",
    "REPLIES_PER_S",
    "REPLY_LOG_ROWS",
    "REQUESTS_PER_S",
    "RTT_AVG_US",
    "RTT_MAX_US",
    "RTT_MDEV_US",
    "RTT_MIN_US",
    "RTT_P50_US",
    "RTT_P90_US",
    "RTT_P99_US",
    "SEND_ERRORS",
    "SPEC",
    "TRACKER",
    "UNSOLICITED_MAX_PPS",
    "IcmpErrorLine",
    "IcmpFigures",
    "IcmpInterval",
    "IcmpParams",
    "IcmpProbe",
    "IcmpSettings",
    "IcmpSummary",
    "IcmpTotals",
    "IntervalRow",
    "PingWriter",
    "Reply",
    "ReplyListener",
    "ResolvedTarget",
    "RttBucket",
    "RttStats",
    "compile_native",
    "exit_code",
    "format_report",
    "json_document",
    "reference_command",
]
