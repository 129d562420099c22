"""From samples to metrics, per probe family: the one place that decides what
Prometheus sees.

Contract:
- A ``Tracker`` follows one probe (by id): ``announce(info)`` reads its
  announced params, ``observe(sample)`` folds one interval in, ``points()``
  gives every series as it stands. Samples are read ONLY through each
  family's typed record (``HttpInterval.from_sample`` ...), never by key.
- Counters are summed here from each interval's counts, so they never go
  backwards (a probe re-added under the same id goes on from where it was).
- ``TRACKERS`` maps a probe kind to its tracker class; a kind without one
  (the passive ``system.*`` probes: node_exporter already exports the
  machine's counters) gives no metrics. ``CATALOG`` lists every metric per
  command, for docs/metrics.md and its test.

HTTP and ICMP use the names users already query: blackbox_exporter's
``probe_*`` gauges and smokeping_prober's ``smokeping_*`` histogram; the
rest is ``probetop_``-prefixed, in base units (docs/metrics.md).

This module is the front door (``state`` and the docs test read it); each
family's metric definitions and tracker live in their own module
(``http_metrics``, ``icmp_metrics``, ``cpu_metrics``, ``mem_metrics``, ``iops_metrics``,
``warmup_metrics``), on the shared ``tracker`` base and ``buckets``.
"""

from __future__ import annotations

from probetop.tui.metrics.cpu_metrics import CpuTracker
from probetop.tui.metrics.http_metrics import HttpTracker
from probetop.tui.metrics.icmp_metrics import IcmpTracker
from probetop.tui.metrics.iops_metrics import IopsTracker
from probetop.tui.metrics.mem_metrics import MemTracker
from probetop.tui.metrics.model import MetricDef
from probetop.tui.metrics.tracker import Tracker, metric_def
from probetop.tui.metrics.warmup_metrics import WarmupTracker

BUILD_INFO = metric_def(
    "probetop_build", "info", "", "the probetop version that measured these metrics", ()
)

TRACKERS: dict[str, type[Tracker]] = {
    t.KIND: t
    for t in (CpuTracker, MemTracker, IopsTracker, WarmupTracker, IcmpTracker, HttpTracker)
}

CATALOG: dict[str, tuple[MetricDef, ...]] = {t.COMMAND: t.DEFS for t in TRACKERS.values()}
"""Every metric, by the command whose probes give it (docs/metrics.md)."""
