"""`probetop icmp` end to end: bad input exits 2, privileges, JSON, Ctrl-C, datagram mode."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from icmp_fixtures import Peer, icmp_peer  # noqa: F401 (fixture)
from privilege import RAW, icmp_mode, needs_icmp
from probetop.probes.icmp import IcmpSettings
from probetop.tui.cli.parser import build_parser, make_plan

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core"))
from forkserver import run_probetop
from stop_harness import wait_for_samples

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def probetop(
    *args: str, prefix: tuple[str, ...] = (), forked: bool = False
) -> subprocess.CompletedProcess[str]:
    """``probetop icmp ARGS`` (under ``prefix``: setpriv, ip netns exec).
    ``forked``: from an interpreter that has imported the CLI
    (tests/forkserver.py: a process of its own with this argv, stdio,
    environment and exit status; ~0.3 CPU-s of start-up spared), for cases
    that test what the program does with its arguments; a ``prefix`` needs a
    fresh process (its capabilities or network namespace)."""
    if forked:
        assert not prefix
        return run_probetop(["icmp", *args], timeout=60)
    return subprocess.run(
        [*prefix, *PROBETOP, "icmp", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (("no-such-host.invalid",), "cannot resolve host", 2),
        (("255.255.255.255",), "broadcast address", 2),
        (("224.0.0.1",), "multicast address", 2),
        (("0.0.0.0",), "invalid target address", 2),
        (("--size", "70000", "127.0.0.1"), "--size must be within", 1),
        (("--flood", "--rate", "10", "127.0.0.1"), "not allowed with", 2),
        (("--rate", "0", "127.0.0.1"), "must be a positive number", 2),
        # (ping 20221126 reads -i -1 and runs; newer ones refuse it, exit 2)
        (("-i", "-1", "127.0.0.1"), "must be zero or a positive number, got -1", 2),
        (("--ttl", "300", "127.0.0.1"), "--ttl must be within", 1),
        (("--preload", "0", "127.0.0.1"), "--preload must be within", 1),
        (("-4", "::1"), "cannot resolve host", 2),
        (("--source", "10.255.255.254", "127.0.0.1"), "cannot use source address", 2),
        (("-4", "-6", "127.0.0.1"), "not allowed with", 2),
        (("--rate", "10", "-i", "1", "127.0.0.1"), "not allowed with", 2),
        (("--count", "x", "127.0.0.1"), "not a whole number", 1),
        (("--size=-1", "127.0.0.1"), "must be at least 0", 1),
        (("-i", "1e6", "127.0.0.1"), "the send interval (-i) must be within", 2),
    ],
)
def test_bad_input_exits_as_ping_with_a_message(
    args: tuple[str, ...], message: str, status: int
) -> None:
    # ping's statuses: 1 for a value its strtol_or_err refuses (-c, -s, -l, -t), else 2;
    # the first case starts the whole `python -m`, the others are forked
    first = args == ("no-such-host.invalid",)
    r = probetop(*args, "--headless", "--time", "0.2", forked=not first)
    assert r.returncode == status, r
    assert message in r.stderr
    assert "Traceback" not in r.stderr


# Every flag `probetop icmp` accepted in probetop 0.1 (its argparse declaration).
FLAGS_0_1 = {
    *("-h", "--help", "--flood", "--rate", "-i", "--interval", "--send-interval"),
    *("--sample-interval", "-s", "--size", "--streams", "-c", "--count", "-t", "--ttl"),
    *("-4", "-6", "--source", "--broadcast", "-l", "--preload", "--grace", "--socket"),
    *("--record", "--headless", "--json", "--time", "--theme"),
    *(
        "--assert",
        "--metrics",
        "--textfile",
        "--detach",
        "--name",
        "--remote",
        "--with-system",
    ),  # common to every command
}


# Added since, with ping's meanings (issue 27), and the common --metrics-linger.
FLAGS_ADDED = {
    *("-f", "-q", "--quiet", "-w", "--deadline", "-W", "-D", "--timestamps", "-I", "-b"),
    "--metrics-linger",
    *("-A", "--adaptive"),  # ping's adaptive interval
    *("-M", "--pmtudisc"),  # ping's path MTU discovery
    *("-O", "--report-outstanding"),  # ping's "no answer yet" lines
    *("-a", "--audible"),  # ping's bell
    *("-Q", "--tos", "-m", "--mark", "-p", "--pattern", "-S", "--sndbuf"),
    # ping's options refused by name (hidden: ``PING_UNSUPPORTED``)
    *("-B", "-e", "-L", "-U", "-v", "-V", "-R", "-T", "-F", "-N"),
}


def icmp_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["icmp"]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def plan_of(*argv: str):  # type: ignore[no-untyped-def]
    return make_plan(build_parser().parse_args(list(argv)), ["probetop", *argv])


def test_the_spec_renders_the_options_of_0_1() -> None:
    parser = icmp_parser()
    flags = {f for a in parser._actions for f in a.option_strings}
    assert flags >= FLAGS_0_1  # every old spelling still works
    assert flags - FLAGS_0_1 <= FLAGS_ADDED
    assert [a.metavar for a in parser._actions if not a.option_strings] == ["HOST"]
    # Defaults as before: ping's one request per second, 56 bytes, 1 s grace.
    assert plan_of("icmp", "h").settings == IcmpSettings("h")


@pytest.mark.parametrize(
    ("argv", "sample_s", "period_s"),
    [
        (("icmp", "h"), 1.0, None),
        (("icmp", "-i", "0.2", "h"), 1.0, 0.2),
        (("icmp", "--interval", "200ms", "h"), 1.0, 0.2),
        (("icmp", "--send-interval", "20us", "h"), 1.0, 20e-6),
        (("icmp", "--sample-interval", "0.25", "h"), 0.25, None),
        (("--sample-interval", "0.5", "icmp", "h"), 0.5, None),
        (("--sample-interval", "0.5", "icmp", "--sample-interval", "0.25", "h"), 0.25, None),
    ],
)
def test_send_interval_and_sampling_interval(
    argv: tuple[str, ...], sample_s: float, period_s: float | None
) -> None:
    plan = plan_of(*argv)
    assert plan.common.interval_s == sample_s  # the dashboard's and the passive probes'
    assert plan.settings.interval_s == sample_s
    assert plan.settings.period_s == pytest.approx(period_s)


def test_without_cap_net_raw_the_message_names_the_fix() -> None:
    # --socket raw: the refusal whatever ping_group_range allows. Root drops the
    # capability; another user has none to drop (unless python has file caps).
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        prefix = ("setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw")
    elif RAW:
        pytest.skip("this python has CAP_NET_RAW (file capabilities): nothing to refuse")
    r = probetop("--headless", "--time", "0.2", "--socket", "raw", "127.0.0.1", prefix=prefix)
    assert r.returncode == 2, r
    assert "setcap cap_net_raw+ep" in r.stderr and "ping_group_range" in r.stderr


@needs_icmp
def test_json_report_fields() -> None:
    r = probetop("--json", "--rate", "2000", "-c", "200", "-s", "1", "127.0.0.1", forked=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("sent", "received", "duplicates", "loss_pct", "replies_per_second", "pps"):
        assert key in doc
    assert set(doc["rtt_us"]) == {"min", "avg", "max", "mdev", "p50", "p90", "p99"}
    assert doc["sent"] == doc["received"] == 200
    assert doc["mode"] == icmp_mode() and doc["errors"] == {}
    assert doc["intervals"] and "replies_per_s" in doc["intervals"][0]
    assert doc["reference_command"] == "hping3 -q --icmp -i u500 -d 1 -c 200 127.0.0.1"


@needs_icmp
def test_ctrl_c_prints_the_summary_after_in_flight_replies(tmp_path: Path) -> None:
    rec = tmp_path / "flood.jsonl"
    proc = subprocess.Popen(
        [*PROBETOP, "--record", str(rec), "icmp", "--flood", "-s", "1", "--headless", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Into the flood: two samples recorded (a fixed 2.5 s was still start-up
    # on a loaded machine, and the summary said 0 requests).
    wait_for_samples(rec, "icmp:127.0.0.1", 2, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert ", 0% packet loss, time " in out
    sent = int(out.split(" packets transmitted")[0].split()[-1])
    received = int(out.split(" received,")[0].split()[-1])
    assert sent == received > 1000


@needs_icmp
def test_size_above_path_mtu_exits_2(icmp_peer: Peer) -> None:  # noqa: F811
    r = probetop("--headless", "-c", "1", "--size", "1473", icmp_peer.peer_addr, forked=True)
    assert r.returncode == 2
    assert "above the path MTU 1500" in r.stderr and "--size 1472" in r.stderr


@needs_icmp
def test_no_route_and_interface_down_exit_2(icmp_peer: Peer) -> None:  # noqa: F811
    # Both checks run inside the namespace, which has no default route: a target
    # without a route there can never leak onto the host's real network.
    inside = ("ip", "netns", "exec", icmp_peer.ns)
    r = probetop("--headless", "-c", "1", "192.0.2.77", prefix=inside)
    assert r.returncode == 2 and "no route to 192.0.2.77" in r.stderr
    icmp_peer.exec("ip", "link", "set", icmp_peer.peer_if, "down")
    r = probetop("--headless", "-c", "1", icmp_peer.host_addr, prefix=inside)
    assert r.returncode == 2
    assert f"no route to {icmp_peer.host_addr}" in r.stderr


@needs_icmp
def test_datagram_socket_where_ping_group_range_allows(icmp_peer: Peer) -> None:  # noqa: F811
    icmp_peer.sysctl("net.ipv4.ping_group_range", "0 2147483647")
    inside = ("ip", "netns", "exec", icmp_peer.ns)
    r = probetop("--json", "--rate", "1000", "-c", "300", "127.0.0.1", prefix=inside)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "datagram"
    assert doc["sent"] == doc["received"] == 300
    r = probetop("--json", "--rate", "1000", "-c", "300", "-6", "::1", prefix=inside)
    doc = json.loads(r.stdout)
    assert doc["mode"] == "datagram" and doc["received"] == 300


@needs_icmp
def test_datagram_errors_come_from_the_error_queue(icmp_peer: Peer) -> None:  # noqa: F811
    # The probe runs in the namespace (datagram socket); the host rejects its requests.
    icmp_peer.sysctl("net.ipv4.ping_group_range", "0 2147483647")
    table = f"ptrej{os.getpid()}"
    subprocess.run(
        [
            "nft",
            f"add table inet {table}; "
            f"add chain inet {table} input {{ type filter hook input priority 0; }}; "
            f'add rule inet {table} input iifname "{icmp_peer.host_if}" icmp type echo-request '
            "reject with icmp type admin-prohibited",
        ],
        check=True,
    )
    try:
        inside = ("ip", "netns", "exec", icmp_peer.ns)
        r = probetop(
            "--json",
            "--rate",
            "50",
            "-c",
            "10",
            "--grace",
            "0.3",
            icmp_peer.host_addr,
            prefix=inside,
        )
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], check=False)
    doc = json.loads(r.stdout)
    assert doc["mode"] == "datagram"
    assert doc["received"] == 0 and doc["lost"] == 10
    assert icmp_peer.host_addr in doc["error_routers"]["destination unreachable"]


@needs_icmp
def test_recording_holds_icmp_samples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rec = tmp_path / "icmp.jsonl"
    r = probetop(
        "--headless", "--record", str(rec), "--rate", "500", "--time", "1.2", "127.0.0.1",
        forked=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    text = json.dumps(lines)
    assert "icmp:127.0.0.1" in text and "replies_per_s" in text and "rtt_p99_us" in text


@needs_icmp
def test_broadcast_needs_the_flag(icmp_peer: Peer) -> None:  # noqa: F811
    # The /30's directed broadcast: it exists only on the veth pair.
    prefix = icmp_peer.peer_addr.rsplit(".", 1)[0]
    broadcast = f"{prefix}.{int(icmp_peer.peer_addr.rsplit('.', 1)[1]) + 1}"
    r = probetop("--headless", "-c", "1", broadcast, forked=True)
    assert r.returncode == 2 and "broadcast address" in r.stderr
    icmp_peer.sysctl("net.ipv4.icmp_echo_ignore_broadcasts", "0")
    r = probetop("--json", "--broadcast", "-c", "5", "-i", "20ms", broadcast, forked=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["received"] == 5
    assert doc["reference_command"].endswith(f"-b {broadcast}")


@needs_icmp
def test_a_stalled_paced_sender_reports_what_it_missed(tmp_path: Path) -> None:
    rec = tmp_path / "paced.jsonl"
    proc = subprocess.Popen(
        [*PROBETOP, "--record", str(rec), "icmp", "--rate", "1000", "--time", "3.5", "--json",
         "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    wait_for_samples(rec, "icmp:127.0.0.1", 1, proc)  # into the paced run
    proc.send_signal(signal.SIGSTOP)
    time.sleep(0.4)  # longer than the 100 ms the sender may catch up
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    # Stopped 0.4 s, of which the sender may catch up 100 ms: at least 250
    # sends skipped at 1000/s. A loaded machine resumes it later (571 seen
    # at load 16): the upper bound is the accounting, every period of the
    # run either sent or skipped once, never both.
    said = {k: doc[k] for k in ("pacing_missed", "sent", "duration_s")}
    assert doc["pacing_missed"] >= 250, said
    assert doc["pacing_missed"] + doc["sent"] <= 1000 * doc["duration_s"] * 1.02 + 2, said
    assert doc["lost"] == 0 and doc["received"] == doc["sent"]


PING_USER_FLOOD = "cannot flood; minimal interval allowed for user is 2ms"


@pytest.mark.parametrize("interval", ["0", "0.0005"])
def test_interval_0_as_a_user_is_refused_as_ping_does(
    interval: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-i 0 (and -i 0.0005, ping's whole-ms 0) for a user other than root:
    ping 20221126's refusal in its words, exit 2; ping itself, run as nobody
    beside it when this runs as root and ping is there."""
    import shutil

    from probetop.probes.icmp import settings as icmp_settings
    from probetop.tui.main import main

    nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    if os.geteuid() == 0 and shutil.which("ping") and shutil.which("setpriv"):
        ref = subprocess.run(
            [*nobody, "ping", "-c", "1", "-i", interval, "127.0.0.1"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert ref.returncode == 2 and PING_USER_FLOOD in ref.stderr, ref
    monkeypatch.setattr(icmp_settings.os, "getuid", lambda: 65534)
    assert main(["icmp", "-c", "1", "-i", interval, "127.0.0.1"]) == 2
    assert f"probetop: error: {PING_USER_FLOOD}" in capsys.readouterr().err


def test_w_0_is_refused_with_why(capsys: pytest.CaptureFixture[str]) -> None:
    """-W 0: ping 20221126 runs it (a 0 s linger); probetop's -W is also each
    request's loss deadline, so 0 is refused, exit 2, saying why and what to give."""
    from probetop.tui.main import main

    assert main(["icmp", "-c", "1", "-W", "0", "127.0.0.1"]) == 2
    err = capsys.readouterr().err
    assert "-W 0" in err and "loss deadline" in err and "-W 0.001" in err, err
