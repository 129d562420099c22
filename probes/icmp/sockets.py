"""Where ICMP probes go and how: target checks, route facts, socket setup.

Contract:
- ``resolve_target`` turns a host into a checked ``Target`` (address, the
  interface that routes to it, the source address, the path MTU) or raises
  ``TargetProbeError`` with a clear message (unresolvable, invalid, broadcast
  or multicast without ``--broadcast``, no route, interface down, source not
  on this host). It sends nothing: the route comes from connecting a UDP socket.
- ``choose_mode`` picks ``datagram`` where ``net.ipv4.ping_group_range``
  allows it, else ``raw`` with root/CAP_NET_RAW, else raises
  ``PermissionProbeError`` naming both fixes.
- ``open_icmp_socket`` returns a socket set up so the kernel does the
  filtering: raw sockets get ICMP_FILTER / ICMP6_FILTER (only echo replies
  and errors) and a BPF program that keeps only replies with our id, so N
  streams on N raw sockets do not each receive every stream's replies.
  Every socket has SO_TIMESTAMPNS on: the loop times replies by the kernel's
  receive stamp, as ping does (engine.py).
"""

from __future__ import annotations

import ctypes
import errno
import ipaddress
import os
import socket
import struct
import sys
from dataclasses import dataclass

import psutil
from probetop.probes.core.base import PermissionProbeError, TargetProbeError
from probetop.probes.core.privileges import has_net_raw, ping_group_allows
from probetop.probes.icmp.layout import IP_RECVTTL, IPV6_RECVHOPLIMIT, SO_TIMESTAMPNS
from probetop.probes.icmp.settings import PMTUDISC_MODES

# Linux socket option numbers the socket module does not export everywhere.
SOL_RAW = 255
ICMP_FILTER = 1
ICMP6_FILTER = 1
SO_ATTACH_FILTER = 26
SO_RCVBUFFORCE = 33
SO_BINDTODEVICE = 25
SO_MARK = 36
IP_MTU_DISCOVER = 10
IP_MTU = 14
IP_RECVERR = 11
IPV6_MTU_DISCOVER = 23
IPV6_MTU = 24
IPV6_RECVERR = 25
IPV6_UNICAST_HOPS = 16

RECV_BUFFER_BYTES = 4 << 20  # a flood of replies must not overflow between loop turns

SETCAP_HINT = (
    "ICMP needs a raw socket (root or CAP_NET_RAW) or an unprivileged ICMP datagram socket. "
    "Fix one of: run as root; `sudo setcap cap_net_raw+ep {python}` (the interpreter "
    "running probetop); or allow datagram ICMP for your group: "
    '`sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"`'
)


@dataclass(frozen=True)
class Target:
    """A checked destination and the local facts about the route to it."""

    host: str
    address: str
    family: int
    scope_id: int
    source: str
    interface: str | None
    mtu: int | None
    broadcast: bool
    device: str | None = None  # ping -I IFNAME: every socket bound to it (SO_BINDTODEVICE)

    @property
    def v6(self) -> bool:
        return self.family == socket.AF_INET6

    def sockaddr(self) -> bytes:
        """struct sockaddr_in / sockaddr_in6 for sendto."""
        packed = ipaddress.ip_address(self.address).packed
        if self.v6:
            return struct.pack("=HHI16sI", socket.AF_INET6, 0, 0, packed, self.scope_id)
        return struct.pack("=HH4s8x", socket.AF_INET, 0, packed)

    def header_bytes(self) -> int:
        return 40 if self.v6 else 20


def _broadcast_addresses() -> set[str]:
    """The limited broadcast and every local subnet's directed broadcast address
    (computed from address and netmask: interfaces need not announce one)."""
    out = {"255.255.255.255"}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family != socket.AF_INET:
                continue
            if a.broadcast:
                out.add(a.broadcast)
            if a.netmask:
                net = ipaddress.ip_network(f"{a.address}/{a.netmask}", strict=False)
                if net.prefixlen < 31 and not net.is_loopback:
                    out.add(str(net.broadcast_address))
    return out


def interface_of(address: str) -> str | None:
    """The interface that owns a local address (psutil.net_if_addrs)."""
    want = address.split("%")[0]
    for name, addrs in psutil.net_if_addrs().items():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6) and a.address.split("%")[0] == want:
                return name
    return None


