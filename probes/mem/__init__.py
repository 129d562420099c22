"""The memory family's front door: sysbench ``memory`` operations/s, MiB/s,
latency and fairness.

Everything outside ``probes/mem/`` imports from here:

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py lists it)
- ``SPEC``: the ``probetop mem`` options (sysbench's names)
- ``MemSettings``: what one probe runs with (frozen, validated)
- ``MemProbe``: the probe (native LLVM loop in GIL-free threads)
- ``MemInterval``, ``METRICS``: what a memory sample carries, typed
- ``format_report``, ``json_document``, ``parse_report``: sysbench's report

Importing this package is cheap: the engine (llvmlite) loads when a probe prepares.
"""

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

__all__ = [
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
    "MemInterval",
    "MemProbe",
    "MemSettings",
    "format_report",
    "json_document",
    "parse_report",
]
