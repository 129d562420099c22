"""How a run ends, as wrk2 and wrk end theirs: nothing is sent after --time
(what was due and not sent is counted unsent), and a run in which no request
got a response exits non-zero (wrk's 1 in load mode, curl's code of the
failure in repeated mode). Real loopback servers; each test a few seconds."""

from __future__ import annotations

import json
import socket

import pytest
from test_load_stall import StallServer, run_probetop


def dead_port() -> int:
    """A loopback port nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_open_loop_sends_nothing_after_time_and_counts_the_rest_unsent() -> None:
    """A rate far above what the server answers (4 connections x 20 ms per
    answer: ~200/s of 2000/s asked): the backlog grows all run long. At
    --time sending stops (wrk2 stops at -d); before, the backlog went out in
    the 1 s drain after it. Every scheduled request is either sent within
    the run or unsent."""
    rate, time_s = 2000, 2
    with StallServer(delay_s=0.02) as server:
        proc = run_probetop(
            server.url, "--rate", str(rate), "--connections", "4", "--time", str(time_s), "--json"
        )
    assert proc.returncode == 0, proc.stderr
    (s,) = json.loads(proc.stdout)["probes"].values()
    # The drain's intervals send nothing: every send is in the run's own rows.
    for row in s["interval_rows"]:
        if row["t_s"] > s["run_s"] + 1e-3:
            assert row["sent_rps"] in (0, 0.0, None), row
    assert s["sent_rps"] * s["run_s"] == pytest.approx(s["sent"], abs=1)
    # The last send, measured by the generator from the schedule's start.
    assert s["last_sent_s"] is not None and s["last_sent_s"] < time_s, s["last_sent_s"]
    # Sent within the run + never sent = the schedule (rate x time).
    assert s["sent"] + s["unsent"] == pytest.approx(rate * time_s, rel=0.03)
    assert s["unsent"] > rate * time_s // 2  # the server answered far less than asked
    # Only what was in flight finished in the drain (at most one per connection).
    assert s["done_in_drain"] <= 4
    assert s["done"] + s["unfinished"] == s["sent"]


@pytest.mark.parametrize("mode", [["--connections", "2"], ["--rate", "50"]])
def test_load_mode_exits_1_when_no_request_got_a_response(mode: list[str]) -> None:
    """wrk -c 2 -d 1s against a dead port: 'unable to connect', exit 1."""
    proc = run_probetop(f"http://127.0.0.1:{dead_port()}/", *mode, "--time", "1", "--headless")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "refused" in proc.stdout  # the report is still printed
    assert "no request got a response" in proc.stderr


def test_load_mode_with_http_errors_only_exits_0() -> None:
    """Every answer a 500: wrk prints 'Non-2xx or 3xx responses' and exits 0."""
    with StallServer(status_every=1, status=500) as server:
        proc = run_probetop(server.url, "--connections", "2", "--time", "1", "--json")
    assert proc.returncode == 0, proc.stderr


def test_repeated_mode_exits_with_curls_code_when_every_request_failed() -> None:
    """curl in a loop against a dead port exits 7 (CURLE_COULDNT_CONNECT) each
    time; --count 3 exits 7 too, after its report."""
    url = f"http://127.0.0.1:{dead_port()}/"
    proc = run_probetop(url, "--count", "3", "--sample-interval", "0.1")
    assert proc.returncode == 7, (proc.stdout, proc.stderr)
    assert "no successful response to measure" in proc.stdout
    proc = run_probetop(url, "--count", "3", "--sample-interval", "0.1", "--json")
    assert proc.returncode == 7, (proc.stdout, proc.stderr)
    json.loads(proc.stdout)  # stdout stays one JSON document


def test_repeated_mode_with_one_success_exits_0() -> None:
    """A 500 is a response (curl exits 0 without -f): the run exits 0."""
    with StallServer(status_every=2, status=500) as server:
        proc = run_probetop(server.url, "--count", "3", "--sample-interval", "0.1")
    assert proc.returncode == 0, proc.stderr
