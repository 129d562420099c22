"""ping -I: an address or an interface name, beside iputils ping.

``-I IFNAME`` was refused ("cannot use source address lo"); ping binds its
socket to the interface (SO_BINDTODEVICE) and names the source and the
interface in its first line, ``PING host (addr) from SRC IFACE: ...``
(``from SRC : `` for ``-I ADDR``, which probetop's line left out). Checked
on loopback and over a veth pair into a namespace: the exit status, the
first line byte for byte, and the replies each tool got.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from forkserver import run_probetop
from icmp_fixtures import Peer, icmp_peer  # noqa: F401 (fixture)
from privilege import needs_icmp

needs_ping = pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")


def _both(*args: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    ping = subprocess.run(["ping", *args], capture_output=True, text=True, timeout=30)
    ours = run_probetop(["icmp", *args], timeout=30)
    return ping, ours


def _received(text: str) -> str:
    line = next(x for x in text.splitlines() if " packets transmitted, " in x)
    return line.split(", ")[1]


@needs_ping
@needs_icmp
@pytest.mark.parametrize(
    "args",
    [
        ("-I", "127.0.0.1", "127.0.0.1"),
        ("-I", "lo", "127.0.0.1"),
        ("-I", "lo", "localhost"),
        ("-6", "-I", "lo", "::1"),
        ("-6", "-I", "::1", "::1"),
    ],
)
def test_the_first_line_names_the_source_as_ping(args: tuple[str, ...]) -> None:
    ping, ours = _both("-c", "2", "-i", "0.2", *args)
    assert (ours.returncode, ping.returncode) == (0, 0), (ours.stderr, ping.stderr)
    assert ours.stdout.splitlines()[0] == ping.stdout.splitlines()[0]
    assert _received(ours.stdout) == _received(ping.stdout) == "2 received"


@needs_ping
@needs_icmp
def test_an_interface_name_binds_every_request_to_it(icmp_peer: Peer) -> None:  # noqa: F811
    # The peer answers over its veth; bound to lo, nothing reaches it.
    ping, ours = _both("-c", "2", "-i", "0.2", "-I", icmp_peer.host_if, icmp_peer.peer_addr)
    assert (ours.returncode, ping.returncode) == (0, 0), (ours.stderr, ping.stderr)
    assert ours.stdout.splitlines()[0] == ping.stdout.splitlines()[0]
    assert _received(ours.stdout) == "2 received"
    ping, ours = _both("-c", "2", "-i", "0.2", "-W", "1", "-I", "lo", icmp_peer.peer_addr)
    assert ours.returncode == ping.returncode == 1, (ours.stdout, ping.stdout)
    assert _received(ours.stdout) == _received(ping.stdout) == "0 received"


@needs_icmp
def test_a_missing_interface_is_said_in_pings_words() -> None:
    done = run_probetop(["icmp", "-c", "1", "-I", "nosuch0", "127.0.0.1"], timeout=30)
    assert done.returncode == 2
    assert "SO_BINDTODEVICE nosuch0: No such device" in done.stderr
