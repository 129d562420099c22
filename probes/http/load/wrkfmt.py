"""Load mode's report in wrk's layout, so a script written for wrk 4.1 reads
probetop's the same way (``grep Requests/sec``, a wrk output parser).

Contract: ``wrk_head(summary)`` gives wrk's first two lines (``Running 10s
test @ URL``, ``  1 threads and 10 connections``), ``wrk_tail(summary)`` the
lines wrk prints after its run (the Thread Stats table, ``Latency
Distribution`` as ``wrk --latency`` prints it, ``N requests in T, X read``,
``Socket errors``/``Non-2xx or 3xx responses`` when there were any,
``Requests/sec:``, ``Transfer/sec:``). Widths, precision and units are
wrk's: ``print_stats``/``print_units`` of src/wrk.c and ``format_units`` of
src/units.c (github.com/wg/wrk, 4.1.0). Pure functions of
``HttpLoadProbe.summary``.

What the numbers are (docs/http-load.md "wrk's layout"): one generator
process, so "1 threads"; Latency over every response of any status (wrk's
``complete``), the corrected latency with ``--rate`` (wrk2's) and the
service latency after wrk's ``stats_correct`` for the closed loop (wrk's);
requests, bytes (headers and
bodies) and Requests/sec within the run's own time, as ``done_rps``; Req/Sec
over the generator's 100 ms samples, as wrk's record_rate (generator.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from probetop.probes.http.load.hist import Histogram, bucket_value
from probetop.probes.http.status import StatusClass

# units.c: scale, base unit, larger units (the last one is never reached, as
# format_units stops at units[i+1] == NULL).
_TIME_US = (1000, "us", ("ms", "s"))
_TIME_S = (60, "s", ("m", "h"))
_BINARY = (1024, "", ("K", "M", "G", "T", "P"))
_METRIC = (1000, "", ("k", "M", "G", "T", "P"))

# wrk's socket error columns, from probetop's error kinds (errorkinds.py).
_SOCKET_ERRORS = {
    "connect": ("dns", "refused", "tls", "url", "scheme"),
    "read": ("other", "redirects"),
    "write": (),
    "timeout": ("timeout",),
}


def _units(n: float, units: tuple[int, str, tuple[str, ...]], precision: int) -> str:
    scale, unit, larger = units
    amt = n
    i = 0
    while i + 1 < len(larger) and amt >= scale * 0.85:
        amt /= scale
        unit = larger[i]
        i += 1
    return f"{amt:.{precision}f}{unit}"


def format_binary(n: float) -> str:
    return _units(n, _BINARY, 2)


def format_metric(n: float) -> str:
    return _units(n, _METRIC, 2)


def format_time_us(n: float) -> str:
    if n >= 1_000_000.0:
        return _units(n / 1_000_000.0, _TIME_S, 2)
    return _units(n, _TIME_US, 2)


def format_time_s(n: float) -> str:
    return _units(n, _TIME_S, 0)


def print_units(n: float, fmt: Callable[[float], str], width: int) -> str:
    """wrk's ``print_units``: right-aligned in ``width`` less one column per
    letter in the last two characters, which then follow as spaces."""
    msg = fmt(n)
    pad = 2 - msg[-1:].isalpha() - msg[-2:-1].isalpha()
    width -= pad
    return f"{msg[:width]:>{width}}" + "  "[:pad]


class _Stats:
    """wrk's stats.c over (value, count) pairs: mean, sample stdev, max, the
    share within one stdev of the mean, wrk's percentile rank.

    ``expected`` > 0 applies wrk's ``stats_correct(stats, expected)`` first:
    each value n >= 2 x expected adds its count at n - expected, n - 2 x
    expected, ... while above expected. Those synthetic values form an
    arithmetic run per pair, so counts, sums and ranks are computed in closed
    form, never by listing them (a 1 s stall at 100 us would be 10,000)."""

    def __init__(
        self, pairs: list[tuple[float, int]], maximum: float, expected: float = 0.0
    ) -> None:
        self.pairs = sorted((v, n) for v, n in pairs if n > 0)
        self.max = maximum
        self.expected = expected
        # K synthetic values per pair: n - k e for k = 1..K, K = ceil(n/e) - 2.
        self.runs = (
            [(v, n, max(0, math.ceil(v / expected) - 2)) for v, n in self.pairs]
            if expected > 0
            else []
        )
        self.count = sum(n for _, n in self.pairs) + sum(n * k for _, n, k in self.runs)
        if not self.count:
            self.mean = self.stdev = 0.0
            return
        pivot = self.pairs[0][0]  # sums around a pivot: no cancellation in the squares
        s1 = sum((v - pivot) * n for v, n in self.pairs)
        s2 = sum((v - pivot) ** 2 * n for v, n in self.pairs)
        e = expected
        for v, n, k in self.runs:
            if not k:
                continue
            d = v - pivot
            tri = k * (k + 1) / 2
            s1 += n * (k * d - e * tri)
            s2 += n * (k * d * d - 2 * d * e * tri + e * e * k * (k + 1) * (2 * k + 1) / 6)
        shift = s1 / self.count
        self.mean = pivot + shift
        if self.count < 2:
            self.stdev = 0.0
        else:
            self.stdev = math.sqrt(max(0.0, (s2 - self.count * shift * shift) / (self.count - 1)))

    def _synthetic_between(self, low: float, high: float) -> int:
        e, total = self.expected, 0
        for v, n, k in self.runs:
            if not k:
                continue
            first = max(1, math.ceil((v - high) / e))
            last = k if low == -math.inf else min(k, math.floor((v - low) / e))
            total += n * max(0, last - first + 1)
        return total

    def within_stdev(self) -> float:
        if not self.count:
            return math.nan  # wrk divides 0 by 0 and prints nan
        low, high = self.mean - self.stdev, self.mean + self.stdev
        inside = sum(n for v, n in self.pairs if low <= v <= high)
        inside += self._synthetic_between(low, high)
        return 100.0 * inside / self.count

    def _at_most(self, x: float) -> int:
        return sum(n for v, n in self.pairs if v <= x) + self._synthetic_between(-math.inf, x)

    def percentile(self, p: float) -> float:
        """wrk's ``stats_percentile``: the least value whose cumulative count
        reaches round(p / 100 x count + 0.5)."""
        if not self.count:
            return 0.0
        rank = math.floor(p / 100.0 * self.count + 1.0)  # round(x + 0.5), x >= 0
        if not self.runs:
            total = 0
            for value, n in self.pairs:
                total += n
                if total >= rank:
                    return value
            return self.pairs[-1][0]
        low, high = 0, math.ceil(self.max)  # least integer us reaching the rank
        while low < high:
            mid = (low + high) // 2
            if self._at_most(mid) >= rank:
                high = mid
            else:
                low = mid + 1
        return float(low)


def _pairs(hist: Histogram) -> list[tuple[float, int]]:
    return [(float(bucket_value(index)), n) for index, n in hist.counts.items()]


def _latency(s: Mapping[str, Any]) -> _Stats:
    """Every response's latency (any status, not transport failures):
    corrected with --rate (wrk2's); for the closed loop the service latency
    as wrk 4.1 reports it, after its ``stats_correct`` with wrk's expected
    interval, runtime / (requests / connections) in whole microseconds."""
    rate = s.get("rate")
    which = "corrected" if rate else "service"
    merged = Histogram()
    for name, raw in ((s.get("histograms_us") or {}).get(which) or {}).items():
        if name != StatusClass.TRANSPORT.value:
            merged.merge(Histogram.from_list(raw))
    expected = 0.0
    per_connection = int(s.get("run_responses") or 0) // max(1, int(s.get("connections") or 1))
    if not rate and per_connection > 0:
        expected = float(int(float(s.get("run_s") or 0.0) * 1e6) // per_connection)
    return _Stats(_pairs(merged), float(merged.max or 0), expected)


def _stats_row(name: str, stats: _Stats, fmt: Callable[[float], str]) -> str:
    return (
        f"    {name:<10}"
        + print_units(stats.mean, fmt, 8)
        + print_units(stats.stdev, fmt, 10)
        + print_units(stats.max, fmt, 9)
        + f"{stats.within_stdev():8.2f}%"
    )


def wrk_head(s: Mapping[str, Any]) -> list[str]:
    """wrk's first two lines (it prints them as the run starts)."""
    time_s = float(s.get("time_s") or 0)
    return [
        f"Running {format_time_s(time_s)} test @ {s.get('url', '?')}",
        f"  1 threads and {s.get('connections')} connections",
    ]


def wrk_tail(s: Mapping[str, Any]) -> list[str]:
    """What wrk prints after its run, with --latency's distribution."""
    latency = _latency(s)
    rates = Histogram.from_list(s.get("responses_per_s"))
    req = _Stats(_pairs(rates), float(rates.max or 0))
    out = [f"  Thread Stats{'Avg':>6}{'Stdev':>11}{'Max':>8}{'+/- Stdev':>12}"]
    out.append(_stats_row("Latency", latency, format_time_us))
    out.append(_stats_row("Req/Sec", req, format_metric))
    out.append("  Latency Distribution")
    for p in (50.0, 75.0, 90.0, 99.0):
        out.append(f"{p:7.0f}%" + print_units(latency.percentile(p), format_time_us, 10))
    run_s = float(s.get("run_s") or 0.0)
    responses = int(s.get("run_responses") or 0)
    read = float(s.get("run_bytes") or 0)
    out.append(
        f"  {responses} requests in {format_time_us(run_s * 1e6)}, {format_binary(read)}B read"
    )
    # Within the run, as wrk counts (the drain's are in ``errors``).
    errors: Mapping[str, int] = s.get("run_errors", s.get("errors")) or {}
    socket = {col: sum(int(errors.get(k, 0)) for k in ks) for col, ks in _SOCKET_ERRORS.items()}
    if any(socket.values()):
        out.append(
            "  Socket errors: connect {connect}, read {read}, write {write}, "
            "timeout {timeout}".format(**socket)
        )
    status = int(errors.get("http_4xx", 0)) + int(errors.get("http_5xx", 0))
    if status:
        out.append(f"  Non-2xx or 3xx responses: {status}")
    per_s = responses / run_s if run_s > 0 else math.inf
    bytes_per_s = read / run_s if run_s > 0 else math.inf
    out.append(f"Requests/sec: {per_s:9.2f}")
    out.append(f"Transfer/sec: {format_binary(bytes_per_s):>10}B")
    return out


def wrk_lines(s: Mapping[str, Any]) -> Iterator[str]:
    yield from wrk_head(s)
    yield from wrk_tail(s)
