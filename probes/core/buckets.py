"""Sparse bucket counts as a sample's ``extra`` carries them (the CPU and disk
probes' latency histograms): compact JSON, read back without ever raising.

Contract:
- In memory a histogram is ``((bucket index, count), ...)``: the non-empty
  buckets, ascending.
- In JSON it is a list of runs of consecutive buckets: ``[first index,
  count, count, ...]``; inside a run an empty bucket is a 0 (a gap of up to
  ``MAX_GAP`` empty buckets stays in the run: cheaper than a new run).
  ``[[321, 298, 465, 0, 25], [466, 26]]`` is buckets 321, 322, 324 and 466.
- ``decode_runs`` returns None for anything that is not a list (the field
  is optional: recordings made before it have none) and skips malformed
  runs and negative counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Counts = tuple[tuple[int, int], ...]

MAX_GAP = 2


def encode_runs(counts: Iterable[tuple[int, int]]) -> list[list[int]]:
    """``((index, count), ...)`` (ascending, counts > 0) as JSON runs."""
    runs: list[list[int]] = []
    last = -MAX_GAP - 2
    for index, count in counts:
        gap = index - last - 1
        if runs and 0 <= gap <= MAX_GAP:
            runs[-1].extend([0] * gap)
            runs[-1].append(count)
        else:
            runs.append([index, count])
        last = index
    return runs


def decode_runs(value: Any) -> Counts | None:
    """JSON runs back to ``((index, count), ...)``: non-empty buckets,
    ascending, a bucket given twice summed."""
    if not isinstance(value, list):
        return None
    merged: dict[int, int] = {}
    for run in value:
        if not isinstance(run, list) or len(run) < 2:
            continue
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in run):
            continue
        start = run[0]
        if start < 0:
            continue
        for offset, count in enumerate(run[1:]):
            if count > 0:
                merged[start + offset] = merged.get(start + offset, 0) + count
    return tuple(sorted(merged.items()))
