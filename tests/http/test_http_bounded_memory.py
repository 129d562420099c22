"""Repeated http requests of any number hold bounded memory (issue 29: each
URL kept every request's phases, TTFB and total for the run-wide
percentiles). The first EXACT_LIMIT values stay exact; past them the series
keeps log buckets, percentiles within 0.5 %, and the report says so."""

from __future__ import annotations

import random
import tracemalloc

import numpy as np
from probetop.probes.core.latencyseries import EXACT_LIMIT, RELATIVE_ERROR, LatencySeries
from probetop.probes.http.report import render_report
from probetop.probes.http.stats import PCTS, SERIES, UrlStats, exact_distribution
from probetop.probes.http.status import STATUS_CLASSES
from probetop.probes.http.transfer import PHASES


def _stats(limit: int) -> UrlStats:
    st = UrlStats("http://127.0.0.1/")
    st.series = {name: LatencySeries(limit) for name in SERIES}
    st.class_totals = {c: LatencySeries(limit) for c in STATUS_CLASSES}
    return st


def _request(st: UrlStats, rng: random.Random, i: int) -> None:
    total = int(rng.lognormvariate(7.0, 0.6)) + 1  # ~1 ms, us
    stamps = {"starttransfer": total * 3 // 4, "total": total}
    phases = {p: total // 8 for p in PHASES}
    st.add({"http_code": 200, "stamps_us": stamps, "t_ns": i * 10**7}, phases)


def test_memory_stays_flat_past_the_exact_limit() -> None:
    rng = random.Random(29)
    st = _stats(1000)
    tracemalloc.start()
    try:
        for i in range(1500):  # past the limit: the series are buckets now
            _request(st, rng, i)
        before = tracemalloc.take_snapshot()
        for i in range(1500, 31500):
            _request(st, rng, i)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # Kept values: 30,000 requests x 7 series x 8 B = 1.7 MB.
    assert grown < 160 * 1024, grown
    d = st.as_dict()["phases_ms"]["total"]
    assert d["count"] == 31500 and d["exact"] is False and d["relative_error"] == RELATIVE_ERROR


def test_binned_percentiles_are_within_the_stated_error() -> None:
    rng = random.Random(8)
    values = [rng.lognormvariate(0.0, 1.5) for _ in range(20_000)]
    values += [0.0] * 50  # a phase that took no time (no DNS for an IP)
    series = LatencySeries(100)
    for v in values:
        series.append(v)
    assert not series.exact and len(series) == len(values)
    for pct in (*PCTS, 0.0, 99.9, 100.0):
        want = float(np.percentile(values, pct))
        got = series.percentile(pct)
        assert got is not None and abs(got - want) <= RELATIVE_ERROR * want + 1e-12, (
            pct,
            got,
            want,
        )
    assert series.min == 0.0 and series.max == max(values)


def test_within_the_limit_figures_are_exact_and_unchanged() -> None:
    rng = random.Random(3)
    st = UrlStats("http://127.0.0.1/")
    for i in range(500):
        _request(st, rng, i)
    d = st.as_dict()["phases_ms"]["total"]
    assert "exact" not in d and EXACT_LIMIT >= 100_000
    values = st.series["total"].sorted_values()
    assert values is not None and len(values) == d["count"] == 500
    # the same figures as every value sorted gives (old code: a plain array)
    assert d == exact_distribution(values)
    assert abs(d["p90"] - float(np.percentile(values, 90))) < 1e-3


def test_the_text_report_says_when_buckets_gave_the_figures() -> None:
    rng = random.Random(5)
    st = _stats(100)
    for i in range(300):
        _request(st, rng, i)
    summary = {"http:x": {"urls": {"u": st.as_dict()}}}
    text = render_report(summary, 1.0, "done", False)
    assert f"NOTE: past {EXACT_LIMIT} requests a series keeps log buckets" in text
    assert "within 0.5 %" in text