def route_interface(address: str) -> str | None:
    """The interface the kernel routes ``address`` through (`ip route get`), if known.

    More exact than matching the source address (a route may use another
    interface's address as its source); None when iproute2 is missing.
    """
    import shutil
    import subprocess

    ip_tool = shutil.which("ip")
    if ip_tool is None:
        return None
    try:
        out = subprocess.run(
            [ip_tool, "-o", "route", "get", address], capture_output=True, text=True, timeout=2
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    if "dev" in words and words.index("dev") + 1 < len(words):
        return words[words.index("dev") + 1]
    return None


def split_source(source: str | None) -> tuple[str | None, str | None]:
    """ping -I's value as (address, interface): an IP address is the source
    address, anything else an interface name (iputils reads it so)."""
    if not source:
        return None, None
    try:
        ipaddress.ip_address(source.split("%", 1)[0])
    except ValueError:
        return None, source
    return source, None


def bind_to_device(sock: socket.socket, device: str) -> None:
    """SO_BINDTODEVICE, refused in ping's words (TargetProbeError)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, device.encode())
    except OSError as exc:
        raise TargetProbeError(
            f"SO_BINDTODEVICE {device}: {exc.strerror or exc} (ping -I takes an address of "
            "this host or an interface name: `ip link` lists them)"
        ) from None


def resolve_target(
    host: str,
    family: int | None = None,
    source: str | None = None,
    allow_broadcast: bool = False,
) -> Target:
    """See the module docstring."""
    if not host or host.startswith("-"):
        raise TargetProbeError(f"invalid host {host!r}")
    try:
        infos = socket.getaddrinfo(host, None, family or 0, socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetProbeError(f"cannot resolve host {host!r}: {exc}") from None
    if not infos:
        raise TargetProbeError(f"cannot resolve host {host!r}")
    fam, _type, _proto, _canon, sockaddr = infos[0]
    address = str(sockaddr[0]).split("%")[0]
    scope_id = int(sockaddr[3]) if fam == socket.AF_INET6 else 0  # type: ignore[misc]
    ip = ipaddress.ip_address(address)
    if ip.is_unspecified:
        raise TargetProbeError(f"invalid target address {address} (unspecified)")
    is_broadcast = ip.is_multicast or (ip.version == 4 and address in _broadcast_addresses())
    if is_broadcast and not allow_broadcast:
        kind = "multicast" if ip.is_multicast else "broadcast"
        raise TargetProbeError(
            f"{address} is a {kind} address: every host on the segment would answer. "
            "Add --broadcast if that is what you want."
        )
    source, device = split_source(source)
    probe = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if is_broadcast:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        if device:
            bind_to_device(probe, device)
        if source:
            try:
                probe.bind((source, 0))
            except (OSError, socket.gaierror) as exc:
                raise TargetProbeError(
                    f"cannot use source address {source}: {exc.strerror or exc} "
                    "(it must be an address of this host, of the same family as the target)"
                ) from None
        try:
            probe.connect((address, 9) if fam == socket.AF_INET else (address, 9, 0, scope_id))
        except OSError as exc:
            if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL):
                raise TargetProbeError(
                    f"no route to {address} ({exc.strerror}): check the address, "
                    "`ip route get {address}`, and that the interface is up".replace(
                        "{address}", address
                    )
                ) from None
            raise TargetProbeError(f"cannot reach {address}: {exc.strerror or exc}") from None
        local = str(probe.getsockname()[0]).split("%")[0]
        try:
            level, opt = (
                (socket.IPPROTO_IPV6, IPV6_MTU)
                if fam == socket.AF_INET6
                else (socket.IPPROTO_IP, IP_MTU)
            )
            mtu: int | None = probe.getsockopt(level, opt)
        except OSError:
            mtu = None
    finally:
        probe.close()
    iface = device or route_interface(address) or interface_of(local)
    if iface is None and ip.is_loopback:
        iface = "lo"
    if iface is not None:
        stats = psutil.net_if_stats().get(iface)
        if stats is not None and not stats.isup:
            raise TargetProbeError(f"interface {iface} (route to {address}) is down")
    return Target(host, address, fam, scope_id, local, iface, mtu, is_broadcast, device)


def check_size(target: Target, size: int) -> None:
    """Refuse a payload that cannot cross the path MTU unfragmented (DF is set)."""
    total = target.header_bytes() + 8 + size
    if target.mtu is not None and total > target.mtu:
        most = target.mtu - target.header_bytes() - 8
        raise TargetProbeError(
            f"--size {size} makes {total}-byte packets, above the path MTU {target.mtu} "
            f"to {target.address} (probetop never fragments): use --size {most} or less"
        )


def choose_mode(requested: str = "auto") -> str:
    """``raw`` or ``datagram``; see the module docstring."""
    python = os.path.realpath(sys.executable)
    if requested == "datagram":
        if not ping_group_allows():
            raise PermissionProbeError(
                "datagram ICMP sockets are not allowed for your groups: "
                '`sudo sysctl -w net.ipv4.ping_group_range="0 2147483647"`'
            )
        return "datagram"
    if requested == "raw":
        if not has_net_raw():
            raise PermissionProbeError(SETCAP_HINT.format(python=python))
        return "raw"
    if ping_group_allows():
        return "datagram"
    if has_net_raw():
        return "raw"
    raise PermissionProbeError(SETCAP_HINT.format(python=python))


def _bpf_program(v6: bool, ident: int) -> bytes:
    """Classic BPF: keep echo replies whose id is ours and every other (error) type.

    Raw IPv4 sockets see the IP header first (its length from the IHL nibble);
    raw ICMPv6 sockets start at the ICMPv6 header.
    """
    ld_b_abs, ld_b_ind, ld_h_abs, ld_h_ind = 0x30, 0x50, 0x28, 0x48
    ldx_msh, jeq_k, ret_k = 0xB1, 0x15, 0x06
    reply = 129 if v6 else 0
    ins: list[tuple[int, int, int, int]] = []
    if v6:
        ins += [(ld_b_abs, 0, 0, 0)]
    else:
        ins += [(ldx_msh, 0, 0, 0), (ld_b_ind, 0, 0, 0)]
    ins += [
        (jeq_k, 0, 3, reply),  # not an echo reply -> accept (ICMP_FILTER let only errors in)
        (ld_h_abs if v6 else ld_h_ind, 0, 0, 4),
        (jeq_k, 1, 0, ident),
        (ret_k, 0, 0, 0),  # someone else's reply
        (ret_k, 0, 0, 0xFFFFFFFF),
    ]
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


def _attach_filter(sock: socket.socket, program: bytes) -> None:
    buf = ctypes.create_string_buffer(program)
    fprog = struct.pack("HL", len(program) // 8, ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def open_icmp_socket(
    target: Target,
    mode: str,
    *,
    ident: int,
    ttl: int | None = None,
    source: str | None = None,
    pmtudisc: str | None = None,
    tos: int | None = None,
    mark: int | None = None,
    sndbuf: int | None = None,
) -> tuple[socket.socket, int]:
    """An ICMP socket for ``target`` in ``mode``; returns it and the echo id it
    uses. ``pmtudisc``: ping -M's word (None: ``do``, don't-fragment);
    ``tos`` (-Q: IP_TOS, IPv6's traffic class), ``mark`` (-m: SO_MARK; a
    PermissionProbeError without CAP_NET_ADMIN), ``sndbuf`` (-S: SO_SNDBUF)."""
    v6 = target.v6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    kind = socket.SOCK_RAW if mode == "raw" else socket.SOCK_DGRAM
    try:
        sock = socket.socket(target.family, kind, proto)
    except PermissionError:
        raise PermissionProbeError(
            SETCAP_HINT.format(python=os.path.realpath(sys.executable))
        ) from None
    try:
        if mode == "raw":
            if v6:
                blocked = [0xFFFFFFFF] * 8
                for t in (129, 1, 2, 3, 4):
                    blocked[t >> 5] &= ~(1 << (t & 31)) & 0xFFFFFFFF
                sock.setsockopt(socket.IPPROTO_ICMPV6, ICMP6_FILTER, struct.pack("=8I", *blocked))
            else:
                passed = (1 << 0) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 11) | (1 << 12)
                sock.setsockopt(SOL_RAW, ICMP_FILTER, struct.pack("=I", ~passed & 0xFFFFFFFF))
            _attach_filter(sock, _bpf_program(v6, ident))
        else:
            level, opt = (
                (socket.IPPROTO_IPV6, IPV6_RECVERR) if v6 else (socket.IPPROTO_IP, IP_RECVERR)
            )
            sock.setsockopt(level, opt, 1)
        # IP_PMTUDISC_DONT, _WANT, _DO are 0-2, the same for IPv6.
        discover = PMTUDISC_MODES.index(pmtudisc or "do")
        if v6:
            sock.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, discover)
            if ttl is not None:
                sock.setsockopt(socket.IPPROTO_IPV6, IPV6_UNICAST_HOPS, ttl)
        else:
            sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, discover)
            if ttl is not None:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
        if target.broadcast:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        if tos is not None:
            if v6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, tos)
            else:
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        if mark is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
            except PermissionError:
                raise PermissionProbeError(
                    f"-m {mark}: setting a socket mark needs CAP_NET_ADMIN (root), or "
                    "CAP_NET_RAW on Linux 5.17+; ping only warns and sends unmarked "
                    "requests, which policy routing would send elsewhere, so probetop refuses"
                ) from None
        if sndbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        if v6:
            # The reply's hop limit (ping's ttl=, smokeping_response_ttl) as a cmsg.
            sock.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1)
        elif mode != "raw":
            sock.setsockopt(socket.IPPROTO_IP, IP_RECVTTL, 1)  # raw: in the IP header
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECV_BUFFER_BYTES)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER_BYTES)
        address = split_source(source)[0]
        if target.device:  # checked by resolve_target
            bind_to_device(sock, target.device)
        if address or mode == "datagram":
            # Datagram sockets: binding picks the port, which the kernel uses as the echo id.
            sock.bind((address or ("::" if v6 else "0.0.0.0"), 0))
        if mode == "datagram":
            ident = int(sock.getsockname()[1])
        return sock, ident
    except BaseException:
        sock.close()
        raise
