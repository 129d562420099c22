"""The disk family's front door: fio-style IOPS and the volume warm-up.

Everything outside ``probes/disk/`` imports from here, never from the modules
behind it:

- ``IOPS_SPEC``, ``WARMUP_SPEC``: the ``probetop iops`` / ``probetop warmup``
  options (declarative; CLI, prompt, docs)
- ``IopsSettings``, ``WarmupSettings``: what one probe runs with (frozen,
  validated; ``confirmed`` lets a run that destroys data go on)
- ``IopsProbe``, ``WarmupProbe``: the probes (native I/O loops in GIL-free
  threads); a write that is not confirmed makes ``prepare`` raise
  ``core.base.ConfirmationRequired``
- ``IopsInterval``, ``WarmupInterval`` (+ ``DirectionRates``, ``Plateau``),
  ``IopsParams``, ``WarmupParams``: what a sample and a probe's parameters
  carry, typed; ``IOPS_METRICS``, ``WARMUP_METRICS``, ``DIRECTION_METRICS``
  and the metric name constants, and ``clat_bucket_range_ns``: the
  latency histogram's bucket edges
- ``iops_document``, ``format_iops_report``, ``iops_exit_code`` and the
  ``warmup_*`` equivalents: the headless reports; ``iops_output`` and
  ``OUTPUT_FORMATS``: the IOPS report in fio's --output-format names; ``PassTotals``,
  ``WarmupSummary``, ``Outcome``, ``overall_outcome``: the warm-up's
  per-pass figures and summary, typed
- ``num2str``, ``fio_bandwidth``, ``fio_count``, ``fio_size``: fio's units
  and rounding (``units.py``), for every disk report and pane
- ``parse_size``, ``format_size``, ``parse_range``, ``make_data_file``
- ``MIN_INTERVAL_S``: the shortest --sample-interval the disk probes keep (0.1 s)
- ``IOPS_TRACKER``, ``WARMUP_TRACKER``: their Prometheus metrics
  (``core.tracker.Tracker``); ``IOPS_CHECKS``, ``WARMUP_CHECKS``: what
  ``--assert`` reads from their summaries, typed (``IopsFigures``,
  ``WarmupFigures``), and how ``compare`` reads their samples
  (``core.checks.Checks``)

Reliability (docs/reliability-disk.md): every long step (layout, passes,
checkpoint saves, the JIT warm-up) stops within 2 s of a signal, --time or
the dashboard's stop; one run per target (a lock reporting the holder's
PID); writes refused for devices and files in use; bad input is a
``ProbeError`` (one line, exit 2), never a traceback.

Importing this package is cheap: ``IopsProbe`` and ``WarmupProbe`` load on
first use (they bring numpy and the I/O engine), so ``probetop --help`` does
not pay for them; numba loads when a probe runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetop.probes.disk.capacity import MIN_INTERVAL_S
from probetop.probes.disk.filelayout import make_data_file
from probetop.probes.disk.records import (
    CLAT_HIST_BUCKETS,
    DIRECTION_METRICS,
    DIRECTIONS,
    FIO_PERCENTILES,
    IOPS_ERRORS,
    IOPS_KIND,
    IOPS_METRICS,
    READ_IOPS,
    WRITE_IOPS,
    DirectionMetrics,
    DirectionRates,
    IopsInterval,
    IopsParams,
    active_directions,
    clat_bucket_range_ns,
    pct_key,
)
from probetop.probes.disk.report import (
    format_iops_report,
    iops_document,
    iops_exit_code,
    iops_output,
)
from probetop.probes.disk.settings import (
    IOPS_SPEC,
    OUTPUT_FORMATS,
    RW_MODES,
    IopsSettings,
    names_target,
)
from probetop.probes.disk.sizes import format_size, parse_range, parse_size
from probetop.probes.disk.units import bandwidth as fio_bandwidth
from probetop.probes.disk.units import count as fio_count
from probetop.probes.disk.units import num2str
from probetop.probes.disk.units import size as fio_size
from probetop.probes.disk.warmup.passes import (
    OUTCOMES,
    Outcome,
    PassTotals,
    WarmupSummary,
    overall_outcome,
)
from probetop.probes.disk.warmup.records import (
    DONE_BYTES,
    ELAPSED_S,
    ETA_S,
    PROGRESS_PCT,
    TOTAL_BYTES,
    WARMUP_BW,
    WARMUP_ERRORS,
    WARMUP_IOPS,
    WARMUP_KIND,
    WARMUP_METRICS,
    Plateau,
    WarmupInterval,
    WarmupParams,
)
from probetop.probes.disk.warmup.report import (
    format_warmup_report,
    warmup_document,
    warmup_exit_code,
)
from probetop.probes.disk.warmup.settings import PASSES, WARMUP_SPEC, WarmupSettings

if TYPE_CHECKING:
    from probetop.probes.disk.checks import IOPS_CHECKS, WARMUP_CHECKS, IopsFigures, WarmupFigures
    from probetop.probes.disk.iops import IopsProbe
    from probetop.probes.disk.iops_metrics import IOPS_TRACKER
    from probetop.probes.disk.warmup import WarmupProbe
    from probetop.probes.disk.warmup.metrics import WARMUP_TRACKER


def compile_native() -> None:
    """Compile the native I/O loops into numba's per-user cache and run each
    engine once on a scratch file (``probetop compile``, ``make setup``), so
    the first IOPS or warm-up run starts at once. Idempotent; raises
    ``ProbeError`` (exit 2) when the native code cannot be built."""
    from probetop.probes.disk.selftest import warm_up_kernels

    warm_up_kernels()


def __getattr__(name: str) -> Any:
    """``IopsProbe`` / ``WarmupProbe`` on first use (numpy is not free), and
    the trackers and checks (a run without --metrics, --textfile or
    --assert does not build them: start-up)."""
    value: Any
    if name == "IopsProbe":
        from probetop.probes.disk.iops import IopsProbe

        value = IopsProbe
    elif name == "WarmupProbe":
        from probetop.probes.disk.warmup import WarmupProbe

        value = WarmupProbe
    elif name in ("IOPS_TRACKER", "WARMUP_TRACKER"):
        from probetop.probes.disk import iops_metrics
        from probetop.probes.disk.warmup import metrics as warmup_metrics

        value = getattr(iops_metrics if name == "IOPS_TRACKER" else warmup_metrics, name)
    elif name in ("IOPS_CHECKS", "WARMUP_CHECKS", "IopsFigures", "WarmupFigures"):
        from probetop.probes.disk import checks

        value = getattr(checks, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "CLAT_HIST_BUCKETS",
    "DIRECTIONS",
    "DIRECTION_METRICS",
    "DONE_BYTES",
    "ELAPSED_S",
    "ETA_S",
    "FIO_PERCENTILES",
    "IOPS_CHECKS",
    "IOPS_ERRORS",
    "IOPS_KIND",
    "IOPS_METRICS",
    "IOPS_SPEC",
    "IOPS_TRACKER",
    "MIN_INTERVAL_S",
    "OUTCOMES",
    "OUTPUT_FORMATS",
    "PASSES",
    "PROGRESS_PCT",
    "READ_IOPS",
    "RW_MODES",
    "TOTAL_BYTES",
    "WARMUP_BW",
    "WARMUP_CHECKS",
    "WARMUP_ERRORS",
    "WARMUP_IOPS",
    "WARMUP_KIND",
    "WARMUP_METRICS",
    "WARMUP_SPEC",
    "WARMUP_TRACKER",
    "WRITE_IOPS",
    "DirectionMetrics",
    "DirectionRates",
    "IopsFigures",
    "IopsInterval",
    "IopsParams",
    "IopsProbe",
    "IopsSettings",
    "Outcome",
    "PassTotals",
    "Plateau",
    "WarmupFigures",
    "WarmupInterval",
    "WarmupParams",
    "WarmupProbe",
    "WarmupSettings",
    "WarmupSummary",
    "active_directions",
    "clat_bucket_range_ns",
    "compile_native",
    "fio_bandwidth",
    "fio_count",
    "fio_size",
    "format_iops_report",
    "format_size",
    "format_warmup_report",
    "iops_document",
    "iops_exit_code",
    "iops_output",
    "make_data_file",
    "names_target",
    "num2str",
    "overall_outcome",
    "parse_range",
    "parse_size",
    "pct_key",
    "warmup_document",
    "warmup_exit_code",
]
