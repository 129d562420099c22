"""The disk family's front door: fio-style IOPS and the volume warm-up.

Everything outside ``probes/disk/`` imports from here, never from the modules
behind it; this exports what is used outside the family and nothing more
(tests/core/test_front_door_surface.py holds that):

- ``IOPS``, ``WARMUP``: the two families' descriptors (probes/core/family.py;
  probes/registry.py lists them): option specs, probe factories, reports,
  metrics and ``--assert`` checks
- ``IopsSettings``, ``WarmupSettings``: what one probe runs with (frozen,
  validated; ``confirmed`` lets a run that destroys data go on)
- ``IopsProbe``, ``WarmupProbe``: the probes (native I/O loops in GIL-free
  threads); a write that is not confirmed makes ``prepare`` raise
  ``core.base.ConfirmationRequired``
- ``IopsInterval``, ``WarmupInterval``, ``DirectionRates``, ``IopsParams``,
  ``WarmupParams``: what a sample and a probe's parameters carry, typed;
  ``WARMUP_KIND``, ``DIRECTION_METRICS``, ``DIRECTIONS`` and the metric names
  the panes read (``WARMUP_BW``, ``WARMUP_IOPS``); ``CLAT_HIST_BUCKETS`` and
  ``clat_bucket_range_ns``: the latency histogram's bucket edges;
  ``FIO_PERCENTILES`` and ``pct_key``: fio's percentiles and their keys
- ``PassTotals``, ``WarmupSummary``, ``overall_outcome``: the warm-up's
  per-pass figures and summary, typed; ``format_warmup_report``: its text report
- ``compile_native``: build the native I/O loops ahead of the first run
  (and keep them as object code); ``load_native``: load them now

Reliability (docs/reliability-disk.md): every long step (layout, passes,
checkpoint saves, the JIT warm-up) stops within 2 s of a signal, --time or
the dashboard's stop; one run per target (a lock reporting the holder's
PID); writes refused for devices and files in use; bad input is a
``ProbeError`` (one line, exit 2), never a traceback.

Importing this package is cheap: ``IopsProbe`` and ``WarmupProbe`` load on
first use (they bring numpy and the I/O engine), so ``probetop --help`` does
not pay for them; numba loads when a probe runs only where the loops
were not kept as object code (``probetop compile``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetop.probes.disk.family import IOPS, WARMUP
from probetop.probes.disk.records import (
    CLAT_HIST_BUCKETS,
    DIRECTION_METRICS,
    DIRECTIONS,
    FIO_PERCENTILES,
    DirectionRates,
    IopsInterval,
    IopsParams,
    clat_bucket_range_ns,
    pct_key,
)
from probetop.probes.disk.settings import IopsSettings
from probetop.probes.disk.warmup.passes import PassTotals, WarmupSummary, overall_outcome
from probetop.probes.disk.warmup.records import (
    WARMUP_BW,
    WARMUP_IOPS,
    WARMUP_KIND,
    WarmupInterval,
    WarmupParams,
)
from probetop.probes.disk.warmup.report import format_warmup_report
from probetop.probes.disk.warmup.settings import WarmupSettings

if TYPE_CHECKING:
    from probetop.probes.disk.iops import IopsProbe
    from probetop.probes.disk.warmup import WarmupProbe


def compile_native() -> bool:
    """Compile the native I/O loops into numba's per-user cache, keep them as
    object code there (``core.native_objects``) and run each engine once on
    a scratch file (``probetop compile``, ``make setup``), so a later IOPS or
    warm-up run loads them in milliseconds, without numba. True when they
    were kept (False: numba's cache is off; numba's loops work). Raises
    ``ProbeError`` (exit 2) when the native code cannot be built."""
    from probetop.probes.disk.selftest import keep_kernels

    return keep_kernels()


def load_native() -> None:
    """Load the native I/O loops and run each engine once (the kept object
    code when ``probetop compile`` made it for these sources and this CPU,
    else numba's). Idempotent; raises ``ProbeError`` as ``compile_native``."""
    from probetop.probes.disk.selftest import warm_up_kernels

    warm_up_kernels()


def __getattr__(name: str) -> Any:
    """``IopsProbe`` / ``WarmupProbe`` on first use: numpy is not free."""
    value: Any
    if name == "IopsProbe":
        from probetop.probes.disk.iops import IopsProbe

        value = IopsProbe
    elif name == "WarmupProbe":
        from probetop.probes.disk.warmup import WarmupProbe

        value = WarmupProbe
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "CLAT_HIST_BUCKETS",
    "DIRECTIONS",
    "DIRECTION_METRICS",
    "FIO_PERCENTILES",
    "IOPS",
    "WARMUP",
    "WARMUP_BW",
    "WARMUP_IOPS",
    "WARMUP_KIND",
    "DirectionRates",
    "IopsInterval",
    "IopsParams",
    "IopsProbe",
    "IopsSettings",
    "PassTotals",
    "WarmupInterval",
    "WarmupParams",
    "WarmupProbe",
    "WarmupSettings",
    "WarmupSummary",
    "clat_bucket_range_ns",
    "compile_native",
    "format_warmup_report",
    "load_native",
    "overall_outcome",
    "pct_key",
]
