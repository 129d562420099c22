"""A run's interval rows with bounded memory, for runs of any length.

Contract:
- ``IntervalLog[T]`` keeps the newest ``limit`` rows appended (any row type);
  ``dropped`` counts the older ones let go, so a report can say what it does
  not show. Appending is O(1) and memory is flat once the log is full.
- ``dropped_note`` is the text reports' NOTE line for such a log (None when
  nothing was dropped); every family prints the same sentence.
- A recording keeps every interval regardless: only what a probe holds in
  memory for its final report is bounded here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

# Interval rows a run keeps for its report: 10 minutes at 1 s, well under a
# MB. Full within the first 10 minutes, so memory is flat from then on: the
# 10,000 kept before grew a 2-hour demo soak by ~6 MiB an hour (a CPU row is
# ~0.7 KiB, an iops row more) until it filled at 2.8 hours (issue 29).
MAX_KEPT_INTERVALS = 600


class IntervalLog(Generic[T]):
    """The run's interval rows, the newest ``limit`` kept; ``dropped`` counts
    the older ones let go."""

    def __init__(self, limit: int = MAX_KEPT_INTERVALS) -> None:
        self._rows: deque[T] = deque(maxlen=limit)
        self.dropped = 0

    @property
    def limit(self) -> int:
        return self._rows.maxlen or 0

    def append(self, row: T) -> None:
        if len(self._rows) == self._rows.maxlen:
            self.dropped += 1
        self._rows.append(row)

    def rows(self) -> list[T]:
        return list(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self.dropped = 0

    def __iter__(self) -> Iterator[T]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __bool__(self) -> bool:
        return bool(self._rows)

    def __getitem__(self, index: int) -> T:
        return self._rows[index]


def dropped_note(dropped: int, kept: int) -> str | None:
    """probetop's note when a long run kept only its newest ``kept`` interval rows."""
    if not dropped:
        return None
    return (
        f"NOTE: the first {dropped} interval lines were not kept (a run keeps its newest "
        f"{kept}; a recording has every interval)"
    )
