"""What the native I/O loops and Python share: the layout of the per-job
counter, float and control arrays, the latency histogram, and the typed
readings made from them.

Contract:
- The loops (``probes/disk/native.py``) write, per job and direction, into
  int64 counters (``C_*``), float64 sums (``F_*``) and a fio-layout latency
  histogram (``HIST_BUCKETS`` buckets of clat, in ns); per job, control
  words (``K_*``: Python writes the stop word and the deadline, the loop the rest). Three
  latencies per I/O, fio's: clat (from the end of the submitting call to the
  reaping call; the whole pread/pwrite for psync), slat (the submitting call,
  asynchronous engines only) and lat (both).
- ``sum_jobs`` (what ``Engine.snapshot()`` in ``probes/disk/workers.py``
  returns) sums the jobs into a ``Snapshot``: per direction a
  ``DirectionTotals`` with a ``LatencyStats`` per latency; deltas come from
  ``minus``.
- ``hist_percentiles`` reads percentiles from a histogram the way fio does;
  ``bucket_value_ns`` is the value fio reports for a bucket.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from probetop.probes.disk.records import FIO_PERCENTILES

READ, WRITE = 0, 1  # indexes into DIRECTIONS
SECTOR = 512
# Kernel AIO's syscall numbers by machine: io_setup, io_destroy, io_getevents,
# io_submit (no libc wrapper: the loops call syscall(2)).
AIO_SYSCALLS = {
    "x86_64": (206, 207, 208, 209),
    "aarch64": (0, 1, 4, 2),
}

# Latency histogram: fio's layout (6 bits of precision per power of two, 29
# groups, in ns): values below 128 ns have their own bucket, then each power
# of two is split in 64 linear buckets. Worst-case error is 1/64 (1.6 %).
HIST_BITS = 6
HIST_VAL = 1 << HIST_BITS
HIST_GROUPS = 29
HIST_BUCKETS = HIST_GROUPS * HIST_VAL

# Per job, per direction counters (int64). Three latencies per I/O, fio's:
# clat (C_LAT_*: completion, from the end of the submitting call to the reap;
# the whole pread/pwrite for psync), slat (C_SLAT_*: the submitting call,
# asynchronous engines only; C_SLAT_N counts them) and lat (C_TLAT_*: total,
# slat + clat). C_ZERO_BYTES: bytes read back all zero (a plan with
# ``classify``): what a never-written block answers.
(
    C_IOS,
    C_BYTES,
    C_ERRORS,
    C_LAT_MIN,
    C_LAT_MAX,
    C_BAD_SECTORS,
    C_SLAT_N,
    C_SLAT_MIN,
    C_SLAT_MAX,
    C_TLAT_MIN,
    C_TLAT_MAX,
    C_ZERO_BYTES,
) = range(12)
N_COUNTERS = 12
MIN_COUNTERS = (C_LAT_MIN, C_SLAT_MIN, C_TLAT_MIN)  # start at int64 max
MAX_COUNTERS = (C_LAT_MAX, C_SLAT_MAX, C_TLAT_MAX)
# Per job, per direction float sums (float64): sum and sum of squares (ns) of
# clat, slat and lat; each sum of squares right after its sum (latency_stats relies on it).
F_LAT_SUM, F_LAT_SUMSQ, F_SLAT_SUM, F_SLAT_SUMSQ, F_TLAT_SUM, F_TLAT_SUMSQ = range(6)
N_FLOATS = 6
# Per job control words (int64): written by Python (stop) or the loop (the rest).
K_STOP, K_PROGRESS, K_ERRNO, K_ERR_OFFSET, K_ERR_DIR, K_FIRST_BAD = range(6)
# The zero check's state (native.looks_zero): blocks that looked zero so far,
# and 1 once a block that looked zero was not (then every block is checked whole).
K_ZERO_SEEN, K_ZERO_EXACT = 6, 7
# Which of the job's files (index into its ``FILE_*`` rows) the last failed I/O went to.
K_ERR_FILE = 8
# The run's end (fio's --runtime), written by Python: a monotonic ns (0: none)
# at which the loop stops issuing, reaps what is in flight and returns; and 1,
# set by the loop, once it stopped there (the deadline, not the work, ended it).
K_DEADLINE, K_EXPIRED = 9, 10
N_CONTROL = 11
# A job's files (fio's --nrfiles), one int64 row each: its descriptor, the
# end of its I/O area (all start at the plan's) and a sequential pattern's
# next offset in it (each file keeps its own, as fio's).
FILE_FD, FILE_END, FILE_POS = range(3)
N_FILE_WORDS = 3
# Which file a job's next I/O goes to (fio's --file_service_type).
FS_ROUNDROBIN, FS_SEQUENTIAL, FS_RANDOM = range(3)
FILE_SERVICES = {"roundrobin": FS_ROUNDROBIN, "sequential": FS_SEQUENTIAL, "random": FS_RANDOM}

# An I/O failing with one of these means the target is full, read-only or gone.
FATAL_ERRNOS = {
    errno.ENOSPC: "the filesystem is full",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the target became read-only",
    errno.ENXIO: "the device is gone",
    errno.ENODEV: "the device is gone",
    errno.EBADF: "the target was closed",
}

# The block map a plan with ``classify`` fills (one uint8 per granule of the
# range, ``blockmap.BlockMap``): what the pass found there. A failed I/O wins
# over anything; data wins over zero (a granule of several blocks is "zero"
# only when every block read in it was). B_HOLE: a hole of the file under
# the target, known before the pass (``holes``): its reads are counted as
# zeros without looking at them, so a sparse target costs no scan.
B_UNSEEN, B_DATA, B_ZERO, B_BAD, B_HOLE = 0, 1, 2, 3, 4


def bucket_value_ns(index: int) -> int:
    """The value fio reports for a histogram bucket (its ``plat_idx_to_val``):
    the bucket's low edge plus half its width, in whole ns."""
    if index < 2 * HIST_VAL:
        return index
    error_bits = (index >> HIST_BITS) - 1
    low = (HIST_VAL + (index & (HIST_VAL - 1))) << error_bits
    return low + ((1 << error_bits) >> 1)


