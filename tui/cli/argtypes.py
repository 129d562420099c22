"""argparse value types shared by every command: numbers, with bounds.

One place, so every command words the same mistake the same way
(``argument --jobs: must be at least 1, got 0``) and argparse turns it into a
usage message with exit status 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole_number(minimum: int | None = None) -> Callable[[str], int]:
    """A type accepting integers, at least ``minimum`` when given."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def number(*, positive: bool = False, nonnegative: bool = False) -> Callable[[str], float]:
    """A type accepting finite numbers; ``positive`` (> 0) or ``nonnegative`` (>= 0)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if positive and not value > 0:
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
        if nonnegative and value < 0:
            raise argparse.ArgumentTypeError(f"must be zero or a positive number, got {text}")
        return value

    return parse
