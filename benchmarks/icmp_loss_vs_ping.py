#!/usr/bin/env python3
"""Flood under loss: probetop icmp --flood vs ping -f, with nftables dropping
a share of the echo requests in a network namespace, in one run.

Makes a namespace (``icmp-bench-XXXX``) joined by a veth pair, with an
nftables chain in it that counts every echo request and drops
``numgen random mod 1000 < 10 x DROP%`` of them (with its own counter). For
each drop rate (0, 1, 10, 50 % by default) it runs, alternately per round,
``ping -q -f -s SIZE -w T PEER`` and ``probetop icmp PEER --flood --size SIZE
--time T --grace G --json``, reading the nft counters before and after each, and
prints:

- replies/s of each (ping: received / its reported time; probetop: received /
  its sending time) and the ratio probetop / ping (target >= 0.95);
- probetop's loss % next to the drop rate nftables actually applied
  (dropped / seen by the rule: exact counters) and the difference in points
  (target <= 0.5), and whether probetop's lost count equals nft's drops
  (it should when nothing is left in flight: ``--grace`` below the 0.5 s stop
  wait resolves every request).

Everything is removed at the end (also on Ctrl-C). Root only (namespaces,
nft, raw sockets). Traffic never leaves the machine: the peer's /30 exists
only on the veth pair, and the route to it is checked first.

Usage: .venv/bin/python benchmarks/icmp_loss_vs_ping.py [--time 3] [--rounds 1]
    [--drops 0,1,10,50] [--size 1] [--grace 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from figures import Goal, add_figures_option, at_least, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
TABLE = "icmpbench"


def sh(*cmd: str, check: bool = True) -> str:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=60).stdout


@dataclass
class Namespace:
    """A peer in its own namespace, reached over a veth pair; removed by ``close``."""

    name: str
    host_if: str
    host_addr: str
    peer_addr: str

    @classmethod
    def create(cls) -> Namespace:
        tag = secrets.token_hex(3)
        used = sh("ip", "-4", "route", "show", "table", "all", check=False)
        for _ in range(100):
            a, b = secrets.randbelow(250) + 2, secrets.randbelow(63) * 4
            if f"10.{a}.{b}." not in used:
                break
        ns = cls(f"icmp-bench-{tag}", f"icb{tag}h", f"10.{a}.{b}.1", f"10.{a}.{b}.2")
        peer_if = f"icb{tag}p"
        sh("ip", "netns", "add", ns.name)
        try:
            sh("ip", "link", "add", ns.host_if, "type", "veth", "peer", "name", peer_if)
            sh("ip", "link", "set", peer_if, "netns", ns.name)
            sh("ip", "addr", "add", f"{ns.host_addr}/30", "dev", ns.host_if)
            sh("ip", "link", "set", ns.host_if, "up")
            ns.exec("ip", "addr", "add", f"{ns.peer_addr}/30", "dev", peer_if)
            ns.exec("ip", "link", "set", peer_if, "up")
            ns.exec("ip", "link", "set", "lo", "up")
            deadline = time.monotonic() + 5
            while "LOWER_UP" not in sh("ip", "-o", "link", "show", ns.host_if):
                if time.monotonic() > deadline:
                    raise RuntimeError("veth pair did not come up")
                time.sleep(0.05)
            route = sh("ip", "route", "get", ns.peer_addr)
            if f"dev {ns.host_if}" not in route:
                raise RuntimeError(f"route to the peer does not use the veth: {route}")
        except BaseException:
            ns.close()
            raise
        return ns

    def exec(self, *cmd: str) -> str:
        return sh("ip", "netns", "exec", self.name, *cmd)

    def set_drop(self, drop_pct: float) -> None:
        """One chain: count every echo request, then drop drop_pct % of them (counted)."""
        if TABLE in self.exec("nft", "list", "tables"):
            self.exec("nft", "delete", "table", "inet", TABLE)
        permille = round(drop_pct * 10)
        self.exec(
            "nft",
            f"add table inet {TABLE}; "
            f"add chain inet {TABLE} input {{ type filter hook input priority 0; }}; "
            f"add rule inet {TABLE} input icmp type echo-request counter comment seen; "
            f"add rule inet {TABLE} input icmp type echo-request "
            f"numgen random mod 1000 < {permille} counter drop comment dropped",
        )

    def counters(self) -> tuple[int, int]:
        """(echo requests seen, dropped) so far (``nft reset counters`` does
        not reset a rule's own counter on every nft version: subtract)."""
        doc = json.loads(self.exec("nft", "-j", "list", "table", "inet", TABLE))
        got: dict[str, int] = {}
        for item in doc["nftables"]:
            rule = item.get("rule")
            if not rule:
                continue
            for expr in rule["expr"]:
                if "counter" in expr:
                    got[rule.get("comment", "")] = expr["counter"]["packets"]
        return got.get("seen", 0), got.get("dropped", 0)

    def close(self) -> None:
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.name, check=False)


