"""Units for every disk report: fio's choice of unit and its rounding.

Contract (read from fio 3.x ``lib/num2str.c`` and ``stat.c``; the same output
for the same integer input):

- ``num2str(num, maxlen, base, pow2, unit)``: fio's ``num2str``. Divides by
  1000 (or 1024 with ``pow2``) until the integer has at most ``maxlen``
  digits, then spends the digits left (minus one for the point) on the
  remainder of the *last* division only, as fio does ("cheesy ... complete
  with carry rounding error"); with no room for decimals it rounds half up.
  Prefixes ``k M G T P E`` or ``Ki Mi Gi ...``; ``unit`` is appended.
- ``bandwidth(bytes_per_s)``: fio's ``BW=`` text with its defaults
  (``kb_base=1024``, ``unit_base`` bytes, ``significant_figures=4``): IEC
  first, SI in brackets: ``"957MiB/s (1003MB/s)"``; ``"1B/s (1B/s)"`` at
  one byte per second, never ``0.0MB/s``.
- ``size(n_bytes)``: fio's ``io=`` text (``"9570MiB"``); ``count(n)``: fio's
  ``IOPS=`` text (``"245k"``, no unit).
- ``fio_time(seconds)``: a time option's value as fio's parser reads it
  (``"2"``, ``"300ms"``, ``"250us"``; never a fraction of a second).
- ``rates_per_runtime(count, runtime_ms)``: fio's integer per-second value
  (``1000 * count // runtime_ms``), which the text is made from.
- ``LatencyScale.for_values`` / ``for_summary``: the unit fio prints
  latency in (``nsec``, ``usec``, ``msec``) and how it scales a value:
  summary lines divide (``display_lat``), percentile lists round up
  (``show_clat_percentiles``).

Values are integers as in fio; fractions are truncated first, as fio's
``uint64_t`` arithmetic does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SIG_FIGS = 4  # fio's significant_figures default
_SI = ("", "k", "M", "G", "T", "P", "E")
_IEC = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

Unit = Literal["", "/s", "B", "bit", "B/s", "bit/s"]


def num2str(
    num: float, maxlen: int = SIG_FIGS, base: int = 1, pow2: bool = False, unit: Unit = ""
) -> str:
    """fio's ``num2str`` (see the module docstring)."""
    n = max(0, int(num))
    thousand = 1024 if pow2 else 1000
    prefixes = _IEC if pow2 else _SI
    post = 0
    while base > 1:
        base //= thousand
        post += 1
    if unit in ("bit", "bit/s"):
        n *= 8
    modulo: int | None = None
    carry = False
    while post < len(_SI):
        if len(str(n)) <= maxlen:
            break
        modulo = n % thousand
        n //= thousand
        carry = modulo >= thousand // 2
        post += 1
    if post >= len(_SI):
        post = 0
    if modulo is None:
        return f"{n}{prefixes[post]}{unit}"
    room = maxlen - len(str(n))
    if room <= 1:
        if carry:
            n += 1
        return f"{n}{prefixes[post]}{unit}"
    frac = f"{modulo / thousand:.{room - 1}f}"  # C's "%.*f": round half to even on the binary value
    if frac[0] == "1":
        n += 1
    return f"{n}.{frac[2:]}{prefixes[post]}{unit}"


def bandwidth(bytes_per_s: float) -> str:
    """fio's ``BW=`` text: IEC, then SI in brackets."""
    return (
        f"{num2str(bytes_per_s, pow2=True, unit='B/s')} "
        f"({num2str(bytes_per_s, pow2=False, unit='B/s')})"
    )


def size(n_bytes: float) -> str:
    """fio's ``io=`` text: bytes with an IEC prefix."""
    return num2str(n_bytes, pow2=True, unit="B")


def count(n: float) -> str:
    """fio's ``IOPS=`` text: SI prefix, no unit."""
    return num2str(n)


def rates_per_runtime(n: int, runtime_ms: int) -> int:
    """fio's integer per-second rate over a runtime in ms (0 for no runtime)."""
    return (1000 * n) // runtime_ms if runtime_ms > 0 else 0


def fio_time(seconds: float) -> str:
    """A time option's value as fio parses it (--runtime, --ramp_time,
    --ss_dur): whole seconds plain (``"2"``), else in ms or us (``"300ms"``,
    ``"1500ms"``, ``"250us"``). fio reads a bare ``0.3`` as 0 s and ``1.5``
    as 1 s, so a fraction never goes out as a plain number."""
    us = round(seconds * 1_000_000)
    if us % 1_000_000 == 0:
        return str(us // 1_000_000)
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


def per_second(n: float, seconds: float) -> int:
    """The same rate over a runtime in seconds (rounded to fio's ms first)."""
    return rates_per_runtime(int(n), round(seconds * 1000))


@dataclass(frozen=True, slots=True)
class LatencyScale:
    """The unit fio prints a latency block in, and its divisor from ns."""

    name: Literal["nsec", "usec", "msec"]
    divisor: int

    @classmethod
    def for_summary(cls, min_ns: float, max_ns: float, stddev_ns: float) -> LatencyScale:
        """``display_lat``: msec/usec only when min, max *and* stddev are large."""
        if min_ns > 2_000_000 and max_ns > 99_999_999 and stddev_ns > 1_000_000.0:
            return cls("msec", 1_000_000)
        if min_ns > 2000 and max_ns > 99_999 and stddev_ns > 1000.0:
            return cls("usec", 1000)
        return cls("nsec", 1)

    @classmethod
    def for_values(cls, values_ns: list[int]) -> LatencyScale:
        """``show_clat_percentiles``: from the smallest and largest percentile."""
        if not values_ns:
            return cls("nsec", 1)
        low, high = min(values_ns), max(values_ns)
        if low > 2_000_000 and high > 99_999_999:
            return cls("msec", 1_000_000)
        if low > 2000 and high > 99_999:
            return cls("usec", 1000)
        return cls("nsec", 1)

    def truncate(self, ns: float) -> int:
        """A min/max as ``display_lat`` prints it (integer division)."""
        return int(ns) // self.divisor

    def scale(self, ns: float) -> float:
        """A mean/stddev as ``display_lat`` prints it."""
        return ns / self.divisor

    def round_up(self, ns: int) -> int:
        """A percentile as ``show_clat_percentiles`` prints it: each step of
        1000 rounds up."""
        v = int(ns)
        d = self.divisor
        while d > 1:
            v = (v + 999) // 1000
            d //= 1000
        return v
