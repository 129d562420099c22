"""The memory probe: sysbench 1.0.20 ``memory`` measured the way sysbench does.

Contract:
- One operation (sysbench's event) is one block (``engine``). ``threads``
  worker threads run operations back to back until ``time_s`` passes or each
  has done its share of ``total_size`` (sysbench's per-thread budget
  total / block / threads; 0 = no limit). Global scope: one block shared by
  every thread; local: one block per thread. The blocks are sysbench's
  (``blocks``: page aligned, zeroed; --memory-hugetlb: from the HugeTLB pool).
- ``prepare()`` validates, builds the engine and allocates the blocks, so JIT
  time is never inside the run and an empty HugeTLB pool fails before it.
  ``run()`` emits one Sample per interval (per-interval ops/s, MiB/s,
  latency percentile and mean, per-thread ops); the last one is ``final`` and
  carries the summary. On cancellation it sets the stop flag, waits for the
  workers (they see it within one operation) and still emits the final
  interval, so Ctrl-C keeps what ran.
- ``summary()`` is sysbench's final report as a JSON-safe dict.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Emit, UsageProbeError
from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.core.sample import now_ns
from probetop.probes.core.sysbench.counters import (
    STAT_CPU_NS,
    STAT_DONE,
    STAT_END_NS,
    STOPPED_DEADLINE,
    STOPPED_FLAG,
    STOPPED_LIMIT,
    Interval,
    Snapshot,
    all_done,
    fairness,
    is_sliver,
    latency_ms,
    next_tick,
    per_thread,
)
from probetop.probes.core.sysbench.hist import HIST_SIZE, to_sparse
from probetop.probes.core.sysbench.rate import QUEUE_FULL_MESSAGE, RateSchedule
from probetop.probes.core.sysbench.report import prints_at_time
from probetop.probes.mem.blocks import Blocks
from probetop.probes.mem.engine import (
    EngineUnavailable,
    MemEngine,
    SharedHistogram,
    SharedRun,
    ThreadJob,
    load_engine,
    new_rows,
    setup_row,
)
from probetop.probes.mem.records import METRICS, MemInterval
from probetop.probes.mem.settings import MemSettings

MIB = 1024.0 * 1024.0
STOP_WAIT_S = 1.0  # workers see the stop flag within one operation (ms at most)
DONE_POLL_S = 0.01


class MemProbe:
    """sysbench memory as a probe. See the module docstring for the contract."""

    kind = "mem"
    metrics = METRICS

    def __init__(self, settings: MemSettings | None = None, *, probe_id: str = "mem") -> None:
        self.settings = settings or MemSettings()
        self.id = probe_id
        self.engine: MemEngine | None = None
        self.intervals = IntervalLog()  # bounded: a run of any length
        self.worker_errors: list[str] = []
        self._stats: Any = None
        self._hist: Any = None
        self._start_ns = 0
        self._end_ns = 0
        self._cpu_ns: list[int] = []
        self._keep: Any = None
        self._blocks: Blocks | None = None  # prepared, not yet run
        self.stopped_by = "time"
        self.schedule: RateSchedule | None = None  # --rate: the arrivals and their queue
        self.queue_full = False

    # -- setup -----------------------------------------------------------
    def prepare(self) -> None:
        """Validate, build the engine and allocate the blocks: whatever can
        fail (no huge pages left, as sysbench's FATAL) fails before the run."""
        self.settings.validate()
        if self.engine is None:
            try:
                self.engine = load_engine()
            except EngineUnavailable as exc:
                raise UsageProbeError(str(exc)) from exc
        self._allocate()

    def _allocate(self) -> Blocks:
        if self._blocks is None:
            s = self.settings
            local = s.scope == "local"
            self._blocks = Blocks.allocate(
                s.block_size, s.threads if local else 1, hugetlb=s.hugetlb, per_thread=local
            )
        return self._blocks

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
            "rate": s.rate,
            "hugetlb": s.hugetlb,
        }

    def reference_command(self) -> str | None:
        s = self.settings
        return (
            f"sysbench memory --threads={s.threads} --time={s.time_s:g} "
            f"--memory-block-size={s.block_size} --memory-total-size={s.total_size} "
            f"--memory-scope={s.scope} --memory-oper={s.oper} "
            f"--memory-access-mode={s.access_mode} --percentile={s.percentile:g}"
            + (f" --rate={s.rate}" if s.rate else "")
            + (" --memory-hugetlb=on" if s.hugetlb else "")
            + " run"
        )

    # -- measuring -------------------------------------------------------
    async def run(self, emit: Emit) -> None:
        if self.engine is None:
            self.prepare()
        assert self.engine is not None
        s = self.settings
        threads = s.threads
        blocks = self._allocate()
        self._blocks = None  # this run's now: freed when its workers are done
        addrs = blocks.addresses
        rows = new_rows(threads)
        hist = SharedHistogram()
        self._stats, self._hist = rows, hist.counts
        shared = SharedRun()
        engine = self.engine
        if s.rate:
            self.schedule = RateSchedule(s.rate, s.rand_seed)
        engine.setup(
            shared,
            mode=s.access_mode,
            oper=s.oper,
            block_size=s.block_size,
            total_size=s.total_size,
            percentile=s.percentile,
            hist=hist,
            rows=rows,
            schedule=self.schedule,
        )
        budget = s.ops_per_thread()
        for i in range(threads):
            setup_row(
                rows[i],
                buffer_address=addrs[i if s.scope == "local" else 0],
                budget=max(budget, 0),
                rng=(random.getrandbits(64) | 1, random.getrandbits(64)),
            )
        jobs = [ThreadJob(shared, i, rows[i]) for i in range(threads)]
        go = threading.Event()

        def work(job: ThreadJob) -> None:
            go.wait()
            try:
                engine.run(job)  # a ctypes call: the GIL is released meanwhile
            except Exception as exc:  # a worker bug must end the run, not hang it
                self.worker_errors.append(f"{type(exc).__name__}: {exc}")
                shared.request_stop()
                job.row[STAT_END_NS] = now_ns()
                job.row[STAT_DONE] = STOPPED_FLAG

        workers = [
            threading.Thread(target=work, args=(j,), name=f"probetop-mem-{i}", daemon=True)
            for i, j in enumerate(jobs)
        ]
        for w in workers:
            w.start()
        start = self._start_ns = now_ns()
        shared.set_clock(start, int(s.time_s * 1e9) if s.time_s > 0 else 0)
        go.set()
        interval_ns = int(s.interval_s * 1e9)
        prev = Snapshot.take(rows, hist.counts)
        prev_t = start
        tick = 0
        cancelled = False
        try:
            while not all_done(rows):
                tick, next_ns = next_tick(tick, prev_t, start, interval_ns)
                while not all_done(rows) and now_ns() < next_ns:
                    # Near the end poll the done flags; else sleep to the tick.
                    left = (next_ns - now_ns()) / 1e9
                    await asyncio.sleep(min(max(left, 0.0), DONE_POLL_S * 10))
                if all_done(rows):
                    break
                now = now_ns()
                queue = self.schedule.queue_length() if self.schedule is not None else None
                if queue is not None and queue < 0:
                    shared.request_stop()  # sysbench's fatal "event queue is full"
                    break
                cur = Snapshot.take(rows, hist.counts)
                self._emit(emit, prev, cur, prev_t, now, full=True, queue=queue)
                prev, prev_t = cur, now
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            shared.request_stop()
            waited = 0.0
            while not all_done(rows) and waited < STOP_WAIT_S:
                # Plain sleep: in a cancelled task another await would raise again.
                threading.Event().wait(DONE_POLL_S)
                waited += DONE_POLL_S
            if not all_done(rows):
                self.worker_errors.append(
                    f"{int((rows[:, STAT_DONE] == 0).sum())} worker threads did not stop "
                    f"within {STOP_WAIT_S:g} s"
                )
            ends = rows[:, STAT_END_NS]
            self._end_ns = int(ends.max()) if all_done(rows) else now_ns()
            self._cpu_ns = [int(ns) for ns in rows[:, STAT_CPU_NS].tolist()]
            codes = rows[:, STAT_DONE].tolist()
            if self.schedule is not None and self.schedule.full:
                self.stopped_by = "queue_full"
                self.queue_full = True
                self.worker_errors.append(f"FATAL: {QUEUE_FULL_MESSAGE}")
            elif cancelled:
                self.stopped_by = "stop"
            elif any(c == STOPPED_LIMIT for c in codes):
                self.stopped_by = "total_size"
            elif any(c == STOPPED_DEADLINE for c in codes):
                self.stopped_by = "time"
            else:
                self.stopped_by = "stop"
            final = Snapshot.take(rows, hist.counts)
            t_end = max(self._end_ns, prev_t + 1000)
            end_queue = None
            if self.schedule is not None:
                end_queue = max(0, self.schedule.queue_length(self._end_ns))
            self._emit(emit, prev, final, prev_t, t_end, full=False, queue=end_queue)
            if all_done(rows):
                blocks.close()
            # Else freed with the probe: a lingering worker may still use them.
            self._keep = (blocks, hist, shared)

    def _emit(
        self,
        emit: Emit,
        prev: Snapshot,
        cur: Snapshot,
        t0: int,
        t1: int,
        *,
        full: bool,
        queue: int | None = None,
    ) -> None:
        s = self.settings
        seconds = (t1 - t0) / 1e9
        if seconds <= 0:
            return
        delta = Interval.between(prev, cur)
        sliver = is_sliver(full, seconds, s.interval_s)
        rate = delta.events / seconds
        mibs = rate * s.block_size / MIB
        pct = delta.percentile_ms(s.percentile)
        row = {
            "t": round((t1 - self._start_ns) / 1e9, 6),
            "interval_s": round(seconds, 6),
            "full": full,
            # sysbench's last [ Ns ] line comes at --time (cpu's rule, the same here)
            "at_time": prints_at_time(
                full=full,
                sliver=sliver,
                stopped_by=self.stopped_by,
                time_s=s.time_s,
                interval_s=s.interval_s,
            ),
            "threads": s.threads,
            "ops": rate,
            "mibs": mibs,
            "lat_pct_ms": pct,
            "events": delta.events,
        }
        concurrency = None
        if self.schedule is not None:
            # sysbench's queue and concurrency (its memory report prints neither)
            concurrency = self.schedule.concurrency
            row["queue_length"] = queue
            row["concurrency"] = concurrency
        self.intervals.append(row)
        record = MemInterval(
            ops=None if sliver else rate,
            mibs=None if sliver else mibs,
            lat_pct_ms=None if sliver else pct,
            lat_avg_ms=None if sliver else delta.lat_avg_ms,
            threads=s.threads,
            per_thread_ops=tuple(delta.per_thread),
            percentile=s.percentile,
            block_size=s.block_size,
            total_ops=cur.total_events,
            final=not full,
            summary=None if full else self.summary(),
            rate=s.rate or None,
            queue_length=queue,
            concurrency=concurrency,
        )
        emit(record.to_sample(self.id, t1, seconds))

    # -- results ---------------------------------------------------------
    def summary(self) -> Mapping[str, Any]:
        """sysbench's final report (JSON-safe): its memory lines, then the
        shared sections (``probes.core.sysbench.counters``)."""
        import numpy as np

        s = self.settings
        if self._stats is None:
            snap = Snapshot.take(new_rows(s.threads), np.zeros((1, HIST_SIZE), np.int64))
        else:
            snap = Snapshot.take(self._stats, self._hist)
        total = snap.total_events
        end = self._end_ns or now_ns()
        total_time = max(0, end - self._start_ns) / 1e9 if self._start_ns else 0.0
        mib = total * s.block_size / MIB
        return {
            "engine": self.engine.name if self.engine else None,
            "threads": s.threads,
            **({"rand_seed": s.rand_seed} if s.rand_seed else {}),
            "block_size": s.block_size,
            "total_size": s.total_size,
            "scope": s.scope,
            "oper": s.oper,
            "access_mode": s.access_mode,
            "time_limit_s": s.time_s,
            **({"rate": s.rate} if s.rate else {}),
            **({"queue_full": True} if self.queue_full else {}),
            "percentile": s.percentile,
            "total_time": total_time,
            "total_events": total,
            "ops_per_second": total / total_time if total_time else 0.0,
            "mib_transferred": mib,
            "mib_per_second": mib / total_time if total_time else 0.0,
            "stopped_by": self.stopped_by,
            "latency_ms": latency_ms(snap, s.percentile),
            "fairness": fairness(snap, s.threads),
            "per_thread_events": [int(e) for e in snap.events.tolist()],
            "per_thread": per_thread(snap, self._cpu_ns),
            "histogram": to_sparse(snap.histogram()),  # sysbench's buckets: --histogram
            "intervals": self.intervals.rows(),
            **({"intervals_dropped": self.intervals.dropped} if self.intervals.dropped else {}),
            "worker_errors": list(self.worker_errors),
        }
