"""Load mode prints wrk's report layout (probes/http/load/wrkfmt.py): the
same parser reads wrk 4.1's output and probetop's, line for line.

The parser is the kind users' scripts carry (regular expressions over
wrk's lines: ``Requests/sec:``, ``N requests in T, X read``, the Thread
Stats rows). It is applied to wrk's own output against the same loopback
server when wrk is installed, and always to probetop's; wrk's lines in
probetop's output must come in wrk's order with wrk's widths.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from http_fixtures import LocalServer
from probetop.probes.http.load.hist import Histogram
from probetop.probes.http.load.settings import DEFAULT_TIME_S, load_from_options
from probetop.probes.http.load.wrkfmt import (
    format_binary,
    format_metric,
    format_time_s,
    format_time_us,
    print_units,
    wrk_head,
    wrk_tail,
)

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "http"]

VALUE = r"(-?[\d.]+|nan|inf)([a-zA-Z]*)"
# What a wrk-parsing script matches, line by line, in wrk's order: name,
# regular expression (wrk's exact spacing), required.
WRK_LINES: tuple[tuple[str, str, bool], ...] = (
    ("running", r"Running (\d+[smh]) test @ (\S+)", True),
    ("threads", r"  (\d+) threads and (\d+) connections", True),
    ("header", r"  Thread Stats   Avg      Stdev     Max   \+/- Stdev", True),
    ("latency", rf"    Latency {{1,}}{VALUE} +{VALUE} +{VALUE} +([\d.]+|nan)%", True),
    ("req_sec", rf"    Req/Sec {{1,}}{VALUE} +{VALUE} +{VALUE} +([\d.]+|nan)%", True),
    ("distribution", r"  Latency Distribution", False),
    ("p50", rf"     50% +{VALUE} *", False),
    ("p75", rf"     75% +{VALUE} *", False),
    ("p90", rf"     90% +{VALUE} *", False),
    ("p99", rf"     99% +{VALUE} *", False),
    ("requests", rf"  (\d+) requests in {VALUE}, {VALUE}B read", True),
    ("socket", r"  Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", False),
    ("non2xx", r"  Non-2xx or 3xx responses: (\d+)", False),
    ("rps", r"Requests/sec: +([\d.]+|inf)", True),
    ("transfer", rf"Transfer/sec: +{VALUE}B", True),
)


def parse_wrk(text: str) -> dict[str, tuple[str, str]]:
    """{name: (the line, its groups joined)} of the wrk lines found, which
    must come in wrk's order; other lines are skipped, as scripts skip them."""
    found: dict[str, tuple[str, str]] = {}
    at = 0
    lines = text.splitlines()
    for name, pattern, required in WRK_LINES:
        for i in range(at, len(lines)):
            match = re.fullmatch(pattern, lines[i])
            if match:
                found[name] = (lines[i], " ".join(g or "" for g in match.groups()))
                at = i + 1
                break
        else:
            assert not required, (name, text)
    return found


