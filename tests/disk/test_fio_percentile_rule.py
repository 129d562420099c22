"""fio's latency percentiles, computed by hand from fio's stat.c (3.33) and
compared with what probetop reports: nothing here is derived from
probetop's own functions.

fio's rule, in three steps:
- bucket of a latency v (ns), ``plat_val_to_idx``: below 128 ns, v itself;
  else with msb the index of v's highest set bit and e = msb - 6 discarded
  bits, ((e + 1) << 6) + ((v >> e) & 63);
- value of bucket i, ``plat_idx_to_val``: below 128, i itself; else with
  e = (i >> 6) - 1, (1 << (e + 6)) + (i % 64 + 0.5) * (1 << e), cut to an
  integer (unsigned long long);
- percentile p of N samples, ``calc_clat_percentiles``: the first bucket
  whose running count ``sum >= p / 100.0 * N`` (a real number: the rank is
  ceil(p * N / 100), never truncated or rounded).
"""

from __future__ import annotations

import numpy as np
import pytest
from probetop.probes.disk.counters import HIST_BUCKETS, DirectionTotals, hist_percentiles
from probetop.probes.disk.iops import fio_direction
from probetop.probes.disk.native import bucket

# (latency ns, fio's bucket, fio's value), each worked out by hand:
HAND = [
    # below 128 ns: its own bucket, its own value
    (100, 100, 100),
    # 150 = 0b10010110: msb 7, e 1, (2 << 6) + (75 & 63) = 128 + 11 = 139;
    # value 128 + 11.5 * 2 = 151
    (150, 139, 151),
    # 1000: msb 9, e 3, (4 << 6) + (125 & 63) = 256 + 61 = 317;
    # value 512 + 61.5 * 8 = 1004
    (1000, 317, 1004),
    # 5 ms = 5000000: msb 22, e 16, (17 << 6) + (76 & 63) = 1088 + 12 = 1100;
    # value 4194304 + 12.5 * 65536 = 5013504
    (5_000_000, 1100, 5_013_504),
]


def _hist(counts: dict[int, int]) -> np.ndarray:
    hist = np.zeros(HIST_BUCKETS, dtype=np.int64)
    for index, n in counts.items():
        hist[index] = n
    return hist


@pytest.mark.parametrize(("ns", "index", "value"), HAND)
def test_a_latency_lands_in_fios_bucket(ns: int, index: int, value: int) -> None:
    assert bucket(ns) == index


@pytest.mark.parametrize(("ns", "index", "value"), HAND)
def test_a_bucket_reports_fios_value(ns: int, index: int, value: int) -> None:
    assert hist_percentiles(_hist({index: 1}), (50,)) == {50: value}


def test_the_rank_is_a_real_number_reached_not_truncated() -> None:
    """N = 10: nine I/Os of 1000 ns and one of 5 ms. p95 needs a running
    count >= 9.5, which only the tenth I/O reaches (a truncated rank, 9,
    answers 1004); p90 needs >= 9.0, reached by the ninth."""
    pct = hist_percentiles(_hist({317: 9, 1100: 1}), (1, 50, 90, 95, 99, 99.99))
    assert pct == {1: 1004, 50: 1004, 90: 1004, 95: 5_013_504, 99: 5_013_504, 99.99: 5_013_504}


def test_ranks_of_three_samples() -> None:
    """N = 3, one I/O in each of three buckets: p30 needs 0.9 (the first),
    p40 1.2 and p60 1.8 (the second), p70 2.1 (the third); a truncated rank
    gives the first for p40 and the second for p70, a rounded one the
    first for p40."""
    pct = hist_percentiles(_hist({139: 1, 317: 1, 1100: 1}), (1, 30, 40, 50, 60, 70, 99))
    assert pct == {1: 151, 30: 151, 40: 1004, 50: 1004, 60: 1004, 70: 5_013_504, 99: 5_013_504}


def test_the_json_report_has_fios_integers_at_fios_keys() -> None:
    """``clat_ns.percentile`` as fio's --output-format=json writes it: keys
    "95.000000", integer ns values (151 for the 150 ns bucket: fio's
    (k + 0.5) << e, not the middle of the integer range, 150.5)."""
    hist = np.zeros((HIST_BUCKETS,), dtype=np.int64)
    hist[139], hist[317] = 1, 1
    d = DirectionTotals(ios=2, bytes=8192, hist=hist)
    doc = fio_direction(d, 1.0)["clat_ns"]["percentile"]
    # N = 2: p1..p50 need <= 1.0 (the first I/O), p60.. more (the second).
    assert doc["1.000000"] == doc["50.000000"] == 151
    assert doc["60.000000"] == doc["99.990000"] == 1004
    assert all(type(v) is int for v in doc.values())
    assert list(doc) == [
        "1.000000", "5.000000", "10.000000", "20.000000", "30.000000", "40.000000",
        "50.000000", "60.000000", "70.000000", "80.000000", "90.000000", "95.000000",
        "99.000000", "99.500000", "99.900000", "99.950000", "99.990000",
    ]  # fmt: skip
