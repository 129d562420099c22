"""Records that flow from probes to the hub, the recorder and the panes.

Contract:
- A probe emits one ``Sample`` per interval: aggregates, never one per packet/I/O.
- ``t_ns`` is ``time.monotonic_ns()`` at the end of the interval; wall time is
  written once, in the session header.
- ``values`` maps a metric key to a number (or ``None`` when undefined in that
  interval, e.g. no replies so no RTT). A key is a metric name declared in the
  probe's ``MetricSpec`` list, optionally suffixed ``@entity`` for per-core,
  per-disk or per-NIC metrics: ``"busy_pct@cpu0"``, ``"read_iops@sda"``.
- ``extra`` carries structured data that is not a time series of numbers
  (percentile tables, per-thread counts, histograms). It must be JSON-safe.
- ``Status`` reports lifecycle and in-interval errors as data; probes go on.
- ``SeriesEnded`` says one ``@entity`` series of a probe ended (a detached
  loop device, a removed veth): made by the hub's ``SeriesTracker``
  (``series.py``) from the probe's own samples, never by a consumer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ENTITY_SEP = "@"

StatusLevel = Literal["info", "warning", "error", "started", "stopped"]
SeriesEndReason = Literal["vanished", "unseen"]
"""Why a series ended: ``vanished``, its probe's next sample no longer had it
(a probe that lists every entity it has in each sample: the passive system
probes); ``unseen``, its probe's samples went on without it for the gone
threshold (``series.GONE_AFTER_S``)."""


def now_ns() -> int:
    """The one clock every rate is computed from."""
    return time.monotonic_ns()


def metric_key(name: str, entity: str | None = None) -> str:
    """Join a metric name and an optional entity into a values key."""
    return f"{name}{ENTITY_SEP}{entity}" if entity else name


def split_key(key: str) -> tuple[str, str | None]:
    """Inverse of :func:`metric_key`."""
    name, sep, entity = key.partition(ENTITY_SEP)
    return name, (entity if sep else None)


@dataclass(frozen=True, slots=True)
class Sample:
    """One interval's aggregates from one probe instance."""

    probe: str
    t_ns: int
    interval_s: float
    values: Mapping[str, float | None]
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Status:
    """A lifecycle event or an in-interval error, shown and recorded, never fatal."""

    probe: str
    t_ns: int
    level: StatusLevel
    message: str


@dataclass(frozen=True, slots=True)
class Announce:
    """A probe joined the hub: its description (kind, params, metrics, reference
    command), as written to the recording. Subscribers create panes from it."""

    probe: str
    t_ns: int
    info: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SeriesSummary:
    """One metric of an ended series over its life: how many intervals had a
    value, and their min, mean and max (None when it never had one)."""

    count: int
    min: float | None
    mean: float | None
    max: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {"count": self.count, "min": self.min, "mean": self.mean, "max": self.max}


@dataclass(frozen=True, slots=True)
class SeriesEnded:
    """The series of one entity of one probe (``system.disk`` + ``loop0``: every
    ``name@loop0`` key) ended: written once, when it did, with what it was.

    ``t_ns``: when the end was found (the probe's sample that showed it);
    ``last_ns``: the end of the last interval whose sample held the entity;
    ``summaries``: metric name -> its ``SeriesSummary`` since the series began
    (or began again: an entity that comes back starts a new series)."""

    probe: str
    t_ns: int
    entity: str
    last_ns: int
    reason: SeriesEndReason
    summaries: Mapping[str, SeriesSummary]


Record = Sample | Status | Announce | SeriesEnded