BUCKET_VALUES_NS = np.array([bucket_value_ns(i) for i in range(HIST_BUCKETS)], dtype=np.float64)


def percentile_rank_reached(cumulative: int, pct: float, total: int) -> bool:
    """fio's rule (``calc_clat_percentiles``): a percentile is the first bucket
    where the running count reaches ``pct / 100 * total``, compared in C's
    long double (x86-64: 80-bit), so 99.9 % of 1000 I/Os needs the 1000th
    (99.9 / 100 is a hair above 0.999 in long double), where exact decimal
    arithmetic would stop at the 999th."""
    threshold = np.longdouble(pct) / np.longdouble(100.0) * np.longdouble(total)
    return bool(np.longdouble(cumulative) >= threshold)


def hist_percentiles(
    hist: np.ndarray, pcts: Sequence[float] = FIO_PERCENTILES
) -> dict[float, float | None]:
    """Percentiles (ns) of a bucket-count histogram, exactly as fio computes
    them (``percentile_rank_reached``; ``bucket_value_ns``)."""
    total = int(hist.sum())
    if total <= 0:
        return {p: None for p in pcts}
    cum = np.cumsum(hist)
    out: dict[float, float | None] = {}
    for p in sorted(pcts):
        # First index whose cumulative count reaches the threshold: a search
        # on the float threshold, then fio's long double comparison around it.
        idx = int(np.searchsorted(cum, total * p / 100.0 * (1 - 1e-12), side="left"))
        while idx < HIST_BUCKETS - 1 and not percentile_rank_reached(int(cum[idx]), p, total):
            idx += 1
        out[p] = float(BUCKET_VALUES_NS[min(idx, HIST_BUCKETS - 1)])
    return {p: out[p] for p in pcts}


@dataclass(frozen=True)
class LatencyStats:
    """One latency's figures over some I/Os (ns): fio's ``min``, ``max``,
    ``mean``, ``stddev`` and ``N``. ``min_ns``/``max_ns`` are None with no
    samples; in a delta (``minus``) they stay the cumulative ones, as fio's."""

    n: int = 0
    min_ns: int | None = None
    max_ns: int | None = None
    sum_ns: float = 0.0
    sumsq_ns: float = 0.0

    def minus(self, before: LatencyStats) -> LatencyStats:
        return LatencyStats(
            n=self.n - before.n,
            min_ns=self.min_ns,
            max_ns=self.max_ns,
            sum_ns=self.sum_ns - before.sum_ns,
            sumsq_ns=self.sumsq_ns - before.sumsq_ns,
        )

    @property
    def mean_ns(self) -> float | None:
        return self.sum_ns / self.n if self.n else None

    @property
    def stddev_ns(self) -> float | None:
        if not self.n:
            return None
        mean = self.sum_ns / self.n
        return float(max(0.0, self.sumsq_ns / self.n - mean * mean) ** 0.5)


