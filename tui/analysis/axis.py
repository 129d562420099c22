"""Round y-axis ticks labelled with their unit, for the terminal charts (the
maximised pane, ``probetop report``): "2.5 MB/s", "240 IO/s", "40 %",
never plotext's raw floats ("1109791.6").

Contract:
- ``nice_ticks(low, high, count)``: about ``count`` (at least 2) values
  spaced by 1, 2, 2.5 or 5 times a power of ten, from at or below ``low``
  to at or above ``high``.
- ``axis_ticks(values, unit, count)``: ticks spanning ``values`` and their
  labels: bytes take one SI prefix on the unit ("2.5 MB/s"), other numbers
  of 10,000 or more a k/M suffix ("1.5k pkt/s") unless a percentage;
  times the unit that fits the largest tick (``time_scale``: "2.5 µs",
  never "0.0025 ms"); the same decimals for all, the fewest that write each tick
  exactly. A flat series gets ``flat_range``'s axis, its two ends ticked.
"""

from __future__ import annotations

import math

from probetop.tui.analysis.timescale import is_time_unit, time_scale


def flat_range(values: list[float], unit: str = "") -> tuple[float, float] | None:
    """The y range for a panel whose values are all one number, else None
    (plotext's own). Left to plotext, a flat series got an axis around it
    (loss 0 % drawn on a row labelled 0.33, above a -0.67 that no
    percentage can be); a flat value v >= 0 gets 0..2v (0..1 for 0), so it
    sits on a row labelled with a value it can have. A percentage's axis
    stops at 100 % (a busy core at 100 % is drawn on the top row, not
    halfway up an axis to 200 %)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite or min(finite) != max(finite):
        return None
    v = finite[0]
    if unit == "%" and 0 < v <= 100:
        return 0.0, min(2 * v, 100.0)
    if v >= 0:
        return 0.0, (2 * v if v > 0 else 1.0)
    return 2 * v, 0.0


_NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_NO_PREFIX = ("%", "ms", "us", "µs", "s", "MHz")  # "12.5 ms", never "0.0125 s"


def nice_ticks(low: float, high: float, count: int) -> list[float]:
    """About ``count`` (at least 2) round values from at or below ``low``
    to at or above ``high``, evenly spaced by 1, 2, 2.5 or 5 times a power
    of ten."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    rough = (high - low) / max(1, count - 1)
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in _NICE_STEPS if m * power >= rough * (1 - 1e-9))
    first = math.floor(low / step + 1e-9) * step
    ticks = [first]
    while ticks[-1] < high - step * 1e-9 and len(ticks) < 4 * count:
        ticks.append(first + len(ticks) * step)
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks]


def axis_ticks(values: list[float], unit: str, count: int) -> tuple[list[float], list[str]]:
    """Round tick values spanning ``values`` and their labels with ``unit``:
    bytes take one SI prefix on the unit ("2.50 MB/s"), other large numbers
    a k/M suffix ("1.5k pkt/s"), percentages none, times the unit that
    fits them ("2.5 µs"); each label is
    given the fewest decimals (the same for all) that write each tick
    exactly."""
    finite = [v for v in values if math.isfinite(v)]
    flat = flat_range(finite, unit)
    low, high = flat if flat is not None else (min(finite, default=0.0), max(finite, default=1.0))
    ticks = nice_ticks(low, high, count) if flat is None else [low, high]
    top = max(abs(t) for t in ticks)
    factor, shown, suffix = 1.0, unit, ""
    prefix = next(((f, p) for f, p in _SI if top >= f), None)
    if prefix is not None and unit.startswith("B"):  # bytes: the prefix goes on the unit
        factor, shown = prefix[0], prefix[1] + unit
    elif is_time_unit(unit):  # "2.5 µs", not "0.0025 ms"; "12 s", not "12000 ms"
        factor, shown = time_scale(top, unit)
    elif prefix is not None and unit not in _NO_PREFIX and top >= 10_000:
        factor, suffix = prefix
    scaled = [t / factor for t in ticks]
    step = (scaled[-1] - scaled[0]) / max(1, len(scaled) - 1) or 1.0
    decimals = next(
        (d for d in range(12) if all(abs(round(v, d) - v) < step * 1e-6 for v in scaled)), 12
    )
    numbers = [f"{v:.{decimals}f}{suffix}" if v else "0" for v in scaled]
    if not shown:
        return ticks, numbers
    return ticks, [n + shown if shown.startswith("/") else f"{n} {shown}" for n in numbers]
