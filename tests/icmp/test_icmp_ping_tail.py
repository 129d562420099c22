"""The tail of ping's rtt line (``, pipe N``, ``, ipg/ewma I/E ms``) in
`probetop icmp`'s text, beside real ping's (iputils finish()).

Real runs on 127.0.0.1 only, each bounded by -c and a subprocess timeout:
ping -f needs root (iputils refuses a flood to other users), so those
comparisons skip without it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jc
import pingparsing
import pytest
from privilege import needs_icmp
from probetop.probes.icmp.pingtext import PingTotals, rtt_line

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="ping -f floods for root only")

_MS = r"\d+\.\d{3}"
# ping's last line for a flood, as iputils 20221126 prints it (pipe only when > 1).
FLOOD_TAIL = re.compile(
    rf"^rtt min/avg/max/mdev = {_MS}/{_MS}/{_MS}/{_MS} ms"
    rf"(?:, pipe (?P<pipe>[2-9]|[1-9]\d+))?, ipg/ewma (?P<ipg>{_MS})/(?P<ewma>{_MS}) ms$"
)
PACED_TAIL = re.compile(
    rf"^rtt min/avg/max/mdev = {_MS}/{_MS}/{_MS}/{_MS} ms(?:, pipe (?P<pipe>[2-9]|[1-9]\d+))?$"
)


def run_ping(args: list[str]) -> str:
    r = subprocess.run(["ping", *args, "127.0.0.1"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout


def run_probetop(args: list[str], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """probetop's text and the summary of the same run (its recording's footer)."""
    rec = tmp_path / "run.jsonl"
    r = subprocess.run(
        [*PROBETOP, "icmp", "127.0.0.1", *args, "--record", str(rec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    footer = json.loads(rec.read_text().splitlines()[-1])
    (summary,) = footer["summaries"].values()
    return r.stdout, summary


def parsed(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    by_jc = jc.parse("ping", text, quiet=True)
    by_pp = pingparsing.PingParsing().parse(text).as_dict()
    return by_jc, by_pp


def fields(d: dict[str, Any]) -> dict[str, type]:
    """Which fields a parser found, and their types (the values are measured)."""
    return {k: type(v) for k, v in d.items() if v is not None and k != "responses"}


def assert_read_alike(ping_text: str, our_text: str, count: int) -> None:
    """jc --ping and pingparsing find the same fields, of the same types, in
    both outputs, and the same counts."""
    (jc_ping, pp_ping), (jc_ours, pp_ours) = parsed(ping_text), parsed(our_text)
    assert fields(jc_ours) == fields(jc_ping)
    assert fields(pp_ours) == fields(pp_ping)
    for d in (jc_ping, jc_ours):
        assert (d["packets_transmitted"], d["packets_received"]) == (count, count)
        assert d["round_trip_ms_min"] <= d["round_trip_ms_avg"] <= d["round_trip_ms_max"]
    for d in (pp_ping, pp_ours):
        assert (d["packet_transmit"], d["packet_receive"]) == (count, count)


def test_rtt_line_tail_follows_iputils_finish() -> None:
    base = PingTotals("h", 5, 5, 0, 0, 0.0, 4, 4.0, 5.5, 9.9, 1.2)
    rtt = "rtt min/avg/max/mdev = 0.004/0.005/0.009/0.001 ms"
    assert rtt_line(base) == rtt
    # pipe only above 1; ipg/ewma only for a flood (show_ipg)
    assert rtt_line(_with(base, pipe=1)) == rtt
    assert rtt_line(_with(base, pipe=3)) == rtt + ", pipe 3"
    assert rtt_line(_with(base, pipe=3, ipg_us=72, ewma_us=4.875)) == rtt + ", pipe 3"
    flood = _with(base, pipe=2, ipg_us=1072, ewma_us=12345.9, show_ipg=True)
    assert rtt_line(flood) == rtt + ", pipe 2, ipg/ewma 1.072/12.345 ms"
    assert rtt_line(_with(flood, pipe=None)) == rtt + ", ipg/ewma 1.072/12.345 ms"
    # ping: no ipg with a single request sent, nor without a reply
    assert rtt_line(_with(flood, transmitted=1, received=1)).endswith(" ms, pipe 2")
    none = _with(flood, received=0, rtt_min_us=None, pipe=None)
    assert rtt_line(none) == ""  # ping's empty last line
    # no rtt figures but replies (ping without timing): the tail without a leading comma
    untimed = _with(flood, rtt_min_us=None)
    assert rtt_line(untimed) == "pipe 2, ipg/ewma 1.072/12.345 ms"


def _with(t: PingTotals, **changes: Any) -> PingTotals:
    return dataclasses.replace(t, **changes)


@needs_icmp
@needs_ping
@needs_root
def test_flood_tail_as_pings_and_read_alike(tmp_path: Path) -> None:
    count = 500
    ping_text = run_ping(["-f", "-q", "-c", str(count)])
    our_text, s = run_probetop(["-f", "-q", "-c", str(count)], tmp_path)
    ping_last, our_last = ping_text.splitlines()[-1], our_text.splitlines()[-1]
    assert FLOOD_TAIL.match(ping_last), ping_last
    m = FLOOD_TAIL.match(our_last)
    assert m, our_last
    assert_read_alike(ping_text, our_text, count)
    # the JSON holds what the line shows
    span_us = round(s["requests_span_s"] * 1e9) // 1000
    assert abs(s["ipg_us"] - span_us // (count - 1)) <= 1
    assert m["ipg"] == f"{s['ipg_us'] // 1000}.{s['ipg_us'] % 1000:03d}"
    ewma = int(s["rtt_ewma_us"])
    assert m["ewma"] == f"{ewma // 1000}.{ewma % 1000:03d}"
    assert s["rtt_us"]["min"] // 1 <= s["rtt_ewma_us"] <= s["rtt_us"]["max"]
    assert (m["pipe"] is None) == (s.get("pipe", 1) <= 1)


@needs_icmp
@needs_ping
@needs_root
def test_preload_shows_pipe_as_ping(tmp_path: Path) -> None:
    args = ["-l", "3", "-c", "6", "-i", "0.01", "-q"]
    ping_text = run_ping(args)
    our_text, s = run_probetop(args, tmp_path)
    ping_last, our_last = ping_text.splitlines()[-1], our_text.splitlines()[-1]
    # loopback answers during sendto: ping's 3 back-to-back requests are all out
    assert PACED_TAIL.match(ping_last) and ping_last.endswith(", pipe 3"), ping_last
    assert PACED_TAIL.match(our_last) and our_last.endswith(", pipe 3"), our_last
    assert s["pipe"] == 3 and "ipg" not in our_last  # paced: no ipg/ewma, as ping
    assert_read_alike(ping_text, our_text, 6)
