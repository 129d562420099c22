"""`probetop icmp` headless text in ping's layout, read by parsers others wrote.

jc's ``ping`` parser and ``pingparsing`` read probetop's text and must find
the numbers probetop's own summary holds (the recording's footer of the same
run: the ``--json`` document's fields); real ping runs beside it, and both
parsers must find the same fields in both tools' output.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jc
import pingparsing
import pytest
from icmp_fixtures import icmp_peer  # noqa: F401 (fixture)
from privilege import needs_icmp
from probetop.probes.icmp import IcmpSettings
from probetop.probes.icmp.pingtext import PingTotals, ms3, ping_ms, statistics_block
from probetop.tui.cli.parser import build_parser, make_plan

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")


def run_probetop(args: list[str], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """probetop's text and the summary of the same run (its recording's footer)."""
    rec = tmp_path / "run.jsonl"
    r = subprocess.run(
        [*PROBETOP, "icmp", *args, "--record", str(rec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    footer = json.loads(rec.read_text().splitlines()[-1])
    assert footer["type"] == "footer"
    (summary,) = footer["summaries"].values()
    return r.stdout, summary


def parse_both(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    by_jc = jc.parse("ping", text, quiet=True)
    by_pp = pingparsing.PingParsing().parse(text).as_dict(include_icmp_replies=True)
    return by_jc, by_pp


def ms_truncated(us: float) -> float:
    """An RTT as ping prints it in the summary: whole µs as ms."""
    return math.floor(us) / 1000


def check_against_summary(text: str, s: dict[str, Any], *, timed_replies: bool) -> None:
    by_jc, by_pp = parse_both(text)
    for transmitted, received in (
        (by_jc["packets_transmitted"], by_jc["packets_received"]),
        (by_pp["packet_transmit"], by_pp["packet_receive"]),
    ):
        assert (transmitted, received) == (s["sent"], s["received"])
    assert by_jc["packet_loss_percent"] == pytest.approx(s["loss_pct"], abs=1e-4)
    assert by_pp["packet_loss_rate"] == pytest.approx(s["loss_pct"], abs=1e-4)
    assert by_jc["duplicates"] == s["duplicates"] == (by_pp["packet_duplicate_count"] or 0)
    rtt = s["rtt_us"]
    for key_jc, key_pp, ours in (
        ("round_trip_ms_min", "rtt_min", rtt["min"]),
        ("round_trip_ms_avg", "rtt_avg", rtt["avg"]),
        ("round_trip_ms_max", "rtt_max", rtt["max"]),
        ("round_trip_ms_stddev", "rtt_mdev", rtt["mdev"]),
    ):
        assert by_jc[key_jc] == pytest.approx(ms_truncated(ours), abs=1e-9)
        assert by_pp[key_pp] == pytest.approx(ms_truncated(ours), abs=1e-9)
    replies = [r for r in by_jc["responses"] if r["type"] == "reply"]
    assert not [r for r in by_jc["responses"] if r["type"] == "unparsable_line"]
    if timed_replies:
        assert len(replies) == s["received"] == len(by_pp["icmp_replies"])
        assert [r["icmp_seq"] for r in replies] == list(range(1, s["sent"] + 1))
        assert all(r["ttl"] == 64 and r["time_ms"] is not None for r in replies)
        assert sorted(r["time_ms"] for r in replies)[0] == pytest.approx(by_jc["round_trip_ms_min"])
    else:
        assert replies == [] and by_pp["icmp_replies"] == []


@needs_icmp
@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_paced_text_reads_as_the_json_in_jc_and_pingparsing(host: str, tmp_path: Path) -> None:
    text, s = run_probetop(["-c", "20", "-i", "0.01", host], tmp_path)
    assert text.startswith("PING ")
    check_against_summary(text, s, timed_replies=True)
    # the last two lines are ping's, byte for byte in layout
    tail = text.splitlines()[-3:]
    assert tail[0] == f"--- {host} ping statistics ---"
    assert tail[1].startswith("20 packets transmitted, 20 received, 0% packet loss, time ")
    assert tail[2].startswith("rtt min/avg/max/mdev = ") and tail[2].endswith(" ms")


@needs_icmp
def test_timestamps_and_quiet(tmp_path: Path) -> None:
    text, s = run_probetop(["-c", "5", "-i", "0.01", "-D", "127.0.0.1"], tmp_path)
    by_jc, _ = parse_both(text)
    stamps = [float(r["timestamp"]) for r in by_jc["responses"]]
    assert len(stamps) == 5 and stamps == sorted(stamps)
    assert abs(stamps[-1] - __import__("time").time()) < 60
    check_against_summary(text, s, timed_replies=True)
    text, s = run_probetop(["-c", "5", "-i", "0.01", "-q", "127.0.0.1"], tmp_path)
    check_against_summary(text, s, timed_replies=False)


@needs_icmp
@pytest.mark.parametrize("quiet", [True, False])
def test_flood_text_reads_as_the_json(quiet: bool, tmp_path: Path) -> None:
    args = ["-f", "-w", "1", "-s", "1", "127.0.0.1"] + (["-q"] if quiet else [])
    text, s = run_probetop(args, tmp_path)
    assert s["sent"] > 1000
    assert " bytes from " not in text  # ping -f prints dots, not reply lines
    check_against_summary(text, s, timed_replies=False)


def _fields(parsed: dict[str, Any]) -> set[str]:
    return {k for k, v in parsed.items() if v is not None and k != "responses"}


@needs_icmp
@needs_ping
@pytest.mark.parametrize(
    ("ping_args", "ours"),
    [
        (["-c", "5", "-i", "0.01"], ["-c", "5", "-i", "0.01"]),
        (["-c", "5", "-i", "0.01", "-D"], ["-c", "5", "-i", "0.01", "-D"]),
        (["-q", "-c", "5", "-i", "0.01"], ["-q", "-c", "5", "-i", "0.01"]),
        (["-q", "-f", "-c", "500"], ["-q", "-f", "-c", "500"]),
    ],
)
def test_parsers_find_the_same_fields_as_in_real_ping(
    ping_args: list[str], ours: list[str], tmp_path: Path
) -> None:
    if "-f" in ping_args and os.geteuid() != 0:
        # iputils' own rule (by uid): "cannot flood; minimal interval allowed for user is 2ms"
        pytest.skip("ping -f floods for root only: the reference output needs root")
    real = subprocess.run(
        ["ping", *ping_args, "127.0.0.1"], capture_output=True, text=True, timeout=60
    )
    assert real.returncode == 0, real.stderr
    text, _ = run_probetop([*ours, "127.0.0.1"], tmp_path)
    (jc_ping, pp_ping), (jc_ours, pp_ours) = parse_both(real.stdout), parse_both(text)
    assert _fields(jc_ours) == _fields(jc_ping)
    assert _fields(pp_ours) - {"icmp_replies"} == _fields(pp_ping) - {"icmp_replies"}
    ping_replies, our_replies = jc_ping["responses"], jc_ours["responses"]
    assert len(our_replies) == len(ping_replies)
    assert [set(r) for r in our_replies] == [set(r) for r in ping_replies]
    assert [r["icmp_seq"] for r in our_replies] == [r["icmp_seq"] for r in ping_replies]
    assert [(r["bytes"], r["ttl"], r["response_ip"]) for r in our_replies] == [
        (r["bytes"], r["ttl"], r["response_ip"]) for r in ping_replies
    ]


def test_ping_time_format_is_pings() -> None:
    # iputils: 3 decimals below 1 ms, 2 below 10 ms, 1 below 100 ms, none above (rounded)
    assert [ping_ms(us) for us in (0, 45, 999, 1000, 1234, 9994, 9995, 12345, 99949, 99950)] == [
        "0.000",
        "0.045",
        "0.999",
        "1.00",
        "1.23",
        "9.99",
        "10.0",
        "12.3",
        "99.9",
        "100",
    ]
    assert ms3(45.9) == "0.045" and ms3(123456.7) == "123.456"


def test_statistics_block_layout() -> None:
    t = PingTotals("h", 3, 2, 1, 2, 100 / 3, 2003, 34.0, 45.5, 55.9, 8.2)
    block = statistics_block(t, ["extra one"])
    assert block == (
        "\nprobetop: extra one\n--- h ping statistics ---\n"
        "3 packets transmitted, 2 received, +1 duplicates, +2 errors, "
        "33.3333% packet loss, time 2003ms\n"
        "rtt min/avg/max/mdev = 0.034/0.045/0.055/0.008 ms\n"
    )
    none = PingTotals("h", 2, 0, 0, 0, 100.0, 1000, None, None, None, None)
    assert statistics_block(none).endswith("100% packet loss, time 1000ms\n\n")  # as ping


def plan_of(*argv: str) -> Any:
    args = ["icmp", *argv]
    return make_plan(build_parser().parse_args(args), ["probetop", *args])


def test_pings_options_mean_what_they_mean_to_ping() -> None:
    p = plan_of("-f", "-q", "-w", "5", "-W", "0.5", "-l", "3", "-s", "1", "-t", "9", "h")
    s: IcmpSettings = p.settings
    assert (s.flood, s.quiet, s.grace_s, s.preload, s.size, s.ttl) == (True, True, 0.5, 3, 1, 9)
    assert p.common.time_limit_s == 5.0  # -w DEADLINE is --time
    p = plan_of("-c", "3", "-i", "0.2", "-D", "-I", "127.0.0.1", "-b", "h")
    s = p.settings
    assert (s.count, s.period_s, s.timestamps, s.source, s.broadcast) == (
        3,
        0.2,
        True,
        "127.0.0.1",
        True,
    )
    assert plan_of("-i", "u20", "h").settings.period_s == pytest.approx(20e-6)  # hping3
    assert plan_of("--flood", "--time", "2", "h").common.time_limit_s == 2.0  # old spellings
    assert plan_of("--grace", "2", "--send-interval", "20us", "h").settings.grace_s == 2.0


@pytest.mark.parametrize("bad", ["u0", "ux", "u-3"])  # hping3 forms
def test_bad_hping3_interval_exits_2(bad: str) -> None:
    r = subprocess.run(
        [*PROBETOP, "icmp", "-i", bad, "--headless", "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "-i" in r.stderr


@needs_icmp
def test_lossy_path_reads_as_the_json(icmp_peer: Any, tmp_path: Path) -> None:  # noqa: F811
    """A third of the requests dropped in a namespace (nft): the loss %, the
    counts and the RTT the parsers read are the JSON's, and only the replies
    that came back have a line."""
    icmp_peer.nft(
        "add table inet ping_drop; "
        "add chain inet ping_drop input { type filter hook input priority 0; }; "
        "add rule inet ping_drop input icmp type echo-request numgen random mod 3 == 0 drop"
    )
    text, s = run_probetop(["-c", "60", "-i", "0.005", "-W", "0.2", icmp_peer.peer_addr], tmp_path)
    assert 5 < s["lost"] < 40 and s["in_flight_at_end"] == 0
    by_jc, by_pp = parse_both(text)
    assert by_jc["packet_loss_percent"] == pytest.approx(s["loss_pct"], abs=1e-4)
    assert by_pp["packet_loss_rate"] == pytest.approx(s["loss_pct"], abs=1e-4)
    assert (by_jc["packets_received"], by_pp["packet_receive"]) == (s["received"],) * 2
    assert len([r for r in by_jc["responses"] if r["type"] == "reply"]) == s["received"]
    assert by_jc["round_trip_ms_avg"] == pytest.approx(ms_truncated(s["rtt_us"]["avg"]))


@pytest.fixture
def unreachable_ns() -> Any:
    """A namespace with a veth 10.79.0.1/24 and nobody at .77: the kernel
    answers each request with a local Destination Host Unreachable (neighbour
    resolution fails after 100 ms); datagram sockets allowed."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    ns = f"pt_unreach_{os.getpid()}"
    cmds = [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "add", "ua", "type", "veth", "peer", "name", "ub"],
        ["ip", "-n", ns, "addr", "add", "10.79.0.1/24", "dev", "ua"],
        ["ip", "-n", ns, "link", "set", "ua", "up"],
        ["ip", "-n", ns, "link", "set", "ub", "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],  # the kernel's own ICMP errors go through lo
        ["ip", "netns", "exec", ns, "sysctl", "-q", "net.ipv4.neigh.ua.mcast_solicit=1",
         "net.ipv4.neigh.ua.retrans_time_ms=100", "net.ipv4.ping_group_range=0 2147483647"],
    ]  # fmt: skip
    try:
        for c in cmds:
            subprocess.run(c, check=True, capture_output=True, timeout=10)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@needs_icmp
