"""Eighths-of-a-cell bars: the one implementation every pane and widget draws with.

Pure text, no Textual, so it is tested with plain strings.

- ``hbar(fraction, width)``: a horizontal bar, left to right, in eighths of a
  cell (``▏▎▍▌▋▊▉█``), padded to ``width`` with ``pad``.
- ``value_bar(value, top, width)``: ``hbar`` of ``value / top``; nothing for
  zero, a negative value or ``top <= 0``.
- ``log_fraction(value, low, high)``: where ``value`` sits between ``low`` and
  ``high`` on a log scale (0..1), for latency bars.
- ``column_rows(values, width, height, max_value)``: vertical bars, one column
  per value, ``height`` rows of eight levels each (``▁▂▃▄▅▆▇█``): the sparkline.

Every pane draws its bars with these (cpu fairness, disk latency and
progress, icmp RTT distribution, http per-URL columns, system cores).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

HORIZONTAL = " ▏▎▍▌▋▊▉"  # index = eighths of a partly filled cell
FULL = "█"
VERTICAL = " ▁▂▃▄▅▆▇█"  # index = eighths of a column's height


def hbar(fraction: float | None, width: int, *, pad: str = " ", at_least_one: bool = False) -> str:
    """A bar of ``fraction`` (clamped to 0..1) of ``width`` cells, in eighths.

    ``None`` draws only padding. ``at_least_one`` makes any positive fraction
    show at least one eighth (activity never disappears into rounding)."""
    if width <= 0:
        return ""
    if fraction is None or not math.isfinite(fraction) or fraction <= 0:
        return pad * width
    eighths = round(min(1.0, fraction) * width * 8)
    if at_least_one:
        eighths = max(1, eighths)
    full, part = divmod(eighths, 8)
    bar = FULL * full + (HORIZONTAL[part] if part else "")
    return bar + pad * (width - len(bar))


def value_bar(
    value: float | None, top: float, width: int, *, pad: str = " ", at_least_one: bool = False
) -> str:
    """``hbar`` of ``value`` out of ``top``; blank for zero, negatives or ``top <= 0``."""
    if value is None or top <= 0:
        return pad * max(width, 0)
    return hbar(value / top, width, pad=pad, at_least_one=at_least_one)


def log_fraction(value: float, low: float, high: float) -> float:
    """Where ``value`` sits between ``low`` and ``high`` on a log scale: 0..1
    (0 for values at or under ``low``, or a degenerate range)."""
    if value <= 0 or low <= 0 or high <= low:
        return 0.0
    span = math.log10(high) - math.log10(low)
    return max(0.0, min(1.0, (math.log10(max(value, low)) - math.log10(low)) / span))


def column_levels(values: Sequence[float | None], height: int, top: float) -> list[int | None]:
    """Eighths of height per value (None stays None: a gap)."""
    total = height * 8
    levels: list[int | None] = []
    for v in values:
        if v is None:
            levels.append(None)
        elif v <= 0 or top <= 0 or not math.isfinite(v):
            # Zero draws nothing: an idle row then never changes, so it costs
            # no terminal bytes (the number beside it still says 0).
            levels.append(0)
        else:
            # Any activity shows at least one eighth.
            levels.append(max(1, round(min(v, top) / top * total)))
    return levels


def column_rows(
    values: Sequence[float | None],
    width: int,
    height: int,
    max_value: float | None,
    *,
    align: str = "right",
) -> list[str]:
    """Vertical bars as ``height`` strings of ``width`` characters, top row first.

    The newest ``width`` values are drawn, one column each. ``align="right"``
    puts the newest at the right edge (padding on the left); ``"left"`` starts
    at the left edge and pads on the right until the values fill the width
    (a young series then sits next to its label, not at the far end). The
    scale is 0..``max_value`` when given, else 0..the largest value drawn."""
    if width <= 0 or height <= 0:
        return [""] * max(height, 0)
    shown = list(values)[-width:]
    finite = [v for v in shown if v is not None and math.isfinite(v)]
    top = max_value if max_value else (max(finite) if finite else 0.0)
    levels = column_levels(shown, height, top)
    pad = " " * (width - len(shown))
    rows = []
    for row in range(height):
        floor = (height - 1 - row) * 8
        chars = "".join(
            " " if level is None else VERTICAL[max(0, min(8, level - floor))] for level in levels
        )
        rows.append(chars + pad if align == "left" else pad + chars)
    return rows
