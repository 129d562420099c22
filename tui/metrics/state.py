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

from collections.abc import Iterable

from probetop.probes import __version__, registry
from probetop.probes.core.family import trackers_of
from probetop.probes.core.metricdefs import Histogram, MetricDef, Point, metric_def
from probetop.probes.core.sample import Announce, Record, Sample, Status
from probetop.probes.core.tracker import Tracker

BUILD_INFO = metric_def(
    "probetop_build", "info", "", "the probetop version that measured these metrics", ()
)

# Every family's tracker (probes/registry.py), in registry order.
TRACKERS: dict[str, type[Tracker]] = {
    t.KIND: t for f in registry.all_families() for t in trackers_of(f)
}

CATALOG: dict[str, tuple[MetricDef, ...]] = {
    command: tuple(d for t in TRACKERS.values() if command == t.COMMAND for d in t.DEFS)
    for command in dict.fromkeys(t.COMMAND for t in TRACKERS.values())
}
"""Every metric, by the command whose probes give it, its kinds' in turn
(http: repeated, then load mode's; docs/metrics.md)."""


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
        if isinstance(record, Status):
            tracker = self.trackers.get(record.probe)
            return tracker is not None and tracker.status(record)
        return False

    def probe_points(self, probe_id: str) -> list[Point]:
        """The probe's series; one it shares with probes of its kind (two
        probes of one host under smokeping's labels) has their merged value."""
        tracker = self.trackers.get(probe_id)
        if tracker is None:
            return []
        peers = [t for t in self.trackers.values() if type(t) is type(tracker)]
        if len(peers) == 1:
            return tracker.points()
        merged = {_key(p): p for p in merge_series(q for t in peers for q in t.points())}
        return [merged[_key(p)] for p in tracker.points()]

    def build_point(self) -> Point:
        """``probetop_build_info{version=...}``."""
        return Point(BUILD_INFO, (), {"version": self.version})

    def points(self) -> list[Point]:
        """Every series now: the build info, then each probe's, grouped by metric."""
        out = [self.build_point()]
        for tracker in self.trackers.values():
            out.extend(tracker.points())
        return merge_series(out)


def _key(point: Point) -> tuple[str, tuple[str, ...]]:
    return point.metric.name, point.labels


def merge_series(points: Iterable[Point]) -> list[Point]:
    """One point per series (metric name and label values), in first-seen
    order. Probes whose series share labels (smokeping's ``smokeping_*`` keep
    ip/host/source/tos only, as one smokeping target does; its receive-error
    counter has none) are one series: counters and histograms add up, a
    gauge or info keeps the last probe's value."""
    out: dict[tuple[str, tuple[str, ...]], Point] = {}
    for point in points:
        key = _key(point)
        seen = out.get(key)
        if seen is None:
            out[key] = point
            continue
        a, b = seen.value, point.value
        if isinstance(a, float) and isinstance(b, float) and point.metric.type == "counter":
            out[key] = Point(point.metric, point.labels, a + b)
        elif isinstance(a, Histogram) and isinstance(b, Histogram):
            buckets = tuple(
                (bound, n + m) for (bound, n), (_, m) in zip(a.buckets, b.buckets, strict=True)
            )
            out[key] = Point(
                point.metric, point.labels, Histogram(buckets, a.count + b.count, a.sum + b.sum)
            )
        else:
            out[key] = point
    return list(out.values())
