"""The CPU family's front door: sysbench ``cpu`` events/s, latency and fairness.

Everything outside ``probes/cpu/`` imports from here, never from the modules
behind it:

- ``FAMILY``: the family's descriptor (probes/core/family.py; probes/registry.py lists it)
- ``SPEC``: the ``probetop cpu`` options (declarative; CLI, prompt, docs)
- ``CpuSettings``: what one probe runs with (frozen, validated)
- ``CpuProbe``: the probe (native engine in GIL-free threads)
- ``CpuInterval``, ``METRICS``: what a CPU sample carries, typed
  (``bucket_upper_ms`` and ``HIST_SIZE``: sysbench's latency bucket edges)
- ``format_report``, ``json_document``, ``parse_report``: sysbench's report
- ``TRACKER``: its Prometheus metrics (``core.tracker.Tracker``); ``CHECKS``:
  what ``--assert`` reads from its summary, typed (``CpuFigures``), and how
  ``compare`` reads its samples (``core.checks.Checks``)
- ``logical_cpus``, ``EVENT_EXPLAINED``, ``PYTHON_ENGINE_LABEL``

Importing this package is cheap: the engine (llvmlite) loads when a probe
prepares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetop.probes.core.sysbench.hist import HIST_SIZE, bucket_upper_ms
from probetop.probes.cpu.family import FAMILY
from probetop.probes.cpu.probe import CpuProbe, logical_cpus, sweep_thread_counts
from probetop.probes.cpu.records import (
    EPS,
    EVENT_EXPLAINED,
    KIND,
    LAT_AVG_MS,
    LAT_PCT_MS,
    METRICS,
    PYTHON_ENGINE_LABEL,
    THREAD_EVENTS,
    THREADS,
    CpuInterval,
)
from probetop.probes.cpu.report import format_report, json_document, parse_report
from probetop.probes.cpu.settings import DEFAULT_TIME_S, SPEC, CpuSettings

if TYPE_CHECKING:
    from probetop.probes.cpu.checks import CHECKS, CpuFigures
    from probetop.probes.cpu.metrics import TRACKER


def __getattr__(name: str) -> Any:
    """``TRACKER``, ``CHECKS`` and ``CpuFigures`` on first use: a run without
    --metrics, --textfile or --assert does not build them (start-up)."""
    if name == "TRACKER":
        from probetop.probes.cpu.metrics import TRACKER as value
    elif name in ("CHECKS", "CpuFigures"):
        from probetop.probes.cpu import checks

        value = getattr(checks, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "CHECKS",
    "DEFAULT_TIME_S",
    "EPS",
    "EVENT_EXPLAINED",
    "FAMILY",
    "HIST_SIZE",
    "KIND",
    "LAT_AVG_MS",
    "LAT_PCT_MS",
    "METRICS",
    "PYTHON_ENGINE_LABEL",
    "SPEC",
    "THREADS",
    "THREAD_EVENTS",
    "TRACKER",
    "CpuFigures",
    "CpuInterval",
    "CpuProbe",
    "CpuSettings",
    "bucket_upper_ms",
    "format_report",
    "json_document",
    "logical_cpus",
    "parse_report",
    "sweep_thread_counts",
]
