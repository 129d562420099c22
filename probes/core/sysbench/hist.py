"""sysbench's latency histogram arithmetic, as pure functions over bucket counts.

sysbench 1.0 files every event latency (ms) into one of 1024 log-scale buckets
between 0.001 ms and 100000 ms: ``i = floor((ln(ms) - ln(0.001)) * mult + 0.5)``
with ``mult = 1023 / (ln(100000) - ln(0.001))``. A percentile P walks the
buckets until the running count reaches ``floor(N * P / 100 + 0.5)`` and
reports that bucket's value ``exp(i / mult + ln(0.001))``, so a sysbench p95
is always a bucket value (0.37, 0.39, 4.41 ...), never an interpolation. We
do the same so the numbers agree digit for digit. The native engines file
latencies with the same formula (they get ``HIST_DEDUCT`` and ``HIST_MULT``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = [
    "HIST_DEDUCT",
    "HIST_MAX_MS",
    "HIST_MIN_MS",
    "HIST_MULT",
    "HIST_SIZE",
    "bucket_of",
    "bucket_upper_ms",
    "bucket_value_ms",
    "histogram_of",
    "percentile_key",
    "percentile_ms",
    "to_sparse",
]

HIST_SIZE = 1024
HIST_MIN_MS = 0.001
HIST_MAX_MS = 100000.0
HIST_DEDUCT = math.log(HIST_MIN_MS)
HIST_MULT = (HIST_SIZE - 1) / (math.log(HIST_MAX_MS) - HIST_DEDUCT)


def bucket_of(latency_ms: float) -> int:
    """sysbench's bucket index of one latency in ms (sb_histogram_update)."""
    if latency_ms <= 0:
        return 0
    x = math.floor((math.log(latency_ms) - HIST_DEDUCT) * HIST_MULT + 0.5)
    return 0 if x < 0 else min(x, HIST_SIZE - 1)


def bucket_value_ms(index: int) -> float:
    """The latency (ms) sysbench reports for bucket ``index``."""
    return math.exp(index / HIST_MULT + HIST_DEDUCT)


def bucket_upper_ms(index: int) -> float:
    """The upper edge (ms) of bucket ``index``: ``bucket_of`` files a latency
    below it in ``index`` or lower, one at or above it higher (the last
    bucket also takes everything past 100000 ms: its edge is infinite)."""
    if index >= HIST_SIZE - 1:
        return math.inf
    return math.exp((index + 0.5) / HIST_MULT + HIST_DEDUCT)


def percentile_ms(counts: Sequence[int], pct: float) -> float | None:
    """sysbench's percentile of a histogram; None when it holds no events or
    ``pct`` is 0 (sysbench's --percentile=0: disabled)."""
    total = sum(counts)
    if total == 0 or pct <= 0:
        return None
    wanted = math.floor(total * pct / 100.0 + 0.5)
    running = 0
    for index, count in enumerate(counts):
        running += count
        if running >= wanted:
            return bucket_value_ms(index)
    return bucket_value_ms(len(counts) - 1)


def percentile_key(pct: float) -> str:
    """Key of a percentile in a report's ``latency_ms``: 95 -> "p95", 99.9 -> "p99.9"."""
    return f"p{pct:g}"


def histogram_of(latencies_ms: Iterable[float]) -> list[int]:
    """Bucket counts of raw latencies (for tests and the Python engine)."""
    counts = [0] * HIST_SIZE
    for value in latencies_ms:
        counts[bucket_of(value)] += 1
    return counts


def to_sparse(counts: Sequence[int]) -> dict[str, int]:
    """JSON-friendly form: only non-empty buckets, keyed by index."""
    return {str(i): int(c) for i, c in enumerate(counts) if c}
