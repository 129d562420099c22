"""Issue 11, class 1, for the commands the family stop tests do not cover:
``http`` in repeated mode and ``demo`` (every probe at once), headless.

Each is started with demanding options, signalled once it records samples,
and must exit within 2 s with its partial report and a closed recording.
(cpu, icmp and the passive dashboard: test_stop_signals.py; iops and warmup:
tests/disk/test_disk_signals.py.)
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from probetop.probes.http.probe import default_probe_id
from stop_harness import STOP_WITHIN_S, assert_recording_closed, stop_headless

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "http"))
from http_fixtures import LocalServer

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_http_repeated_stops_within_2s_with_its_report(tmp_path: Path, sig: int) -> None:
    with LocalServer() as server:
        # a slow server (each answer waits 300 ms) polled as fast as allowed:
        # the stop must not wait for the request in flight to finish its turn
        url = f"{server.url}/delay?ms=300"
        stopped = stop_headless(
            ["http", url, "--count", "100000", "--interval", "0.05"],
            tmp_path / "http.jsonl",
            sig,
            probe=default_probe_id([url]),
        )
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert "Traceback" not in stopped.stderr
    assert stopped.stdout.strip(), stopped.describe()  # the partial report
    assert_recording_closed(stopped, sig, default_probe_id([url]))


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_demo_stops_within_2s_with_its_report(tmp_path: Path, sig: int) -> None:
    stopped = stop_headless(["demo"], tmp_path / "demo.jsonl", sig, probe="cpu", samples=2)
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert "Traceback" not in stopped.stderr
    assert "probetop: ran" in stopped.stdout, stopped.describe()
    assert_recording_closed(stopped, sig, "cpu")
    assert len(stopped.session.footer["summaries"]) >= 5  # type: ignore[index]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_http_load_at_5000_per_s_and_500_connections_stops_within_2s(
    tmp_path: Path, sig: int
) -> None:
    """Load mode at a rate no loopback server here holds, 500 connections in
    flight: the stop must not wait for them (the report counts them in flight)."""
    with LocalServer() as server:
        url = f"{server.url}/delay?ms=50"
        probe = f"http.load:{url.split('://', 1)[1]}"
        stopped = stop_headless(
            ["http", url, "--rate", "5000", "--connections", "500"],
            tmp_path / "load.jsonl",
            sig,
            probe=probe,
        )
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert "Traceback" not in stopped.stderr
    assert "in flight" in stopped.stdout, stopped.describe()  # the partial report
    assert_recording_closed(stopped, sig, probe)
