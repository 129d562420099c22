"""Tolerant reading of a recorded value: what every family's typed records
share when they read a sample, a header or a summary back.

Contract: ``as_number(value)`` is ``value`` as a float when it is an int or
a float (a bool is not a number), else None; it never raises, whatever the
recording holds.
"""

from __future__ import annotations

from typing import Any


def as_number(value: Any) -> float | None:
    """``value`` as a float, or None when it is not a number (bool included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
