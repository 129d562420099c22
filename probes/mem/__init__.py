"""The memory family's front door: sysbench ``memory`` operations/s, MiB/s,
latency and fairness.

Everything outside ``probes/mem/`` imports from here:

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py lists it)
- ``SPEC``: the ``probetop mem`` options (sysbench's names)
- ``MemSettings``: what one probe runs with (frozen, validated)
- ``MemProbe``: the probe (native LLVM loop in GIL-free threads)
- ``MemInterval``, ``METRICS``: what a memory sample carries, typed
- ``format_report``, ``json_document``, ``parse_report``: sysbench's report
- ``TRACKER``: its Prometheus metrics (``core.tracker.Tracker``); ``CHECKS``:
  what ``--assert`` reads from its summary, typed (``MemFigures``), and how
  ``compare`` reads its samples (``core.checks.Checks``)

Importing this package is cheap: the engine (llvmlite) loads when a probe prepares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetop.probes.mem.family import FAMILY
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.records import (
    KIND,
    LAT_AVG_MS,
    LAT_PCT_MS,
    METRICS,
    MIBS,
    OPERATION_EXPLAINED,
    OPS,
    THREAD_OPS,
    THREADS,
    MemInterval,
)
from probetop.probes.mem.report import format_report, json_document, parse_report
from probetop.probes.mem.settings import DEFAULT_TIME_S, SPEC, MemSettings

if TYPE_CHECKING:
    from probetop.probes.mem.checks import CHECKS, MemFigures
    from probetop.probes.mem.metrics import TRACKER


def __getattr__(name: str) -> Any:
    """``TRACKER``, ``CHECKS`` and ``MemFigures`` on first use: a run without
    --metrics, --textfile or --assert does not build them (start-up)."""
    if name == "TRACKER":
        from probetop.probes.mem.metrics import TRACKER as value
    elif name in ("CHECKS", "MemFigures"):
        from probetop.probes.mem import checks

        value = getattr(checks, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "CHECKS",
    "DEFAULT_TIME_S",
    "FAMILY",
    "KIND",
    "LAT_AVG_MS",
    "LAT_PCT_MS",
    "METRICS",
    "MIBS",
    "OPERATION_EXPLAINED",
    "OPS",
    "SPEC",
    "THREADS",
    "THREAD_OPS",
    "TRACKER",
    "MemFigures",
    "MemInterval",
    "MemProbe",
    "MemSettings",
    "format_report",
    "json_document",
    "parse_report",
]
