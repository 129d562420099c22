"""``export -O csv`` keeps what the recording measured: the last row's
events/s and p95 latency are the recording's last cpu sample (``eps``, and
``lat_pct_ms`` / 1000 for seconds) to 1e-9, read here from the JSON lines
themselves. Mutation review of issue 29 item 9 (docs/reliability.md):
values rounded to 3 decimals (a p95 of 0.000394717 s written as 0.0)
passed every test before this one."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from forkserver import PRELOAD, run_probetop

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo_session.jsonl"


def test_csv_keeps_the_recorded_values_to_the_nanosecond() -> None:
    last = None
    for line in DEMO.read_text().splitlines():
        doc = json.loads(line)
        if doc.get("type") == "sample" and doc.get("probe") == "cpu":
            last = doc["values"]
    assert last is not None
    result = run_probetop(
        ["export", str(DEMO), "-O", "csv"],
        timeout=120,
        preload=(*PRELOAD, "probetop.tui.metrics.export"),
    )
    assert result.returncode == 0, result.stderr
    row = list(csv.DictReader(io.StringIO(result.stdout)))[-1]
    eps = float(row['probetop_cpu_events_per_second{probe="cpu"}'])
    p95 = float(row['probetop_cpu_event_latency_quantile_seconds{probe="cpu",quantile="0.95"}'])
    assert eps == pytest.approx(last["eps"], abs=1e-9)  # 2924.4827919545487
    assert p95 == pytest.approx(last["lat_pct_ms"] / 1000, abs=1e-9)  # 0.000394717 s
    assert p95 > 0
