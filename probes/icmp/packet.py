"""ICMP echo packets: built once with struct, errors dissected with scapy.

Contract:
- ``echo_request`` returns the bytes of an echo request with sequence 0 and
  checksum 0; the native loop writes the sequence (and, for raw IPv4, the
  checksum from ``checksum_partial``) into a copy per send.
- ``dissect_error`` runs outside the hot path (a few kept packets per
  interval) and imports scapy lazily (~0.5 s on first use).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from typing import Any

ECHO_REQUEST_V4, ECHO_REPLY_V4 = 8, 0
ECHO_REQUEST_V6, ECHO_REPLY_V6 = 128, 129

ERROR_NAMES_V4 = {
    3: "destination unreachable",
    4: "source quench",
    5: "redirect",
    11: "time exceeded",
    12: "parameter problem",
}
ERROR_NAMES_V6 = {
    1: "destination unreachable",
    2: "packet too big",
    3: "time exceeded",
    4: "parameter problem",
}


def error_name(icmp_type: int, v6: bool) -> str:
    names = ERROR_NAMES_V6 if v6 else ERROR_NAMES_V4
    return names.get(icmp_type, f"type {icmp_type}")


def echo_request(ident: int, size: int, v6: bool, pattern: str | None = None) -> bytes:
    """Header (type, code 0, checksum 0, id, seq 0) plus ``size`` payload bytes.

    The payload is the byte pattern 0x00, 0x01, ... that ping uses when it has
    no room for a timestamp, so a capture looks familiar; with ``pattern``
    (ping -p's bytes as hex) those bytes repeated from the payload's start,
    as ping fills it; an empty ``pattern`` (ping -p '') leaves zeros, as ping's.
    """
    icmp_type = ECHO_REQUEST_V6 if v6 else ECHO_REQUEST_V4
    if pattern is not None:
        fill = bytes.fromhex(pattern) or b"\0"
        payload = (fill * (size // len(fill) + 1))[:size]
    else:
        payload = bytes(i & 0xFF for i in range(size))
    return struct.pack("!BBHHH", icmp_type, 0, 0, ident & 0xFFFF, 0) + payload


def checksum_partial(packet: bytes) -> int:
    """One's-complement sum (folded, not inverted) of ``packet`` as 16-bit words.

    With checksum and sequence fields zero, the checksum for sequence ``s``
    is ``~fold(partial + s)``: one addition per packet in the loop.
    """
    data = packet + b"\0" if len(packet) % 2 else packet
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def internet_checksum(packet: bytes) -> int:
    """RFC 1071 checksum (used by tests to check the loop's incremental one)."""
    return (~checksum_partial(packet)) & 0xFFFF


def sockaddr_address(raw: bytes) -> str | None:
    """The address in a struct sockaddr_in / sockaddr_in6 (as returned by recvfrom)."""
    if len(raw) < 2:
        return None
    family = struct.unpack_from("=H", raw)[0]
    if family == socket.AF_INET and len(raw) >= 8:
        return str(ipaddress.IPv4Address(raw[4:8]))
    if family == socket.AF_INET6 and len(raw) >= 24:
        return str(ipaddress.IPv6Address(raw[8:24]))
    return None


def dissect_error(data: bytes, source: bytes, v6: bool, has_ip_header: bool) -> dict[str, Any]:
    """Type, code and reporting router of one ICMP error packet, read with scapy.

    ``has_ip_header``: raw IPv4 sockets deliver the outer IP header, so the
    router is its source; otherwise it is the recvfrom source address.
    """
    router = sockaddr_address(source)
    if v6:
        from scapy.layers import inet6

        icmp_type = data[0] if data else -1
        cls: Any = inet6.icmp6typescls.get(icmp_type, inet6.ICMPv6Unknown)
        pkt = cls(data)
        code = int(getattr(pkt, "code", -1))
        name = inet6.icmp6types.get(icmp_type, f"type {icmp_type}")
    else:
        from scapy.layers.inet import ICMP, IP

        pkt = IP(data) if has_ip_header else ICMP(data)
        if has_ip_header:
            router = str(pkt.src)
        icmp = pkt[ICMP] if pkt.haslayer(ICMP) else pkt
        icmp_type = int(icmp.type)
        code = int(icmp.code)
        name = str(icmp.sprintf("%ICMP.type%"))
    return {
        "type": icmp_type,
        "code": code,
        "name": error_name(icmp_type, v6),
        "scapy_name": name,
        "router": router,
        "seq": quoted_echo_seq(data, v6, has_ip_header),
    }


def quoted_echo_seq(data: bytes, v6: bool, has_ip_header: bool) -> int | None:
    """The sequence of the echo request an ICMP error quotes (wire value), or
    None when the error quotes something else or is cut short."""
    at = 0
    if has_ip_header and not v6:
        if not data:
            return None
        at = (data[0] & 0x0F) * 4
    at += 8  # the error's own ICMP header; the offending packet's IP header follows
    if v6:
        if len(data) < at + 40 or data[at + 6] != 58:  # next header ICMPv6, no extensions
            return None
        at += 40
    else:
        if len(data) <= at or data[at + 9 : at + 10] != b"\x01":  # protocol ICMP
            return None
        at += (data[at] & 0x0F) * 4
    echo = ECHO_REQUEST_V6 if v6 else ECHO_REQUEST_V4
    if len(data) < at + 8 or data[at] != echo:
        return None
    return int(struct.unpack_from("!H", data, at + 6)[0])
