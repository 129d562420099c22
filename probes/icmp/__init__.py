"""The ICMP family's front door: ICMP echo like ping, ping -f and hping3 -i.

Everything outside ``probes/icmp/`` imports from here, never from the
modules behind it; this exports what is used outside the family and nothing
more (tests/core/test_front_door_surface.py holds that):

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py
  lists it): option spec, probe factory, report, metrics and ``--assert`` checks
- ``IcmpSettings``: what one probe runs with (frozen, validated)
- ``IcmpProbe``: the probe (a native send/receive loop per stream, GIL-free)
- ``IcmpInterval``, ``RttStats``, ``RttBucket`` and the
  metric names the pane reads (``LOSS_PCT``, ``PPS``, ``REPLIES_PER_S``,
  ``RTT_P99_US``): what an ICMP sample carries, typed; ``IcmpParams``: its
  header params; ``IcmpSummary``: its summary
- ``format_report``, ``json_document``, ``exit_code``: the headless report
- ``reference_command``: the equivalent ping / hping3 command line
- ``compile_native``: build the native loop ahead of the first run

Importing this package is cheap: numpy, numba and scapy load when a probe
prepares or runs.
"""

from __future__ import annotations

from probetop.probes.icmp.family import FAMILY
from probetop.probes.icmp.probe import IcmpProbe
from probetop.probes.icmp.records import (
    LOSS_PCT,
    PPS,
    REPLIES_PER_S,
    RTT_P99_US,
    IcmpInterval,
    RttBucket,
    RttStats,
)
from probetop.probes.icmp.report import exit_code, format_report, json_document
from probetop.probes.icmp.settings import IcmpSettings, reference_command
from probetop.probes.icmp.summary import IcmpParams, IcmpSummary


def compile_native() -> bool:
    """Compile the native send/receive loop into numba's per-user cache and
    keep it as object code there (``probetop compile``, ``make setup``), so
    a later ICMP run loads it in milliseconds, without numba. True when kept
    (False: numba's cache is off). Needs no socket and sends nothing."""
    from probetop.probes.icmp.stream import keep_engine

    return keep_engine()


__all__ = [
    "FAMILY",
    "LOSS_PCT",
    "PPS",
    "REPLIES_PER_S",
    "RTT_P99_US",
    "IcmpInterval",
    "IcmpParams",
    "IcmpProbe",
    "IcmpSettings",
    "IcmpSummary",
    "RttBucket",
    "RttStats",
    "compile_native",
    "exit_code",
    "format_report",
    "json_document",
    "reference_command",
]
