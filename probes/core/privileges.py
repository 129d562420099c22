"""What this process may do: root, CAP_NET_RAW, ICMP datagram sockets."""

from __future__ import annotations

import os

CAP_NET_RAW = 13


def effective_caps() -> int:
    """The CapEff bitmask of this process (0 when unknown)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def has_net_raw() -> bool:
    """True if raw sockets may be opened (root or CAP_NET_RAW)."""
    return bool(effective_caps() & (1 << CAP_NET_RAW)) or is_root()


def ping_group_allows() -> bool:
    """True if net.ipv4.ping_group_range includes one of our groups (datagram ICMP)."""
    try:
        with open("/proc/sys/net/ipv4/ping_group_range", encoding="ascii") as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        return False
    groups = {os.getegid(), *os.getgroups()}
    return any(lo <= g <= hi for g in groups)
