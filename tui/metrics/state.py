"""The metrics of a session as it goes: one tracker per probe, fed the hub's
records (live) or a recording's (export), in order.

Contract:
- Each family decides what Prometheus sees of its probes: its ``Tracker``
  (``probes/<family>/metrics.py``, exported as ``TRACKER``; the base is
  ``probes/core/tracker.py``). ``TRACKERS`` maps a probe kind to its
  tracker class; a kind without one (the passive ``system.*`` probes:
  node_exporter already exports the machine's counters) gives no metrics.
- ``CATALOG`` lists every metric per command, for docs/metrics.md and its
  test; ``BUILD_INFO`` is the one metric of no family.

HTTP and ICMP use the names users already query: blackbox_exporter's
``probe_*`` gauges and smokeping_prober's ``smokeping_*`` histogram; the
rest is ``probetop_``-prefixed, in base units (docs/metrics.md).
"""

from __future__ import annotations

from probetop.probes import __version__, registry
from probetop.probes.core.metricdefs import MetricDef, Point, metric_def
from probetop.probes.core.sample import Announce, Record, Sample
from probetop.probes.core.tracker import Tracker

BUILD_INFO = metric_def(
    "probetop_build", "info", "", "the probetop version that measured these metrics", ()
)

# Every family's tracker (probes/registry.py), in registry order.
TRACKERS: dict[str, type[Tracker]] = {
    t.KIND: t for t in (f.tracker() for f in registry.all_families() if f.tracker is not None)
}

CATALOG: dict[str, tuple[MetricDef, ...]] = {t.COMMAND: t.DEFS for t in TRACKERS.values()}
"""Every metric, by the command whose probes give it (docs/metrics.md)."""


class MetricsState:
    """Trackers by probe id. ``feed`` returns True when the points changed.
    ``unexported`` names the probes announced with a kind that has no metrics
    here (a newer probetop's kind; never the passive ``system.*`` ones, which
    node_exporter covers): probe id -> kind, so an export can say so."""

    def __init__(self, version: str = __version__) -> None:
        self.version = version
        self.trackers: dict[str, Tracker] = {}
        self.unexported: dict[str, str] = {}

    def feed(self, record: Record) -> bool:
        if isinstance(record, Announce):
            tracker = self.trackers.get(record.probe)
            if tracker is not None:
                tracker.announce(record.info)
                return True
            kind = record.info.get("kind")
            cls = TRACKERS.get(kind) if isinstance(kind, str) else None
            if cls is None:
                if not str(kind).startswith("system."):
                    self.unexported[record.probe] = str(kind)
                return False
            self.trackers[record.probe] = cls(record.probe, record.info)
            return True
        if isinstance(record, Sample):
            tracker = self.trackers.get(record.probe)
            if tracker is None:
                return False
            tracker.observe(record)
            return True
        return False

    def probe_points(self, probe_id: str) -> list[Point]:
        tracker = self.trackers.get(probe_id)
        return tracker.points() if tracker is not None else []

    def build_point(self) -> Point:
        """``probetop_build_info{version=...}``."""
        return Point(BUILD_INFO, (), {"version": self.version})

    def points(self) -> list[Point]:
        """Every series now: the build info, then each probe's, grouped by metric."""
        out = [self.build_point()]
        for tracker in self.trackers.values():
            out.extend(tracker.points())
        return out
