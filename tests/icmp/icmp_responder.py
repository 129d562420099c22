"""A user-space ICMP echo responder for tests, run inside a test namespace.

Usage: icmp_responder.py [--delay-ms N] [--duplicate] [--reorder]
Answers every IPv4 echo request after ``--delay-ms``; ``--duplicate`` sends
each reply twice; ``--reorder`` holds even sequence numbers 5 ms longer, so
they arrive after the next odd one. Prints "ready" once listening.
Runs until killed.
"""

from __future__ import annotations

import argparse
import heapq
import select
import socket
import struct
import time


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--duplicate", action="store_true")
    ap.add_argument("--reorder", action="store_true")
    args = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("ready", flush=True)
    due: list[tuple[float, int, bytes, str]] = []
    n = 0
    while True:
        timeout = max(0.0, due[0][0] - time.monotonic()) if due else 1.0
        readable, _, _ = select.select([sock], [], [], timeout)
        if readable:
            data, (src, _port) = sock.recvfrom(65535)
            ihl = (data[0] & 0x0F) * 4
            icmp = data[ihl:]
            if len(icmp) >= 8 and icmp[0] == 8:
                seq = struct.unpack("!H", icmp[6:8])[0]
                reply = b"\0\0\0\0" + icmp[4:]
                reply = struct.pack("!BBH", 0, 0, checksum(reply)) + reply[4:]
                delay = args.delay_ms / 1000.0
                if args.reorder and seq % 2 == 0:
                    delay += 0.005
                for _ in range(2 if args.duplicate else 1):
                    n += 1
                    heapq.heappush(due, (time.monotonic() + delay, n, reply, src))
        now = time.monotonic()
        while due and due[0][0] <= now:
            _t, _n, reply, dst = heapq.heappop(due)
            sock.sendto(reply, (dst, 0))


if __name__ == "__main__":
    main()
