"""What sysbench counts per worker thread, and what its reports make of it.

Contract:
- A thread's counters are ``STAT_SLOTS`` int64 slots (``STAT_*``), one row
  per thread of a numpy block that the native engines write in place and
  the sampler reads live. The engines store ``STAT_EVENTS`` last (release),
  so a reader that takes it first sees sums and buckets at least as far
  along; ``STAT_DONE`` (a ``STOPPED_*`` code) is stored when the thread
  leaves the run, after ``STAT_END_NS`` and ``STAT_CPU_NS``: ``done_ir``
  is the LLVM IR both engines end a thread's run with.
- ``Snapshot`` is every thread's counters at one moment; ``Interval`` what
  happened between two snapshots (sysbench's intermediate report);
  ``latency_ms``, ``fairness`` and ``per_thread`` are the final report's
  sections (sysbench's ``sb_report_cumulative``) as JSON-safe dicts.
- ``next_tick`` and ``is_sliver`` are the reporting grid both probes keep;
  the bounded interval rows a report prints are ``probetop.probes.core.intervallog``.
No threads, no event loop: pure bookkeeping over what the engines counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probetop.probes.core.stats import population_stddev
from probetop.probes.core.sysbench.hist import HIST_SIZE, percentile_key, percentile_ms

if TYPE_CHECKING:
    import numpy as np

STAT_EVENTS = 0  # events completed by this thread
STAT_LAT_SUM = 1  # sum of event latencies, ns
STAT_LAT_MIN = 2  # min latency, ns (INT64_MAX until the first event)
STAT_LAT_MAX = 3  # max latency, ns
STAT_TEST = 4  # the test's own slot (cpu: the last event's prime count)
STAT_END_NS = 5  # CLOCK_MONOTONIC ns when the thread left the run
STAT_CPU_NS = 6  # CPU time the thread used in the run (CLOCK_THREAD_CPUTIME_ID)
STAT_DONE = 7  # STOPPED_* code, stored last (release); 0 while running
STAT_SLOTS = 8

INT64_MAX = 2**63 - 1

# Why a thread left the run (STAT_DONE).
STOPPED_FLAG = 1  # the stop flag (Ctrl-C, an error, the hard end)
STOPPED_DEADLINE = 2  # --time
STOPPED_LIMIT = 3  # the test's own limit: cpu's --events, mem's --memory-total-size


def done_ir(row: str, *, end: str, cpu: str, why: str) -> str:
    """The IR lines that end a thread's run in its counters ``row`` (a ptr
    value): ``STAT_END_NS`` and ``STAT_CPU_NS``, then ``STAT_DONE`` with
    release order, so a reader that sees the reason also sees the rest."""
    return (
        f"  %p.end = getelementptr i64, ptr {row}, i64 {STAT_END_NS}\n"
        f"  %p.cpu = getelementptr i64, ptr {row}, i64 {STAT_CPU_NS}\n"
        f"  %p.done = getelementptr i64, ptr {row}, i64 {STAT_DONE}\n"
        f"  store atomic i64 {end}, ptr %p.end monotonic, align 8\n"
        f"  store atomic i64 {cpu}, ptr %p.cpu monotonic, align 8\n"
        f"  store atomic i64 {why}, ptr %p.done release, align 8"
    )


def new_counters(threads: int) -> np.ndarray:
    """A zeroed threads x STAT_SLOTS block (min latencies at INT64_MAX)."""
    import numpy as np

    stats = np.zeros((threads, STAT_SLOTS), np.int64)
    stats[:, STAT_LAT_MIN] = INT64_MAX
    return stats


def all_done(stats: np.ndarray) -> bool:
    """Every thread has left the run (its STAT_DONE is set)."""
    return bool((stats[:, STAT_DONE] != 0).all())


@dataclass
class ThreadSnapshot:
    """One thread's counters (the per-thread form: tests and small runs)."""

    events: int
    lat_sum_ns: int
    lat_min_ns: int
    lat_max_ns: int
    hist: list[int]


@dataclass
class Snapshot:
    """Every thread's counters at one moment, vectorised: one entry per thread
    and the histogram merged over its rows. Taking one is a few numpy copies
    and one sum over a rows x 1024 block (~2 ms at 5000 rows), so no
    interval's bookkeeping holds the event loop for long."""

    events: np.ndarray  # int64 per thread
    lat_sum_ns: np.ndarray
    lat_min_ns: np.ndarray
    lat_max_ns: np.ndarray
    hist: np.ndarray  # int64 x HIST_SIZE, summed over the histogram's rows

    @classmethod
    def take(cls, stats: np.ndarray, hist: np.ndarray) -> Snapshot:
        """Read the live blocks (threads x STAT_SLOTS; any rows x HIST_SIZE:
        one per thread, or sysbench's shared slots)."""
        # The engines store the event count last (release order), so reading
        # it first gives counts never ahead of the sums and histogram after it.
        events = stats[:, STAT_EVENTS].copy()
        return cls(
            events=events,
            lat_sum_ns=stats[:, STAT_LAT_SUM].copy(),
            lat_min_ns=stats[:, STAT_LAT_MIN].copy(),
            lat_max_ns=stats[:, STAT_LAT_MAX].copy(),
            hist=hist.sum(axis=0),
        )

    @classmethod
    def of_threads(cls, threads: Sequence[ThreadSnapshot]) -> Snapshot:
        import numpy as np

        merged = np.zeros(HIST_SIZE, np.int64)
        for t in threads:
            merged += np.asarray(t.hist, np.int64)
        return cls(
            events=np.array([t.events for t in threads], np.int64),
            lat_sum_ns=np.array([t.lat_sum_ns for t in threads], np.int64),
            lat_min_ns=np.array([t.lat_min_ns for t in threads], np.int64),
            lat_max_ns=np.array([t.lat_max_ns for t in threads], np.int64),
            hist=merged,
        )

    @property
    def total_events(self) -> int:
        return int(self.events.sum())

    def histogram(self) -> list[int]:
        return [int(c) for c in self.hist.tolist()]