@needs_ping
@pytest.mark.parametrize("mode", ["raw", "datagram"])
def test_local_unreachable_lines_and_errors_as_ping(
    unreachable_ns: str, mode: str, tmp_path: Path
) -> None:
    """ping's ``From 10.79.0.1 icmp_seq=N Destination Host Unreachable`` lines
    and ``+N errors``: jc and pingparsing read the same from both tools."""
    args = ["10.79.0.77", "-c", "3", "-i", "0.3", "-W", "1"]
    into = ["ip", "netns", "exec", unreachable_ns]
    ping = subprocess.run([*into, "ping", *args], capture_output=True, text=True, timeout=30)
    rec = tmp_path / "run.jsonl"
    ours = subprocess.run(
        [*into, *PROBETOP, "icmp", *args, "--socket", mode, "--record", str(rec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ping.returncode == ours.returncode == 1, ours.stderr
    lines = [f"From 10.79.0.1 icmp_seq={n} Destination Host Unreachable" for n in (1, 2, 3)]
    for text in (ping.stdout, ours.stdout):
        assert [x for x in text.splitlines() if x.startswith("From ")] == lines
        assert "3 packets transmitted, 0 received, +3 errors, 100% packet loss" in text
    (jc_ping, pp_ping), (jc_ours, pp_ours) = parse_both(ping.stdout), parse_both(ours.stdout)
    assert jc_ours["errors"] == jc_ping["errors"] == 3
    assert jc_ours["responses"] == jc_ping["responses"]
    for key in ("packet_transmit", "packet_receive", "packet_loss_count", "packet_loss_rate"):
        assert pp_ours[key] == pp_ping[key]
    footer = json.loads(rec.read_text().splitlines()[-1])
    (summary,) = footer["summaries"].values()
    # (a datagram socket's recv also fails with the error: "receive EHOSTUNREACH")
    assert summary["errors"]["destination unreachable"] == 3
