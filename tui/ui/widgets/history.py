"""Per-metric history kept by every pane: pure data, no Textual.

Contract:
- ``MetricHistory.add(t_s, value)`` is O(1): it appends to a bounded deque and
  updates running min/max/mean over the whole run (``None`` values count as
  gaps, not zeros).
- ``p99`` is computed on demand over the last ``P99_WINDOW`` values only, so a
  frame never sorts a long history; the table says so in its header.
- ``points`` (up to ``CHART_POINTS``) feed the maximised chart; ``recent(n)``
  feeds sparklines.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from itertools import islice

from probetop.probes.core.sample import split_key
from probetop.probes.core.stats import RunningStats, percentile

CHART_POINTS = 3600  # one hour at 1 Hz for the maximised chart
P99_WINDOW = 300  # p99 over the last 300 samples (5 min at 1 Hz): cheap to sort per frame


class MetricHistory:
    """The recent values of one metric key and run-long statistics."""

    __slots__ = ("_p99", "points", "stats")

    def __init__(self, maxlen: int = CHART_POINTS) -> None:
        self.points: deque[tuple[float, float | None]] = deque(maxlen=maxlen)
        self.stats = RunningStats()
        self._p99: float | None = None

    def add(self, t_s: float, value: float | None) -> None:
        self.points.append((t_s, value))
        if value is not None and math.isfinite(value):
            self.stats.add(float(value))
        self._p99 = None

    @property
    def latest(self) -> float | None:
        return self.points[-1][1] if self.points else None

    def recent(self, n: int) -> list[float | None]:
        """The last ``n`` values, oldest first (gaps stay None)."""
        if n <= 0:
            return []
        # From the right end: a frame costs n steps, not the whole hour kept.
        tail = [v for _t, v in islice(reversed(self.points), n)]
        tail.reverse()
        return tail

    @property
    def p99(self) -> float | None:
        if self._p99 is None:
            window = [v for _t, v in islice(reversed(self.points), P99_WINDOW) if v is not None]
            self._p99 = percentile(sorted(window), 99.0) if window else None
        return self._p99


class HistoryStore:
    """Every metric key of one probe: ``key -> MetricHistory``."""

    def __init__(self, maxlen: int = CHART_POINTS) -> None:
        self.maxlen = maxlen
        self.keys: dict[str, MetricHistory] = {}

    def add_values(self, t_s: float, values: Mapping[str, float | None]) -> None:
        for key, value in values.items():
            hist = self.keys.get(key)
            if hist is None:
                hist = self.keys[key] = MetricHistory(self.maxlen)
            hist.add(t_s, value)

    def get(self, key: str) -> MetricHistory | None:
        return self.keys.get(key)

    def drop_entity(self, entity: str) -> None:
        """Forget every ``name@entity`` key (its series ended)."""
        for key in [k for k in self.keys if split_key(k)[1] == entity]:
            del self.keys[key]

    def entities(self) -> list[str]:
        """Entities seen (``cpu0``, ``vda``...), in first-seen order."""
        seen: dict[str, None] = {}
        for key in self.keys:
            entity = split_key(key)[1]
            if entity is not None:
                seen.setdefault(entity, None)
        return list(seen)


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_TIMES = ("ns", "us", "µs", "ms", "s")
_NO_PREFIX = ("%", "MHz", *_TIMES)


def _three_digits(value: float) -> str:
    """``value`` with the decimals that leave 3 significant digits, chosen
    after rounding: 99.96 is "100", not "100.0" (rounded at 1 decimal it had
    become a 3-digit number given a decimal as if it were 2-digit)."""
    for decimals, limit in ((2, 10.0), (1, 100.0)):
        if abs(round(value, decimals)) < limit:
            return f"{value:.{decimals}f}"
    return f"{value:.0f}"


def fmt_value(value: float | None, unit: str = "", width: int = 0, si: bool = True) -> str:
    """A short human number: 3 significant digits, SI prefix for big rates.

    ``B/s`` and ``pkt/s`` style units get k/M/G prefixes; percentages and
    times never do, so "12.5 ms" is never shown as "0.0125 s". A time that
    is not zero never reads "0.00": under 0.005 it keeps two significant
    digits ("0.00041"); a single figure is better scaled to a unit that
    fits first (``units.scale_for``), a column with one unit cannot be.
    """
    if value is None or not math.isfinite(value):
        text = "-"
    else:
        prefix = ""
        scaled = value
        if si and unit not in _NO_PREFIX and abs(value) >= 10_000:
            for factor, p in _SI:
                if abs(value) >= factor:
                    scaled, prefix = value / factor, p
                    break
        if scaled == 0:
            text = "0"
        elif unit in _TIMES and abs(scaled) < 0.005:  # "0.00 ms" for 410 ns
            text = f"{scaled:.{1 - math.floor(math.log10(abs(scaled)))}f}"
        else:
            text = _three_digits(scaled) + prefix
    return text.rjust(width) if width else text


def join_columns(rows: Iterable[Iterable[str]], widths: list[int]) -> list[str]:
    """Right-align cells into fixed-width columns (the first left-aligned)."""
    out = []
    for row in rows:
        cells = list(row)
        parts = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=False))
        ]
        out.append(" ".join(parts).rstrip())
    return out
