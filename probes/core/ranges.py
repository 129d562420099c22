"""Ranges every probe's options keep, so every run stays stoppable: interval
floors, durations and counts its arithmetic holds.

Why: a probe that samples faster than its bookkeeping allows starves the
event loop (frozen dashboard, signals ignored); a duration or count past
what its clocks and native code hold overflows. These checks refuse such
values up front, with a message that names the limit, instead.

Contract:
- ``LimitProbeError`` is a ``UsageProbeError`` (exit 2, ``code`` "limit"):
  what every check here and in ``machine`` raises. Its message names the
  option, the limit and why it exists, so every family states the same kind
  of limit the same way.
- ``check_interval(option, value, floor_s=..., why=...)``: a sampling
  interval a probe can keep: at least ``floor_s`` (default ``MIN_INTERVAL_S``,
  the common ``--sample-interval`` floor), at most ``MAX_INTERVAL_S``, finite.
- ``check_seconds`` / ``check_whole``: durations and counts within ranges the
  probe's arithmetic holds (no OverflowError, no int64 wrap in native code).

What the machine itself can hold (threads, files, memory, CPUs) is
``machine``.
"""

from __future__ import annotations

import math

from probetop.probes.core.base import UsageProbeError

# The common --sample-interval floor: 20 samples/s. Every sample crosses the hub, the
# recorder (one JSON line) and the dashboard's feed; below this the per-sample
# Python work of the passive collectors alone takes a measurable share of the
# event loop, and the dashboard draws at most 5 frames/s anyway.
MIN_INTERVAL_S = 0.05
MAX_INTERVAL_S = 3600.0
# Longest --time / duration: ~31 years; beyond it nanosecond deadlines overflow int64.
MAX_SECONDS = 1e9
INT64_MAX = 2**63 - 1


class LimitProbeError(UsageProbeError):
    """A value is beyond what the probe or this machine can hold (exit 2).

    The message names the option, the limit and why the limit exists."""

    code = "limit"


def check_interval(
    option: str,
    value: float,
    *,
    floor_s: float = MIN_INTERVAL_S,
    why: str = "every sample crosses the hub, the recorder and the dashboard",
) -> None:
    """Refuse a sampling interval the probe cannot keep (below ``floor_s``,
    above ``MAX_INTERVAL_S``, or not a finite number)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise LimitProbeError(f"{option} must be a positive number of seconds, got {value}")
    if value < floor_s:
        raise LimitProbeError(
            f"{option} {value:g}: the shortest sampling interval this probe can keep is "
            f"{floor_s:g} s ({why}); give {option} {floor_s:g} or more"
        )
    if value > MAX_INTERVAL_S:
        raise LimitProbeError(
            f"{option} {value:g}: the longest sampling interval is {MAX_INTERVAL_S:g} s"
        )


def check_seconds(
    option: str,
    value: float,
    *,
    minimum: float = 0.0,
    maximum: float = MAX_SECONDS,
    zero_means: str | None = None,
) -> None:
    """A duration within [minimum, maximum] seconds (0 allowed, meaning
    ``zero_means``, when given)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LimitProbeError(f"{option} must be a finite number of seconds, got {value}")
    if zero_means is not None and value == 0:
        return
    if value < minimum or value > maximum:
        zero = f" (or 0: {zero_means})" if zero_means else ""
        raise LimitProbeError(
            f"{option} must be within {_num(minimum)}..{_num(maximum)} seconds{zero}, got {value:g}"
        )


def check_whole(option: str, value: int, *, minimum: int = 0, maximum: int = INT64_MAX) -> None:
    """A whole number within [minimum, maximum] (default: what int64 holds)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise LimitProbeError(f"{option} must be a whole number, got {value!r}")
    if not minimum <= value <= maximum:
        raise LimitProbeError(f"{option} must be within {minimum}..{maximum}, got {value}")


def _num(value: float) -> str:
    """1e9 as 1000000000, 0.001 as 0.001: limits read as plain numbers."""
    return f"{value:.0f}" if value >= 1e6 and value == int(value) else f"{value:g}"
