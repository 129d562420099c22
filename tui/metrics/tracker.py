"""What every family's tracker shares: the ``Tracker`` base, metric
definitions, and the small conversions from samples to series.

Contract: a ``Tracker`` follows one probe (by id): ``announce(info)`` reads
its announced params, ``observe(sample)`` folds one interval in, ``points()``
gives every series as it stands, grouped by metric in the order of its
``DEFS`` (``by_metric``). Subclasses declare ``KIND``, ``COMMAND`` and ``DEFS``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from probetop.probes.core.sample import Sample
from probetop.tui.metrics.model import MetricDef, Point


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

    def points(self) -> list[Point]:
        raise NotImplementedError


def metric_def(name: str, type_: str, unit: str, help_: str, labels: Iterable[str]) -> MetricDef:
    return MetricDef(name, type_, unit, help_, tuple(labels))  # type: ignore[arg-type]


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
