"""Two-sample tests for ``probetop compare``: Mann-Whitney U and Welch's t.

Written here (about 200 lines, standard library only) rather than pulling in
scipy (~40 MB) for two functions; tests/analysis/test_stats.py checks every
p-value against R's ``wilcox.test`` / ``t.test`` output and the textbook
examples.

Contract:
- ``mann_whitney(a, b)``: the two-sided (or one-sided) Wilcoxon rank-sum /
  Mann-Whitney U test, as R's ``wilcox.test(a, b)``: the exact distribution
  of U when both samples have fewer than 50 values and there are no ties,
  otherwise the normal approximation with the tie correction of the
  variance and a continuity correction of 0.5. ``U`` is R's ``W`` (the
  number of pairs where the value of ``a`` is larger, ties counting 1/2).
- ``welch(a, b)``: Welch's unequal-variances t-test (R's ``t.test(a, b)``),
  t, the Welch-Satterthwaite degrees of freedom and the p-value from
  Student's t distribution (regularized incomplete beta function).
- ``min_p_value(n1, n2)``: the smallest two-sided p-value Mann-Whitney can
  give for these sample sizes (all of one sample below all of the other).
  Below ``alpha`` no difference can be detected at all: benchstat says
  "need >= 4 samples" for the same reason (3 + 3 values give p >= 0.1).
- No test raises on degenerate input: constant or too-short samples give
  ``p_value = None`` (nothing can be said) or 1.0 (identical samples).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

EXACT_LIMIT = 50
"""R's default: the exact U distribution below 50 values per sample, no ties."""


@dataclass(frozen=True, slots=True)
class TestResult:
    """One test: its name, the statistic, the p-value (None: nothing can be
    said, too few values or no variance) and, for Welch, the degrees of freedom."""

    test: str
    statistic: float | None
    p_value: float | None
    df: float | None = None
    method: str = ""


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (ties share the mean rank, as R's ``rank``) and the tie group sizes."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = mid
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many arrangements of n1 + n2 distinct values give each U = 0..n1*n2.

    The classic recurrence f(u; m, n) = f(u - n; m - 1, n) + f(u; m, n - 1),
    built one column at a time (O(n1 * n2 * (n1 * n2)) at worst, instant for
    the sizes it is used for, n < 50)."""
    # table[m][u] for the current n: start with n = 0 (only U = 0 possible).
    table = [[1] for _m in range(n1 + 1)]
    for n in range(1, n2 + 1):
        new = [[1]]  # m = 0: one arrangement, U = 0
        for m in range(1, n1 + 1):
            size = m * n + 1
            row = [0] * size
            left = new[m - 1]  # f(.; m - 1, n): the largest value is in sample 1
            for u, count in enumerate(left):
                row[u + n] += count
            prev = table[m]  # f(.; m, n - 1): the largest value is in sample 2
            for u, count in enumerate(prev):
                row[u] += count
            new.append(row)
        table = new
    return tuple(table[n1])


def _exact_p(u: float, n1: int, n2: int, alternative: str) -> float:
    counts = _u_counts(n1, n2)
    total = math.comb(n1 + n2, n1)
    k = round(u)
    upper = sum(counts[k:]) / total  # P(U >= u)
    lower = sum(counts[: k + 1]) / total  # P(U <= u)
    if alternative == "greater":
        return upper
    if alternative == "less":
        return lower
    # R: two-sided = 2 * the smaller tail, at most 1.
    return min(1.0, 2.0 * min(upper, lower))


def _normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alternative: str = "two-sided",
    exact: bool | None = None,
    correct: bool = True,
) -> TestResult:
    """The Mann-Whitney U (Wilcoxon rank-sum) test of ``a`` against ``b``.

    ``alternative``: "two-sided", "greater" (a tends to be larger) or "less".
    ``exact``: None chooses as R does (exact below 50 values each, no ties)."""
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return TestResult("mann-whitney", None, None, method="no values")
    ranks, ties = _ranks([*a, *b])
    r1 = sum(ranks[:n1])
    u = r1 - n1 * (n1 + 1) / 2.0  # R's W: pairs with a > b (+1/2 per tie)
    if exact is None:
        exact = n1 < EXACT_LIMIT and n2 < EXACT_LIMIT and not ties
    if exact and not ties:
        return TestResult("mann-whitney", u, _exact_p(u, n1, n2, alternative), method="exact")
    n = n1 + n2
    mean = n1 * n2 / 2.0
    tie_term = sum(t**3 - t for t in ties)
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:  # every value equal: no evidence of any difference
        return TestResult("mann-whitney", u, 1.0, method="all values tied")
    diff = u - mean
    if alternative == "two-sided":
        corr = 0.5 * math.copysign(1.0, diff) if correct and diff != 0 else 0.0
    elif alternative == "greater":
        corr = 0.5 if correct else 0.0
    else:
        corr = -0.5 if correct else 0.0
    z = (diff - corr) / math.sqrt(var)
    if alternative == "two-sided":
        p = min(1.0, 2.0 * _normal_sf(abs(z)))
    elif alternative == "greater":
        p = _normal_sf(z)
    else:
        p = 1.0 - _normal_sf(z)
    method = "normal approximation, tie and continuity corrections"
    return TestResult("mann-whitney", u, p, method=method)


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided Mann-Whitney p-value for samples of n1 and n2 values."""
    if n1 == 0 or n2 == 0:
        return 1.0
    # In logs: C(n1+n2, n1) outgrows a float (an hour against ten minutes of
    # samples); the p-value then underflows to 0.0, which is what it is.
    log_comb = math.lgamma(n1 + n2 + 1) - math.lgamma(n1 + 1) - math.lgamma(n2 + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))


# -- Student's t distribution ----------------------------------------------


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be within 0..1, got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The fraction converges fast for x < (a + 1) / (a + b + 2); use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_sf_two_sided(t: float, df: float) -> float:
    """P(|T| > |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def welch(a: Sequence[float], b: Sequence[float], *, alternative: str = "two-sided") -> TestResult:
    """Welch's t-test of ``a`` against ``b`` (unequal variances; R's ``t.test``).

    ``t`` is (mean(a) - mean(b)) / se, as R prints it."""
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return TestResult("welch", None, None, method="fewer than 2 values in a sample")
    m1, m2 = math.fsum(a) / n1, math.fsum(b) / n2
    v1 = math.fsum((x - m1) ** 2 for x in a) / (n1 - 1)
    v2 = math.fsum((x - m2) ** 2 for x in b) / (n2 - 1)
    s1, s2 = v1 / n1, v2 / n2
    se2 = s1 + s2
    if se2 <= 0:
        same = m1 == m2
        return TestResult(
            "welch",
            0.0 if same else None,
            1.0 if same else None,
            method="no variance in either sample",
        )
    t = (m1 - m2) / math.sqrt(se2)
    df = se2 * se2 / (s1 * s1 / (n1 - 1) + s2 * s2 / (n2 - 1))
    two = t_sf_two_sided(t, df)
    if alternative == "two-sided":
        p = two
    elif alternative == "greater":
        p = two / 2.0 if t > 0 else 1.0 - two / 2.0
    else:
        p = two / 2.0 if t < 0 else 1.0 - two / 2.0
    return TestResult("welch", t, min(1.0, p), df=df, method="Welch-Satterthwaite")


TESTS = {"mann-whitney": mann_whitney, "welch": welch}
"""The tests ``probetop compare --test`` offers, by name."""
