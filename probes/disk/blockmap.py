"""What a pass found in each part of its range: data, zeros, or a failed I/O.

Contract: ``BlockMap(start, end, bs)`` is one uint8 per granule of the
byte range [start, end) (``states``, filled by the native loops of an
``EnginePlan`` that carries it: ``counters.B_*``). The granule is the block
size, or a multiple of it when the range holds more than ``MAX_GRANULES``
blocks (a 16 TiB range at 1 MiB, 64 GiB at 4 KiB, stays exact; beyond, a
granule is "zero" only when every block read in it was).

- ``extents(state)`` / ``bytes_in(state)``: the merged byte extents (and
  their bytes) of one state, clipped to the range;
- ``put(extents, state)``: set granules (a resumed pass's earlier findings);
  ``put_within``: only those wholly inside (holes known before a pass);
- ``cells(n, state)``: the fraction of each of ``n`` equal slices in a
  state (the pane's map).

Filled from several worker threads without a lock: each granule is written
by the job whose chunk holds it; only a granule larger than a block that
straddles two chunks can lose one update (data read as zero, or the
reverse), which the docstring of ``native.mark`` accepts.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from probetop.probes.disk.counters import B_BAD, B_DATA, B_HOLE, B_UNSEEN, B_ZERO

MAX_GRANULES = 1 << 24  # 16 MiB of map at most
STATES = {"data": B_DATA, "zero": B_ZERO, "bad": B_BAD, "unseen": B_UNSEEN, "hole": B_HOLE}


class BlockMap:
    """See the module docstring."""

    def __init__(self, start: int, end: int, bs: int) -> None:
        if end < start or bs <= 0:
            raise ValueError(f"bad block map {start}-{end} / {bs}")
        self.base = int(start)
        self.end = int(end)
        blocks = -(-(self.end - self.base) // bs)
        self.granule = int(bs * max(1, -(-blocks // MAX_GRANULES)))
        count = max(1, -(-(self.end - self.base) // self.granule))
        self.states = np.zeros(count, dtype=np.uint8)

    @property
    def exact(self) -> bool:
        """Whether a granule is one block (every figure is exact)."""
        return self.states.size <= MAX_GRANULES and self.granule > 0

    def extents(self, state: int) -> list[tuple[int, int]]:
        """Merged [start, end) byte extents of the granules in ``state``."""
        hit = np.concatenate(([False], self.states == state, [False]))
        edges = np.flatnonzero(np.diff(hit.astype(np.int8)))
        out = []
        for a, b in zip(edges[0::2], edges[1::2], strict=True):
            lo = self.base + int(a) * self.granule
            hi = min(self.end, self.base + int(b) * self.granule)
            if hi > lo:
                out.append((lo, hi))
        return out

    def bytes_in(self, state: int) -> int:
        return sum(b - a for a, b in self.extents(state))

    def put(self, extents: Iterable[tuple[int, int]], state: int) -> None:
        """Set every granule under ``extents`` to ``state``."""
        for a, b in extents:
            if b <= a:
                continue
            first = max(0, (a - self.base) // self.granule)
            last = min(self.states.size, -(-(b - self.base) // self.granule))
            if last > first:
                self.states[first:last] = state

    def put_within(self, extents: Iterable[tuple[int, int]], state: int) -> None:
        """Set the granules lying wholly inside ``extents`` (the last, short
        granule counts as whole when an extent reaches the range's end)."""
        g = self.granule
        for a, b in extents:
            first = max(0, -(-(a - self.base) // g))
            last = self.states.size if b >= self.end else max(0, (b - self.base) // g)
            if last > first:
                self.states[first:last] = state

    def cells(self, n: int, state: int) -> tuple[float, ...]:
        """Fraction of each of ``n`` equal slices of the range in ``state``."""
        size = self.end - self.base
        if size <= 0 or n <= 0:
            return tuple([0.0] * max(n, 0))
        out = [0.0] * n
        step = size / n
        for a, b in self.extents(state):
            first = int((a - self.base) // step)
            last = min(n - 1, int((b - 1 - self.base) // step))
            for c in range(first, last + 1):
                lo = self.base + c * step
                out[c] += max(0.0, min(b, lo + step) - max(a, lo)) / step
        return tuple(min(1.0, round(v, 4)) for v in out)
