"""ping's ``time Tms`` means in probetop's text what it means in iputils'.

iputils' ``finish`` prints ``cur_time - start_time``: ``start_time`` is taken
before the first request, and ``cur_time`` is set each time a request goes
out. So ``time`` runs to the *last request sent*, whatever ends the run (-c,
-w, -f, Ctrl-C): not to the end of the last period, and not through the wait
for the last replies. At ``-i P`` with N requests sent it is (N - 1) x P plus
ping's own drift. Each case runs real ping and probetop alternately with the
same options, and reads both texts with jc and pingparsing.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jc
import pingparsing
import pytest
from icmp_fixtures import icmp_peer  # noqa: F401 (fixture)
from privilege import needs_icmp
from probetop.probes.icmp.report import format_report

PROBETOP = [sys.executable, "-m", "probetop.tui.main", "icmp"]
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")


def run(cmd: list[str], *, interrupt_after_s: float | None = None) -> tuple[str, int]:
    """A ping or probetop run's text and exit status; with ``interrupt_after_s``,
    SIGINT (Ctrl-C) that long after its ``PING`` line (the start of sending)."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        with proc.stdout:
            head = ""
            if interrupt_after_s is not None:
                head = proc.stdout.readline()
                assert head.startswith("PING "), head
                time.sleep(interrupt_after_s)
                proc.send_signal(signal.SIGINT)
            # read through the same buffer as the line (communicate() would not)
            out = head + proc.stdout.read()
        rc = proc.wait(timeout=90)
        err.seek(0)
        assert "Traceback" not in err.read()
    return out, rc


def time_and_sent(text: str) -> tuple[int, int]:
    """(``time`` in ms, requests sent) as jc reads them; pingparsing must read the same count."""
    by_jc = jc.parse("ping", text, quiet=True)
    by_pp = pingparsing.PingParsing().parse(text).as_dict()
    assert by_jc["packets_transmitted"] == by_pp["packet_transmit"], text
    assert isinstance(by_jc["time_ms"], float), text
    return round(by_jc["time_ms"]), by_jc["packets_transmitted"]


def check_span(text: str) -> None:
    """``time`` is the span from the first request to the last: with -D on
    loopback, from the first reply's arrival stamp to the last's (each a
    few µs after its request), give or take ping's setup before its first
    request and the printing of its stamps -- never the rest of the last
    period, the wait for replies (before: up to 300 ms more here) or a
    stream thread's late start (up to 110 ms more under load). Stamps, not
    the nominal (N - 1) x P: under load both tools send late."""
    by_jc = jc.parse("ping", text, quiet=True)
    stamps = [float(r["timestamp"]) for r in by_jc["responses"] if r["type"] == "reply"]
    t, sent = time_and_sent(text)
    assert len(stamps) == sent >= 2, text
    span_ms = (stamps[-1] - stamps[0]) * 1000
    assert -20 <= t - span_ms <= 40, f"{t} {span_ms}\n{text}"


@needs_ping
@needs_icmp
@pytest.mark.parametrize(
    "args",
    [
        ["-c", "3", "-i", "0.2"],
        ["-w", "1", "-i", "0.2"],
        ["-c", "20", "-w", "1", "-i", "0.2"],
    ],
    ids=["-c", "-w", "-c -w"],
)
def test_time_runs_to_the_last_request_as_pings(args: list[str]) -> None:
    """-w 1 -i 0.2: ping sends at 0 ... 0.8 s and prints time ~800ms
    (probetop printed 1000ms: the deadline, where its last interval ended)."""
    ping, ping_rc = run(["ping", "-D", *args, "127.0.0.1"])
    ours, ours_rc = run([*PROBETOP, "-D", *args, "127.0.0.1", "--headless"])
    check_span(ping)
    check_span(ours)
    assert ours_rc == ping_rc  # -c 20 -w 1: fewer than 20 replies by the deadline, 1