@dataclass(frozen=True)
class Interval:
    """What the threads did between two snapshots: sysbench's intermediate
    report before it is divided by the interval's length."""

    per_thread: list[int]  # events per thread
    events: int
    lat_sum_ns: int
    hist: list[int]  # the interval's events in sysbench's buckets

    @classmethod
    def between(cls, prev: Snapshot, cur: Snapshot) -> Interval:
        import numpy as np

        delta = cur.events - prev.events
        # Each bucket only grows, so the difference is >= 0; the clamp guards
        # a bucket read a moment before its event count.
        return cls(
            per_thread=[int(n) for n in delta.tolist()],
            events=int(delta.sum()),
            lat_sum_ns=int((cur.lat_sum_ns - prev.lat_sum_ns).sum()),
            hist=np.maximum(cur.hist - prev.hist, 0).tolist(),
        )

    def percentile_ms(self, pct: float) -> float | None:
        return percentile_ms(self.hist, pct)

    @property
    def lat_avg_ms(self) -> float | None:
        return self.lat_sum_ns / self.events / 1e6 if self.events else None


def latency_ms(snap: Snapshot, percentile: float) -> dict[str, float | None]:
    """The final report's "Latency (ms)": min, avg, max, p50/p95/p99 and the
    --percentile, sum (None where no event ran)."""
    events = snap.total_events
    lat_sum_ms = int(snap.lat_sum_ns.sum()) / 1e6
    ran = snap.events > 0
    mins = snap.lat_min_ns[ran]
    maxs = snap.lat_max_ns[ran]
    hist = snap.histogram()
    latency: dict[str, float | None] = {
        "min": int(mins.min()) / 1e6 if mins.size else None,
        "avg": lat_sum_ms / events if events else None,
        "max": int(maxs.max()) / 1e6 if maxs.size else None,
        "p50": percentile_ms(hist, 50),
        "p95": percentile_ms(hist, 95),
        "p99": percentile_ms(hist, 99),
        "sum": lat_sum_ms,
    }
    latency[percentile_key(percentile)] = percentile_ms(hist, percentile)
    return latency


def fairness(snap: Snapshot, threads: int) -> dict[str, float]:
    """The final report's "Threads fairness": events and execution time (the
    latency sum) per thread, mean and population stddev, as sysbench."""
    n = max(1, threads)
    lat_sum_ms = int(snap.lat_sum_ns.sum()) / 1e6
    return {
        "events_avg": snap.total_events / n,
        "events_stddev": population_stddev([float(e) for e in snap.events.tolist()]),
        "time_avg": lat_sum_ms / 1e3 / n,
        "time_stddev": population_stddev([ns / 1e9 for ns in snap.lat_sum_ns.tolist()]),
    }


def per_thread(snap: Snapshot, cpu_ns: Sequence[int]) -> list[dict[str, Any]]:
    """One row per thread: its events, its execution time (latency sum) and
    the CPU time it got (below time_s when the OS gave the core to something
    else; None when not measured)."""
    events, sums = snap.events.tolist(), snap.lat_sum_ns.tolist()
    return [
        {
            "events": int(ev),
            "time_s": ns / 1e9,
            "cpu_time_s": cpu_ns[i] / 1e9 if i < len(cpu_ns) else None,
        }
        for i, (ev, ns) in enumerate(zip(events, sums, strict=True))
    ]


def next_tick(tick: int, last_ns: int, start_ns: int, interval_ns: int) -> tuple[int, int]:
    """The next grid point after the last sample: (its number, its time).

    When the loop was stalled past several ticks, the late sample covered
    them all (a longer interval, a right rate), never a burst of empty ones,
    nor a sliver: a grid point less than half an interval after the last
    sample is skipped."""
    tick = max(tick + 1, (last_ns - start_ns + interval_ns // 2) // interval_ns + 1)
    return tick, start_ns + tick * interval_ns


def is_sliver(full: bool, seconds: float, interval_s: float) -> bool:
    """A last partial interval of a few ms (the run ended just after a tick):
    its events still count, its rates would be meaningless (sparkline, min/max)."""
    return not full and seconds < 0.5 * interval_s
