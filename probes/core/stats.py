"""Pure statistics helpers: rates from counters, percentiles, running moments.

No I/O and no clocks here, so every function is testable with plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


def rate(delta: float, seconds: float) -> float | None:
    """Per-second rate of a counter delta over ``seconds``; None if no time passed.

    A negative delta (counter reset, device re-attached) gives None rather
    than a nonsense negative rate.
    """
    if seconds <= 0 or delta < 0:
        return None
    return delta / seconds


def percentile(sorted_values: Sequence[float], pct: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of an ascending sequence."""
    n = len(sorted_values)
    if n == 0:
        return None
    if not 0.0 <= pct <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {pct}")
    if n == 1:
        return float(sorted_values[0])
    pos = (n - 1) * pct / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return float(sorted_values[lo]) + (float(sorted_values[hi]) - float(sorted_values[lo])) * frac


def percentiles(values: Iterable[float], pcts: Iterable[float]) -> dict[float, float | None]:
    """Several percentiles of unsorted values in one sort."""
    ordered = sorted(values)
    return {p: percentile(ordered, p) for p in pcts}


def population_stddev(values: Sequence[float]) -> float:
    """Standard deviation over the whole population (divide by n), as sysbench's fairness."""
    n = len(values)
    if n == 0:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / n)


@dataclass
class RunningStats:
    """Count, min, max, mean and population stddev, updated one value at a time
    (Welford), so long runs need no stored history."""

    count: int = 0
    min: float = math.inf
    max: float = -math.inf
    _mean: float = 0.0
    _m2: float = field(default=0.0, repr=False)

    def add(self, value: float) -> None:
        self.count += 1
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        delta = value - self._mean
        self._mean += delta / self.count
        self._m2 += delta * (value - self._mean)

    @property
    def mean(self) -> float | None:
        return self._mean if self.count else None

    @property
    def stddev(self) -> float | None:
        return math.sqrt(self._m2 / self.count) if self.count else None

    @property
    def sample_stddev(self) -> float:
        """The n - 1 stddev fio's ``*_dev`` fields give (0 below two values)."""
        return math.sqrt(self._m2 / (self.count - 1)) if self.count > 1 else 0.0

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "count": self.count,
            "min": self.min if self.count else None,
            "max": self.max if self.count else None,
            "mean": self.mean,
            "stddev": self.stddev,
        }
