"""Load mode's parts that need no server: the histogram (precision, bounded
memory, merge, JSON form), the typed sample (round trip, tolerance), the
generator-limited rule and the options (what load mode refuses, exit 2)."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.sample import Sample
from probetop.probes.http import (
    LOAD_METRICS,
    MAX_RATE,
    PCT_KEYS,
    ClassLatency,
    HttpSettings,
    LoadInterval,
    LoadParams,
)
from probetop.probes.http.load.hist import Histogram, bucket_of, bucket_range, bucket_value
from probetop.probes.http.load.records import is_generator_limited
from probetop.probes.http.status import StatusClass
from probetop.tui.cli.parser import build_parser, make_plan


def exact(values: list[int], pct: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100.0 * len(ordered))) - 1]


# -- histogram ------------------------------------------------------------------
def test_buckets_are_contiguous_and_narrow() -> None:
    previous_high = -1
    for index in range(0, 30_000):
        low, high = bucket_range(index)
        assert low == previous_high + 1, index
        assert bucket_of(low) == index and bucket_of(high) == index
        assert (high - low + 1) <= max(1, low / 1024)  # at most 1/1024 of the value wide
        previous_high = high


def test_percentiles_within_a_twentieth_of_a_percent_of_exact() -> None:
    rng = random.Random(7)
    values = [int(rng.lognormvariate(8, 2)) for _ in range(50_000)]  # ~3 ms median, long tail
    hist = Histogram.of(values)
    for pct in (1.0, 50.0, 90.0, 99.0, 99.9, 99.99):
        want = exact(values, pct)
        got = hist.percentile(pct)
        assert got is not None
        assert abs(got - want) <= max(0.5, 0.0005 * want), (pct, got, want)
    assert hist.percentile(100.0) == max(values)
    assert hist.max == max(values) and hist.min == min(values)
    assert hist.mean == pytest.approx(sum(values) / len(values))


def test_memory_is_bounded_by_range_not_by_count() -> None:
    hist = Histogram()
    rng = random.Random(1)
    for _ in range(200_000):
        hist.record(rng.randrange(0, 3_600_000_000))  # up to an hour, in us
    assert hist.count == 200_000
    assert len(hist.counts) <= 24 * 1024  # ~22 power-of-two ranges x 1024 buckets
    assert bucket_of(3_600_000_000) < 24 * 1024


def test_merge_and_json_round_trip() -> None:
    a = Histogram.of([10, 20, 3000, 10**7])
    b = Histogram.of([5, 999_999])
    a.merge(b)
    back = Histogram.from_list(a.to_list())
    assert back.counts == a.counts
    assert (back.count, back.min, back.max, back.total) == (6, 5, 10**7, a.total)
    assert back.percentiles((50.0, 99.0)) == a.percentiles((50.0, 99.0))
    assert bucket_value(bucket_of(3000)) == pytest.approx(3000, rel=5e-4)


def test_from_list_tolerates_garbage() -> None:
    for raw in (None, 3, "x", {"b": "x"}, {"b": [[1], [1, "a"], [-1, 3], [True, 2]]}):
        hist = Histogram.from_list(raw)  # type: ignore[arg-type]
        assert hist.count == 0 and hist.percentile(99.0) is None
    hist = Histogram.from_list({"b": [[100, 2], [3000, 1]]})
    assert hist.count == 3 and hist.min == 100 and hist.max is not None and hist.max >= 3000


# -- records --------------------------------------------------------------------
def test_load_interval_round_trips_through_a_sample() -> None:
    ok = ClassLatency.of(Histogram.of([100, 200, 900_000]), Histogram.of([90, 180, 800]))
    err = ClassLatency.of(Histogram.of([50]), Histogram.of([50]))
    interval = LoadInterval(
        target_rps=200.0,
        seconds=1.0,
        scheduled=200,
        sent=198,
        done=4,
        classes={StatusClass.SUCCESS: ok, StatusClass.SERVER_ERROR: err},
        run={StatusClass.SUCCESS: ok},
        errors={"http_5xx": 1},
        codes={"200": 3, "500": 1},
        phases_ms={"server": {"p50": 0.1, "p99": 0.5, "mean": 0.2}},
        in_flight_max=3,
        in_flight_mean=0.4,
        backlog=2,
        waited=1,
        connects=1,
        gen_lag_p99_ms=0.05,
        gen_cpu_pct=12.0,
        gen_busy_pct=15.0,
        generator_limited=True,
        final=True,
        unfinished=1,
        unsent=2,
        last_error="HTTP 500",
    )
    sample = interval.to_sample("http.load:x", 123)
    names = {spec.name for spec in LOAD_METRICS}
    assert {key.split("@")[0] for key in sample.values} <= names
    assert sample.values["lat_p99_ms"] == ok.corrected_ms["p99"]
    assert sample.values["svc_max_ms"] == 0.8
    assert sample.values["responses@5xx"] == 1.0
    back = LoadInterval.from_sample(sample)
    assert back == interval
    assert back.error_count == 1 and back.sent_rps == 198.0


def test_from_sample_tolerates_old_or_hand_edited_samples() -> None:
    bare = LoadInterval.from_sample(Sample("p", 1, 1.0, {"sent_rps": 5.0, "responses@4xx": 2.0}))
    assert bare.sent == 5 and bare.classes[StatusClass.CLIENT_ERROR].count == 2
    junk = Sample(
        "p",
        1,
        1.0,
        {"lat_p99_ms": "x", "generator_limited": None, "responses@nope": 3.0},  # type: ignore[dict-item]
        {"classes": {"2xx_3xx": "x", "bogus": {}}, "run": 5, "phases_ms": {"dns": 1}},
    )
    back = LoadInterval.from_sample(junk)
    assert back.success().count == 0 and not back.generator_limited
    assert LoadParams.from_mapping({"rate": "x", "connections": None}).rate == 0.0


def test_pct_keys_go_to_p99_9() -> None:
    assert PCT_KEYS == ("p50", "p90", "p99", "p99.9", "max")


@pytest.mark.parametrize(
    ("lag_us", "p99_us", "cpu", "busy", "wait", "limited"),
    [
        (100.0, 5_000.0, 0.2, 0.2, 0.01, False),  # on time, idle: the server's figures
        (3_000.0, 4_000.0, 0.2, 0.2, 0.0, True),  # 3 ms late of a 4 ms tail: the generator's
        (3_000.0, 900_000.0, 0.2, 0.2, 0.0, False),  # 3 ms late under a 900 ms stall
        (100.0, 5_000.0, 0.95, 0.5, 0.0, True),  # its CPU ran out
        (100.0, 5_000.0, 0.5, 0.85, 0.0, True),  # its loop never waits
        (100.0, 900_000.0, 0.01, 0.01, 0.6, True),  # starved: idle-looking, but no CPU
        (100.0, 5_000.0, 0.2, 0.2, None, False),  # no schedstat on this kernel
        (None, None, None, None, None, False),
    ],
)
def test_generator_limited_rule(lag_us, p99_us, cpu, busy, wait, limited) -> None:
    assert is_generator_limited(lag_us, p99_us, cpu, busy, wait) is limited


# -- options --------------------------------------------------------------------
@pytest.fixture(scope="module")
def parser():
    return build_parser()


def settings_of(parser, *argv: str) -> HttpSettings:
    return make_plan(parser.parse_args(list(argv))).settings


def test_rate_asks_for_load_mode_with_keep_alive_by_default(parser) -> None:
    s = settings_of(parser, "http", "http://127.0.0.1/", "--rate", "500", "--time", "3")
    assert s.load is not None and not s.one_off and s.count is None
    assert (s.load.rate, s.load.connections, s.load.time_s, s.load.fresh) == (500.0, 10, 3.0, False)
    s = settings_of(parser, "http", "URL", "--rate", "1.5", "--connections", "64", "--fresh")
    # No --time: wrk's 10 s (-d's default); --time 0 runs until stopped.
    assert s.load is not None and (s.load.connections, s.load.fresh, s.load.time_s) == (
        64,
        True,
        10.0,
    )
    s = settings_of(parser, "http", "URL", "--connections", "2", "--time", "0")
    assert s.load is not None and s.load.time_s is None
    assert settings_of(parser, "http", "URL").load is None


def test_connections_without_rate_is_the_closed_loop(parser) -> None:
    s = settings_of(parser, "http", "http://127.0.0.1/", "--connections", "50", "--time", "5")
    assert s.load is not None and not s.one_off
    assert (s.load.rate, s.load.connections, s.load.time_s) == (None, 50, 5.0)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "-5"], "--rate"),
        (["--rate", str(MAX_RATE * 2)], "at most 100,000"),
        (["--rate", "1e-300"], "at least 1e-06"),
        (["--rate", "10", "--connections", "0"], "--connections must be within 1..10000"),
        (["--rate", "10", "--connections", "20000"], "--connections"),
        (["--connections", "5", "--count", "2"], "--count does not go with --connections"),
        (["--connections", "0"], "--connections must be within 1..10000"),
        (["--rate", "10", "--count", "5"], "--count does not go with --rate"),
        (["--rate", "10", "--reuse"], "--reuse does not go with --rate"),
        (["--rate", "10", "http://127.0.0.1/b"], "exactly one URL"),
    ],
)
def test_bad_load_options_are_refused_naming_the_option(parser, argv, says) -> None:
    with pytest.raises((UsageProbeError, SystemExit)) as info:
        settings_of(parser, "http", "http://127.0.0.1/a", *argv)
    if isinstance(info.value, UsageProbeError):
        assert says in str(info.value)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "1e9"], "at most 100,000 requests/s"),
        (["--connections", "3", "--reuse"], "--reuse does not go with --connections"),
        (["--rate", "5", "--count", "3"], "--count does not go with --rate"),
    ],
)
def test_cli_bad_input_is_a_clear_error_and_exit_2(argv, says) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", "http", "http://127.0.0.1:9/", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
