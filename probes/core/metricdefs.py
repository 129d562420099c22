"""The metric vocabulary: what a metric is (``MetricDef``) and one series' value
at one moment (``Point``). Plain data, no prometheus_client: the library is
imported only where text is written (``tui/metrics/families.py``).

Names follow Prometheus' rules: base units (seconds, bytes, ratios 0..1),
the unit as the name's suffix, counters named without ``_total`` here (the
exposition adds it, as prometheus_client does), info metrics without
``_info``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MetricType = Literal["gauge", "counter", "histogram", "summary", "info", "unknown"]


@dataclass(frozen=True, slots=True)
class MetricDef:
    """One metric family: its name (``probe_http_duration_seconds``), type,
    unit (``seconds``, ``bytes``, ``ratio`` or ""), help text and label names."""

    name: str
    type: MetricType
    unit: str
    help: str
    labels: tuple[str, ...]

    @property
    def exposed_name(self) -> str:
        """The name users query: counters end in ``_total``, info metrics in ``_info``."""
        if self.type == "counter":
            return f"{self.name}_total"
        if self.type == "info":
            return f"{self.name}_info"
        return self.name


def metric_def(
    name: str, type_: MetricType, unit: str, help_: str, labels: Iterable[str]
) -> MetricDef:
    """A ``MetricDef`` with its labels from any iterable."""
    return MetricDef(name, type_, unit, help_, tuple(labels))


@dataclass(frozen=True, slots=True)
class Histogram:
    """A cumulative histogram: ``buckets`` are (upper bound in the metric's
    unit, observations <= it), ascending, without +Inf; ``count`` is every
    observation (the +Inf bucket) and ``sum`` their sum."""

    buckets: tuple[tuple[float, int], ...]
    count: int
    sum: float


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary: ``quantiles`` ((0.95, value), ...) over the latest interval,
    ``count`` and ``sum`` over the whole run."""

    quantiles: tuple[tuple[float, float], ...]
    count: int
    sum: float


Value = float | Histogram | Summary | dict[str, str]


@dataclass(frozen=True, slots=True)
class Point:
    """One series of a metric: its label values (in ``metric.labels`` order)
    and its value: a number (gauge, counter), a ``Histogram``, a ``Summary``,
    or the info labels (a dict) of an info metric."""

    metric: MetricDef
    labels: tuple[str, ...]
    value: Value

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """What identifies the series: the metric's name and the label values."""
        return self.metric.name, self.labels
