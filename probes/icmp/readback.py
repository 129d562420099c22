"""Tolerant readers of the values an ICMP recording holds.

Contract: each takes any JSON value and returns it typed, or None (an empty
mapping for the error tables) when it is missing or of the wrong type;
never raises. A bool is never a number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.readback import as_number


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _count(value: Any) -> int | None:
    number = as_number(value)
    return None if number is None or not math.isfinite(number) else int(number)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _error_counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): n for k, v in value.items() if (n := _count(v)) is not None}


def _error_routers(value: Any) -> dict[str, dict[str, int]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): _error_counts(v) for k, v in value.items() if isinstance(v, Mapping)}
