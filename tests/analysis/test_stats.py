"""The two-sample tests against published values: R's wilcox.test / t.test
output on R's own data sets (printed in R's documentation and countless
course notes), ClickHouse's mannWhitneyUTest test case, and t tables.

R output quoted for each case (R 4.x):
  t.test(extra ~ group, data = sleep)       t = -1.8608, df = 17.776, p-value = 0.07939
  wilcox.test(extra ~ group, data = sleep)  W = 25.5, p-value = 0.06933 (ties: normal approx.)
  t.test(mpg ~ am, data = mtcars)           t = -3.7671, df = 18.332, p-value = 0.001374
  wilcox.test(mpg ~ am, data = mtcars)      W = 42, p-value = 0.001871
  wilcox.test(x, y, alternative = "g")      W = 35, p-value = 0.1272 (?wilcox.test example, exact)
"""

from __future__ import annotations

import math

import pytest
from probetop.tui.analysis.stats import (
    incomplete_beta,
    mann_whitney,
    min_p_value,
    t_sf_two_sided,
    welch,
)

# R's `sleep` data set: extra hours of sleep, group 1 and group 2.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
# R's `mtcars$mpg` by `am` (0 = automatic, 1 = manual).
MPG_AUTO = [21.4, 18.7, 18.1, 14.3, 24.4, 22.8, 19.2, 17.8, 16.4, 17.3, 15.2, 10.4, 10.4, 14.7,
            21.5, 15.5, 15.2, 13.3, 19.2]  # fmt: skip
MPG_MANUAL = [21.0, 21.0, 22.8, 32.4, 30.4, 33.9, 27.3, 26.0, 30.4, 15.8, 19.7, 15.0, 21.4]
# ?wilcox.test: "x <- c(0.80, 0.83, ...); y <- c(1.15, ...)"
HOLLANDER_X = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
HOLLANDER_Y = [1.15, 0.88, 0.90, 0.74, 1.21]


def test_welch_sleep_matches_r() -> None:
    r = welch(SLEEP_1, SLEEP_2)
    assert r.statistic == pytest.approx(-1.8608, abs=5e-5)
    assert r.df == pytest.approx(17.776, abs=5e-4)
    assert r.p_value == pytest.approx(0.07939, abs=5e-6)


def test_welch_mtcars_matches_r() -> None:
    r = welch(MPG_AUTO, MPG_MANUAL)
    assert r.statistic == pytest.approx(-3.7671, abs=5e-5)
    assert r.df == pytest.approx(18.332, abs=5e-4)
    assert r.p_value == pytest.approx(0.001374, abs=5e-7)


def test_welch_wikipedia_examples() -> None:
    """The worked examples of Wikipedia's "Welch's t-test" (t, df, p to 2-3 digits)."""
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    r = welch(a1, a2)
    assert r.statistic == pytest.approx(-2.46, abs=0.005)
    assert r.df == pytest.approx(25.0, abs=0.05)
    assert r.p_value == pytest.approx(0.021, abs=0.0005)
    b1 = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8]
    b2 = [21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5,
          23.6, 21.5, 22.5, 23.5, 21.5, 21.8]  # fmt: skip
    r = welch(b1, b2)
    assert r.statistic == pytest.approx(-1.57, abs=0.005)
    assert r.df == pytest.approx(9.9, abs=0.05)
    assert r.p_value == pytest.approx(0.149, abs=0.0005)


def test_welch_one_sided_halves_the_two_sided_p() -> None:
    two = welch(SLEEP_1, SLEEP_2).p_value
    assert two is not None
    assert welch(SLEEP_1, SLEEP_2, alternative="less").p_value == pytest.approx(two / 2)
    assert welch(SLEEP_1, SLEEP_2, alternative="greater").p_value == pytest.approx(1 - two / 2)


def test_mann_whitney_sleep_matches_r_with_ties() -> None:
    r = mann_whitney(SLEEP_1, SLEEP_2)
    assert r.statistic == 25.5  # R's W
    assert r.p_value == pytest.approx(0.06933, abs=5e-6)
    assert "normal" in r.method  # ties: R falls back to the normal approximation too


