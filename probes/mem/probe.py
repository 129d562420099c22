"""The memory probe: sysbench 1.0.20 ``memory`` measured the way sysbench does.

Contract:
- One operation (sysbench's event) is one block (``engine``). ``threads``
  worker threads run operations back to back until ``time_s`` passes or each
  has done its share of ``total_size`` (sysbench's per-thread budget
  total / block / threads; 0 = no limit). Global scope: one block shared by
  every thread; local: one block per thread. Buffers are page aligned and
  zeroed before the run, as sysbench's.
- ``prepare()`` validates and builds the engine, so JIT time is never inside
  the run. ``run()`` emits one Sample per interval (per-interval ops/s, MiB/s,
  latency percentile and mean, per-thread ops); the last one is ``final`` and
  carries the summary. On cancellation it sets the stop flag, waits for the
  workers (they see it within one operation) and still emits the final
  interval, so Ctrl-C keeps what ran.
- ``summary()`` is sysbench's final report as a JSON-safe dict.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import mmap
import random
import threading
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, UsageProbeError
from probetop.probes.core.sample import now_ns
from probetop.probes.core.stats import population_stddev
from probetop.probes.mem.engine import (
    HIST_DEDUCT,
    HIST_MULT,
    HIST_SIZE,
    INT64_MAX,
    STAT_DONE,
    STAT_END_NS,
    STAT_EVENTS,
    STAT_LAT_MAX,
    STAT_LAT_MIN,
    STAT_LAT_SUM,
    STAT_SLOTS,
    STOPPED_DEADLINE,
    STOPPED_TOTAL,
    EngineUnavailable,
    MemEngine,
    SharedRun,
    ThreadJob,
    kind_of,
    load_engine,
)
from probetop.probes.mem.records import METRICS, MemInterval
from probetop.probes.mem.settings import MemSettings

MIB = 1024.0 * 1024.0
STOP_WAIT_S = 1.0  # workers see the stop flag within one operation (ms at most)
DONE_POLL_S = 0.01


def bucket_value_ms(index: int) -> float:
    """The latency (ms) sysbench reports for histogram bucket ``index``."""
    return math.exp(index / HIST_MULT + HIST_DEDUCT)


def percentile_ms(counts: list[int], pct: float) -> float | None:
    """sysbench's percentile of a histogram (a bucket value); None when empty."""
    total = sum(counts)
    if total == 0:
        return None
    wanted = math.floor(total * pct / 100.0 + 0.5)
    running = 0
    for index, count in enumerate(counts):
        running += count
        if running >= wanted:
            return bucket_value_ms(index)
    return bucket_value_ms(len(counts) - 1)


