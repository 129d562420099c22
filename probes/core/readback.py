"""Tolerant reading of a recorded value: what every family's typed records
share when they read a sample, a header or a summary back.

Contract: each reader takes any JSON value and returns it typed, or None when
it is missing or of another type; none raises, whatever the recording holds
(NaN and infinities included: Python's json reads them). A bool is never a
number.
- ``as_number``: an int or a float, as a float.
- ``as_count``: a finite number, as an int (truncated: counts are written as
  whole numbers, a float one is read back whole).
- ``as_int``: an int as written (a float is not one).
- ``as_text``: a string.
- ``fits(value, types)``: ``isinstance`` where a bool fits only when ``bool``
  is one of ``types``.
"""

from __future__ import annotations

import math
from typing import Any


def as_number(value: Any) -> float | None:
    """``value`` as a float, or None when it is not a number (bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an int past float's range (JSON has no limit)
        return None


def as_count(value: Any) -> int | None:
    """``value`` as a whole number, or None when it is not a finite number."""
    number = as_number(value)
    return None if number is None or not math.isfinite(number) else int(number)


def as_int(value: Any) -> int | None:
    """``value`` when it is an int (not a bool, not a float), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_text(value: Any) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def fits(value: Any, types: tuple[type, ...]) -> bool:
    """Whether ``value`` is one of ``types``; a bool only when ``bool`` is listed
    (``isinstance(True, int)`` holds, but a flag is not a count)."""
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)
