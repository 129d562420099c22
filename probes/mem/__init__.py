"""The memory family's front door: sysbench ``memory`` operations/s, MiB/s,
latency and fairness.

Everything outside ``probes/mem/`` imports from here; this exports what is
used outside the family and nothing more
(tests/core/test_front_door_surface.py holds that):

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py
  lists it): option spec, probe factory, report, metrics and ``--assert`` checks
- ``MemSettings``: what one probe runs with (frozen, validated)
- ``MemProbe``: the probe (native LLVM loop in GIL-free threads)
- ``MemInterval`` and the metric names the pane reads (``OPS``, ``MIBS``,
  ``LAT_AVG_MS``, ``LAT_PCT_MS``, ``THREADS``; with --rate ``RATE``,
  ``QUEUE_LENGTH``): what a memory sample carries,
  typed; ``OPERATION_EXPLAINED``: the pane's wording
- ``format_report``, ``parse_report``: sysbench's text report, written from a
  summary and read back (the benchmark reads sysbench's own with it)

Importing this package is cheap: the engine (llvmlite) loads when a probe prepares.
"""

from __future__ import annotations

from probetop.probes.mem.family import FAMILY
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.records import (
    LAT_AVG_MS,
    LAT_PCT_MS,
    MIBS,
    OPERATION_EXPLAINED,
    OPS,
    QUEUE_LENGTH,
    RATE,
    THREADS,
    MemInterval,
)
from probetop.probes.mem.report import format_report, parse_report
from probetop.probes.mem.settings import MemSettings

__all__ = [
    "FAMILY",
    "LAT_AVG_MS",
    "LAT_PCT_MS",
    "MIBS",
    "OPERATION_EXPLAINED",
    "OPS",
    "QUEUE_LENGTH",
    "RATE",
    "THREADS",
    "MemInterval",
    "MemProbe",
    "MemSettings",
    "format_report",
    "parse_report",
]
