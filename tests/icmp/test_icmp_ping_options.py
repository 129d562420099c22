"""ping's -p, -Q, -m, -S and -C in `probetop icmp` (each was "unrecognized
arguments", and for -p/-Q/-m/-S the value was then taken for the host), and
ping's options probetop does not do refused by name with why. What goes on
the wire is read from a packet capture on lo, beside ping 20221126 with the
same words; the mark from an nftables counter."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from privilege import needs_icmp

EXE = str(Path(sys.executable).parent / "probetop")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a packet capture on lo needs root")
needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
ETH_P_IP = 0x0800


@contextmanager
def echo_requests(payload_marker: bytes) -> Iterator[list[tuple[int, bytes]]]:
    """(TOS, ICMP payload) of each IPv4 echo request on lo whose payload
    holds ``payload_marker``, captured while the block runs."""
    seen: list[tuple[int, bytes]] = []
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
    sock.bind(("lo", 0))
    sock.settimeout(0.1)
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                frame, where = sock.recvfrom(65536)
            except TimeoutError:
                continue
            if where[2] == socket.PACKET_OUTGOING:  # lo: each packet once, as received
                continue
            header = (frame[0] & 0x0F) * 4
            if frame[9] == socket.IPPROTO_ICMP and frame[header] == 8:
                payload = frame[header + 8 :]
                if payload_marker in payload:
                    seen.append((frame[1], payload))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        yield seen
        time.sleep(0.3)
    finally:
        done.set()
        thread.join(5)
        sock.close()


def _run(tool: str, words: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    cmd = ["ping", *words] if tool == "ping" else [EXE, "icmp", *words]
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


@root_only
@needs_ping
def test_pattern_and_tos_go_on_the_wire_as_pings(tmp_path: Path) -> None:
    words = ["-c", "2", "-i", "0.2", "-s", "40", "-p", "c0ffee5", "-Q", "0xb8", "127.0.0.1"]
    marker = bytes.fromhex("c0ffee05c0ffee05")
    results = {}
    for tool in ("ping", "probetop"):
        with echo_requests(marker) as seen:
            done = _run(tool, words, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("PATTERN: 0xc0ffee05\n"), done.stdout
        assert len(seen) == 2, (tool, seen)
        results[tool] = seen
    for (tos, payload), (their_tos, theirs) in zip(
        results["probetop"], results["ping"], strict=True
    ):
        assert tos == their_tos == 0xB8
        # ping writes its send time over the first 16 bytes; the fill is the same after
        assert len(payload) == len(theirs) == 40 and payload[16:] == theirs[16:]
        assert payload[:16] == (marker * 2)[:16]


@root_only
@needs_ping
def test_an_empty_pattern_is_taken_as_ping_takes_it(tmp_path: Path) -> None:
    """ping -p '' runs (exit 0): ``PATTERN: 0x``, and a payload of zeros after
    its timestamp. probetop refused it (exit 2)."""
    words = ["-c", "2", "-i", "0.2", "-s", "43", "-p", "", "127.0.0.1"]
    payloads = {}
    for tool in ("ping", "probetop"):
        with echo_requests(b"") as seen:
            done = _run(tool, words, tmp_path)
        assert done.returncode == 0, (tool, done.stderr)
        assert done.stdout.startswith("PATTERN: 0x\nPING 127.0.0.1 "), (tool, done.stdout)
        payloads[tool] = [payload for _tos, payload in seen if len(payload) == 43]
        assert len(payloads[tool]) == 2, (tool, seen)
    for ours, theirs in zip(payloads["probetop"], payloads["ping"], strict=True):
        assert ours[16:] == theirs[16:] == bytes(27)  # after ping's send time
    assert payloads["probetop"][0] == bytes(43)


@root_only
@needs_ping
@pytest.mark.parametrize(("given", "tos"), [("0x", 0), ("", 0), (" +8", 8), ("0X10", 16)])
def test_tos_values_read_as_pings_strtol(given: str, tos: int, tmp_path: Path) -> None:
    """ping's forms of -Q that int() refused (exit 2): no digits is 0, a
    sign and leading white space are taken."""
    words = ["-c", "1", "-s", "41", "-Q", given, "127.0.0.1"]
    for tool in ("ping", "probetop"):
        with echo_requests(b"") as seen:
            done = _run(tool, words, tmp_path)
        assert done.returncode == 0, (tool, done.stderr)
        assert [t for t, payload in seen if len(payload) == 41] == [tos], (tool, seen)


@needs_icmp
def test_pattern_line_is_left_out_with_q_and_bad_values_are_refused(tmp_path: Path) -> None:
    done = _run("probetop", ["-q", "-c", "1", "-p", "ab", "127.0.0.1"], tmp_path)
    assert done.returncode == 0 and "PATTERN" not in done.stdout, done.stdout
    for words, says in (
        (["-p", "zz"], "patterns must be specified as hex digits: zz"),
        (["-Q", "256"], "within 0..255, got 256"),
        (["-Q", "abc"], "bad TOS value: abc"),
    ):
        done = _run("probetop", ["-c", "1", *words, "127.0.0.1"], tmp_path)
        assert done.returncode == 2 and says in done.stderr, (words, done.stderr)
    done = _run("probetop", ["-c", "1", "-m", "-1", "127.0.0.1"], tmp_path)
    assert done.returncode == 1 and "-m/--mark" in done.stderr  # ping's strtol_or_err: 1


def _kernel_at_least(major: int, minor: int) -> bool:
    release = os.uname().release.split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


# root without CAP_NET_ADMIN: its raw socket's CAP_NET_RAW lets it mark (Linux
# 5.17+), where ping gives CAP_NET_RAW up after opening its socket and warns
NO_NET_ADMIN = [
    "setpriv",
    "--bounding-set=-net_admin",
    "--inh-caps=-net_admin",
]


@root_only
@pytest.mark.skipif(shutil.which("nft") is None, reason="nft is not installed")
@pytest.mark.parametrize("prefix", [[], NO_NET_ADMIN], ids=["root", "no-net-admin"])
def test_the_mark_is_on_every_request(prefix: list[str], tmp_path: Path) -> None:
    if prefix and not (shutil.which("setpriv") and _kernel_at_least(5, 17)):
        pytest.skip("needs setpriv and Linux 5.17+ (SO_MARK with CAP_NET_RAW)")
    table = f"pt_mark_{uuid.uuid4().hex[:8]}"
    rules = (
        f"add table inet {table}\n"
        f"add chain inet {table} out {{ type filter hook output priority 0; }}\n"
        f"add rule inet {table} out meta mark 77 icmp type echo-request counter\n"
    )
    subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True, timeout=30)
    try:
        done = subprocess.run(
            [*prefix, EXE, "icmp", "-c", "3", "-i", "0.2", "-m", "77", "127.0.0.1"],
            capture_output=True,
            text=True,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "-m 77" in done.stdout  # the equivalent ping command says it too
        listed = subprocess.run(
            ["nft", "-j", "list", "table", "inet", table], capture_output=True, text=True
        )
        counters = [
            expr["counter"]["packets"]
            for item in json.loads(listed.stdout)["nftables"]
            for expr in item.get("rule", {}).get("expr", [])
            if "counter" in expr
        ]
        assert counters == [3], listed.stdout
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], timeout=30)


@root_only
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv is not installed")
def test_a_mark_the_kernel_refuses_is_refused(tmp_path: Path) -> None:
    """Neither CAP_NET_ADMIN nor CAP_NET_RAW (a datagram ICMP socket, in a
    namespace of its own whose ping_group_range lets root's group open
    one): the kernel refuses SO_MARK, and probetop refuses to run unmarked
    (exit 2), where ping warns and sends."""
    ns = f"hst-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        inside = ["ip", "netns", "exec", ns]
        subprocess.run([*inside, "ip", "link", "set", "lo", "up"], check=True, timeout=30)
        group = ["sysctl", "-qw", "net.ipv4.ping_group_range=0 0"]
        subprocess.run([*inside, *group], check=True, timeout=30)
        drop = "-net_admin,-net_raw"
        setpriv = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"]
        done = subprocess.run(
            [*inside, *setpriv, EXE, "icmp", "-c", "1", "-m", "5", "127.0.0.1"],
            capture_output=True,
            text=True,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
            timeout=60,
        )
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)
    assert done.returncode == 2, done.stderr
    assert "-m 5: setting a socket mark needs CAP_NET_ADMIN" in done.stderr
    assert "transmitted" not in done.stdout


@pytest.mark.parametrize(
    ("words", "flag"),
    [
        (["-v"], "-v"),
        (["-V"], "-V"),
        (["-U"], "-U"),
        (["-B"], "-B"),
        (["-R"], "-R"),
        (["-L"], "-L"),
        (["-e", "5"], "-e"),
        (["-T", "tsonly"], "-T"),
        (["-F", "1"], "-F"),
        (["-N", "name"], "-N"),
    ],
)
def test_pings_options_probetop_does_not_do_are_refused_by_name(
    words: list[str], flag: str, tmp_path: Path
) -> None:
    done = _run("probetop", ["-c", "1", *words, "127.0.0.1"], tmp_path)
    assert done.returncode == 2
    assert f"ping option {flag} is not supported by probetop icmp (" in done.stderr, done.stderr
    assert "unrecognized" not in done.stderr


@needs_icmp
def test_connect_and_sndbuf_are_taken(tmp_path: Path) -> None:
    done = _run("probetop", ["-c", "1", "-C", "-S", "65536", "127.0.0.1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "-S 65536" in done.stdout


@needs_ping
@needs_icmp
@pytest.mark.parametrize(
    "words",
    [["-nc", "2"], ["-qn", "-c", "2"], ["-Cqc2"], ["-c2", "-dq"], ["-nCqp", "ab", "-c", "2"]],
)
def test_ignored_ping_flags_bundle_with_others_as_in_ping(words: list[str], tmp_path: Path) -> None:
    """ping's -n, -C and -d (read and ignored) inside a bundle of short flags,
    as scripts write them (``ping -nc 3 HOST``): each bundle was
    "unrecognized arguments" (exit 2); now it runs as ping runs it."""
    outs = {}
    for tool in ("ping", "probetop"):
        done = _run(tool, [*words, "-i", "0.2", "127.0.0.1"], tmp_path)
        assert done.returncode == 0, (tool, done.stderr)
        outs[tool] = [ln for ln in done.stdout.splitlines() if "packets transmitted" in ln]
    assert (
        [ln.split(",")[:2] for ln in outs["probetop"]]
        == [ln.split(",")[:2] for ln in outs["ping"]]
        == [["2 packets transmitted", " 2 received"]]
    )
