"""A series of measurements with bounded memory and stated percentile error.

Contract:
- ``LatencySeries(exact_limit)``: ``append(v)`` values >= 0 (ms, s, ...).
  Every value is counted by its exact float value: a sorted array of the
  distinct values and one of their counts (16 B a distinct value), so
  percentiles are exact (linear interpolation, numpy's default, as over a
  ``curl -w`` loop's numbers: the same figures as sorting every value)
  for any number of values, as long as they take at most ``exact_limit``
  distinct values. Values from a clock with a resolution take few: curl's
  are whole microseconds, so 1 ms to 50 ms of spread is at most 49,000
  distinct values whatever the count (wrk, likewise, keeps one counter per
  microsecond). Past the limit the values move into log-linear buckets (each
  ``BUCKET_RATIO`` wide, a zero bucket for 0) and memory stops growing: a
  percentile is then within ``RELATIVE_ERROR`` (0.5 %) of the exact one, and
  ``exact`` is False so a report can say so. count, min, max and mean stay
  exact; stddev is Welford's (no stored values needed).
- Memory: at most ``exact_limit`` x 16 B plus a fixed ``PENDING`` x 8 B
  buffer of values not yet merged, whatever the count; then the buckets
  (bounded by the values' range: ~230 per factor of 10). Whatever a merge
  first needs (numpy's sort code, resident once run) it needs by the
  ``FIRST_MERGE``-th value, and no merge imports a module: a long run's
  memory does not step up at some later request (issue 29's soak).
- ``percentile(pct)`` / ``sorted_values()`` / ``summary()`` read it;
  ``len()`` is the count.
Why not a t-digest or a reservoir: both give an error that depends on the
data; these buckets give a fixed relative bound for any value, as HdrHistogram.
Why counts rather than every value (until issue 29's soak): a store of every
value grew 8 B a value for the first 100,000 (0.4 MiB an hour at the demo's
two requests a second, for 14 hours), where counts stop growing once the
values' spread has been seen.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
from probetop.probes.core.stats import RunningStats

# 50,000 distinct values exact: at most 0.8 MB a series (16 B a value).
EXACT_LIMIT = 50_000
# Values appended since the last merge into the sorted distinct values.
PENDING = 1024
# The first merge comes after this many values, each later one after twice
# as many as the one before, up to PENDING. Why not PENDING from the start:
# the first merge is the process's first numpy sort, whose code pages (~2 MiB
# of numpy's shared library) become resident then; at 1,024 values that was
# 17 minutes into a demo (a request a second), a step in a soak's RSS long
# after start-up (issue 29). Early, the step is part of start-up.
FIRST_MERGE = 16
BUCKET_RATIO = 1.01
# A bucket's value is its geometric middle: at most sqrt(1.01) - 1 (0.499 %) off.
RELATIVE_ERROR = 0.005
_LOG_RATIO = math.log(BUCKET_RATIO)
_ZERO = -(2**31)  # the bucket of exact zeros


def _bucket(value: float) -> int:
    return _ZERO if value <= 0 else math.floor(math.log(value) / _LOG_RATIO)


def _middle(index: int) -> float:
    return 0.0 if index == _ZERO else math.exp((index + 0.5) * _LOG_RATIO)


class LatencySeries:
    """See the module docstring."""

    def __init__(self, exact_limit: int = EXACT_LIMIT) -> None:
        # numpy when the first series is made, not at import: the modules
        # that import this one (the HTTP family's) are on paths that must
        # not pay for it (the first frame, --help).
        import numpy as np

        self.exact_limit = exact_limit
        self._pending: array[float] = array("d")
        self._merge_at = FIRST_MERGE  # doubles up to PENDING (see FIRST_MERGE)
        # Sorted distinct values and their counts; None once binned.
        self._keys: np.ndarray | None = np.empty(0, dtype=np.float64)
        self._counts: np.ndarray = np.empty(0, dtype=np.int64)
        self._buckets: dict[int, int] = {}
        self._stats = RunningStats()

    @property
    def exact(self) -> bool:
        """True while every value is counted (percentiles exact)."""
        return self._keys is not None

    @property
    def distinct(self) -> int:
        """How many distinct values the exact store holds (0 once binned)."""
        self._merge()
        return 0 if self._keys is None else len(self._keys)

    def append(self, value: float) -> None:
        self._stats.add(value)
        if self._keys is None:
            self._bin(value)
            return
        self._pending.append(value)
        if len(self._pending) >= self._merge_at:
            self._merge()
            self._merge_at = min(PENDING, 2 * self._merge_at)

    def _merge(self) -> None:
        """Fold the pending values into the sorted distinct values; past
        ``exact_limit`` distinct values, into buckets for good."""
        import numpy as np

        if not self._pending or self._keys is None:
            return
        # return_counts: without it numpy 2's unique checks np.ma.is_masked,
        # which imports numpy.ma (~1 MiB resident) at the first merge, the
        # 1,024th request: 17 minutes into a demo, a step in a soak's RSS
        # long after start-up (issue 29). Never np.union1d (unique without counts).
        new, counts = np.unique(np.frombuffer(self._pending, dtype=np.float64), return_counts=True)
        self._pending = array("d")
        keys = np.unique(np.concatenate((self._keys, new)), return_counts=True)[0]
        merged = np.zeros(len(keys), dtype=np.int64)
        merged[np.searchsorted(keys, self._keys)] += self._counts
        merged[np.searchsorted(keys, new)] += counts
        if len(keys) > self.exact_limit:
            for key, count in zip(keys.tolist(), merged.tolist(), strict=True):
                b = _bucket(key)
                self._buckets[b] = self._buckets.get(b, 0) + count
            self._keys, self._counts = None, np.empty(0, dtype=np.int64)  # freed
            return
        self._keys, self._counts = keys, merged

    def _bin(self, value: float) -> None:
        key = _bucket(value)
        self._buckets[key] = self._buckets.get(key, 0) + 1

    def __len__(self) -> int:
        return self._stats.count

    @property
    def min(self) -> float | None:
        return self._stats.min if self._stats.count else None

    @property
    def max(self) -> float | None:
        return self._stats.max if self._stats.count else None

    @property
    def mean(self) -> float | None:
        return self._stats.mean

    @property
    def stddev(self) -> float | None:
        """Population stddev."""
        return self._stats.stddev

    def sorted_values(self) -> list[float] | None:
        """Every value in order while exact (made from the counts: a list of
        ``len()`` floats for the caller, not kept), else None."""
        import numpy as np

        self._merge()
        if self._keys is None:
            return None
        values: list[float] = np.repeat(self._keys, self._counts).tolist()
        return values

    def percentile(self, pct: float) -> float | None:
        """Linear interpolation between the order statistics around rank
        (n - 1) * pct / 100: exact while ``exact``, else each order statistic
        is its bucket's middle (clamped to min/max), within ``RELATIVE_ERROR``."""
        self._merge()
        n = self._stats.count
        if not n:
            return None
        if not 0.0 <= pct <= 100.0:
            raise ValueError(f"percentile must be within 0..100, got {pct}")
        pos = (n - 1) * pct / 100.0
        lo = math.floor(pos)
        a, b = self._ranked(lo), self._ranked(min(lo + 1, n - 1))
        return a + (b - a) * (pos - lo)

    def _ranked(self, rank: int) -> float:
        """The value of order statistic ``rank`` (0-based)."""
        if self._keys is not None:
            import numpy as np

            ends = np.cumsum(self._counts)
            return float(self._keys[int(np.searchsorted(ends, rank, side="right"))])
        seen = 0
        for key in sorted(self._buckets):
            seen += self._buckets[key]
            if rank < seen:
                return min(max(_middle(key), self._stats.min), self._stats.max)
        return self._stats.max
