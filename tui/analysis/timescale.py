"""Times written in the unit that fits them: ``0.00041 ms`` -> ``0.41 µs``.

Pure arithmetic, no Textual: the panes (``units.scale_for``) and the
terminal charts (``axis.axis_ticks``) both scale times through it, so a
latency reads in one unit everywhere.

Contract:
- ``time_scale(top, unit)``: for a time unit (``ns``, ``µs``/``us``,
  ``ms``, ``s``) the ``(factor, unit)`` to write values whose largest
  magnitude is ``top``: ``value / factor`` in the returned unit. A unit
  smaller when ``top`` would read under ``DOWN_BELOW`` (fewer than two
  significant digits at the panes' two decimals: a few hundred
  nanoseconds read "0.00 ms"), larger from ``UP_FROM`` ("12.3 s", not
  "12345678 µs"); ``ns`` and ``s`` are the ends. Any other unit, a zero
  or an unknown ``top``: ``(1.0, unit)``, unchanged.
"""

from __future__ import annotations

import math

TIME_UNITS = ("ns", "µs", "ms", "s")  # each 1000 times the one before
_ALIASES = {"us": "µs"}
DOWN_BELOW = 0.1
UP_FROM = 10_000.0


def is_time_unit(unit: str) -> bool:
    return _ALIASES.get(unit, unit) in TIME_UNITS


def time_scale(top: float | None, unit: str) -> tuple[float, str]:
    """See the module docstring."""
    canonical = _ALIASES.get(unit, unit)
    if canonical not in TIME_UNITS or top is None or not math.isfinite(top) or top == 0:
        return 1.0, unit
    top = abs(top)
    index, factor = TIME_UNITS.index(canonical), 1.0
    while top / factor >= UP_FROM and index < len(TIME_UNITS) - 1:
        index, factor = index + 1, factor * 1000.0
    while top / factor < DOWN_BELOW and index > 0:
        index, factor = index - 1, factor / 1000.0
    if factor == 1.0:
        return 1.0, unit
    return factor, TIME_UNITS[index]
