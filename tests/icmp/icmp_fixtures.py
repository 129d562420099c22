"""Fixtures for the ICMP tests: a second host in a network namespace (root only).

``icmp_peer`` makes a namespace and a veth pair with a /30 of 10.x addresses
that exist only between this host and that namespace, and removes both in
teardown. Names carry a random tag so parallel runs do not clash. Helpers
run commands inside the namespace (nft rules, sysctls, a delaying echo
responder) -- nothing ever leaves the machine.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

RESPONDER = Path(__file__).with_name("icmp_responder.py")


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=30)


@dataclass
class Peer:
    """The namespace and the addresses on both ends of the veth pair."""

    ns: str
    host_if: str
    peer_if: str
    host_addr: str
    peer_addr: str

    def exec(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run("ip", "netns", "exec", self.ns, *cmd, check=check)

    def sysctl(self, key: str, value: str) -> None:
        self.exec("sysctl", "-q", "-w", f"{key}={value}")

    def nft(self, script: str) -> None:
        self.exec("nft", script)

    def responder(self, *args: str) -> subprocess.Popen[bytes]:
        """A user-space echo responder inside the namespace (kernel echo switched off)."""
        self.sysctl("net.ipv4.icmp_echo_ignore_all", "1")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, str(RESPONDER), *args],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        return proc


def _unique_subnet() -> tuple[str, str]:
    used = _run("ip", "-4", "route", "show", "table", "all", check=False).stdout
    for _ in range(100):
        a, b = secrets.randbelow(250) + 2, secrets.randbelow(63) * 4
        if f"10.{a}.{b}." not in used:
            return f"10.{a}.{b}.1", f"10.{a}.{b}.2"
    raise RuntimeError("no free 10.x /30 found")


@pytest.fixture
def icmp_peer() -> Iterator[Peer]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, nftables)")
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (apt-get install iproute2 nftables)")
    tag = secrets.token_hex(3)
    peer = Peer(f"icmp-{tag}", f"pti{tag}h", f"pti{tag}p", *_unique_subnet())
    _run("ip", "netns", "add", peer.ns)
    try:
        _run("ip", "link", "add", peer.host_if, "type", "veth", "peer", "name", peer.peer_if)
        _run("ip", "link", "set", peer.peer_if, "netns", peer.ns)
        _run("ip", "addr", "add", f"{peer.host_addr}/30", "dev", peer.host_if)
        _run("ip", "link", "set", peer.host_if, "up")
        peer.exec("ip", "addr", "add", f"{peer.peer_addr}/30", "dev", peer.peer_if)
        peer.exec("ip", "link", "set", peer.peer_if, "up")
        peer.exec("ip", "link", "set", "lo", "up")
        # Wait until the pair carries traffic (veth needs both ends up).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state = _run("ip", "-o", "link", "show", peer.host_if).stdout
            if "LOWER_UP" in state:
                break
            time.sleep(0.05)
        # Never let a test's packets take the default route off this machine.
        route = _run("ip", "route", "get", peer.peer_addr).stdout
        assert f"dev {peer.host_if}" in route, route
        yield peer
    finally:
        _run("ip", "link", "del", peer.host_if, check=False)
        _run("ip", "netns", "del", peer.ns, check=False)


@dataclass
class Routed:
    """A target one router away: host -> ``router`` (the icmp_peer namespace) -> target."""

    router: Peer
    target_ns: str
    target_addr: str


@pytest.fixture
def icmp_routed(icmp_peer: Peer) -> Iterator[Routed]:
    tag = secrets.token_hex(3)
    ns = f"icmp-t-{tag}"
    router_if, target_if = f"ptr{tag}a", f"ptr{tag}b"
    router_addr, target_addr = _unique_subnet()
    subnet = str(ipaddress.ip_network(f"{target_addr}/30", strict=False))
    _run("ip", "netns", "add", ns)
    try:
        _run("ip", "link", "add", router_if, "type", "veth", "peer", "name", target_if)
        _run("ip", "link", "set", router_if, "netns", icmp_peer.ns)
        _run("ip", "link", "set", target_if, "netns", ns)
        icmp_peer.exec("ip", "addr", "add", f"{router_addr}/30", "dev", router_if)
        icmp_peer.exec("ip", "link", "set", router_if, "up")
        icmp_peer.sysctl("net.ipv4.ip_forward", "1")
        inside = ("ip", "netns", "exec", ns)
        _run(*inside, "ip", "addr", "add", f"{target_addr}/30", "dev", target_if)
        _run(*inside, "ip", "link", "set", target_if, "up")
        _run(*inside, "ip", "link", "set", "lo", "up")
        _run(*inside, "ip", "route", "add", "default", "via", router_addr)
        _run("ip", "route", "add", subnet, "via", icmp_peer.peer_addr, "dev", icmp_peer.host_if)
        route = _run("ip", "route", "get", target_addr).stdout
        assert f"dev {icmp_peer.host_if}" in route, route
        yield Routed(icmp_peer, ns, target_addr)
    finally:
        _run("ip", "route", "del", subnet, check=False)
        _run("ip", "netns", "del", ns, check=False)
