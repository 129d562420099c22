"""Per-URL statistics over repeated requests, split by status class.

Contract:
- ``UrlStats(url, warmup=N, include_errors=False)``; ``add(result, phases_us)``
  takes one worker result (see ``worker.py``) and its phases and returns an
  ``Outcome``: the request's ``StatusClass`` (None for a warm-up request,
  which is counted in ``discarded`` and nowhere else), its error kind, and
  the TTFB/total the latency statistics took from it (None when they took
  nothing).
- Latency statistics (``phases_ms``) cover successful responses (2xx/3xx)
  only; with ``include_errors`` every response that has timings (4xx and
  5xx too; a transport error never has). Each class with responses also gets
  its own ``total`` distribution (``total_ms_by_class``), so a fast 404 is
  seen, not hidden.
- ``Continuity`` gives jitter (mean and max absolute difference between the
  total times of consecutive successful requests, as trippy and smokeping
  compute it) and outage time (see its docstring).
- ``as_dict`` is the summary per URL (docs/http.md lists its keys); every
  distribution has count, min, p50, p90, p95, p99, max, mean and population
  stddev in milliseconds (percentiles linear-interpolated, as numpy's
  default). Each series is a ``LatencySeries``: every value is counted by
  its value (curl's clocks count whole microseconds, so a series holds one
  count per distinct microsecond, not one entry per request), so
  percentiles are exact as over a ``curl -w`` loop's numbers for any number
  of requests; memory is fixed from a series' second distinct value (its
  exact store taken whole); past ``EXACT_LIMIT`` (8,192) distinct values the
  series moves into a fixed-size log histogram, percentiles then within
  0.5 % of the exact ones, and the distribution says so (``exact: false``,
  ``relative_error``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.latencyseries import RELATIVE_ERROR, LatencySeries
from probetop.probes.core.stats import percentile, population_stddev
from probetop.probes.http.errorkinds import KIND_EXIT, status_kind
from probetop.probes.http.status import ERROR_MARKER_SHARE, STATUS_CLASSES, StatusClass, classify
from probetop.probes.http.transfer import PHASES

SERIES = (*PHASES, "ttfb", "total")
PCTS = (50.0, 90.0, 95.0, 99.0)  # p95: --assert http.p95 (docs/usage.md)
#: What ``phases_ms`` covers, as the summary names it.
COVERS_SUCCESS = "2xx_3xx"
COVERS_RESPONSES = "responses"


def distribution(series: LatencySeries) -> dict[str, float | int | bool | None]:
    """count, min, p50, p90, p95, p99, max, mean, stddev of ``series`` (ms);
    from buckets (``exact: false``) after ``EXACT_LIMIT`` distinct values."""
    if not len(series):
        return {"count": 0}
    ordered = series.sorted_values()
    if ordered is None:
        binned: dict[str, float | int | bool | None] = {"count": len(series), "min": series.min}
        for pct in PCTS:
            binned[f"p{pct:g}"] = _us(series.percentile(pct))
        binned["max"] = series.max
        binned["mean"] = _us(series.mean)
        binned["stddev"] = _us(series.stddev)
        binned["exact"] = False
        binned["relative_error"] = RELATIVE_ERROR
        return binned
    return exact_distribution(ordered)


def exact_distribution(ordered: Sequence[float]) -> dict[str, float | int | bool | None]:
    out: dict[str, float | int | bool | None] = {"count": len(ordered), "min": ordered[0]}
    for pct in PCTS:
        out[f"p{pct:g}"] = _us(percentile(ordered, pct))
    out["max"] = ordered[-1]
    out["mean"] = _us(sum(ordered) / len(ordered))
    out["stddev"] = _us(population_stddev(ordered))
    return out


def _us(ms: float | None) -> float | None:
    """Round to the microsecond: libcurl's resolution, no false digits."""
    return None if ms is None else round(ms, 3)


