"""ICMP accounting: merge per-stream interval snapshots into metrics and totals.

Contract:
- ``IntervalTotals`` adds up snapshots (from ``engine.IntervalArrays``) of
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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from probetop.probes.icmp import engine as eng
from probetop.probes.icmp.packet import error_name
from probetop.probes.icmp.records import IcmpInterval, RttBucket, RttStats

PERCENTILES = (50.0, 90.0, 99.0)


def histogram_percentile(hist: np.ndarray, pct: float, lo: float, hi: float) -> float | None:
    """Nearest-rank percentile from the histogram: the bucket midpoint, clamped to [lo, hi]."""
    total = int(hist.sum())
    if total == 0:
        return None
    rank = max(1, math.ceil(pct / 100.0 * total))
    cumulative = np.cumsum(hist)
    idx = int(np.searchsorted(cumulative, rank))
    low, high = eng.hist_bucket_bounds(idx)
    return min(max((low + high) / 2.0, lo), hi)


def coarse_histogram(hist: np.ndarray, per_octave: int = 4) -> list[list[float]]:
    """[[low_us, high_us, count], ...] of the non-empty buckets, merged to
    ``per_octave`` buckets per power of two: small enough for every Sample."""
    out: dict[tuple[float, float], int] = {}
    merge = eng.HIST_SUB // per_octave
    for nz in np.nonzero(hist)[0]:
        idx = int(nz)
        if idx < eng.HIST_LINEAR:
            key = (0.0, eng.HIST_LINEAR / 1000.0)
        else:
            rel = idx - eng.HIST_LINEAR
            first = eng.HIST_LINEAR + (rel // merge) * merge
            low, _ = eng.hist_bucket_bounds(first)
            _, high = eng.hist_bucket_bounds(first + merge - 1)
            key = (low / 1000.0, high / 1000.0)
        out[key] = out.get(key, 0) + int(hist[idx])
    return [[lo, hi, float(n)] for (lo, hi), n in sorted(out.items())]


@dataclass
class IntervalTotals:
    """Sums over streams (and, for the run totals, over intervals)."""

    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(eng.COUNTER_NAMES, 0))
    rtt_min_ns: int | None = None
    rtt_max_ns: int | None = None
    rtt_sum: float = 0.0
    rtt_sumsq: float = 0.0
    histogram: np.ndarray = field(default_factory=lambda: np.zeros(eng.HIST_SIZE, np.int64))
    icmp_errors: dict[str, int] = field(default_factory=dict)
    send_errors: dict[str, int] = field(default_factory=dict)
    recv_errors: dict[str, int] = field(default_factory=dict)
    routers: dict[str, dict[str, int]] = field(default_factory=dict)  # error name -> router -> n
    in_flight: int = 0

    def add_snapshot(self, snap: eng.IntervalArrays, v6: bool) -> None:
        c = snap.counters
        for i, name in enumerate(eng.COUNTER_NAMES):
            if name not in ("rtt_min_ns", "rtt_max_ns"):
                self.counters[name] += int(c[i])
        if c[eng.K_RTT_MIN] >= 0:
            lo, hi = int(c[eng.K_RTT_MIN]), int(c[eng.K_RTT_MAX])
            self.rtt_min_ns = lo if self.rtt_min_ns is None else min(self.rtt_min_ns, lo)
            self.rtt_max_ns = hi if self.rtt_max_ns is None else max(self.rtt_max_ns, hi)
        self.rtt_sum += float(snap.rtt_sums[eng.R_SUM])
        self.rtt_sumsq += float(snap.rtt_sums[eng.R_SUMSQ])
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
            self.counters[k] += v
        for attr, pick in (("rtt_min_ns", min), ("rtt_max_ns", max)):
            theirs = getattr(other, attr)
            if theirs is not None:
                mine = getattr(self, attr)
                setattr(self, attr, theirs if mine is None else pick(mine, theirs))
        self.rtt_sum += other.rtt_sum
        self.rtt_sumsq += other.rtt_sumsq
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

    def record(self, seconds: float, mode: str | None) -> IcmpInterval:
        """One interval's typed record (its Sample layout: records.py)."""
        c = self.counters
        per_s = (lambda n: n / seconds) if seconds > 0 else (lambda n: None)
        replies = per_s(c["received"])
        hist = None
        if c["received"]:
            hist = tuple(RttBucket(*b) for b in coarse_histogram(self.histogram))
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
        )