class MemProbe:
    """sysbench memory as a probe. See the module docstring for the contract."""

    kind = "mem"
    metrics = METRICS

    def __init__(self, settings: MemSettings | None = None, *, probe_id: str = "mem") -> None:
        self.settings = settings or MemSettings()
        self.id = probe_id
        self.engine: MemEngine | None = None
        self.intervals: list[dict[str, Any]] = []
        self.worker_errors: list[str] = []
        self._stats: Any = None
        self._hist: Any = None
        self._start_ns = 0
        self._end_ns = 0
        self.stopped_by = "time"

    # -- setup -----------------------------------------------------------
    def prepare(self) -> None:
        self.settings.validate()
        if self.engine is None:
            try:
                self.engine = load_engine()
            except EngineUnavailable as exc:
                raise UsageProbeError(str(exc)) from exc

    def params(self) -> Mapping[str, Any]:
        s = self.settings
        return {
            "threads": s.threads,
            "time_s": s.time_s,
            "block_size": s.block_size,
            "total_size": s.total_size,
            "scope": s.scope,
            "oper": s.oper,
            "access_mode": s.access_mode,
            "interval_s": s.interval_s,
            "percentile": s.percentile,
        }

    def reference_command(self) -> str | None:
        s = self.settings
        return (
            f"sysbench memory --threads={s.threads} --time={s.time_s:g} "
            f"--memory-block-size={s.block_size} --memory-total-size={s.total_size} "
            f"--memory-scope={s.scope} --memory-oper={s.oper} "
            f"--memory-access-mode={s.access_mode} --percentile={s.percentile:g} run"
        )

    # -- measuring -------------------------------------------------------
    async def run(self, emit: Emit) -> None:
        import numpy as np

        if self.engine is None:
            self.prepare()
        assert self.engine is not None
        s = self.settings
        threads = s.threads
        # Page-aligned, zeroed blocks (anonymous mappings), as sb_memalign + memset.
        maps = [mmap.mmap(-1, s.block_size) for _ in range(threads if s.scope == "local" else 1)]
        addrs = [ctypes.addressof(ctypes.c_char.from_buffer(m)) for m in maps]
        for m in maps:  # touch every page before the clock starts
            m.write(b"\0" * s.block_size)
        stats = np.zeros((threads, STAT_SLOTS), np.int64)
        stats[:, STAT_LAT_MIN] = INT64_MAX
        hist = np.zeros((threads, HIST_SIZE), np.int64)
        self._stats, self._hist = stats, hist
        shared = SharedRun()
        kind = kind_of(s.access_mode, s.oper)
        budget = s.ops_per_thread()
        jobs = [
            ThreadJob(
                shared,
                kind,
                addrs[i if s.scope == "local" else 0],
                s.words,
                budget,
                stats[i],
                hist[i],
                (ctypes.c_uint64 * 2)(random.getrandbits(64) | 1, random.getrandbits(64)),
            )
            for i in range(threads)
        ]
        go = threading.Event()
        engine = self.engine

        def work(job: ThreadJob) -> None:
            go.wait()
            try:
                engine.run(job)  # a ctypes call: the GIL is released meanwhile
            except Exception as exc:  # a worker bug must end the run, not hang it
                self.worker_errors.append(f"{type(exc).__name__}: {exc}")
                shared.request_stop()
                job.stats[STAT_END_NS] = now_ns()
                job.stats[STAT_DONE] = 1

        workers = [
            threading.Thread(target=work, args=(j,), name=f"probetop-mem-{i}", daemon=True)
            for i, j in enumerate(jobs)
        ]
        for w in workers:
            w.start()
        start = self._start_ns = now_ns()
        if s.time_s > 0:
            shared.deadline.value = start + int(s.time_s * 1e9)
        go.set()
        interval_ns = int(s.interval_s * 1e9)
        prev = _Snap.take(stats, hist)
        prev_t = start
        tick = 0
        cancelled = False
        try:
            while not _all_done(stats):
                tick = max(tick + 1, (prev_t - start + interval_ns // 2) // interval_ns + 1)
                next_ns = start + tick * interval_ns
                while not _all_done(stats) and now_ns() < next_ns:
                    # Near the end poll the done flags; else sleep to the tick.
                    left = (next_ns - now_ns()) / 1e9
                    await asyncio.sleep(min(max(left, 0.0), DONE_POLL_S * 10))
                if _all_done(stats):
                    break
                now = now_ns()
                cur = _Snap.take(stats, hist)
                self._emit(emit, prev, cur, prev_t, now, full=True)
                prev, prev_t = cur, now
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            shared.request_stop()
            waited = 0.0
            while not _all_done(stats) and waited < STOP_WAIT_S:
                # Plain sleep: in a cancelled task another await would raise again.
                threading.Event().wait(DONE_POLL_S)
                waited += DONE_POLL_S
            if not _all_done(stats):
                self.worker_errors.append(
                    f"{int((stats[:, STAT_DONE] == 0).sum())} worker threads did not stop "
                    f"within {STOP_WAIT_S:g} s"
                )
            ends = stats[:, STAT_END_NS]
            self._end_ns = int(ends.max()) if _all_done(stats) else now_ns()
            codes = stats[:, STAT_DONE].tolist()
            if cancelled:
                self.stopped_by = "stop"
            elif any(c == STOPPED_TOTAL for c in codes):
                self.stopped_by = "total_size"
            elif any(c == STOPPED_DEADLINE for c in codes):
                self.stopped_by = "time"
            else:
                self.stopped_by = "stop"
            final = _Snap.take(stats, hist)
            t_end = max(self._end_ns, prev_t + 1000)
            self._emit(emit, prev, final, prev_t, t_end, full=False)
            self._maps = maps  # freed with the probe: a lingering worker may still use them

    def _emit(self, emit: Emit, prev: _Snap, cur: _Snap, t0: int, t1: int, *, full: bool) -> None:
        s = self.settings
        seconds = (t1 - t0) / 1e9
        if seconds <= 0:
            return
        per_thread = [int(a - b) for a, b in zip(cur.events, prev.events, strict=True)]
        ops = sum(per_thread)
        lat_ns = int(cur.lat_sum - prev.lat_sum)
        hist = [max(0, a - b) for a, b in zip(cur.hist, prev.hist, strict=True)]
        sliver = not full and seconds < 0.5 * s.interval_s
        rate = ops / seconds
        mibs = rate * s.block_size / MIB
        pct = percentile_ms(hist, s.percentile)
        row = {
            "t": round((t1 - self._start_ns) / 1e9, 6),
            "interval_s": round(seconds, 6),
            "full": full,
            "threads": s.threads,
            "ops": rate,
            "mibs": mibs,
            "lat_pct_ms": pct,
            "events": ops,
        }
        self.intervals.append(row)
        record = MemInterval(
            ops=None if sliver else rate,
            mibs=None if sliver else mibs,
            lat_pct_ms=None if sliver else pct,
            lat_avg_ms=lat_ns / ops / 1e6 if ops and not sliver else None,
            threads=s.threads,
            per_thread_ops=tuple(per_thread),
            percentile=s.percentile,
            block_size=s.block_size,
            total_ops=sum(int(x) for x in cur.events),
            final=not full,
            summary=None if full else self.summary(),
        )
        emit(record.to_sample(self.id, t1, seconds))

    # -- results ---------------------------------------------------------
    def summary(self) -> Mapping[str, Any]:
        s = self.settings
        snap = None if self._stats is None else _Snap.take(self._stats, self._hist)
        events = [int(x) for x in snap.events] if snap else [0] * s.threads
        sums = [int(x) for x in snap.lat_sums] if snap else [0] * s.threads
        total = sum(events)
        end = self._end_ns or now_ns()
        total_time = max(0, end - self._start_ns) / 1e9 if self._start_ns else 0.0
        mins = [int(x) for x in snap.lat_mins] if snap else []
        maxs = [int(x) for x in snap.lat_maxs] if snap else []
        hist = [int(x) for x in snap.hist] if snap else [0] * HIST_SIZE
        lat_min = min((m for m, e in zip(mins, events, strict=True) if e), default=0)
        mib = total * s.block_size / MIB
        pct = percentile_ms(hist, s.percentile)
        return {
            "engine": self.engine.name if self.engine else None,
            "threads": s.threads,
            "block_size": s.block_size,
            "total_size": s.total_size,
            "scope": s.scope,
            "oper": s.oper,
            "access_mode": s.access_mode,
            "time_limit_s": s.time_s,
            "percentile": s.percentile,
            "total_time": total_time,
            "total_events": total,
            "ops_per_second": total / total_time if total_time else 0.0,
            "mib_transferred": mib,
            "mib_per_second": mib / total_time if total_time else 0.0,
            "stopped_by": self.stopped_by,
            "latency_ms": {
                "min": lat_min / 1e6,
                "avg": sum(sums) / total / 1e6 if total else 0.0,
                "max": max(maxs, default=0) / 1e6,
                f"p{s.percentile:g}": pct or 0.0,
                "sum": sum(sums) / 1e6,
            },
            "fairness": {
                "events_avg": total / s.threads,
                "events_stddev": population_stddev([float(e) for e in events]),
                "time_avg": sum(sums) / s.threads / 1e9,
                "time_stddev": population_stddev([x / 1e9 for x in sums]),
            },
            "per_thread_events": events,
            "intervals": list(self.intervals),
            "worker_errors": list(self.worker_errors),
        }


class _Snap:
    """Every thread's counters at one moment (numpy copies)."""

    def __init__(self, stats: Any, hist: Any) -> None:
        # The count first: the sums and buckets read after it are never behind it.
        self.events = stats[:, STAT_EVENTS].copy()
        self.lat_sums = stats[:, STAT_LAT_SUM].copy()
        self.lat_mins = stats[:, STAT_LAT_MIN].copy()
        self.lat_maxs = stats[:, STAT_LAT_MAX].copy()
        self.lat_sum = int(self.lat_sums.sum())
        self.hist = hist.sum(axis=0).tolist()

    @classmethod
    def take(cls, stats: Any, hist: Any) -> _Snap:
        return cls(stats, hist)


def _all_done(stats: Any) -> bool:
    return bool((stats[:, STAT_DONE] != 0).all())
