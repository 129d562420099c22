"""When a per-entity series ends: the records that close a device's series.

A probe's ``name@entity`` keys (``read_iops@loop0``, ``rx_pps@veth3``) make
one series per (probe, entity). Devices and interfaces come and go on a real
host; without an end, a recording cannot tell "loop0 was detached at 8 s"
from "loop0 had no samples", and whatever follows a session keeps every
entity it ever saw.

Contract:
- ``SeriesTracker.observe(sample)`` is called with every sample a probe
  emits, in order (the hub does it, before fanning the sample out), and
  returns the ``SeriesEnded`` records that sample shows: an entity of that
  probe no longer in it ends at once (``vanished``) for a probe that lists
  every entity it has in each sample (``watch(probe, whole=True)``: the
  passive system probes), else once the probe's samples went on without it
  for ``GONE_AFTER_S`` (``unseen``; a probe that samples slowly or pauses
  ends nothing: only its own later samples count).
- Each series is ended once, with its summary so far (per metric: count of
  values, min, mean, max) and the end of its last interval; its state is
  freed then. An entity that comes back starts a new series.
- ``forget(probe)`` drops a probe's open series without ending them: at a
  probe's (or the session's) end the footer covers what is still open.
- Memory is per open series (a few numbers per metric), never per sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from probetop.probes.core.sample import (
    ENTITY_SEP,
    Sample,
    SeriesEnded,
    SeriesEndReason,
    SeriesSummary,
)

GONE_AFTER_S = 10.0
"""An entity absent from its probe's samples this long has gone (the headless
report's "(gone)" uses the same threshold)."""


@dataclass(slots=True)
class _Open:
    """One open series: the end of its last interval, and per metric its
    [count, sum, min, max] (a list, not RunningStats: this runs for every
    key of every sample on the hub's loop, a few hundred keys a second on a
    host with many devices)."""

    last_ns: int
    stats: dict[str, list[float]] = field(default_factory=dict)

    def summaries(self) -> dict[str, SeriesSummary]:
        return {
            name: SeriesSummary(int(n), lo, total / n, hi) if n else _EMPTY
            for name, (n, total, lo, hi) in self.stats.items()
        }


_EMPTY = SeriesSummary(0, None, None, None)


class SeriesTracker:
    """Open series per probe; see the module docstring."""

    def __init__(self, gone_after_s: float = GONE_AFTER_S) -> None:
        self.gone_after_ns = int(gone_after_s * 1e9)
        self._open: dict[str, dict[str, _Open]] = {}
        self._whole: set[str] = set()

    def watch(self, probe: str, *, whole: bool) -> None:
        """Follow ``probe`` (again: any open series of an earlier probe of that
        id are dropped). ``whole``: its samples list every entity it has."""
        self._open.pop(probe, None)
        if whole:
            self._whole.add(probe)
        else:
            self._whole.discard(probe)

    def forget(self, probe: str) -> None:
        """Drop ``probe``'s open series without ending them (it stopped)."""
        self._open.pop(probe, None)

    def open_series(self, probe: str) -> list[str]:
        """The entities of ``probe`` with an open series."""
        return list(self._open.get(probe, ()))

    def observe(self, sample: Sample) -> list[SeriesEnded]:
        """Fold one sample in; the series it shows ended (see the module docstring)."""
        series = self._open.get(sample.probe)
        present: set[str] = set()
        t_ns = sample.t_ns
        for key, value in sample.values.items():
            if ENTITY_SEP not in key:
                continue
            name, _sep, entity = key.partition(ENTITY_SEP)
            if series is None:
                series = self._open[sample.probe] = {}
            state = series.get(entity)
            if state is None:
                state = series[entity] = _Open(t_ns)
            state.last_ns = t_ns
            stats = state.stats.get(name)
            if stats is None:
                stats = state.stats[name] = [0, 0.0, math.inf, -math.inf]
            if value is not None:
                stats[0] += 1
                stats[1] += value
                if value < stats[2]:
                    stats[2] = value
                if value > stats[3]:
                    stats[3] = value
            present.add(entity)
        if not series or len(present) == len(series):
            return []
        whole = sample.probe in self._whole
        cutoff = t_ns - self.gone_after_ns
        ended: list[SeriesEnded] = []
        for entity in [e for e in series if e not in present]:
            state = series[entity]
            reason: SeriesEndReason
            if whole:
                reason = "vanished"
            elif state.last_ns <= cutoff:
                reason = "unseen"
            else:
                continue
            del series[entity]
            ended.append(
                SeriesEnded(sample.probe, t_ns, entity, state.last_ns, reason, state.summaries())
            )
        return ended