@dataclass
class DirectionTotals:
    """Cumulative (or delta) figures for one direction. Latencies as fio's:
    ``clat`` from the end of the submitting call to the reaping call (the
    whole pread/pwrite for psync; ``hist`` is its histogram), ``slat`` the
    submitting call (asynchronous engines; none for psync), ``lat`` both."""

    ios: int = 0
    bytes: int = 0
    errors: int = 0
    bad_sectors: int = 0
    zero_bytes: int = 0  # read back all zero (plans with ``classify`` only)
    clat: LatencyStats = field(default_factory=LatencyStats)
    slat: LatencyStats = field(default_factory=LatencyStats)
    lat: LatencyStats = field(default_factory=LatencyStats)
    hist: np.ndarray = field(default_factory=lambda: np.zeros(HIST_BUCKETS, dtype=np.int64))

    def minus(self, before: DirectionTotals) -> DirectionTotals:
        """The delta since ``before`` (min/max are kept from self: cumulative)."""
        return DirectionTotals(
            ios=self.ios - before.ios,
            bytes=self.bytes - before.bytes,
            errors=self.errors - before.errors,
            bad_sectors=self.bad_sectors - before.bad_sectors,
            zero_bytes=self.zero_bytes - before.zero_bytes,
            clat=self.clat.minus(before.clat),
            slat=self.slat.minus(before.slat),
            lat=self.lat.minus(before.lat),
            hist=self.hist - before.hist,
        )


def latency_stats(
    cnt: np.ndarray, flt: np.ndarray, n: int, lo: int, hi: int, total: int
) -> LatencyStats:
    """One latency summed over jobs (``cnt``/``flt``: per job, one direction);
    ``total`` + 1 is its sum of squares."""
    if not n:
        return LatencyStats()
    return LatencyStats(
        n=n,
        min_ns=int(cnt[:, lo].min()),
        max_ns=int(cnt[:, hi].max()),
        sum_ns=float(flt[:, total].sum()),
        sumsq_ns=float(flt[:, total + 1].sum()),
    )


@dataclass
class Snapshot:
    """All jobs' counters at one monotonic instant: ``dirs`` summed over the
    jobs, ``jobs`` each job's own (fio's per-job report; empty where the
    reader did not ask for them)."""

    t_ns: int
    dirs: tuple[DirectionTotals, DirectionTotals]
    jobs: tuple[tuple[DirectionTotals, DirectionTotals], ...] = ()


def sum_jobs(
    t_ns: int,
    cnt: np.ndarray,
    flt: np.ndarray,
    hist: np.ndarray,
    *,
    per_job: np.ndarray | None = None,
) -> Snapshot:
    """The ``Snapshot`` at ``t_ns`` of every job's counters summed: ``cnt`` and
    ``flt`` (jobs, direction, slot) copies of the loops' arrays, ``hist`` the
    histograms already summed over the jobs (direction, bucket). With
    ``per_job`` (each job's histograms: job, direction, bucket), ``jobs``
    holds each job's own totals too."""
    jobs: tuple[tuple[DirectionTotals, DirectionTotals], ...] = ()
    if per_job is not None:
        jobs = tuple(
            sum_jobs(t_ns, cnt[j : j + 1], flt[j : j + 1], per_job[j]).dirs
            for j in range(cnt.shape[0])
        )
    dirs = []
    for d in (READ, WRITE):
        ios = int(cnt[:, d, C_IOS].sum())
        slat_n = int(cnt[:, d, C_SLAT_N].sum())
        per_job, sums = cnt[:, d], flt[:, d]
        dirs.append(
            DirectionTotals(
                ios=ios,
                bytes=int(cnt[:, d, C_BYTES].sum()),
                errors=int(cnt[:, d, C_ERRORS].sum()),
                bad_sectors=int(cnt[:, d, C_BAD_SECTORS].sum()),
                zero_bytes=int(cnt[:, d, C_ZERO_BYTES].sum()),
                clat=latency_stats(per_job, sums, ios, C_LAT_MIN, C_LAT_MAX, F_LAT_SUM),
                slat=latency_stats(per_job, sums, slat_n, C_SLAT_MIN, C_SLAT_MAX, F_SLAT_SUM),
                lat=latency_stats(per_job, sums, ios, C_TLAT_MIN, C_TLAT_MAX, F_TLAT_SUM),
                hist=hist[d].copy(),
            )
        )
    return Snapshot(t_ns, (dirs[0], dirs[1]), jobs)
