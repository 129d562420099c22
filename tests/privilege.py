"""What the tests may do here, checked for real: ICMP sockets; acting as
another user (``as_nobody``); the reference sysbench (``sysbench``).

The product needs no root for ICMP: a datagram ICMP socket works for any user
whose group is in net.ipv4.ping_group_range (probes/icmp/sockets.py). So the
ICMP tests ask for a socket, not for uid 0; what needs root (network
namespaces, nftables, dropping a capability) says so in its own skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest


def _opens(kind: int) -> bool:
    try:
        socket.socket(socket.AF_INET, kind, socket.IPPROTO_ICMP).close()
    except OSError:
        return False
    return True


def _ping_group_range() -> str:
    try:
        with open("/proc/sys/net/ipv4/ping_group_range", encoding="ascii") as f:
            return " ".join(f.read().split())
    except OSError:
        return "unreadable"


DATAGRAM = _opens(socket.SOCK_DGRAM)
RAW = _opens(socket.SOCK_RAW)

ICMP_MISSING = (
    "needs an ICMP socket: root or CAP_NET_RAW, or net.ipv4.ping_group_range "
    f'(now "{_ping_group_range()}") including gid {os.getegid()}: '
    'sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"'
)
RAW_MISSING = "needs a raw ICMP socket (root or CAP_NET_RAW)"

needs_icmp = pytest.mark.skipif(not (DATAGRAM or RAW), reason=ICMP_MISSING)
needs_raw_icmp = pytest.mark.skipif(not RAW, reason=RAW_MISSING)


def icmp_mode() -> str:
    """The socket kind ``--socket auto`` picks here: datagram where
    ping_group_range allows it, else raw (probes/icmp/sockets.py)."""
    return "datagram" if DATAGRAM else "raw"


NOBODY = 65534
"""Another real user, for tests of what a second user on the machine can do."""


def as_nobody(*command: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` as ``nobody`` (uid and gid 65534, no other group);
    the caller must be root (``pytest.skip`` otherwise)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (nobody)")
    return subprocess.run(
        command, user=NOBODY, group=NOBODY, extra_groups=[], capture_output=True, timeout=30
    )


def sysbench() -> str:
    """The installed sysbench's path, the reference the sysbench families
    are run beside; skips the test, saying how to install it, when absent."""
    path = shutil.which("sysbench")
    if path is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench)")
    return path
