"""Pure statistics: rates, percentiles, running moments."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from probetop.probes.core.stats import (
    RunningStats,
    percentile,
    percentiles,
    population_stddev,
    rate,
)


def test_rate_is_per_second_and_refuses_nonsense():
    assert rate(500, 0.5) == 1000
    assert rate(0, 1.0) == 0
    assert rate(10, 0) is None
    assert rate(-5, 1.0) is None  # counter went backwards: no negative rate


def test_percentile_matches_linear_interpolation():
    rng = random.Random(7)
    values = sorted(rng.uniform(0, 1000) for _ in range(1001))
    # statistics.quantiles(method="inclusive") is the same linear rule as numpy's default.
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for p in (1, 25, 50, 90, 99):
        assert percentile(values, p) == pytest.approx(cuts[p - 1])
    assert percentile(values, 0) == values[0]
    assert percentile(values, 100) == values[-1]
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_percentiles_sorts_once():
    got = percentiles([5, 1, 3, 2, 4], [0, 50, 100])
    assert got == {0: 1, 50: 3, 100: 5}


def test_running_stats_agree_with_two_pass():
    rng = random.Random(3)
    data = [rng.gauss(10, 3) for _ in range(5000)]
    rs = RunningStats()
    for x in data:
        rs.add(x)
    assert rs.count == len(data)
    assert rs.min == min(data) and rs.max == max(data)
    assert rs.mean == pytest.approx(statistics.fmean(data))
    assert rs.stddev == pytest.approx(statistics.pstdev(data))
    assert population_stddev(data) == pytest.approx(statistics.pstdev(data))
    empty = RunningStats().as_dict()
    assert empty["mean"] is None and empty["min"] is None and empty["count"] == 0
    assert math.isclose(population_stddev([2, 4, 4, 4, 5, 5, 7, 9]), 2.0)
