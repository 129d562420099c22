"""Repeated mode: errors are not latencies (issue 12) and jitter/outage (issue 14).

Against real loopback servers (http_fixtures): ``/cycle`` answers a fixed
sequence of statuses, each after its own wait, so a fast 404 sits beside a
slow 200 on one URL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from http_fixtures import LocalServer
from probetop.probes.http import HttpProbe, HttpSettings
from probetop.probes.http.stats import Continuity
from probetop.probes.record.reader import load_session
from probetop.tui.run.runner import run_headless

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core"))
from stop_harness import wait_for_samples

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


@pytest.fixture(scope="module")
def server():
    with LocalServer() as srv:
        yield srv


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, "http", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def url_summary(result, probe: HttpProbe) -> dict:
    (stats,) = result.summaries[probe.id]["urls"].values()
    return stats


# -- pure: jitter and outage from plain numbers ------------------------------
def test_jitter_is_the_mean_and_max_step_between_consecutive_successes():
    c = Continuity()
    for i, (ok, total) in enumerate([(True, 10.0), (True, 14.0), (False, None), (True, 11.0)]):
        c.add(float(i), float(i) + 0.01, ok, total)
    doc = c.as_dict()
    # pairs (10, 14) and (14, 11): the failure between does not break the pair
    assert doc["jitter_ms"] == {"mean": 3.5, "max": 4.0, "pairs": 2}


def test_outage_runs_from_the_first_failed_send_to_the_next_successful_send():
    c = Continuity()
    for sent, ok in [(0, True), (1, True), (2, False), (3, False), (4, True), (5, False)]:
        c.add(float(sent), sent + 0.5, ok, 1.0 if ok else None)
    doc = c.as_dict()["outage"]
    # 2..4 closed (2 s), then 5..5.5 still open at the end (0.5 s)
    assert doc == {"seconds": 2.5, "count": 2, "longest_s": 2.0, "ongoing": True}


# -- live: a fast 404 beside a slow 200 ----------------------------------------
async def test_error_responses_stay_out_of_the_latency_statistics(server):
    url = f"{server.url}/cycle?seq=200:40,404:0&t=split"
    probe = HttpProbe(HttpSettings(urls=(url,), interval_s=0.1, count=10))
    result = await run_headless([probe], duration_s=30)
    stats = url_summary(result, probe)
    assert stats["classes"] == {"2xx_3xx": 5, "4xx": 5, "5xx": 0, "transport": 0}
    assert stats["latency_covers"] == "2xx_3xx"
    total = stats["phases_ms"]["total"]
    assert total["count"] == 5 and total["min"] >= 39.9  # every 200 waited 40 ms
    fast_404 = stats["total_ms_by_class"]["4xx"]
    assert fast_404["count"] == 5 and fast_404["p50"] < total["min"]
    assert stats["error_share"] == 0.5 and stats["error_marker"] is True
    assert stats["jitter_ms"]["pairs"] == 4


async def test_include_errors_puts_them_back(server):
    url = f"{server.url}/cycle?seq=200:40,404:0&t=include"
    settings = HttpSettings(urls=(url,), interval_s=0.1, count=10, include_errors=True)
    probe = HttpProbe(settings)
    result = await run_headless([probe], duration_s=30)
    stats = url_summary(result, probe)
    total = stats["phases_ms"]["total"]
    assert stats["latency_covers"] == "responses"
    assert total["count"] == 10 and total["min"] < 39.9  # the fast 404s are in


async def test_warmup_requests_are_discarded_and_counted(server):
    url = f"{server.url}/cycle?seq=500:0,500:0,200:0&t=warmup"
    # The first two answers (500s) fall in the warm-up; --count counts after it.
    probe = HttpProbe(HttpSettings(urls=(url,), interval_s=0.05, count=4, warmup=2))
    result = await run_headless([probe], duration_s=30)
    stats = url_summary(result, probe)
    assert stats["discarded"] == 2 and stats["requests"] == 4
    assert stats["classes"]["5xx"] == 2 and stats["classes"]["2xx_3xx"] == 2
    assert result.summaries[probe.id]["warmup"] == 2
    assert sum(s.values["requests"] for s in result.samples[probe.id]) == 4


async def test_outage_grows_with_consecutive_failures(server):
    # All refused: one outage, still open, about (count - 1) intervals long.
    probe = HttpProbe(HttpSettings(urls=("http://127.0.0.1:1/",), interval_s=0.1, count=6))
    result = await run_headless([probe], duration_s=30)
    outage = url_summary(result, probe)["outage"]
    assert outage["count"] == 1 and outage["ongoing"] is True
    assert 0.25 <= outage["seconds"] <= 3.0  # ~0.5 s; generous for a loaded machine
    # A 200 between runs of 500s: two closed outages, none open at the end.
    url = f"{server.url}/cycle?seq=200:0,500:0,500:0&t=outage"
    probe = HttpProbe(HttpSettings(urls=(url,), interval_s=0.1, count=7))
    result = await run_headless([probe], duration_s=30)
    outage = url_summary(result, probe)["outage"]
    assert outage["count"] == 2 and outage["ongoing"] is False
    assert outage["longest_s"] >= 0.1 and outage["seconds"] >= 2 * 0.1


# -- the CLI: text report, JSON, marker, skipped turns, assertions, Ctrl-C ----
def test_text_and_json_reports_show_classes_and_the_marker(server):
    url = f"{server.url}/cycle?seq=200:0,200:0,200:0,503:0&t=cli"
    out = cli("--count", "8", "--interval", "0.05", url)
    assert out.returncode == 0, out.stderr
    assert "2xx/3xx 6  4xx 0  5xx 2  transport 0" in out.stdout, out.stdout
    assert "!! errors 25.0 %" in out.stdout
    assert "latency over 2xx/3xx only" in out.stdout and "total 5xx" in out.stdout
    assert "jitter mean" in out.stdout and "outage" in out.stdout
    url = f"{server.url}/cycle?seq=200:0&t=clijson"
    out = cli("--count", "4", "--interval", "0.05", "--json", "--warmup", "1", url)
    doc = json.loads(out.stdout)
    (summary,) = doc["probes"].values()
    (stats,) = summary["urls"].values()
    assert stats["classes"] == {"2xx_3xx": 4, "4xx": 0, "5xx": 0, "transport": 0}
    assert stats["discarded"] == 1 and stats["error_marker"] is False
    assert set(stats["jitter_ms"]) == {"mean", "max", "pairs"}


def test_skipped_turns_are_in_the_text_report(server):
    out = cli("--count", "3", "--interval", "0.1", f"{server.url}/delay?ms=350")
    assert out.returncode == 0, out.stderr
    assert "turn(s) skipped: the previous request was still running" in out.stdout


def test_a_request_still_running_at_the_end_still_counts_its_skipped_turns(server, tmp_path):
    """The run ends (--time) while the only request hangs: every turn that
    came while it ran is in the report, not lost with the request, nor with
    the interval the end cut short. Counted from the first interval that had
    a skipped turn to the run's end (the recording's clock): before it, the
    sampling worker's start-up (0.3-0.9 s of a 1.2 s run on a loaded 2-core
    machine, all of it at a load average of 200) is not the product skipping
    turns; a run that ended before the worker said anything is run again,
    longer."""
    for time_s in ("1.2", "3", "8"):
        rec = tmp_path / f"hang-{time_s}.jsonl"
        out = cli("--record", str(rec), "--time", time_s, "--interval", "0.2", "--json",
                  f"{server.url}/delay?ms=10000")  # fmt: skip
        assert out.returncode == 0, out.stderr
        session = load_session(rec)
        (probe_id,) = session.probes
        skipping = [
            (s["t"], run["skipped"])
            for s in session.samples(probe_id)
            for run in s["extra"]["run"].values()
            if run["skipped"]
        ]
        if skipping:
            break
    assert skipping, "no interval had a skipped turn, even in an 8 s run"
    (summary,) = json.loads(out.stdout)["probes"].values()
    (stats,) = summary["urls"].values()
    assert stats["requests"] == 0  # the one request never finished
    assert summary["skipped_turns"] == stats["skipped_turns"]
    first_t, first_count = skipping[0]
    # A turn every 0.2 s (+-0.05 s of jitter around its slot): every whole
    # slot from that interval to the end, less one for the two edges.
    later = int((session.duration_s - first_t) / 0.2) - 1
    assert stats["skipped_turns"] >= first_count + later, (skipping, session.duration_s)


def test_assertions_read_classes_jitter_and_outage(server):
    url = f"{server.url}/cycle?seq=200:0,404:0&t=assert"
    out = cli(
        "--count",
        "6",
        "--interval",
        "0.05",
        "--assert",
        "http.class.4xx==3",
        "--assert",
        "http.class.2xx_3xx>=3",
        "--assert",
        "http.jitter<1000ms",
        "--assert",
        "http.outage<60s",
        "--assert",
        "http.error_rate<1%",
        url,
    )
    assert out.returncode == 99, out.stdout + out.stderr  # only the error rate fails
    failed = [line for line in out.stdout.splitlines() if "FAIL" in line]
    assert len(failed) == 1 and "http.error_rate" in failed[0], out.stdout


def test_warmup_and_include_errors_need_repeated_mode(server):
    out = cli("--warmup", "2", f"{server.url}/")
    assert out.returncode == 2 and "need repeated requests" in out.stderr
    out = cli("--warmup", "-1", "--count", "2", f"{server.url}/")
    assert out.returncode == 2


def test_ctrl_c_prints_the_partial_report_and_exits_130(server, tmp_path):
    rec = tmp_path / "http.jsonl"
    proc = subprocess.Popen(
        [*PROBETOP, "--record", str(rec), "http", "--interval", "0.05", "--headless",
         f"{server.url}/delay?ms=5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        # Requests answered before the signal (a fixed 1.5 s can still be start-up).
        wait_for_samples(rec, "http:", 3, proc)
        os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT)" in stdout and "2xx/3xx" in stdout, stdout