@needs_ping
@needs_icmp
def test_time_after_ctrl_c_is_the_last_request() -> None:
    """Ctrl-C 1.3 s into -i 0.5: requests at 0, 0.5 and 1.0 s; ping's time
    ~1000ms, probetop's was the stop plus the wait for replies (~1300ms)."""
    ping, ping_rc = run(["ping", "-D", "-i", "0.5", "127.0.0.1"], interrupt_after_s=1.3)
    ours, ours_rc = run(
        [*PROBETOP, "-D", "-i", "0.5", "127.0.0.1", "--headless"], interrupt_after_s=1.3
    )
    check_span(ping)
    check_span(ours)
    assert ours_rc == ping_rc == 0


@needs_ping
@needs_icmp
def test_time_leaves_out_the_wait_for_lost_replies(icmp_peer: Any) -> None:  # noqa: F811
    """Every request dropped, -c 3 -i 0.2 -W 1: ping waits 1 s for the last
    reply after sending it, but its time stops at that request (~400ms);
    probetop's counted the wait (~1400ms)."""
    icmp_peer.nft(
        "add table inet drop_time; "
        "add chain inet drop_time input { type filter hook input priority 0; }; "
        "add rule inet drop_time input icmp type echo-request drop"
    )
    args = ["-q", "-c", "3", "-i", "0.2", "-W", "1", icmp_peer.peer_addr]
    ping, ping_rc = run(["ping", *args])
    ours, ours_rc = run([*PROBETOP, *args, "--headless"])
    # no reply to stamp: the nominal 400 ms, with room for sends late under load
    for text in (ping, ours):
        t, sent = time_and_sent(text)
        assert sent == 3 and 395 <= t <= 700, (t, text)
    assert ours_rc == ping_rc == 1


@needs_icmp
def test_flood_time_is_the_jsons_last_request(tmp_path: Path) -> None:
    """ping -f's time is also to its last request: the text's time is the
    summary's requests_span_s, which lies within the sending time."""
    if os.geteuid() != 0:
        pytest.skip("a flood at full speed needs root (ping's rule: 2 ms for users)")
    rec = tmp_path / "run.jsonl"
    r = subprocess.run(
        [*PROBETOP, "-q", "-f", "-c", "2000", "127.0.0.1", "--record", str(rec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    (s,) = json.loads(rec.read_text().splitlines()[-1])["summaries"].values()
    t, sent = time_and_sent(r.stdout)
    assert sent == s["sent"] == 2000
    assert t == int(s["requests_span_s"] * 1000 + 0.5)
    assert 0 < s["requests_span_s"] <= s["duration_s"]


def test_time_of_an_older_summary_is_where_its_last_interval_ended() -> None:
    """A recording written before requests_span_s still reads back, with the
    time it printed then; a new one prints requests_span_s rounded half up as ping."""
    base = {"target": "h", "address": "127.0.0.1", "sent": 5, "received": 5, "loss_pct": 0.0}
    old = {**base, "duration_s": 1.0, "intervals": [{"t_s": 1.0}]}
    assert ", time 1000ms\n" in format_report(old)
    assert ", time 800ms\n" in format_report({**old, "requests_span_s": 0.8004999})
    assert ", time 801ms\n" in format_report({**old, "requests_span_s": 0.8005})


@needs_ping
@needs_icmp
def test_paced_preload_sends_the_first_n_at_once_as_ping() -> None:
    """ping -l 3 -i 0.3 -c 5: requests 1-3 at once, then one every 0.3 s
    (its token bucket starts with 2 intervals); probetop refused -l
    without -f. Reply stamps (-D) read by jc show the same pattern."""
    args = ["-D", "-c", "5", "-l", "3", "-i", "0.3", "127.0.0.1"]
    for text in (run(["ping", *args])[0], run([*PROBETOP, *args, "--headless"])[0]):
        by_jc = jc.parse("ping", text, quiet=True)
        stamps = [float(r["timestamp"]) for r in by_jc["responses"] if r["type"] == "reply"]
        assert len(stamps) == by_jc["packets_transmitted"] == 5, text
        gaps_ms = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
        assert max(gaps_ms[:2]) < 50 and min(gaps_ms[2:]) > 200, (gaps_ms, text)
        check_span(text)
