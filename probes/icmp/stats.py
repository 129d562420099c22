"""ICMP accounting: merge per-stream interval snapshots into metrics and totals.

Contract:
- ``IntervalTotals`` adds up snapshots (``loopstate.IntervalArrays``, read via ``layout``) of
  any number of streams and intervals; ``record(seconds, mode)`` turns one
  interval's totals into the typed ``IcmpInterval`` (records.py) the probe
  emits; ``rtt()`` and ``loss_pct`` give the whole run's figures.
- Meanings (docs/icmp.md): ``pps`` = 2 x replies/s (each answered request
  crossed the target twice, as ping -f users compute it); ``loss_pct`` = lost /
  (lost + received) over the requests that were *resolved* (answered, or
  unanswered for longer than the grace period) -- a request still in flight
  is never counted lost. RTT percentiles come from a log-linear histogram
  (buckets < 3.2 % wide); min, max, avg and mdev are exact.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from probetop.probes.icmp import layout
from probetop.probes.icmp.packet import error_name
from probetop.probes.icmp.records import IcmpInterval, RttBucket, RttStats

if TYPE_CHECKING:  # the loop's module loads numba: only its type here
    from probetop.probes.icmp.loopstate import IntervalArrays

PERCENTILES = (50.0, 90.0, 99.0)


def histogram_percentile(hist: np.ndarray, pct: float, lo: float, hi: float) -> float | None:
    """Nearest-rank percentile from the histogram: the bucket midpoint, clamped to [lo, hi]."""
    total = int(hist.sum())
    if total == 0:
        return None
    rank = max(1, math.ceil(pct / 100.0 * total))
    cumulative = np.cumsum(hist)
    idx = int(np.searchsorted(cumulative, rank))
    low, high = layout.hist_bucket_bounds(idx)
    return min(max((low + high) / 2.0, lo), hi)


def coarse_histogram(hist: np.ndarray, per_octave: int = 4) -> list[list[float]]:
    """[[low_us, high_us, count], ...] of the non-empty buckets, merged to
    ``per_octave`` buckets per power of two: small enough for every Sample."""
    out: dict[tuple[float, float], int] = {}
    merge = layout.HIST_SUB // per_octave
    for nz in np.nonzero(hist)[0]:
        idx = int(nz)
        if idx < layout.HIST_LINEAR:
            key = (0.0, layout.HIST_LINEAR / 1000.0)
        else:
            rel = idx - layout.HIST_LINEAR
            first = layout.HIST_LINEAR + (rel // merge) * merge
            low, _ = layout.hist_bucket_bounds(first)
            _, high = layout.hist_bucket_bounds(first + merge - 1)
            key = (low / 1000.0, high / 1000.0)
        out[key] = out.get(key, 0) + int(hist[idx])
    return [[lo, hi, float(n)] for (lo, hi), n in sorted(out.items())]


@dataclass
class IntervalTotals:
    """Sums over streams (and, for the run totals, over intervals)."""

    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(layout.COUNTER_NAMES, 0))
    rtt_min_ns: int | None = None
    rtt_max_ns: int | None = None
    rtt_sum: float = 0.0
    rtt_sumsq: float = 0.0
    jitter_sum: float = 0.0  # ns: sum of |rtt - previous rtt| over consecutive replies
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(layout.HIST_SIZE, np.int64))
    icmp_errors: dict[str, int] = field(default_factory=dict)
    send_errors: dict[str, int] = field(default_factory=dict)
    recv_errors: dict[str, int] = field(default_factory=dict)
    routers: dict[str, dict[str, int]] = field(default_factory=dict)  # error name -> router -> n
    in_flight: int = 0

    def add_snapshot(self, snap: IntervalArrays, v6: bool, *, detail: bool = True) -> None:
        """Add one stream's interval; ``detail=False`` leaves out the RTT
        histogram and the error tables (a stream's own totals: cheap)."""
        c = snap.counters
        for i, name in enumerate(layout.COUNTER_NAMES):
            if name == "jitter_max_ns":
                self.counters[name] = max(self.counters[name], int(c[i]))
            elif name not in ("rtt_min_ns", "rtt_max_ns"):
                self.counters[name] += int(c[i])
        if c[layout.K_RTT_MIN] >= 0:
            lo, hi = int(c[layout.K_RTT_MIN]), int(c[layout.K_RTT_MAX])
            self.rtt_min_ns = lo if self.rtt_min_ns is None else min(self.rtt_min_ns, lo)
            self.rtt_max_ns = hi if self.rtt_max_ns is None else max(self.rtt_max_ns, hi)
        self.rtt_sum += float(snap.rtt_sums[layout.R_SUM])
        self.rtt_sumsq += float(snap.rtt_sums[layout.R_SUMSQ])
        self.jitter_sum += float(snap.rtt_sums[layout.R_JITTER])
        if not detail:
            return
        self.histogram += snap.histogram
        for t in np.nonzero(snap.icmp_types)[0]:
            name = error_name(int(t), v6)
            self.icmp_errors[name] = self.icmp_errors.get(name, 0) + int(snap.icmp_types[t])
        for table, arr in (
            (self.send_errors, snap.send_errnos),
            (self.recv_errors, snap.recv_errnos),
        ):
            for e in np.nonzero(arr)[0]:
                name = errno.errorcode.get(int(e), f"errno {int(e)}")
                table[name] = table.get(name, 0) + int(arr[e])

    def add_routers(self, dissected: list[dict[str, Any]]) -> None:
        for d in dissected:
            per = self.routers.setdefault(d["name"], {})
            router = d.get("router") or "?"
            per[router] = per.get(router, 0) + 1

    def merge(self, other: IntervalTotals) -> None:
        for k, v in other.counters.items():
            if k == "jitter_max_ns":
                self.counters[k] = max(self.counters[k], v)
            else:
                self.counters[k] += v
        for attr, pick in (("rtt_min_ns", min), ("rtt_max_ns", max)):
            theirs = getattr(other, attr)
            if theirs is not None:
                mine = getattr(self, attr)
                setattr(self, attr, theirs if mine is None else pick(mine, theirs))
        self.rtt_sum += other.rtt_sum
        self.rtt_sumsq += other.rtt_sumsq
        self.jitter_sum += other.jitter_sum
        self.histogram += other.histogram
        for mine, theirs in (
            (self.icmp_errors, other.icmp_errors),
            (self.send_errors, other.send_errors),
            (self.recv_errors, other.recv_errors),
        ):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for name, per in other.routers.items():
            mine_per = self.routers.setdefault(name, {})
            for r, n in per.items():
                mine_per[r] = mine_per.get(r, 0) + n
        self.in_flight = other.in_flight

    # -- derived -------------------------------------------------------
    @property
    def loss_pct(self) -> float | None:
        lost = self.counters["lost"]
        resolved = lost + self.counters["received"]
        return 100.0 * lost / resolved if resolved else None

    def jitter_us(self) -> tuple[float | None, float | None]:
        """(mean, max) |rtt - previous rtt| over consecutive replies, in µs
        (trippy's and smokeping's jitter); None before two replies."""
        n = self.counters["jitter_n"]
        if n == 0:
            return None, None
        return self.jitter_sum / n / 1000.0, self.counters["jitter_max_ns"] / 1000.0

    def outage_s(self, request_interval_s: float | None) -> float | None:
        """fping's outage time: lost requests x the time between requests."""
        if request_interval_s is None:
            return None
        return self.counters["lost"] * request_interval_s

    def rate_limit_hint(self) -> RateLimitHint | None:
        """The loss pattern of a target that rate-limits its echo replies, or None."""
        return rate_limit_hint(self.counters)

    def rtt(self) -> RttStats:
        """min/avg/max/mdev (ping's: sqrt(E[x^2] - E[x]^2)) and p50/p90/p99, in µs."""
        n = self.counters["received"]
        if n == 0 or self.rtt_min_ns is None or self.rtt_max_ns is None:
            return RttStats()
        mean = self.rtt_sum / n
        mdev = math.sqrt(max(0.0, self.rtt_sumsq / n - mean * mean))
        lo, hi = float(self.rtt_min_ns), float(self.rtt_max_ns)
        pcts = [histogram_percentile(self.histogram, p, lo, hi) for p in PERCENTILES]
        p50, p90, p99 = (None if v is None else v / 1000.0 for v in pcts)
        return RttStats(lo / 1000.0, mean / 1000.0, hi / 1000.0, mdev / 1000.0, p50, p90, p99)

    def errors(self) -> dict[str, int]:
        """ICMP errors by type, then local send/receive errors by errno name."""
        out = dict(self.icmp_errors)
        for k, v in self.send_errors.items():
            out[f"send {k}"] = v
        for k, v in self.recv_errors.items():
            out[f"receive {k}"] = v
        return out

    def record(
        self,
        seconds: float,
        mode: str | None,
        *,
        request_interval_s: float | None = None,
        rate_limit: RateLimitHint | None = None,
    ) -> IcmpInterval:
        """One interval's typed record (its Sample layout: records.py).
        ``request_interval_s`` is the time between requests (for the outage
        time): the set period, or for a flood this interval's mean."""
        c = self.counters
        per_s = (lambda n: n / seconds) if seconds > 0 else (lambda n: None)
        replies = per_s(c["received"])
        hist = None
        if c["received"]:
            hist = tuple(RttBucket(*b) for b in coarse_histogram(self.histogram))
        if request_interval_s is None and c["sent"]:
            request_interval_s = seconds / c["sent"]
        jitter_avg, jitter_max = self.jitter_us()
        return IcmpInterval(
            requests_per_s=per_s(c["sent"]),
            replies_per_s=replies,
            pps=None if replies is None else 2.0 * replies,
            loss_pct=self.loss_pct,
            lost=c["lost"],
            duplicates=c["duplicates"],
            reordered=c["reordered"],
            late=c["late"],
            icmp_errors=c["icmp_errors"],
            send_errors=c["send_errors"] + c["recv_errors"],
            missed=c["missed"],
            in_flight=self.in_flight,
            rtt=self.rtt(),
            mode=mode,
            rtt_hist=hist,
            errors=self.errors(),
            error_routers={name: dict(per) for name, per in self.routers.items()},
            jitter_avg_us=jitter_avg,
            jitter_max_us=jitter_max,
            outage_s=self.outage_s(request_interval_s),
            rate_limit=None if rate_limit is None else rate_limit.text,
        )


# A target rate-limits its echo replies (Linux: a token bucket per peer,
# net.ipv4.icmp_ratelimit ms per reply when bit 0 of net.ipv4.icmp_ratemask is
# set, and the host-wide net.ipv4.icmp_msgs_per_sec). Independent loss (a
# lossy link, a random drop) makes the runs of replied and of lost requests
# geometric: the runs of the more common outcome have a coefficient of
# variation of sqrt(its probability) >= 0.7. A token bucket lets replies
# through at a steady pace, so those runs are nearly constant. Said only with
# real loss and enough runs (the engine leaves out the first run, which holds
# the bucket's initial burst).
RATE_LIMIT_MIN_LOSS = 0.02
RATE_LIMIT_MIN_RUNS = 12
RATE_LIMIT_MAX_CV = 0.35


@dataclass(frozen=True, slots=True)
class RateLimitHint:
    """Why the replies stopped matching the requests: the target limits them."""

    loss_fraction: float
    run_cv: float  # coefficient of variation of the more common outcome's runs
    mean_run: float

    @property
    def text(self) -> str:
        return (
            "replies look rate-limited by the target: replies and losses come in "
            f"regular runs (CV {self.run_cv:.2f}; random loss gives >= 0.7). Linux: "
            "net.ipv4.icmp_ratelimit (ms per reply) applies to echo replies when "
            "bit 0 of net.ipv4.icmp_ratemask is set; also net.ipv4.icmp_msgs_per_sec"
        )


def rate_limit_hint(counters: Mapping[str, int]) -> RateLimitHint | None:
    """The hint when the loss pattern is a rate limiter's (see above), else None."""
    received, lost = counters["received"], counters["lost"]
    resolved = received + lost
    if resolved == 0 or lost / resolved < RATE_LIMIT_MIN_LOSS:
        return None
    kind = "loss" if lost >= received else "reply"
    runs = counters[f"{kind}_runs"]
    if runs < RATE_LIMIT_MIN_RUNS:
        return None
    mean = counters[f"{kind}_run_sum"] / runs
    var = max(0.0, counters[f"{kind}_run_sumsq"] / runs - mean * mean)
    cv = math.sqrt(var) / mean
    if cv >= RATE_LIMIT_MAX_CV:
        return None
    return RateLimitHint(lost / resolved, cv, mean)