def test_mann_whitney_mtcars_matches_r() -> None:
    r = mann_whitney(MPG_AUTO, MPG_MANUAL)
    assert r.statistic == 42
    assert r.p_value == pytest.approx(0.001871, abs=5e-7)


def test_mann_whitney_exact_matches_r_documentation() -> None:
    r = mann_whitney(HOLLANDER_X, HOLLANDER_Y, alternative="greater")
    assert r.method == "exact"
    assert r.statistic == 35
    assert r.p_value == pytest.approx(0.1272, abs=5e-5)
    # Two-sided: twice the smaller tail.
    assert mann_whitney(HOLLANDER_X, HOLLANDER_Y).p_value == pytest.approx(0.2544, abs=1e-4)


def test_mann_whitney_matches_clickhouse_test_case() -> None:
    """ClickHouse tests/queries/0_stateless/01560_mann_whitney: U 223, p 0.5426959774289482."""
    left = [310, 195, 530, 155, 530, 245, 385, 450, 465, 545, 170, 180, 125, 180, 230, 75, 430,
            480, 495, 295]  # fmt: skip
    right = [116, 171, 176, 421, 111, 326, 481, 111, 346, 441, 261, 411, 206, 521, 456, 446, 296,
             51, 426, 261]  # fmt: skip
    r = mann_whitney(left, right)
    assert r.statistic == 223.0
    assert r.p_value == pytest.approx(0.5426959774289482, rel=1e-12)


def test_exact_distribution_by_enumeration() -> None:
    """Complete separation of 4 + 4 values: p = 2 / C(8, 4) = 2/70, the floor."""
    r = mann_whitney([1, 2, 3, 4], [5, 6, 7, 8])
    assert r.statistic == 0
    assert r.p_value == pytest.approx(2 / 70)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(3, 3) == pytest.approx(0.1)  # benchstat: "need >= 4 samples"


def test_large_samples_use_the_normal_approximation() -> None:
    a = [float(i) for i in range(60)]
    b = [float(i) + 0.5 for i in range(60)]
    r = mann_whitney(a, b)
    assert "normal" in r.method
    assert 0.5 < (r.p_value or 0) <= 1.0


def test_degenerate_inputs_never_raise() -> None:
    assert mann_whitney([], [1.0]).p_value is None
    assert mann_whitney([2.0, 2.0], [2.0, 2.0]).p_value == 1.0
    assert welch([1.0], [1.0, 2.0]).p_value is None
    assert welch([3.0, 3.0], [3.0, 3.0]).p_value == 1.0
    assert welch([3.0, 3.0], [4.0, 4.0]).p_value is None  # no variance, different means
    with pytest.raises(ValueError):
        mann_whitney([1.0], [2.0], alternative="sideways")


def test_incomplete_beta_and_t_distribution() -> None:
    for x in (0.1, 0.37, 0.9):
        assert incomplete_beta(1, 1, x) == pytest.approx(x)  # uniform
        assert incomplete_beta(2, 3, x) + incomplete_beta(3, 2, 1 - x) == pytest.approx(1)
    assert incomplete_beta(7.5, 7.5, 0.5) == pytest.approx(0.5)
    # t tables: two-sided 5 % critical values.
    for df, t in ((1, 12.706), (5, 2.571), (10, 2.228), (30, 2.042), (120, 1.980)):
        assert t_sf_two_sided(t, df) == pytest.approx(0.05, abs=5e-4)
    # Large df: the normal distribution.
    assert t_sf_two_sided(1.959964, 1e7) == pytest.approx(0.05, abs=1e-5)
    assert t_sf_two_sided(math.inf, 3) == 0.0


def test_min_p_value_of_long_recordings_is_a_number_not_an_overflow() -> None:
    from probetop.tui.analysis.stats import min_p_value

    assert min_p_value(3, 3) == pytest.approx(0.1)  # 2 / C(6, 3)
    assert min_p_value(3600, 600) == 0.0  # C(4200, 600) is far beyond a float
    assert min_p_value(0, 5) == 1.0
