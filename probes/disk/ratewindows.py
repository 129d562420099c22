"""fio's bw and iops samples: each job's rate over fixed averaging windows.

Contract:
- fio (stat.c, ``add_bw_samples``/``add_iops_samples``) samples each job's
  bytes and I/Os every ``--bwavgtime``/``--iopsavgtime`` ms (default 500)
  from the measurement's start (the job's start, or the ramp's end): one
  sample per window and direction, the rate over the time the window really
  took in whole ms, in whole KiB/s (bw, kept here in B/s, a multiple of
  1024) or whole IO/s. A direction that moved nothing in a window has no
  sample for it ("no entries for interval"); a window due within 1 ms
  (fio's LOG_MSEC_SLACK) is due; a late window makes the next one shorter,
  so the windows stay on their grid.
- ``RateWindows`` keeps those samples per job from counter copies the
  caller takes when ``next_due_ns`` comes (``sample``); which jobs still run
  is the caller's to say (fio samples running jobs only).
- ``job_table(j)`` is job j's figures; ``group_table()`` is fio's
  ``--group_reporting`` sum of its jobs' (``sum_stat`` with ``pure_sum``):
  samples, min, max and mean are the sums of the jobs', the deviation from
  the summed squared deviations over the summed samples. For one job it is
  the job's own.
- Tables are ``{"<direction>_<key>": {samples, min, max, mean, dev}}``,
  ``key`` ``bw_bytes`` or ``iops``, zeros for a field with no sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from probetop.probes.core.stats import RunningStats
from probetop.probes.disk.counters import C_BYTES, C_IOS
from probetop.probes.disk.records import DIRECTIONS

# The row/summary key of each sampled figure and the counter it is a rate of.
WINDOW_KEYS = {"bw_bytes": C_BYTES, "iops": C_IOS}
SLACK_NS = 1_000_000  # fio's LOG_MSEC_SLACK


def counter_copy(cnt: np.ndarray) -> np.ndarray:
    """The (jobs, directions, [ios, bytes]) counts the windows need, copied."""
    return cnt[:, :, [C_IOS, C_BYTES]].copy()


_COLUMN = {"iops": 0, "bw_bytes": 1}  # in ``counter_copy``'s last axis


class RateWindows:
    """See the module docstring."""

    def __init__(
        self,
        *,
        directions: Sequence[str],
        windows_ms: Mapping[str, int],
        start_ns: int,
        counts: np.ndarray,
    ) -> None:
        self.directions = tuple(directions)
        self.window_ns = {k: int(ms) * 1_000_000 for k, ms in windows_ms.items()}
        self.due_ns = {k: start_ns + w for k, w in self.window_ns.items()}
        self._last = {k: (start_ns, counts) for k in self.window_ns}
        jobs = counts.shape[0]
        self.stats: list[dict[str, RunningStats]] = [
            {f"{name}_{key}": RunningStats() for name in self.directions for key in windows_ms}
            for _ in range(jobs)
        ]

    def next_due_ns(self) -> int:
        """When the next window ends (less fio's slack: it is due from then)."""
        return min(self.due_ns.values()) - SLACK_NS

    def sample(self, t_ns: int, counts: np.ndarray, running: Sequence[bool]) -> None:
        """Close every window due at ``t_ns`` with the counters ``counts``
        (``counter_copy``) read then; ``running[j]``: job j is still running."""
        for key, w in self.window_ns.items():
            if t_ns < self.due_ns[key] - SLACK_NS:
                continue
            while self.due_ns[key] - SLACK_NS <= t_ns:
                self.due_ns[key] += w
            (t0, before), self._last[key] = self._last[key], (t_ns, counts)
            ms = (t_ns - t0) // 1_000_000
            if ms <= 0:
                continue
            col = _COLUMN[key]
            for j, stats in enumerate(self.stats):
                if j < len(running) and not running[j]:
                    continue
                for name in self.directions:
                    d = DIRECTIONS.index(name)
                    delta = int(counts[j, d, col] - before[j, d, col])
                    if not delta:
                        continue  # fio: no entries for the window
                    rate = delta * 1000 // ms
                    if key == "bw_bytes":
                        rate = rate // 1024 * 1024  # whole KiB/s, as fio
                    stats[f"{name}_{key}"].add(float(rate))

    def job_table(self, job: int) -> dict[str, dict[str, Any]]:
        return {field: _row(st) for field, st in self.stats[job].items()}

    def group_table(self) -> dict[str, dict[str, Any]]:
        """fio's --group_reporting figures: the jobs' summed (module docstring)."""
        out = {}
        for field in self.stats[0] if self.stats else {}:
            sampled = [job[field] for job in self.stats if job[field].count]
            n = sum(st.count for st in sampled)
            if not n:
                out[field] = _row(RunningStats())
                continue
            m2 = sum(st.sample_stddev**2 * (st.count - 1) for st in sampled)
            out[field] = {
                "samples": n,
                "min": sum(st.min for st in sampled),
                "max": sum(st.max for st in sampled),
                "mean": sum(st.mean or 0.0 for st in sampled),
                "dev": math.sqrt(m2 / (n - 1)) if n > 1 else 0.0,
            }
        return out


def _row(st: RunningStats) -> dict[str, Any]:
    return {
        "samples": st.count,
        "min": st.min if st.count else 0.0,
        "max": st.max if st.count else 0.0,
        "mean": st.mean or 0.0,
        "dev": st.sample_stddev,
    }
