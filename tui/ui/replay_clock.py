"""Replay clock: which recorded records to show, by their time stamps.

Pure logic, no Textual, so it is tested with plain numbers.

Contract:
- ``tick(now)`` is ``advance`` by the wall time since the last ``tick`` (or
  ``start_clock``): the dashboard calls it once a frame with
  ``time.monotonic()``.
- ``advance(wall_dt)`` moves the replay position by ``wall_dt x speed`` and
  returns the records whose time stamp was passed, in file order. At speed
  ``max`` it returns up to ``MAX_BATCH`` records per call (one UI frame), so
  the screen still redraws while a long session plays out.
- ``seek(t)`` jumps; it returns ``(rebuild, records)``: when moving backwards
  ``rebuild`` is True and ``records`` are everything from the start up to
  ``t`` (the caller clears its panes and feeds them again); forwards,
  ``records`` are the ones skipped over.
- A session still being written (``probetop attach``): ``extend`` appends
  the records that arrived since; ``follow`` returns every record not
  delivered yet and puts the position at the end (live).
- A recording still being read (a replay shows the head of a long one
  first): ``loading`` is True until ``loaded``; ``grow`` adds the lines read
  since. Meanwhile ``duration_s`` is the last time stamp read so far, the
  position never passes it, and ``at_end`` is False.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from probetop.probes.core.sample import Record

SPEEDS: tuple[float, ...] = (1.0, 10.0, math.inf)
MAX_BATCH = 5000


def speed_label(speed: float) -> str:
    return "max" if math.isinf(speed) else f"{speed:g}x"


class ReplayPlayer:
    """Position, speed and pause state over a list of (t seconds, record)."""

    def __init__(self, records: Iterable[tuple[float, Record]], duration_s: float = 0.0) -> None:
        # A recording's RecordSequence stays lazy: a record is made when it is
        # delivered, so the first frame of a long replay waits for none of the rest.
        from probetop.probes.record import RecordSequence  # the reader: replay only

        self.records: Sequence[tuple[float, Record]]
        if isinstance(records, RecordSequence):
            self.records, self.times = records, records.times
        else:
            self.records = list(records)
            self.times = [t for t, _r in self.records]
        last = self.times[-1] if self.times else 0.0
        self.duration_s = max(duration_s, last)
        self.index = 0  # next record to deliver
        self.position_s = 0.0
        self.speed = SPEEDS[0]
        self.paused = False
        self.loading = False  # more of the recording is being read (grow, loaded)
        self._clock = 0.0  # wall time of the last tick

    @property
    def at_end(self) -> bool:
        return not self.loading and self.index >= len(self.records)

    def grow(self, lines: Sequence[Mapping[str, Any]]) -> None:
        """The records of ``lines``, read after the player was made, appended
        (a recording being read: ``probes.record.reader.SessionLoader``)."""
        from probetop.probes.record import RecordSequence

        assert isinstance(self.records, RecordSequence)
        times = self.records.add(lines)
        self.times.extend(times)
        if times:
            self.duration_s = max(self.duration_s, max(times))

    def loaded(self, duration_s: float) -> None:
        """The whole recording is read; ``duration_s`` is its length."""
        self.loading = False
        self.duration_s = max(self.duration_s, duration_s)

    def start_clock(self, now: float) -> None:
        """Count wall time from ``now`` (after a pause nothing is skipped)."""
        self._clock = now

    def tick(self, now: float) -> list[Record]:
        """Records passed since the last tick (see ``advance``)."""
        dt, self._clock = now - self._clock, now
        return self.advance(dt)

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def set_speed(self, speed: float) -> None:
        self.speed = speed

    def cycle_speed(self) -> float:
        i = SPEEDS.index(self.speed) if self.speed in SPEEDS else -1
        self.speed = SPEEDS[(i + 1) % len(SPEEDS)]
        return self.speed

    def _take_until(self, t: float, limit: int | None = None) -> list[Record]:
        end = bisect.bisect_right(self.times, t)
        if limit is not None:
            end = min(end, self.index + limit)
        out = [r for _t, r in self.records[self.index : end]]
        self.index = max(self.index, end)
        return out

    def advance(self, wall_dt: float) -> list[Record]:
        """Records passed during ``wall_dt`` seconds of wall time (none when paused)."""
        if self.paused or wall_dt <= 0:
            return []
        if math.isinf(self.speed):
            out = self._take_until(math.inf, MAX_BATCH)
            self.position_s = self.times[self.index - 1] if self.index else 0.0
            if self.at_end:
                self.position_s = self.duration_s
            return out
        self.position_s = min(self.duration_s, self.position_s + wall_dt * self.speed)
        return self._take_until(self.position_s)

    def extend(self, records: Iterable[tuple[float, Record]]) -> None:
        """Append records that arrived after the player was made (in file order)."""
        if not isinstance(self.records, list):
            self.records = list(self.records)
        for t, record in records:
            self.records.append((t, record))
            self.times.append(t)
            self.duration_s = max(self.duration_s, t)

    def follow(self) -> list[Record]:
        """Every record not delivered yet; the position is the end (live)."""
        out = [r for _t, r in self.records[self.index :]]
        self.index = len(self.records)
        self.position_s = self.duration_s
        return out

    def seek(self, t: float) -> tuple[bool, list[Record]]:
        """Jump to ``t`` seconds (clamped). See the module docstring."""
        t = max(0.0, min(self.duration_s, t))
        rebuild = t < self.position_s
        if rebuild:
            self.index = 0
        self.position_s = t
        return rebuild, self._take_until(t)
