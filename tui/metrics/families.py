"""Points as prometheus_client metric families, and the text formats.

Everything prometheus_client is imported here, inside the functions, so
``probetop --version`` and runs without ``--metrics`` never load it.
A series' samples follow prometheus_client's conventions: ``_total`` for a
counter, ``_bucket``/``_count``/``_sum`` for a histogram, ``quantile``
samples plus ``_count``/``_sum`` for a summary, ``_info`` with value 1 for an
info metric.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

from probetop.probes.core.metricdefs import Histogram, Point, Summary


@functools.lru_cache(maxsize=4096)
def _float_text(value: float) -> str:
    """A bucket bound or quantile as Go and prometheus_client write it."""
    from prometheus_client.utils import floatToGoString

    return str(floatToGoString(value))


@functools.lru_cache(maxsize=4096)
def label_text(value: str) -> str:
    """A label value every exposition can encode: a file name that is not
    UTF-8 (``iops /data/caf\\xe9.img``: Python holds its bytes as lone
    surrogates) had the OpenMetrics export and the live endpoint end in a
    ``UnicodeEncodeError``; its bytes are written ``\\xe9`` instead."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def series_samples(point: Point) -> Iterator[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) of one series, in exposition order;
    every label value encodable as UTF-8 (``label_text``)."""
    metric = point.metric
    # An info metric's identifying labels come first; its dict brings the rest.
    labels = {
        k: label_text(v) for k, v in zip(metric.labels, point.labels, strict=metric.type != "info")
    }
    value = point.value
    if metric.type == "counter":
        assert isinstance(value, float)
        yield f"{metric.name}_total", labels, value
    elif metric.type == "info":
        assert isinstance(value, dict)
        info = {k: label_text(v) if isinstance(v, str) else v for k, v in value.items()}
        yield f"{metric.name}_info", {**labels, **info}, 1.0
    elif metric.type == "histogram":
        assert isinstance(value, Histogram)
        for bound, count in value.buckets:
            yield f"{metric.name}_bucket", {**labels, "le": _float_text(bound)}, float(count)
        yield f"{metric.name}_bucket", {**labels, "le": "+Inf"}, float(value.count)
        yield f"{metric.name}_count", labels, float(value.count)
        yield f"{metric.name}_sum", labels, value.sum
    elif metric.type == "summary":
        assert isinstance(value, Summary)
        for q, v in value.quantiles:
            yield metric.name, {**labels, "quantile": _float_text(q)}, v
        yield f"{metric.name}_count", labels, float(value.count)
        yield f"{metric.name}_sum", labels, value.sum
    else:
        assert isinstance(value, float)
        yield metric.name, labels, value


def build_families(points: Iterable[Point], timestamp: float | None = None) -> list[Any]:
    """prometheus_client ``Metric`` objects, one per metric name (series of
    the same name from several probes share it), in first-seen order."""
    from prometheus_client.metrics_core import Metric

    families: dict[str, Any] = {}
    for point in points:
        metric = point.metric
        family = families.get(metric.name)
        if family is None:
            family = families[metric.name] = Metric(
                metric.name, metric.help, metric.type, metric.unit
            )
        for name, labels, value in series_samples(point):
            family.add_sample(name, labels, value, timestamp)
    return list(families.values())


class StaticCollector:
    """A prometheus_client collector that hands out the families published
    last. ``publish`` swaps one reference (atomic under the GIL), so a scrape
    in the server's thread never sees half an update and never waits for
    the probes; a scrape does no work beyond formatting."""

    def __init__(self) -> None:
        self._families: list[Any] = []

    def publish(self, families: list[Any]) -> None:
        self._families = families

    def collect(self) -> list[Any]:
        return self._families


def make_registry(collector: StaticCollector) -> Any:
    """A registry holding only ``collector`` (no process/GC collectors: a
    scrape reads nothing but what the probes produced)."""
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)  # type: ignore[arg-type]
    return registry


def openmetrics_text(families: list[Any]) -> str:
    """The OpenMetrics exposition of ``families`` (ends with ``# EOF``)."""
    from prometheus_client.openmetrics.exposition import generate_latest

    class _Once:
        def collect(self) -> list[Any]:
            return families

    return bytes(generate_latest(_Once())).decode("utf-8")  # type: ignore[arg-type]