def run_ping(addr: str, size: int, seconds: float) -> float:
    # ping -w takes whole seconds.
    out = sh(
        "ping", "-q", "-f", "-s", str(size), "-w", str(max(1, round(seconds))), addr, check=False
    )
    m = re.search(r"(\d+) packets transmitted, (\d+) received.*time (\d+)ms", out)
    if not m:
        raise SystemExit(f"cannot parse ping output:\n{out}")
    return int(m.group(2)) / (int(m.group(3)) / 1000.0)


def run_probetop(addr: str, size: int, seconds: float, grace: float) -> dict:
    cmd = [
        *PROBETOP,
        "icmp",
        addr,
        "--flood",
        "--size",
        str(size),
        "--time",
        f"{seconds:g}",
        "--grace",
        f"{grace:g}",
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"probetop failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
        ) from None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--drops", default="0,1,10,50")
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--grace", type=float, default=0.3)
    add_figures_option(ap)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces, nft, raw sockets)", file=sys.stderr)
        return 2
    for tool in ("ip", "nft", "ping"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    drops = [float(x) for x in args.drops.split(",")]
    # Compile/load the native loop once, outside the timed runs.
    subprocess.run([*PROBETOP, "icmp", "127.0.0.1", "-c", "1", "--json"], capture_output=True)
    ns = Namespace.create()
    print(f"namespace {ns.name}, peer {ns.peer_addr} via {ns.host_if}; {args.time:g} s per run")
    header = (
        f"{'drop%':>6} {'round':>5} {'ping r/s':>10} {'probetop r/s':>12} {'ratio':>6} "
        f"{'nft drop%':>9} {'loss%':>7} {'diff':>6} {'lost':>7} {'nft drops':>9} "
        f"{'in flight':>9}"
    )
    print(header)
    failures = 0
    try:
        for drop in drops:
            ns.set_drop(drop)
            ratios = []
            for rnd in range(args.rounds):
                ping_rps = run_ping(ns.peer_addr, args.size, args.time)
                seen0, dropped0 = ns.counters()
                doc = run_probetop(ns.peer_addr, args.size, args.time, args.grace)
                seen, dropped = ns.counters()
                seen, dropped = seen - seen0, dropped - dropped0
                nft_pct = 100.0 * dropped / seen if seen else 0.0
                rps = doc["replies_per_second"] or 0.0
                ratio = rps / ping_rps if ping_rps else float("nan")
                ratios.append(ratio)
                loss = doc["loss_pct"] or 0.0
                diff = loss - nft_pct
                print(
                    f"{drop:6g} {rnd + 1:5d} {ping_rps:10,.0f} {rps:12,.0f} {ratio:6.2f} "
                    f"{nft_pct:9.3f} {loss:7.3f} {diff:+6.3f} {doc['lost']:7d} {dropped:9d} "
                    f"{doc['in_flight_at_end']:9d}"
                )
                failures += ratio < 0.95 or abs(diff) > 0.5
                case = f"nft drops {drop:g} %, round {rnd + 1}"
                report(
                    case,
                    "replies/s",
                    rps,
                    ping_rps,
                    unit="replies/s",
                    reference_tool="ping -f",
                    goal=at_least(0.95),
                )
                report(
                    case,
                    "loss",
                    loss,
                    nft_pct,
                    unit="%",
                    reference_tool="nft drop counter",
                    goal=Goal(hi=0.5, of="diff"),
                )
            if args.rounds > 1:
                print(f"{drop:6g} median ratio {statistics.median(ratios):.2f}")
    finally:
        ns.close()
    print("all within target" if not failures else f"{failures} run(s) outside target")
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
