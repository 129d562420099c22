"""A regression gate never passes on nothing (issue 29, Want 4).

Every expectation is computed by hand in the comments: Mann-Whitney's exact
two-sided p for two fully separated samples of n1 and n2 values is
2 / C(n1 + n2, n1) (3 + 3: 2/20 = 0.1; 4 + 4: 2/70 = 0.0286), and the
change is (median B - median A) / median A."""

from __future__ import annotations

import json
import operator
from pathlib import Path

import pytest
from analysis_helpers import probetop
from probetop.tui.analysis.comparison import Comparison, ProbePair, compare_metric

CPU = ProbePair("cpu", "cpu", "cpu")
LT = operator.lt


def _comparison(a: list[float], b: list[float], test: str = "mann-whitney") -> Comparison:
    m = compare_metric(CPU, "eps", "events/s", True, a, b, test=test, alpha=0.05)
    return Comparison("a", "b", test, 0.05, [CPU], [m])


def test_a_78_percent_drop_over_3_plus_3_intervals_cannot_pass() -> None:
    # medians 4819 -> 1052: -78.17 %; all of B below all of A: p = 2/20 = 0.100
    c = _comparison([4810, 4819, 4830], [1040, 1052, 1060])
    (m,) = c.metrics
    assert m.change_pct == pytest.approx((1052 - 4819) / 4819 * 100)
    assert m.test.p_value == pytest.approx(0.1)
    assert not m.significant and c.regression_pct == 0.0  # the old gate's "0.00%, ok"
    measured, why = c.gate("worse", LT, 5.0)
    assert measured == 0.0
    assert why is not None
    assert why.startswith("cannot tell with n=3+3; need at least 4 intervals on each side")
    assert "eps -78.17%" in why and "p=0.100" in why


@pytest.mark.parametrize("n", [1, 2, 3])
def test_too_few_intervals_fail_whatever_the_change(n: int) -> None:
    # 1+1, 2+2, 3+3: the smallest p is 1, 2/6, 2/20: never <= 0.05
    same = [100.0 + i for i in range(n)]
    measured, why = _comparison(same, same).gate("worse", LT, 5.0)
    assert measured == 0.0 and why is not None and f"n={n}+{n}" in why


def test_four_a_side_decide_a_real_drop_as_a_measured_regression() -> None:
    # 4 + 4 separated: p = 2/70 = 0.0286 <= 0.05; medians 4819.5 -> 1051: -78.19 %
    c = _comparison([4810, 4819, 4820, 4830], [1040, 1050, 1052, 1060])
    measured, why = c.gate("worse", LT, 5.0)
    assert why is None
    assert measured == pytest.approx((4819.5 - 1051) / 4819.5 * 100)


def test_a_change_beyond_the_threshold_without_significance_fails() -> None:
    # A 10..100, B 5..95 (step 10): medians 55 -> 50, -9.09 %; U = 1+2+...+10 = 55
    # of 100 pairs: far from significant. Beyond 5 %: undecided; within 10 %: ok.
    a = [10.0 * k for k in range(1, 11)]
    b = [10.0 * k - 5 for k in range(1, 11)]
    c = _comparison(a, b)
    (m,) = c.metrics
    assert m.test.statistic == 55 and m.test.p_value is not None and m.test.p_value > 0.5
    measured, why = c.gate("worse", LT, 5.0)
    assert measured == 0.0 and why is not None
    assert why.startswith("cannot tell: a change beyond the threshold is not significant")
    assert "eps -9.09%" in why
    assert c.gate("worse", LT, 10.0) == (0.0, None)


def test_an_undecided_metric_cannot_fail_a_gate_that_already_passes_upward() -> None:
    # improvement > 5 % from a significant +100 % (4 + 4 separated) stays decided
    # beside a metric with 3 + 3 intervals: more improvement cannot make it fail.
    good = compare_metric(CPU, "eps", "events/s", True, [1, 2, 3, 4], [5, 6, 7, 8],
                          test="mann-whitney", alpha=0.05)  # fmt: skip
    few = compare_metric(CPU, "lat_avg_ms", "ms", False, [1, 2, 3], [1, 2, 3],
                         test="mann-whitney", alpha=0.05)  # fmt: skip
    c = Comparison("a", "b", "mann-whitney", 0.05, [CPU], [good, few])
    measured, why = c.gate("better", operator.gt, 5.0)
    assert why is None and measured == pytest.approx((6.5 - 2.5) / 2.5 * 100)
    # ... while an upper bound on the improvement cannot be shown
    assert c.gate("better", LT, 500.0)[1] is not None


def test_welch_needs_two_values_a_side() -> None:
    _measured, why = _comparison([4819], [1052], test="welch").gate("worse", LT, 5.0)
    assert why is not None and "need at least 2 intervals" in why


def _with_eps(src: Path, dst: Path, eps: list[float]) -> Path:
    """``src`` (a real cpu recording) with its first ``len(eps)`` intervals'
    eps set to ``eps``, its later intervals and every other metric left out:
    one metric, values chosen by hand."""
    out, i = [], 0
    for line in src.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "sample" and rec["values"].get("eps") is not None:
            if i == len(eps):
                continue
            rec["values"] = {"eps": eps[i]}
            i += 1
        elif rec.get("type") == "sample":
            continue
        out.append(json.dumps(rec))
    assert i == len(eps), f"{src} has {i} intervals, fewer than {len(eps)}"
    dst.write_text("\n".join(out) + "\n")
    return dst


def test_the_cli_gate_on_the_issue_case_exits_99_and_says_why(tmp_path: Path) -> None:
    """`compare a b --assert 'compare:regression<5%'`, events/s 4819 -> 1052
    over 3 + 3 intervals: it printed ~ (p=0.100 n=3+3), "regression: 0.00%",
    ok and exited 0."""
    raw = tmp_path / "raw.jsonl"
    # 2 s of 0.2 s intervals, of which the first 3 are kept: a 0.7 s run gave 2
    # full intervals on a loaded machine.
    run = probetop("cpu", "--time", "2", "--interval", "0.2", "--headless", "--record", str(raw))
    assert run.returncode == 0, run.stderr
    a = _with_eps(raw, tmp_path / "a.jsonl", [4810.0, 4819.0, 4830.0])
    b = _with_eps(raw, tmp_path / "b.jsonl", [1040.0, 1052.0, 1060.0])
    gate = ("--no-charts", "--assert", "compare:regression<5%")
    out = probetop("compare", str(a), str(b), *gate, fresh=True)
    assert out.returncode == 99, out.stdout + out.stderr
    assert "~ (p=0.100 n=3+3)" in out.stdout
    assert (
        "FAIL compare:regression<5%: cannot tell with n=3+3; need at least 4 intervals "
        "on each side (cpu: eps -78.17%, p=0.100 n=3+3)"
    ) in out.stdout
    assert "undecided: 1 metric(s)" in out.stdout
    doc = probetop("compare", str(a), str(b), "--json", *gate)
    assert doc.returncode == 99
    # a --json run prints its outcomes on stderr; the comparison stays one document
    assert json.loads(doc.stdout)["regression_pct"] == 0.0
    assert "cannot tell with n=3+3" in doc.stderr
    # the same recording against itself: still 3 + 3, still undecided
    assert probetop("compare", str(a), str(a), *gate).returncode == 99
