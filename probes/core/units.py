"""Quantities with units, for ``--assert`` thresholds: ``200ms``, ``0.1%``,
``40k``, ``2.9k/s``, ``512MiB``, ``80MB/s``.

Contract:
- ``Unit`` is a metric's unit: a dimension (time, percent, rate, bytes,
  byte rate, count) and the factor of its display unit to the dimension's
  base unit (seconds, percent, per second, bytes, bytes per second, one).
- ``parse_quantity(text, unit)`` reads a threshold for a metric of ``unit``
  and returns it in that unit's display scale (``200ms`` for a metric in
  µs is 200000.0). A bare number is in the metric's own display unit
  (``cpu.events_per_second>2900``). ``k``, ``M``, ``G`` multiply by 10^3,
  10^6, 10^9 (``40k``, ``1.5M/s``). A unit of another dimension
  (``200ms`` for a rate) raises ``UnitError`` naming what the metric takes;
  so does a number of other digits than ASCII's or one that overflows, and a
  bare ``k``/``M``/``G`` on a byte metric (``1M`` is 2^20 bytes in
  ``--size``: ``1MB`` or ``1MiB`` says which). Time units are the options':
  ns, us, ms, s, m (minutes), h, d.
- ``format_quantity`` never raises, whatever float it is given.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


class UnitError(ValueError):
    """A threshold's number or unit cannot be read, or does not fit the metric."""


TIME = "time"
PERCENT = "percent"
RATE = "rate"
BYTES = "bytes"
BYTE_RATE = "byte rate"
COUNT = "count"

# unit text -> (dimension, factor to the base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "ns": (TIME, 1e-9),
    "us": (TIME, 1e-6),
    "µs": (TIME, 1e-6),
    "ms": (TIME, 1e-3),
    "s": (TIME, 1.0),
    "m": (TIME, 60.0),  # as in every time option (--time 2m)
    "min": (TIME, 60.0),
    "h": (TIME, 3600.0),
    "d": (TIME, 86400.0),
    "%": (PERCENT, 1.0),
    "/s": (RATE, 1.0),
    "events/s": (RATE, 1.0),
    "IO/s": (RATE, 1.0),
    "io/s": (RATE, 1.0),
    "iops": (RATE, 1.0),
    "pkt/s": (RATE, 1.0),
    "req/s": (RATE, 1.0),
    "B": (BYTES, 1.0),
    "kB": (BYTES, 1e3),
    "KB": (BYTES, 1e3),
    "MB": (BYTES, 1e6),
    "GB": (BYTES, 1e9),
    "TB": (BYTES, 1e12),
    "KiB": (BYTES, 1024.0),
    "MiB": (BYTES, 1024.0**2),
    "GiB": (BYTES, 1024.0**3),
    "TiB": (BYTES, 1024.0**4),
    # 1Gi as the size options read it (--size 1Gi)
    "Ki": (BYTES, 1024.0),
    "Mi": (BYTES, 1024.0**2),
    "Gi": (BYTES, 1024.0**3),
    "Ti": (BYTES, 1024.0**4),
}
for _name, (_dim, _factor) in list(_UNITS.items()):
    if _dim == BYTES:
        _UNITS[f"{_name}/s"] = (BYTE_RATE, _factor)
_MULTIPLIERS = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_POWERS = {"k": 3, "K": 3, "M": 6, "G": 9}
_EXAMPLES = {
    TIME: "ns, us, ms, s, m, h",
    PERCENT: "%",
    RATE: "/s (or a bare number; k, M suffixes)",
    BYTES: "B, kB, MB, GB, KiB, MiB, GiB",
    BYTE_RATE: "B/s, MB/s, MiB/s, GiB/s",
    COUNT: "a bare number (k, M suffixes)",
}
# ASCII digits only: float() would also read fullwidth or Arabic-Indic digits.
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$", re.ASCII)


@dataclass(frozen=True, slots=True)
class Unit:
    """A metric's unit: its dimension and how its display unit scales to the base."""

    dimension: str
    factor: float = 1.0
    label: str = ""

    @classmethod
    def of(cls, label: str) -> Unit:
        """The unit a metric declares (``ms``, ``%``, ``IO/s``; "" is a count)."""
        if not label:
            return cls(COUNT, 1.0, "")
        found = _UNITS.get(label)
        if found is None:
            raise UnitError(f"unknown unit {label!r}")
        return cls(found[0], found[1], label)

    def describe(self) -> str:
        return self.label or "count"


def parse_quantity(text: str, unit: Unit) -> float:
    """A threshold for a metric of ``unit``, in that unit's display scale."""
    match = _NUMBER.match(text)
    if not match:
        raise UnitError(f"{text!r} is not a number with an optional unit (200ms, 0.1%, 40k)")
    value = float(match.group(1))
    rest = match.group(2)
    if not rest:
        return _finite(value, text)
    found = _UNITS.get(rest)
    multiplier = 1.0
    if found is None and rest[0] in _MULTIPLIERS:
        multiplier = _MULTIPLIERS[rest[0]]
        tail = rest[1:].strip()
        if not tail and unit.dimension in (BYTES, BYTE_RATE):
            # --size 1M is 2**20 bytes (fio's sizes), a count's 1M is 10**6:
            # for bytes, say which one rather than pick.
            num, per = match.group(1), "/s" if unit.dimension == BYTE_RATE else ""
            power = _POWERS[rest]
            raise UnitError(
                f"{text!r} is ambiguous for a metric in {unit.describe()}: write "
                f"{num}{rest}B{per} (10^{power}) or {num}{rest.upper()}iB{per} "
                f"(2^{power // 3 * 10}, what --size {num}{rest} means)"
            )
        # 40k: thousands of the metric's own unit
        found = _UNITS.get(tail) if tail else (unit.dimension, unit.factor)
    if found is None:
        raise UnitError(
            f"unknown unit {rest!r} in {text!r}; this metric is in {unit.describe()} "
            f"(write {_EXAMPLES[unit.dimension]})"
        )
    dimension, factor = found
    if dimension != unit.dimension:
        raise UnitError(
            f"{text!r} is in {rest} ({dimension}), but this metric is in "
            f"{unit.describe()} ({unit.dimension}; write {_EXAMPLES[unit.dimension]})"
        )
    return _finite(value * multiplier * factor / unit.factor, text)


def _finite(value: float, text: str) -> float:
    # 1e400, or 1e308 times a k/M/G or unit factor, overflows to inf: a
    # threshold no measurement can be compared with meaningfully.
    if not math.isfinite(value):
        raise UnitError(f"{text!r} is out of range (the largest threshold is about 1e308)")
    return value


def format_quantity(value: float | None, unit: Unit) -> str:
    """``value`` (in the unit's display scale) with its unit, for messages."""
    if value is None:
        return "no value"
    if not math.isfinite(value):  # a recording may hold Infinity or NaN
        return f"{value}" + (f" {unit.label}" if unit.label else "")
    if value == int(value) and abs(value) < 1e15:
        number = f"{int(value)}"
    elif abs(value) >= 100:
        number = f"{value:.1f}"
    else:
        number = f"{value:.4g}"
    if not unit.label:
        return number
    sep = "" if unit.label in ("%", "ms", "us", "µs", "ns", "s") else " "
    return f"{number}{sep}{unit.label}"
