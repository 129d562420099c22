"""The CPU family's front door: sysbench ``cpu`` events/s, latency and fairness.

Everything outside ``probes/cpu/`` imports from here, never from the modules
behind it; this exports what is used outside the family and nothing more
(tests/core/test_front_door_surface.py holds that):

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py
  lists it): option spec, probe factory, report, metrics and ``--assert`` checks
- ``CpuSettings``: what one probe runs with (frozen, validated)
- ``CpuInterval`` and the metric names the pane reads
  (``EPS``, ``LAT_AVG_MS``, ``LAT_PCT_MS``, ``THREADS``; with --rate
  ``RATE``, ``QUEUE_LENGTH``): what a CPU sample
  carries, typed; ``bucket_upper_ms``: sysbench's latency bucket edges
- ``EVENT_EXPLAINED``, ``PYTHON_ENGINE_LABEL``: the pane's wording of an event
  and of the fallback engine
- ``format_report``: sysbench's text report from a summary

Importing this package is cheap: the engine (llvmlite) loads when a probe
prepares.
"""

from __future__ import annotations

from probetop.probes.core.sysbench.hist import bucket_upper_ms
from probetop.probes.cpu.family import FAMILY
from probetop.probes.cpu.records import (
    EPS,
    EVENT_EXPLAINED,
    LAT_AVG_MS,
    LAT_PCT_MS,
    PYTHON_ENGINE_LABEL,
    QUEUE_LENGTH,
    RATE,
    THREADS,
    CpuInterval,
)
from probetop.probes.cpu.report import format_report
from probetop.probes.cpu.settings import CpuSettings

__all__ = [
    "EPS",
    "EVENT_EXPLAINED",
    "FAMILY",
    "LAT_AVG_MS",
    "LAT_PCT_MS",
    "PYTHON_ENGINE_LABEL",
    "QUEUE_LENGTH",
    "RATE",
    "THREADS",
    "CpuInterval",
    "CpuSettings",
    "bucket_upper_ms",
    "format_report",
]