def error_share(classes: Mapping[StatusClass, int]) -> float | None:
    """Errors (4xx, 5xx, transport) over all counted requests; None without any."""
    total = sum(classes.values())
    if not total:
        return None
    return sum(n for c, n in classes.items() if c.is_error) / total


def error_marker(share: float | None) -> bool:
    """True when the error share is above ``ERROR_MARKER_SHARE`` (1 %)."""
    return share is not None and share > ERROR_MARKER_SHARE


class Continuity:
    """Jitter and outage time of one URL's requests, in completion order.

    Jitter: over consecutive successful requests, |total_i - total_(i-1)|;
    ``jitter_mean_ms`` and ``jitter_max_ms`` (trippy's javg/jmax, smokeping's
    jitter). Errors in between do not break a pair: the next success is
    compared with the previous success.

    Outage: a span with no successful response. It begins when a request
    that fails (any error class) was sent after a success (or at the start)
    and ends when the next successful request was sent; a run that ends
    down counts up to the end of its last request. ``outage_s`` is the sum
    of the spans, ``outages`` their number, ``longest_outage_s`` the longest.
    At one request per interval, N failures in a row read as about N
    intervals.
    """

    def __init__(self) -> None:
        self.last_total_ms: float | None = None
        self.jitter_sum_ms = 0.0
        self.jitter_max_ms: float | None = None
        self.jitter_pairs = 0
        self.outage_s = 0.0
        self.outages = 0
        self.longest_outage_s = 0.0
        self._down_since_s: float | None = None
        self._down_until_s: float | None = None

    def add(self, sent_s: float, done_s: float, success: bool, total_ms: float | None) -> None:
        """One request: when it was sent and finished (monotonic seconds),
        whether it succeeded and (if so) its total time."""
        if success:
            if self._down_since_s is not None:
                self._close(max(sent_s, self._down_since_s))
            if total_ms is not None:
                if self.last_total_ms is not None:
                    diff = abs(total_ms - self.last_total_ms)
                    self.jitter_sum_ms += diff
                    self.jitter_pairs += 1
                    self.jitter_max_ms = max(diff, self.jitter_max_ms or 0.0)
                self.last_total_ms = total_ms
            return
        if self._down_since_s is None:
            self._down_since_s = sent_s
            self.outages += 1
        self._down_until_s = max(done_s, self._down_until_s or done_s)

    def _close(self, end_s: float) -> None:
        assert self._down_since_s is not None
        span = max(0.0, end_s - self._down_since_s)
        self.outage_s += span
        self.longest_outage_s = max(self.longest_outage_s, span)
        self._down_since_s = self._down_until_s = None

    @property
    def jitter_mean_ms(self) -> float | None:
        """Mean step between consecutive successes (ms, µs-rounded); None before two."""
        return _us(self.jitter_sum_ms / self.jitter_pairs) if self.jitter_pairs else None

    @property
    def down(self) -> bool:
        """True while the latest requests failed (an outage still open)."""
        return self._down_since_s is not None

    def current_outage_s(self) -> float:
        """The outage time so far, an open outage counted to its last request's end."""
        if self._down_since_s is None or self._down_until_s is None:
            return self.outage_s
        return self.outage_s + max(0.0, self._down_until_s - self._down_since_s)

    def as_dict(self) -> dict[str, Any]:
        open_span = self.current_outage_s() - self.outage_s
        return {
            "jitter_ms": {
                "mean": self.jitter_mean_ms,
                "max": _us(self.jitter_max_ms),
                "pairs": self.jitter_pairs,
            },
            "outage": {
                "seconds": round(self.current_outage_s(), 6),
                "count": self.outages,
                "longest_s": round(max(self.longest_outage_s, open_span), 6),
                "ongoing": self.down,
            },
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``UrlStats.add`` made of one request."""

    status: StatusClass | None  # None: a warm-up request, discarded
    kind: str | None  # error kind (dns, refused, http_4xx ...), None on success
    ttfb_ms: float | None  # what the latency statistics took (None: nothing)
    total_ms: float | None

    @property
    def discarded(self) -> bool:
        return self.status is None


class UrlStats:
    """Everything measured for one URL so far. See the module docstring."""

    def __init__(self, url: str, *, warmup: int = 0, include_errors: bool = False) -> None:
        self.url = url
        self.warmup = warmup
        self.include_errors = include_errors
        self.series = {name: LatencySeries() for name in SERIES}
        self.class_totals = {c: LatencySeries() for c in STATUS_CLASSES}
        self.classes: Counter[StatusClass] = Counter()
        self.errors: Counter[str] = Counter()
        self.codes: Counter[int] = Counter()
        self.continuity = Continuity()
        self.requests = 0  # counted requests (warm-up excluded)
        self.discarded = 0
        self.skipped = 0
        self.last_error: str | None = None
        # curl's exit code of the latest failed transfer (what `curl URL` in a
        # loop would have exited with then); None while none failed.
        self.last_curl_code: int | None = None

    def add(self, result: Mapping[str, Any], phases: Mapping[str, int | None]) -> Outcome:
        self.skipped = max(self.skipped, int(result.get("skipped") or 0))
        code = int(result.get("http_code") or 0)
        transport = result.get("error") or None
        if self.discarded < self.warmup:
            self.discarded += 1
            return Outcome(None, None, None, None)
        self.requests += 1
        status = classify(code, transport)
        self.classes[status] += 1
        if code:
            self.codes[code] += 1
        kind = transport or status_kind(code)
        self.last_error = result.get("message") or (f"HTTP {code}" if kind else None)
        if kind:
            self.errors[kind] += 1
        if transport:
            self.last_curl_code = int(result.get("curl_code") or 0) or KIND_EXIT.get(transport, 1)
        stamps = result["stamps_us"]
        # TTFB and total exist only when a response arrived; a failed transfer's
        # stamps are the time of the failure, not of a first byte.
        ttfb_ms = total_ms = None
        if status is not StatusClass.TRANSPORT:
            ttfb_ms, total_ms = stamps["starttransfer"] / 1000.0, stamps["total"] / 1000.0
            self.class_totals[status].append(total_ms)
        done_s = int(result.get("t_ns") or 0) / 1e9
        self.continuity.add(
            done_s - stamps.get("total", 0) / 1e6,
            done_s,
            status is StatusClass.SUCCESS,
            total_ms,
        )
        covered = status is StatusClass.SUCCESS or (self.include_errors and total_ms is not None)
        if not covered or ttfb_ms is None or total_ms is None:
            return Outcome(status, kind, None, None)
        for name in PHASES:
            us = phases.get(name)
            if us is not None:
                self.series[name].append(us / 1000.0)
        self.series["ttfb"].append(ttfb_ms)
        self.series["total"].append(total_ms)
        return Outcome(status, kind, ttfb_ms, total_ms)

    def class_counts(self) -> dict[str, int]:
        """Every status class's count, in display order (JSON keys)."""
        return {c.value: self.classes.get(c, 0) for c in STATUS_CLASSES}

    def as_dict(self) -> dict[str, Any]:
        share = error_share(self.classes)
        return {
            "url": self.url,
            "requests": self.requests,
            "discarded": self.discarded,
            "classes": self.class_counts(),
            "error_share": None if share is None else round(share, 6),
            "error_marker": error_marker(share),
            "errors": dict(self.errors),
            "http_codes": {str(k): v for k, v in sorted(self.codes.items())},
            "skipped_turns": self.skipped,
            "last_error": self.last_error,
            "last_curl_code": self.last_curl_code,
            "latency_covers": COVERS_RESPONSES if self.include_errors else COVERS_SUCCESS,
            "phases_ms": {name: distribution(vals) for name, vals in self.series.items()},
            "total_ms_by_class": {
                c.value: distribution(vals)
                for c, vals in self.class_totals.items()
                if c is not StatusClass.TRANSPORT
            },
            **self.continuity.as_dict(),
        }
