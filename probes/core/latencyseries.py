"""A series of measurements in fixed memory, with stated percentile error.

Contract:
- ``LatencySeries(exact_limit)``: ``append(v)`` values >= 0 (ms, s, ...).
  Every value is counted by its exact float value: a sorted array of the
  distinct values and one of their counts, so percentiles are exact
  (linear interpolation, numpy's default, as over a ``curl -w`` loop's
  numbers: the same figures as sorting every value) for any number of
  values, as long as they take at most ``exact_limit`` (``EXACT_LIMIT``,
  8,192) distinct values. curl's clocks count whole microseconds, so a
  request's phase takes one of few values, but on a loaded machine most
  requests still bring a new one: the demo's busiest series met about
  3,000 new values an hour (docs/reliability.md), so a 2-hour run at a
  request a second stays exact. Past the limit the values move into a
  fixed-size log histogram (``BUCKETS`` buckets each ``BUCKET_RATIO`` wide
  from ``BUCKETS_FROM`` to ``BUCKETS_TO`` in the series' unit: 1 us to 11.6
  days in ms; a count for exact zeros; values outside the range count in
  the end buckets): a percentile is then within ``RELATIVE_ERROR`` (0.5 %)
  of the exact one for values in that range, and ``exact`` is False so a
  report can say so. count, min, max and mean stay exact; stddev is
  Welford's (no stored values needed).
- Memory is fixed once a series has met its second distinct value: it then
  takes its whole exact store at once (``exact_limit`` x 12 B: 96 KiB at
  the default) and a ``PENDING`` x 8 B buffer (8 KiB), written through so
  they are resident from then on; past the limit the exact store is freed
  for the histogram (``BUCKETS`` x 8 B, 22 KiB). A series whose values are
  all equal (a TLS phase of plain HTTP: 0) keeps one slot. Nothing grows
  with the number of values or of distinct values (issue 29: the store grew
  16 B a new distinct value, ~0.75 MiB an hour over the demo's 14 series on
  a loaded machine). Whatever a merge first needs (numpy's sort code,
  resident once run) it needs by the ``FIRST_MERGE``-th value, and no merge
  imports a module: a long run's memory does not step up at some later
  request.
- ``percentile(pct)`` / ``sorted_values()`` / ``summary()`` read it;
  ``len()`` is the count.
Why not a t-digest or a reservoir: both give an error that depends on the
data; these buckets give a fixed relative bound for any value, as HdrHistogram.
"""

from __future__ import annotations

import math

import numpy as np
from probetop.probes.core.stats import RunningStats

# 8,192 distinct values exact: 96 KiB a series (a float64 value and a uint32
# count each), allocated at the series' second distinct value.
EXACT_LIMIT = 8_192
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
# The histogram's range, in the series' unit (HTTP: ms, so 1 us .. 11.6 days):
# fixed, so its size is too.
BUCKETS_FROM = 1e-3
BUCKETS_TO = 1e9
BUCKETS = math.ceil(math.log(BUCKETS_TO / BUCKETS_FROM) / _LOG_RATIO)
_LOG_FROM = math.log(BUCKETS_FROM)
_COUNT_MAX = 2**32 - 1  # a uint32 count; past it (4e9 equal values) the series bins


def _bucket(value: float) -> int:
    """The histogram bucket of a value > 0 (the end ones past the range)."""
    return min(BUCKETS - 1, max(0, math.floor((math.log(value) - _LOG_FROM) / _LOG_RATIO)))


def _middle(index: int) -> float:
    return math.exp(_LOG_FROM + (index + 0.5) * _LOG_RATIO)


