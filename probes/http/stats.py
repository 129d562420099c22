"""Per-URL statistics over repeated requests: every phase's distribution and error counts.

Contract: ``UrlStats.add(result, phases_us)`` takes one worker result (see
``worker.py``) and its phases, and returns the error kind it counted (or
None). ``as_dict`` gives, per phase and for ``ttfb``/``total``: count, min,
p50, p90, p99, max, mean and population stddev in milliseconds (percentiles
linear-interpolated, as numpy's default). Values are kept (8 bytes each), so
percentiles are exact: an hour at 1 Hz is 3600 values per series, and
as packed doubles (``array('d')``), not Python floats (32 bytes each): an
hour at 100 requests/s is 2.9 MB per URL for all seven series.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from probetop.probes.core.stats import percentile, population_stddev
from probetop.probes.http.transfer import PHASES, status_kind

SERIES = (*PHASES, "ttfb", "total")
PCTS = (50.0, 90.0, 95.0, 99.0)  # p95: --assert http.p95 (docs/usage.md)


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, min, p50, p90, p99, max, mean, stddev of ``values`` (ms)."""
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    out: dict[str, float | int | None] = {"count": len(ordered), "min": ordered[0]}
    for pct in PCTS:
        out[f"p{pct:g}"] = _us(percentile(ordered, pct))
    out["max"] = ordered[-1]
    out["mean"] = _us(sum(ordered) / len(ordered))
    out["stddev"] = _us(population_stddev(ordered))
    return out


def _us(ms: float | None) -> float | None:
    """Round to the microsecond: libcurl's resolution, no false digits."""
    return None if ms is None else round(ms, 3)


class UrlStats:
    """Everything measured for one URL so far."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.series: dict[str, array[float]] = {name: array("d") for name in SERIES}
        self.errors: Counter[str] = Counter()
        self.codes: Counter[int] = Counter()
        self.requests = 0
        self.skipped = 0
        self.last_ttfb_ms: float | None = None
        self.last_total_ms: float | None = None
        self.last_error: str | None = None

    def add(self, result: Mapping[str, Any], phases: Mapping[str, int | None]) -> str | None:
        self.requests += 1
        self.skipped = int(result.get("skipped") or 0)
        code = int(result.get("http_code") or 0)
        if code:
            self.codes[code] += 1
        kind = result.get("error") or status_kind(code)
        self.last_error = result.get("message") or (f"HTTP {code}" if kind else None)
        if kind:
            self.errors[kind] += 1
        stamps = result["stamps_us"]
        # TTFB and total exist only when a response arrived; a failed transfer's
        # stamps are the time of the failure, not of a first byte.
        got_response = code > 0 and not result.get("error")
        self.last_ttfb_ms = stamps["starttransfer"] / 1000.0 if got_response else None
        self.last_total_ms = stamps["total"] / 1000.0 if got_response else None
        if got_response:
            for name in PHASES:
                us = phases.get(name)
                if us is not None:
                    self.series[name].append(us / 1000.0)
            assert self.last_ttfb_ms is not None and self.last_total_ms is not None
            self.series["ttfb"].append(self.last_ttfb_ms)
            self.series["total"].append(self.last_total_ms)
        return kind

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "requests": self.requests,
            "errors": dict(self.errors),
            "http_codes": {str(k): v for k, v in sorted(self.codes.items())},
            "skipped_turns": self.skipped,
            "last_error": self.last_error,
            "phases_ms": {name: distribution(vals) for name, vals in self.series.items()},
        }
