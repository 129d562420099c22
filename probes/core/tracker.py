"""What every family's Prometheus tracker shares: the ``Tracker`` base, the
histogram counter, and the small conversions from samples to series.
Headless and without prometheus_client: the families' trackers
(``probes/<family>/metrics.py``) build on it, ``tui/metrics`` serves and
writes what they give.

Contract:
- A ``Tracker`` follows one probe (by id): ``announce(info)`` reads its
  announced params, ``observe(sample)`` folds one interval in, ``points()``
  gives every series as it stands, grouped by metric in the order of its
  ``DEFS`` (``by_metric``). Subclasses declare ``KIND``, ``COMMAND`` and
  ``DEFS``, and read samples ONLY through their family's typed record
  (``CpuInterval.from_sample`` ...), never by key.
- Counters are summed from each interval's counts, so they never go
  backwards (a probe re-added under the same id goes on from where it was).
- ``BucketCounter`` accumulates cumulative counts over fixed upper bounds
  (Prometheus ``le``); each family fixes its bounds so that every bucket of
  the probe's own histogram falls wholly under one bound: exact counts.
- A percentile the reference tool computed (sysbench's, fio's, wrk2's) is a
  ``SummaryCounter``: a Prometheus summary, the only type a ``quantile``
  label belongs to (promtool flags it on any other).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from probetop.probes.core.metricdefs import Histogram, MetricDef, Point, Summary
from probetop.probes.core.sample import Sample, Status


def events_in(rate: float | None, interval_s: float) -> int:
    """How many events a per-second rate over an interval stands for."""
    if rate is None or not math.isfinite(rate) or interval_s <= 0:
        return 0
    return max(0, round(rate * interval_s))


def quantile_label(value: float) -> str:
    """A quantile as a label value, as summaries spell it (0.95, 0.9999)."""
    return format(value, "g")


def label_text(value: Any) -> str:
    """A label value: None as the empty string."""
    return "" if value is None else str(value)


class Tracker:
    """Follows one probe. Subclasses declare ``KIND``, ``COMMAND`` and ``DEFS``."""

    KIND: ClassVar[str] = ""
    COMMAND: ClassVar[str] = ""
    DEFS: ClassVar[tuple[MetricDef, ...]] = ()

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.probe_id = probe_id
        self.announce(info)

    def announce(self, info: Mapping[str, Any]) -> None:
        """The probe was announced (again): read its params."""

    def observe(self, sample: Sample) -> None:
        raise NotImplementedError

    def status(self, record: Status) -> bool:
        """A status record of the probe (started, error, stopped ...); True
        when it changed the points. Most families have no series for them."""
        return False

    def points(self) -> list[Point]:
        raise NotImplementedError


# probe_success means the same for http and icmp: one help text.
SUCCESS_HELP = (
    "1 if the latest check succeeded, else 0 (http: the URL's latest request got a 2xx, "
    "blackbox_exporter's default valid_status_codes, and its whole body; icmp: a reply "
    "came back in the latest interval that resolved a request)"
)


def by_metric(points: list[Point], order: Sequence[MetricDef]) -> list[Point]:
    """Points grouped by metric in catalog order (one family's series together)."""
    rank = {id(m): i for i, m in enumerate(order)}
    return sorted(points, key=lambda p: rank.get(id(p.metric), len(rank)))


class BucketCounter:
    """Cumulative histogram counts over fixed upper bounds (Prometheus ``le``)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound
        self.total = 0
        self.sum = 0.0

    def slot(self, value: float) -> int:
        """The first bucket whose bound is >= value (Prometheus: value <= le)."""
        return bisect.bisect_left(self.bounds, value)

    def add(self, value: float) -> None:
        self.add_to(self.slot(value), 1, value)

    def add_to(self, slot: int, n: int, total: float) -> None:
        self.counts[slot] += n
        self.total += n
        self.sum += total

    def snapshot(self) -> Histogram:
        cumulative = []
        running = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            running += n
            cumulative.append((bound, running))
        return Histogram(tuple(cumulative), self.total, self.sum)


class SummaryCounter:
    """A summary as an exporter of another tool's percentiles serves one:
    ``quantiles`` are the tool's own figures for the latest interval
    ((0.95, seconds), ...: never interpolated), ``count`` and ``sum`` every
    observation timed over the run, as Prometheus' own summaries keep a
    recent window's quantiles and a lifetime's count and sum."""

    def __init__(self) -> None:
        self.quantiles: tuple[tuple[float, float], ...] = ()
        self.count = 0
        self.sum = 0.0

    def latest(self, quantiles: Iterable[tuple[float, float]]) -> None:
        """The latest interval's (quantile, seconds), the quantile as a
        label spells it (99.9 / 100 is 0.999, not 0.9990000000000001)."""
        self.quantiles = tuple(sorted((float(quantile_label(q)), v) for q, v in quantiles))

    def add(self, n: int, mean_s: float | None) -> None:
        """``n`` observations whose mean was ``mean_s`` (None: not timed, not counted)."""
        if n > 0 and mean_s is not None and math.isfinite(mean_s):
            self.count += n
            self.sum += mean_s * n

    def snapshot(self) -> Summary:
        return Summary(self.quantiles, self.count, self.sum)