class LatencySeries:
    """See the module docstring."""

    def __init__(self, exact_limit: int = EXACT_LIMIT) -> None:
        self.exact_limit = exact_limit
        self._pending: np.ndarray | None = None  # PENDING floats, at the first value
        self._npending = 0
        self._merge_at = FIRST_MERGE  # doubles up to PENDING (see FIRST_MERGE)
        # Sorted distinct values and their counts in the first ``_n`` slots;
        # one slot until a second distinct value, then exact_limit; None once
        # binned.
        self._keys: np.ndarray | None = np.zeros(1, dtype=np.float64)
        self._counts: np.ndarray = np.zeros(1, dtype=np.uint32)
        self._n = 0
        self._hist: np.ndarray | None = None  # BUCKETS counts once binned
        self._zeros = 0  # exact zeros once binned
        self._stats = RunningStats()

    @property
    def exact(self) -> bool:
        """True while every value is counted (percentiles exact)."""
        return self._keys is not None

    @property
    def distinct(self) -> int:
        """How many distinct values the exact store holds (0 once binned)."""
        self._merge()
        return 0 if self._keys is None else self._n

    def append(self, value: float) -> None:
        self._stats.add(value)
        if self._keys is None:
            self._bin(value)
            return
        if self._pending is None:
            self._pending = np.empty(PENDING, dtype=np.float64)
        self._pending[self._npending] = value
        self._npending += 1
        if self._npending >= self._merge_at:
            self._merge()
            self._merge_at = min(PENDING, 2 * self._merge_at)

    def _merge(self) -> None:
        """Fold the pending values into the sorted distinct values; past
        ``exact_limit`` distinct values, into the histogram for good."""
        if not self._npending or self._keys is None or self._pending is None:
            return
        # return_counts: without it numpy 2's unique checks np.ma.is_masked,
        # which imports numpy.ma (~1 MiB resident) at the first merge (issue
        # 29). Never np.union1d (unique without counts).
        new, counts = np.unique(self._pending[: self._npending], return_counts=True)
        self._npending = 0
        n = self._n
        keys, held = self._keys[:n], self._counts[:n]
        at = np.searchsorted(keys, new)
        if n and at[-1] < n and np.array_equal(keys[at], new):
            # Every value seen before (the common case once the spread has
            # been met): add in place, no new arrays.
            total = held[at].astype(np.int64) + counts
            if int(total.max()) <= _COUNT_MAX:
                held[at] = total
                return
        merged_keys = np.unique(np.concatenate((keys, new)), return_counts=True)[0]
        merged = np.zeros(len(merged_keys), dtype=np.int64)
        merged[np.searchsorted(merged_keys, keys)] += held
        merged[np.searchsorted(merged_keys, new)] += counts
        m = len(merged_keys)
        if m > self.exact_limit or int(merged.max()) > _COUNT_MAX:
            self._to_histogram(merged_keys, merged)
            return
        if m > len(self._keys):
            # The second distinct value: the whole store at once, written
            # through (np.zeros may leave fresh pages untouched), so its pages
            # are resident now, not one by one over hours.
            self._keys = np.empty(self.exact_limit, dtype=np.float64)
            self._counts = np.empty(self.exact_limit, dtype=np.uint32)
            self._keys.fill(0.0)
            self._counts.fill(0)
        self._keys[:m] = merged_keys
        self._counts[:m] = merged
        self._n = m

    def _to_histogram(self, keys: np.ndarray, counts: np.ndarray) -> None:
        hist = np.zeros(BUCKETS, dtype=np.int64)
        hist.fill(0)  # resident now (see _merge)
        zero = keys <= 0
        self._zeros += int(counts[zero].sum())
        pos = keys[~zero]
        index = np.floor((np.log(pos) - _LOG_FROM) / _LOG_RATIO).astype(np.int64)
        np.add.at(hist, np.clip(index, 0, BUCKETS - 1), counts[~zero])
        self._hist = hist
        self._keys, self._counts, self._n = None, np.zeros(0, dtype=np.uint32), 0  # freed
        self._pending = None

    def _bin(self, value: float) -> None:
        if value <= 0:
            self._zeros += 1
        else:
            assert self._hist is not None
            self._hist[_bucket(value)] += 1

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
        self._merge()
        if self._keys is None:
            return None
        n = self._n
        values: list[float] = np.repeat(self._keys[:n], self._counts[:n]).tolist()
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
            ends = np.cumsum(self._counts[: self._n])
            return float(self._keys[int(np.searchsorted(ends, rank, side="right"))])
        if rank < self._zeros:
            return 0.0
        assert self._hist is not None
        ends = np.cumsum(self._hist)
        index = int(np.searchsorted(ends, rank - self._zeros, side="right"))
        if index >= BUCKETS:
            return self._stats.max
        return min(max(_middle(index), self._stats.min), self._stats.max)
