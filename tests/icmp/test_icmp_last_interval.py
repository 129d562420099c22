"""The last interval of a `-c N` run: it ends where the run did, often a
moment after a sampling edge or before the last request's period is over.
Its rates count that period, as the summary's do (``sending_s``): `-c 3 -i
0.5` read 500 requests/s for its last, 2 ms interval, and `-c 5 -i 0.2`
6.24/s for 5/s."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from forkserver import run_probetop
from privilege import needs_icmp


@needs_icmp
@pytest.mark.parametrize(("count", "period", "rate"), [(3, "0.5", 2.0), (5, "0.2", 5.0)])
def test_every_interval_of_a_count_reads_the_rate_asked(
    count: int, period: str, rate: float, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    done = run_probetop(
        ["icmp", "-c", str(count), "-i", period, "--json", "127.0.0.1"], env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["intervals"]
    assert rows
    for row in rows:  # a fixed grid: each request at its slot, whatever the load
        assert rate * 0.85 <= row["requests_per_s"] <= rate * 1.15, rows
