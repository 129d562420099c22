"""--assert: syntax, units, the catalog, evaluation against real summaries
(the footer of tests/data/demo_session.jsonl, a recording of every family)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from probetop.probes.core.options import OptionValueError
from probetop.probes.core.units import Unit, UnitError, format_quantity, parse_quantity
from probetop.probes.record import load_session
from probetop.tui.analysis.assertions import (
    ASSERTIONS_FAILED_EXIT,
    AssertionUsageError,
    evaluate,
    exit_status,
    format_outcomes,
    parse_assertion,
    resolve,
    run_assertions,
)
from probetop.tui.analysis.catalog import CATALOG, COMMAND_KINDS, assertables, direction

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("200ms", "ms", 200.0),
        ("0.2s", "ms", 200.0),
        ("150us", "ms", 0.15),
        ("150µs", "ms", 0.15),
        ("200", "ms", 200.0),  # bare: the metric's own unit
        ("2ms", "us", 2000.0),
        ("0.1%", "%", 0.1),
        ("2900", "/s", 2900.0),
        ("40k", "/s", 40000.0),
        ("2.9k/s", "/s", 2900.0),
        ("1.5M", "", 1.5e6),
        ("512MiB", "B", 512 * 1024**2),
        ("1GB", "B", 1e9),
        ("80MB/s", "B/s", 80e6),
        ("1GiB/s", "B/s", 1024**3),
        ("1e3", "", 1000.0),
    ],
)
def test_quantities(text: str, unit: str, value: float) -> None:
    assert parse_quantity(text, Unit.of(unit)) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "unit", "words"),
    [
        ("200MB", "ms", "bytes"),
        ("5%", "/s", "percent"),
        ("200ms", "%", "time"),
        ("3 parsecs", "ms", "unknown unit"),
        ("fast", "ms", "not a number"),
        ("1MB/s", "B", "byte rate"),
        ("1e400", "ms", "out of range"),
        ("1e308k", "", "out of range"),
        ("1e308GiB", "B", "out of range"),
        ("\uff12\uff10\uff10ms", "ms", "not a number"),  # fullwidth digits
    ],
)
def test_bad_units_say_what_the_metric_takes(text: str, unit: str, words: str) -> None:
    with pytest.raises(UnitError, match=words):
        parse_quantity(text, Unit.of(unit))


@pytest.mark.parametrize(
    ("text", "metric", "op", "value"),
    [
        ("http.p95<200ms", "http.p95", "<", "200ms"),
        ("icmp.loss < 0.1%", "icmp.loss", "<", "0.1%"),
        ("cpu.events_per_second>2900", "cpu.events_per_second", ">", "2900"),
        ("iops.read.iops>=40k", "iops.read.iops", ">=", "40k"),
        ("compare:regression<5%", "compare:regression", "<", "5%"),
        ("iops.read.clat.p99.9<=2ms", "iops.read.clat.p99.9", "<=", "2ms"),
    ],
)
def test_syntax(text: str, metric: str, op: str, value: str) -> None:
    a = parse_assertion(text)
    assert (a.metric, a.op, a.value) == (metric, op, value)


@pytest.mark.parametrize("text", ["http.p95", "<200ms", "http.p95 ~ 3", "http.p95<", "9x<3"])
def test_syntax_errors(text: str) -> None:
    with pytest.raises(OptionValueError, match="METRIC OP VALUE"):
        parse_assertion(text)


def test_issue_examples_resolve_on_their_commands() -> None:
    for command, text in (
        ("http", "http.p95<200ms"),
        ("icmp", "icmp.loss<0.1%"),
        ("cpu", "cpu.events_per_second>2900"),
        ("iops", "iops.read.iops>=40k"),
        ("compare", "compare:regression<5%"),
        ("demo", "http.p95<200ms"),
    ):
        (check,) = resolve([parse_assertion(text)], command)
        assert check.assertion.text == text


def test_unknown_metric_lists_the_known_ones() -> None:
    with pytest.raises(AssertionUsageError) as err:
        resolve([parse_assertion("cpu.speed>1")], "cpu")
    message = str(err.value)
    assert "unknown metric 'cpu.speed'" in message
    for entry in assertables(COMMAND_KINDS["cpu"]):
        assert entry.name in message
    assert "icmp.loss" not in message  # only what this command measures
    assert err.value.exit_code == 2


def test_metric_of_another_command_or_compare_only() -> None:
    with pytest.raises(AssertionUsageError, match="not measured by probetop cpu"):
        resolve([parse_assertion("icmp.loss<1%")], "cpu")
    with pytest.raises(AssertionUsageError, match="probetop compare only"):
        resolve([parse_assertion("compare:regression<5%")], "cpu")
    with pytest.raises(AssertionUsageError, match="no metric to assert on"):
        resolve([parse_assertion("cpu.total_events>1")], None)
    with pytest.raises(AssertionUsageError, match="not checked by probetop replay"):
        resolve([parse_assertion("cpu.total_events>1")], "replay")


def test_unit_mismatch_is_a_usage_error() -> None:
    with pytest.raises(AssertionUsageError, match=r"icmp\.loss<5ms"):
        resolve([parse_assertion("icmp.loss<5ms")], "icmp")


def test_catalog_units_are_known_and_names_unique() -> None:
    assert len(CATALOG) == len({a.name for a in CATALOG.values()})
    kinds = {entry.kind for entry in CATALOG.values()}
    for entry in CATALOG.values():
        # The name starts with its kind, the longest that fits: http.load.p99
        # is load mode's (http.load), http.p99 repeated mode's (http).
        owner = max((k for k in kinds if entry.name.startswith(f"{k}.")), key=len, default=None)
        assert owner == entry.kind, entry.name


def test_evaluate_against_a_real_footer() -> None:
    session = load_session(DATA / "demo_session.jsonl")
    summaries = session.footer["summaries"] if session.footer else {}
    kinds = {pid: info["kind"] for pid, info in session.probes.items()}
    checks = resolve(
        [
            parse_assertion("cpu.events_per_second>2500"),  # 2561.6 in that run
            parse_assertion("cpu.events_per_second>2600"),
            parse_assertion("icmp.loss<0.1%"),  # 0 lost of 3197
            parse_assertion("icmp.rtt.p99<0.05ms"),  # 44.544 us
            parse_assertion("iops.read.iops>=1.8k"),  # 1892.3
            parse_assertion("iops.read.clat.p99<0.3ms"),  # 305152 ns
            parse_assertion("http.p99<30ms"),  # worst URL: 25.076 ms, of 15 responses
            parse_assertion("http.p50<30ms"),  # 15 responses are enough for a median
            parse_assertion("http.error_rate==0%"),
            parse_assertion("warmup.bw>900kB/s"),  # 1013407 B/s
            parse_assertion("http.p95<1s"),  # recorded before p95 existed: no value
        ],
        "demo",
    )
    outcomes = evaluate(checks, summaries, kinds)
    got = {o.expr: (o.passed, o.measured) for o in outcomes}
    assert got["cpu.events_per_second>2500"] == (True, pytest.approx(2561.6432036746032))
    assert got["cpu.events_per_second>2600"][0] is False
    assert got["icmp.loss<0.1%"] == (True, 0.0)
    assert got["icmp.rtt.p99<0.05ms"] == (True, pytest.approx(44.544))
    assert got["iops.read.iops>=1.8k"] == (True, pytest.approx(1892.3083806915402))
    assert got["iops.read.clat.p99<0.3ms"] == (False, pytest.approx(305.152))
    # A p99 of 15 responses is their largest: it cannot pass (issue 29 item 4).
    assert got["http.p99<30ms"] == (False, pytest.approx(25.076))
    assert got["http.p50<30ms"][0] is True
    assert got["http.error_rate==0%"] == (True, 0.0)
    assert got["warmup.bw>900kB/s"] == (True, pytest.approx(1013407))
    assert got["http.p95<1s"] == (False, None)  # no value fails, never passes
    text = format_outcomes(outcomes)
    assert "assertions: 7 passed, 4 failed" in text
    assert (
        "FAIL http.p99<30ms (http:127.0.0.1:38705/delay?ms=20+1): measured 25.08ms, but "
        "cannot tell with n=15: a p99 needs at least 100 values" in text
    )
    assert "FAIL cpu.events_per_second>2600 (cpu): measured 2561.6 /s, wanted > 2600 /s" in text
    assert exit_status(0, outcomes) == ASSERTIONS_FAILED_EXIT
    assert exit_status(1, outcomes) == 1  # a failed run keeps its own status
    assert exit_status(130, outcomes) == 130


def test_no_probe_of_the_kind_fails() -> None:
    checks = resolve([parse_assertion("cpu.total_events>0")], "demo")
    (outcome,) = evaluate(checks, {}, {"icmp:x": "icmp"})
    assert not outcome.passed and outcome.measured is None and outcome.probe is None


def test_footer_hook_gives_json_safe_outcomes() -> None:
    hook = run_assertions([parse_assertion("cpu.total_events>=10")], "cpu")
    assert hook is not None
    fields = hook({"cpu": {"total_events": 12}}, {"cpu": {"kind": "cpu"}})
    assert fields == {
        "assertions": [
            {
                "expr": "cpu.total_events>=10",
                "metric": "cpu.total_events",
                "op": ">=",
                "threshold": 10.0,
                "unit": "",
                "probe": "cpu",
                "measured": 12.0,
                "passed": True,
            }
        ]
    }
    assert run_assertions([], "cpu") is None


def test_direction_of_compared_metrics() -> None:
    assert direction("cpu", "eps", "events/s") == 1
    assert direction("cpu", "lat_pct_ms", "ms") == -1
    assert direction("icmp", "loss_pct", "%") == -1
    assert direction("iops", "errors", "/s") == -1
    assert direction("iops", "read_iops", "IO/s") == 1
    assert direction("warmup", "progress_pct", "%") == 0
    assert direction("system.disk", "read_lat_ms", "ms") == 0  # passive: the machine, not B


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e300])
def test_any_float_formats(value: float) -> None:
    assert format_quantity(value, Unit.of("ms"))


@pytest.mark.parametrize(
    ("expr", "kind", "summary"),
    [
        # fio reports percentiles and means of 0 for a direction that did no I/O
        (
            "iops.write.clat.p99<1ms",
            "iops",
            {"write": {"total_ios": 0, "iops": 0.0, "clat_ns": {"mean": 0.0,
                                                                "percentile": {"99.000000": 0}}}},
        ),
        ("iops.write.lat.mean<1ms", "iops", {"write": {"total_ios": 0, "lat_ns": {"mean": 0.0}}}),
        ("cpu.latency.p95<1ms", "cpu", {"total_events": 0, "latency_ms": {"p95": 0.0}}),
        ("cpu.events_per_second<1k", "cpu", {"total_events": 0, "events_per_second": 0.0}),
        ("icmp.rtt.p99<1ms", "icmp", {"received": 0, "rtt_us": {"p99": 0.0}}),
        # load mode: latencies of no 2xx/3xx, error figures of no finished request
        ("http.load.p99<1ms", "http.load",
         {"done": 3, "classes": {"5xx": {"count": 3, "corrected_ms": {"p99": 0.0}}}}),
        ("http.load.service.p50<1ms", "http.load",
         {"done": 0, "classes": {"2xx_3xx": {"count": 0, "service_ms": {"p50": 0.0}}}}),
        ("http.load.dns.p99<1ms", "http.load",
         {"done": 2, "classes": {"transport": {"count": 2}}, "phases_ms": {"dns": {"p99": 0.0}}}),
        ("http.load.errors==0", "http.load", {"done": 0, "classes": {}}),
        ("http.load.error_rate<1%", "http.load", {"done": 0, "classes": {}}),
        ("http.load.non_2xx_3xx==0", "http.load", {"done": 0, "classes": {}}),
        ("http.load.requests_per_second<1k", "http.load", {"done": 0, "done_rps": 0.0}),
        ("http.load.achieved<50%", "http.load", {"scheduled": 0, "rate": 100, "sent_rps": 0.0}),
    ],
)  # fmt: skip
def test_a_statistic_of_no_observation_fails_never_passes(
    expr: str, kind: str, summary: dict[str, object]
) -> None:
    checks = resolve([parse_assertion(expr)], kind.split(".")[0])  # the command
    (outcome,) = evaluate(checks, {"p": summary}, {"p": kind})
    assert outcome.measured is None and not outcome.passed
    assert "no value measured" in outcome.describe()


def test_a_metric_of_a_kind_that_did_not_run_fails_and_says_which_ran() -> None:
    """http's repeated and load mode are one command, two kinds: a load run
    gated on a repeated-mode figure fails, naming what ran."""
    for expr, ran in (("http.p99<5ms", "http.load"), ("http.load.p99<5ms", "http")):
        checks = resolve([parse_assertion(expr)], "http")
        (outcome,) = evaluate(checks, {"p": {"done": 9}}, {"p": ran})
        assert outcome.measured is None and not outcome.passed
        assert f"this run's probes: {ran}" in outcome.describe()