def unit_value(number: str, unit: str) -> float:
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    scale.update({"": 1.0, "K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "k": 1e3})
    return float(number) * scale[unit]


# -- units.c and print_units, against strings wrk 4.1 printed here ----------


def test_units_as_wrk_prints_them():
    assert format_time_us(643.68) == "643.68us"
    assert format_time_us(1370.0) == "1.37ms"
    assert format_time_us(850.0) == "0.85ms"  # units.c switches at 0.85 of the scale
    assert format_time_us(2_090_000) == "2.09s"
    assert format_time_us(90_000_000) == "1.50m"
    assert format_time_s(10) == "10s" and format_time_s(60) == "1m" and format_time_s(51) == "1m"
    assert format_binary(1.27 * 1024**2) == "1.27M"
    assert format_binary(823) == "823.00"  # below 0.85 KiB: no unit
    assert format_metric(3170) == "3.17k" and format_metric(743.52) == "743.52"
    # Widths: a unit letter takes one of the two trailing columns.
    assert print_units(1120, format_time_us, 8) == "  1.12ms"
    assert print_units(1120, format_time_us, 10) == "    1.12ms"
    assert print_units(3170, format_metric, 8) == "  3.17k "
    assert print_units(743.52, format_metric, 10) == "  743.52  "
    assert print_units(5_000_000, format_time_us, 10) == "    5.00s "


HIST = Histogram.of([300, 400, 500, 20_000]).to_list()


def summary(**extra) -> dict:
    rates = Histogram.of([1000, 1200])
    base = {
        "mode": "load",
        "url": "http://127.0.0.1:8080/",
        "rate": None,
        "connections": 10,
        "time_s": 2.0,
        "run_s": 2.0,
        "run_responses": 2200,
        "run_bytes": 450_000,
        "responses_per_s": rates.to_list(),
        "errors": {},
        "histograms_us": {"corrected": {}, "service": {"2xx_3xx": HIST}},
    }
    return {**base, **extra}


def test_the_block_parses_and_adds_up():
    text = "\n".join([*wrk_head(summary()), "probetop's own lines", *wrk_tail(summary())])
    found = parse_wrk(text)
    assert found["running"][1] == "2s http://127.0.0.1:8080/"
    assert found["threads"][1] == "1 10"
    assert found["requests"][0] == "  2200 requests in 2.00s, 439.45KB read"
    assert found["rps"][0] == "Requests/sec:   1100.00"
    assert found["transfer"][0] == "Transfer/sec:    219.73KB"
    # wrk's closed-loop correction: expected 2 s / (2200 / 10) = 9,090 us, so
    # the 20 ms stall adds a sample at 10.91 ms (300, 400, 500, 10910, 20000 us).
    assert found["latency"][0] == "    Latency     6.42ms    8.85ms  20.00ms   80.00%"
    rate = wrk_tail(summary(rate=100.0, histograms_us={"corrected": {"2xx_3xx": HIST}}))
    assert rate[1] == "    Latency     5.30ms    9.80ms  20.00ms   75.00%"  # --rate: none
    assert found["req_sec"][0] == "    Req/Sec     1.10k   141.42     1.20k   100.00%"
    assert "socket" not in found and "non2xx" not in found


def test_errors_as_wrk_counts_them():
    """Transport failures are wrk's Socket errors (connect, read, write,
    timeout), 4xx and 5xx its Non-2xx or 3xx responses."""
    errors = {"refused": 3, "dns": 1, "timeout": 2, "other": 4, "http_4xx": 5, "http_5xx": 6}
    found = parse_wrk("\n".join(wrk_head(summary()) + wrk_tail(summary(errors=errors))))
    assert found["socket"][0] == "  Socket errors: connect 4, read 4, write 0, timeout 2"
    assert found["non2xx"][0] == "  Non-2xx or 3xx responses: 11"
    # A run without a response: wrk's nan where it divides by nothing.
    empty = summary(run_responses=0, histograms_us={}, responses_per_s=None, errors={"refused": 9})
    found = parse_wrk("\n".join(wrk_head(empty) + wrk_tail(empty)))
    assert found["requests"][0].startswith("  0 requests in 2.00s, 439.45KB read")
    assert found["latency"][1].split()[-1] == "nan"


def test_without_time_load_mode_runs_wrks_10_s():
    values = {"urls": ("http://127.0.0.1:1/",), "connections": 2}
    assert DEFAULT_TIME_S == 10.0
    assert load_from_options(values, time_s=None).time_s == 10.0
    assert load_from_options(values, time_s=0.0).time_s is None  # --time 0: until stopped
    assert load_from_options({**values, "watch": True}, time_s=None).time_s is None
    assert load_from_options(values, time_s=3.0).time_s == 3.0


# -- side by side against a real loopback server ----------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


def probetop_run(url: str, *args: str) -> str:
    proc = subprocess.run(
        [*PROBETOP, url, "--connections", "2", "--time", "2", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def wrk_run(url: str) -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        pytest.skip("wrk is not installed (apt-get install wrk)")
    proc = subprocess.run(
        [wrk, "-t1", "-c2", "-d2s", "--latency", url], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("path", ["/echo", "/status?code=404"])
def test_one_parser_reads_wrk_and_probetop_alike(server, path):
    """probetop's run and wrk's, one after the other, on the same server and
    connections: the same wrk lines in the same order, each the same width
    (wrk pads every value to its column), values that add up."""
    url = f"{server.url}{path}"
    ours = probetop_run(url)
    mine = parse_wrk(ours)
    theirs = parse_wrk(wrk_run(url))
    assert list(mine) == list(theirs), (ours, theirs)
    assert ours.splitlines()[0].startswith(f"Running 2s test @ {server.url}/")  # redacted query
    assert ours.splitlines()[-1].startswith("Transfer/sec:")  # `tail -n 1` as with wrk
    assert ours.count("Running 2s test @") == 1  # printed as the run started, not again
    for name in mine:
        if name in ("running", "requests", "socket", "non2xx"):  # counts: any width
            continue
        assert len(mine[name][0]) == len(theirs[name][0]), (name, mine[name], theirs[name])
    count, runtime_n, runtime_u, read_n, read_u = mine["requests"][1].split(" ")[:5]
    runtime = unit_value(runtime_n, runtime_u)
    assert 1.9 < runtime < 2.2
    rps = float(mine["rps"][1])
    assert math.isclose(rps, int(count) / runtime, rel_tol=0.01)
    transfer = unit_value(*mine["transfer"][1].split(" "))
    assert math.isclose(transfer, unit_value(read_n, read_u) / runtime, rel_tol=0.02)
    # Req/Sec means what wrk's means: responses/s sampled every 100 ms
    # (record_rate), so its Avg is near Requests/sec in both tools. Ratios
    # only: the two generators differ in speed, and the machine is shared.
    ratios = {}
    for who, found in (("probetop", mine), ("wrk", theirs)):
        avg_n, avg_u, _, _, max_n, max_u = found["req_sec"][1].split(" ")[:6]
        avg = unit_value(avg_n, avg_u)
        ratios[who] = avg / float(found["rps"][1])
        assert unit_value(max_n, max_u) >= avg, (who, found["req_sec"])
    assert 0.75 < ratios["probetop"] < 1.33, (ratios, ours)
    assert 0.75 < ratios["wrk"] < 1.33, ratios
    assert abs(ratios["probetop"] - ratios["wrk"]) < 0.25, ratios
    if path.startswith("/status"):
        assert mine["non2xx"][1] == count  # every response was a 404
        assert theirs["non2xx"][1] == theirs["requests"][1].split(" ")[0]


def test_req_sec_samples_every_100_ms_as_wrk(server):
    """wrk's record_rate samples each thread every RECORD_INTERVAL_MS (100):
    a 2 s run has about 20 Req/Sec samples (the JSON keeps them, wrk shows
    none; 20 of 21 within one stdev is its +/- Stdev of 95.24%), never the
    2 of one per second; each is responses / whole elapsed ms x 1000."""
    proc = subprocess.run(
        [*PROBETOP, f"{server.url}/echo", "--connections", "2", "--time", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    (summary,) = json.loads(proc.stdout)["probes"].values()
    samples = Histogram.from_list(summary["responses_per_s"])
    assert 10 <= samples.count <= 22, samples.count  # a starved loop fires late: fewer
    rps = summary["run_responses"] / summary["run_s"]
    assert 0.75 < samples.mean / rps < 1.33, (samples.mean, rps)


def test_default_run_is_10_s_and_says_so(server):
    """No --time: the run lasts wrk's 10 s (-d's default)."""
    proc = subprocess.run(
        [*PROBETOP, f"{server.url}/echo", "--connections", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"time_s": 10.0' in proc.stdout


def wrk_stats_c(values: list[int], expected: int) -> tuple[float, float, float, list[int]]:
    """wrk 4.1's stats.c, line by line: stats_correct, then mean, stdev,
    within one stdev, and the 50/75/90/99 percentiles."""
    top = max(values)
    data = [0] * (top + 1)
    for v in values:
        data[v] += 1
    count, low = len(values), min(values)
    if expected:
        for n in range(expected * 2, top + 1):
            c, m = data[n], n - expected
            while c and m > expected:
                data[m] += c
                count += c
                m -= expected
    mean = sum(i * data[i] for i in range(low, top + 1)) / count
    stdev = math.sqrt(sum((i - mean) ** 2 * data[i] for i in range(low, top + 1)) / (count - 1))
    inside = sum(data[i] for i in range(low, top + 1) if mean - stdev <= i <= mean + stdev)
    pcts = []
    for p in (50.0, 75.0, 90.0, 99.0):
        rank, total = math.floor(p / 100.0 * count + 1.0), 0
        for i in range(low, top + 1):
            total += data[i]
            if total >= rank:
                pcts.append(i)
                break
    return mean, stdev, 100.0 * inside / count, pcts


@pytest.mark.parametrize("expected", [0, 150, 400])
def test_latency_stats_are_wrks_with_its_closed_loop_correction(expected):
    """The closed form of wrk's stats_correct (no synthetic value listed)
    gives what wrk's own loops give, on a run with a tail of stalls."""
    import random

    from probetop.probes.http.load.wrkfmt import _Stats

    rng = random.Random(27)
    values = [int(rng.lognormvariate(5.5, 0.4)) for _ in range(3000)]
    values += [rng.randrange(2000, 9000) for _ in range(40)]  # stalls
    pairs: dict[int, int] = {}
    for v in values:
        pairs[v] = pairs.get(v, 0) + 1
    ours = _Stats([(float(v), n) for v, n in pairs.items()], float(max(values)), expected)
    mean, stdev, within, pcts = wrk_stats_c(values, expected)
    assert math.isclose(ours.mean, mean, rel_tol=1e-9)
    assert math.isclose(ours.stdev, stdev, rel_tol=1e-9)
    assert math.isclose(ours.within_stdev(), within, rel_tol=1e-9)
    assert [ours.percentile(p) for p in (50.0, 75.0, 90.0, 99.0)] == pcts
    if expected:
        assert ours.count > len(values)  # the correction added samples
