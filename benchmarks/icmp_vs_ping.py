#!/usr/bin/env python3
"""Flood replies/s: probetop icmp --flood vs ping -f on loopback, in one run.

Alternates (ABBA per round) ``ping -q -f -s SIZE -w T 127.0.0.1`` and
``probetop icmp --flood --size SIZE --time T --json 127.0.0.1`` (1 stream,
then ``--streams`` N if asked) and prints each one's replies/s and the ratio
probetop / ping, per round and as the median of the paired ratios. The
target is >= 0.8 (issue 4), aiming at parity.

ping's replies/s = received / its reported time; probetop's = received /
its measured run time. Both count unique replies only.

Usage (root, or CAP_NET_RAW for both): .venv/bin/python benchmarks/icmp_vs_ping.py
    [--time 5] [--rounds 3] [--size 1] [--streams 2] [--host 127.0.0.1|::1]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys

PROBETOP = [sys.executable, "-m", "probetop.tui.cli"]
LOOPBACK = ("127.0.0.1", "::1")


def ping_flood(host: str, size: int, seconds: float) -> float:
    cmd = ["ping", "-q", "-f", "-s", str(size), "-w", f"{seconds:g}", host]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30).stdout
    m = re.search(r"(\d+) packets transmitted, (\d+) received.*time (\d+)ms", out)
    if not m:
        raise SystemExit(f"cannot parse ping output:\n{out}")
    return int(m.group(2)) / (int(m.group(3)) / 1000.0)


def probetop_flood(host: str, size: int, seconds: float, streams: int) -> float:
    cmd = [
        *PROBETOP,
        "icmp",
        "--flood",
        f"--size={size}",
        f"--streams={streams}",
        f"--time={seconds:g}",
        "--json",
        host,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if r.returncode != 0:
        raise SystemExit(f"probetop failed ({r.returncode}): {r.stderr}")
    return float(json.loads(r.stdout)["replies_per_second"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--streams", type=int, default=2, help="also measure N streams (1 = skip)")
    ap.add_argument("--host", default="127.0.0.1", choices=LOOPBACK)
    args = ap.parse_args()
    if shutil.which("ping") is None:
        raise SystemExit("ping is not installed (apt-get install iputils-ping)")
    variants = [1] + ([args.streams] if args.streams > 1 else [])
    print(f"host {args.host}, size {args.size}, {args.time:g} s per run, {args.rounds} rounds")
    print(f"{'round':>5} {'streams':>7} {'ping -f rps':>12} {'probetop rps':>13} {'ratio':>6}")
    ratios: dict[int, list[float]] = {n: [] for n in variants}
    for rnd in range(args.rounds):
        for n in variants:
            # ABBA order: which tool runs first alternates between rounds.
            if rnd % 2 == 0:
                ping = ping_flood(args.host, args.size, args.time)
                ours = probetop_flood(args.host, args.size, args.time, n)
            else:
                ours = probetop_flood(args.host, args.size, args.time, n)
                ping = ping_flood(args.host, args.size, args.time)
            ratios[n].append(ours / ping)
            print(f"{rnd + 1:>5} {n:>7} {ping:>12,.0f} {ours:>13,.0f} {ours / ping:>6.2f}")
    for n in variants:
        print(
            f"median ratio probetop/ping -f, {n} stream(s): {statistics.median(ratios[n]):.2f}"
            f"  (min {min(ratios[n]):.2f}, max {max(ratios[n]):.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
