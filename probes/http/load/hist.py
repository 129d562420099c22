"""A latency histogram with bounded memory: HdrHistogram's log-linear buckets.

Contract:
- ``Histogram`` counts whole microseconds. Values below ``2**SUB_BITS``
  (2048 us) have a bucket each (exact); above, every power-of-two range is
  split into 1024 equal buckets, so a bucket is at most 1/1024 of its value
  wide and a reported value (the bucket's midpoint) is within 0.05 % of the
  true one, as HdrHistogram with 3 significant digits. Memory is one dict
  entry per bucket in use: at most ~24,000 for values up to an hour, whatever
  the number of requests (hours of load at any rate stay within ~2 MB per
  histogram).
- ``percentile(p)`` is the nearest-rank percentile (the value below which
  ``ceil(p/100 x count)`` values lie), as HdrHistogram's
  ``getValueAtPercentile`` and wrk2 compute it; ``max`` and ``min`` are
  exact, ``mean`` is exact (kept as a sum).
- ``to_list`` / ``from_list`` give a compact JSON form (``[[bucket, count],
  ...]`` plus min/max/sum) so a worker can ship one interval's histogram and
  a recording can keep a run's; ``merge`` adds another histogram.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SUB_BITS = 11
_SUB = 1 << SUB_BITS  # values below this are exact
_HALF = _SUB >> 1


def bucket_of(value_us: int) -> int:
    """The bucket index of a value (us, >= 0)."""
    if value_us < _SUB:
        return max(0, value_us)
    shift = value_us.bit_length() - SUB_BITS
    return shift * _HALF + (value_us >> shift)


def bucket_range(index: int) -> tuple[int, int]:
    """The lowest and highest value (us) a bucket holds."""
    if index < _SUB:
        return index, index
    shift = index // _HALF - 1
    mantissa = index - shift * _HALF
    low = mantissa << shift
    return low, low + (1 << shift) - 1


def bucket_value(index: int) -> float:
    """The value a bucket stands for: its midpoint (exact below 2048 us)."""
    low, high = bucket_range(index)
    return (low + high) / 2.0


class Histogram:
    """Counts of microsecond values in log-linear buckets. See the module docstring."""

    __slots__ = ("count", "counts", "max", "min", "total")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0  # sum of values, us (exact mean)
        self.min: int | None = None
        self.max: int | None = None

    def record(self, value_us: int) -> None:
        value_us = max(0, int(value_us))
        index = value_us if value_us < _SUB else bucket_of(value_us)
        counts = self.counts
        counts[index] = counts.get(index, 0) + 1
        self.count += 1
        self.total += value_us
        if self.min is None or value_us < self.min:
            self.min = value_us
        if self.max is None or value_us > self.max:
            self.max = value_us

    def merge(self, other: Histogram) -> None:
        counts = self.counts
        for index, n in other.counts.items():
            counts[index] = counts.get(index, 0) + n
        self.count += other.count
        self.total += other.total
        if other.min is not None and (self.min is None or other.min < self.min):
            self.min = other.min
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def percentiles(self, pcts: Sequence[float]) -> dict[float, float | None]:
        """Nearest-rank percentiles (us) for every ``pcts`` value, in one pass.
        The top rank gives the exact maximum, the first the exact minimum."""
        if not self.count:
            return {p: None for p in pcts}
        ranks = sorted((max(1, math.ceil(p / 100.0 * self.count)), p) for p in pcts)
        out: dict[float, float | None] = {}
        seen = 0
        i = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            while i < len(ranks) and ranks[i][0] <= seen:
                rank, p = ranks[i]
                if rank >= self.count and self.max is not None:
                    out[p] = float(self.max)
                elif rank == 1 and self.min is not None:
                    out[p] = float(self.min)
                else:
                    out[p] = _clamp(bucket_value(index), self.min, self.max)
                i += 1
            if i == len(ranks):
                break
        return out

    def percentile(self, pct: float) -> float | None:
        return self.percentiles((pct,))[pct]

    def to_list(self) -> dict[str, Any]:
        """JSON-safe form: ``{"n", "sum", "min", "max", "b": [[bucket, count], ...]}``."""
        return {
            "n": self.count,
            "sum": self.total,
            "min": self.min,
            "max": self.max,
            "b": [[index, n] for index, n in sorted(self.counts.items())],
        }

    @classmethod
    def from_list(cls, data: Mapping[str, Any] | None) -> Histogram:
        """Read ``to_list`` back; malformed parts are skipped, never raise."""
        hist = cls()
        if not isinstance(data, Mapping):
            return hist
        pairs = data.get("b")
        if isinstance(pairs, list):
            for pair in pairs:
                if (
                    isinstance(pair, Sequence)
                    and len(pair) == 2
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
                    and pair[0] >= 0
                    and pair[1] > 0
                ):
                    hist.counts[pair[0]] = hist.counts.get(pair[0], 0) + pair[1]
        hist.count = sum(hist.counts.values())
        total, low, high = data.get("sum"), data.get("min"), data.get("max")
        hist.total = int(total) if isinstance(total, (int, float)) else 0
        if hist.count:
            lo_b, hi_b = min(hist.counts), max(hist.counts)
            hist.min = int(low) if isinstance(low, (int, float)) else bucket_range(lo_b)[0]
            hist.max = int(high) if isinstance(high, (int, float)) else bucket_range(hi_b)[1]
        return hist

    @classmethod
    def of(cls, values_us: Iterable[int]) -> Histogram:
        hist = cls()
        for value in values_us:
            hist.record(value)
        return hist


def _clamp(value: float, low: int | None, high: int | None) -> float:
    if low is not None and value < low:
        return float(low)
    if high is not None and value > high:
        return float(high)
    return value
