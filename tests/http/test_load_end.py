"""How a run ends, as wrk2 ends its: nothing is sent after --time (what was
due and not sent is counted unsent). Real loopback servers; a few seconds."""

from __future__ import annotations

import json

import pytest
from test_load_stall import StallServer, run_probetop


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
