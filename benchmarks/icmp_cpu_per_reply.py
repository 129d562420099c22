#!/usr/bin/env python3
"""CPU time per reply: ping -f vs probetop's flood thread, from perf samples, in one run.

On a shared 2-core machine, replies/s (benchmarks/icmp_vs_ping.py) mostly
measures how much CPU each tool was given, and its replies per CPU-second
subtracts a start-up cost measured once, which swings as much as the flood's
own CPU time. This script counts instead: ``perf record -e cpu-clock`` on
each run, and the samples of ping's process and of probetop's flood thread
(the one whose samples reach the kernel's sendto path; start-up and the UI
are other threads) divided by the
replies each reports. Rounds alternate ping, probetop, probetop, ping, and
print ping's CPU per reply / probetop's (> 1: probetop spends less per reply).
``--streams N`` compares N flood threads (their samples summed) with N
``ping -f`` run together, as icmp_vs_ping.py does; ``--host`` takes the far
end of a network namespace you made instead of 127.0.0.1.

``--baseline DIR`` also runs another copy of probetop (``DIR/probetop/...``,
e.g. ``git archive`` of an older commit, put first on PYTHONPATH) and prints
baseline / this: a before/after comparison of the native loop's cost.

Usage (root: perf and a raw socket): .venv/bin/python benchmarks/icmp_cpu_per_reply.py
    [--time 3] [--rounds 3] [--size 1] [--streams 1] [--host 127.0.0.1] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from figures import add_figures_option, at_least, report

FREQ = 4000  # samples per CPU-second
HOST = "127.0.0.1"
PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def _samples_by_thread(data: str, comm: str = "ping") -> collections.Counter[str]:
    out = subprocess.run(
        ["perf", "script", "-i", data, "-F", "comm,tid"], capture_output=True, text=True, check=True
    ).stdout
    rows = (line.split() for line in out.splitlines())
    return collections.Counter(r[1] for r in rows if len(r) == 2 and r[0] == comm)


# Kernel symbols only the flood loop's thread hits: its sendto path (the echo
# request and the reply are handled in the softirq run by the sender's sendto).
SEND_SYMBOLS = frozenset(
    {
        "__sys_sendto",
        "raw_sendmsg",
        "rawv6_sendmsg",
        "ping_v4_sendmsg",
        "ping_v6_sendmsg",
        "__ip_append_data",
        "loopback_xmit",
        "__dev_queue_xmit",
        "icmp_rcv",
        "icmp_reply",
        "raw_rcv",
        "raw_local_deliver",
    }
)


def _flood_thread_samples(data: str, streams: int = 1) -> int:
    """Samples of the ``streams`` threads that sent the echo requests (the
    most samples in the kernel's sendto path). Not the busiest thread: under load the flood
    gets less CPU than start-up (imports, loading the loop), which then
    outweighs it (a run at load 27 read 2x ping's CPU per reply that way)."""
    out = subprocess.run(
        ["perf", "script", "-i", data, "-F", "tid,ip,sym"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total: collections.Counter[str] = collections.Counter()
    sending: collections.Counter[str] = collections.Counter()
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        total[parts[0]] += 1
        if len(parts) > 2 and parts[2] in SEND_SYMBOLS:
            sending[parts[0]] += 1
    if not sending:
        raise SystemExit("no perf sample in the sendto path: cannot find the flood thread")
    return sum(total[tid] for tid, _ in sending.most_common(streams))


def _record(cmd: list[str], data: str, env: dict[str, str] | None = None) -> str:
    perf = ["perf", "record", "-q", "-F", str(FREQ), "-e", "cpu-clock", "-o", data, "--"]
    r = subprocess.run([*perf, *cmd], capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def ping_us(size: int, seconds: float, data: str, streams: int = 1, host: str = HOST) -> float:
    """ping -f's CPU microseconds per reply (all of its processes: ``streams``
    of them run together)."""
    one = f"ping -q -f -s {size} -w {seconds:g} {host}"
    out = _record(["sh", "-c", " & ".join([one] * streams) + " & wait"], data)
    got = [int(n) for n in re.findall(r"(\d+) received", out)]
    if len(got) != streams:
        raise SystemExit(f"cannot parse ping output:\n{out}")
    return sum(_samples_by_thread(data).values()) / FREQ / sum(got) * 1e6


def _env(baseline: str | None) -> dict[str, str] | None:
    """The environment that runs the baseline copy of probetop (None: this one)."""
    return None if baseline is None else {**os.environ, "PYTHONPATH": os.path.abspath(baseline)}


def probetop_us(
    size: int, seconds: float, data: str, baseline: str | None, streams: int = 1, host: str = HOST
) -> float:
    """probetop's flood threads' CPU microseconds per reply."""
    env = _env(baseline)
    cmd = [*PROBETOP, "icmp", "--flood", f"--size={size}", f"--time={seconds:g}", "--json"]
    doc = json.loads(_record([*cmd, f"--streams={streams}", host], data, env))
    return _flood_thread_samples(data, streams) / FREQ / doc["received"] * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--streams", type=int, default=1, help="N flood threads vs N ping -f")
    ap.add_argument("--host", default=HOST, help="127.0.0.1, or a namespace's address you made")
    ap.add_argument("--baseline", metavar="DIR", help="also run probetop from DIR (before/after)")
    add_figures_option(ap)
    args = ap.parse_args()
    for tool in ("perf", "ping"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed")
    with tempfile.TemporaryDirectory(prefix="probetop-icmp-cpu-") as tmp:
        data = os.path.join(tmp, "perf.data")
        t, size, n, host = args.time, args.size, args.streams, args.host
        for warm in [None, args.baseline] if args.baseline else [None]:
            # The first run may compile the loop; too short to find its thread.
            _record(
                [*PROBETOP, "icmp", "--flood", "--time=0.2", "--json", "127.0.0.1"],
                data,
                _env(warm),
            )
        ratios: list[float] = []
        vs_base: list[float] = []
        print(f"load average at the start {os.getloadavg()[0]:.2f}; {t:g} s per run")
        for rnd in range(args.rounds):
            a = ping_us(size, t, data, n, host)
            b = probetop_us(size, t, data, None, n, host)
            base = []
            if args.baseline:
                base = [probetop_us(size, t, data, args.baseline, n, host) for _ in range(2)]
            b2 = probetop_us(size, t, data, None, n, host)
            a2 = ping_us(size, t, data, n, host)
            ping, ours = (a + a2) / 2, (b + b2) / 2
            ratios.append(ping / ours)
            line = f"round {rnd + 1}: CPU us/reply ping -f {ping:.2f}, probetop {ours:.2f}"
            line += f"; ping/probetop {ratios[-1]:.3f}"
            if base:
                vs_base.append(statistics.mean(base) / ours)
                line += f"; baseline {statistics.mean(base):.2f}, baseline/this {vs_base[-1]:.3f}"
            print(line, flush=True)
    print(f"median ping -f / probetop CPU per reply: {statistics.median(ratios):.3f}")
    report(
        f"flood {host} -s {args.size}, {n} stream(s), CPU per reply (perf cpu-clock)",
        "CPU us per reply",
        None,
        None,
        unit="us",
        reference_tool="ping -q -f" + (f" x{n}" if n > 1 else ""),
        ratio=statistics.median(ratios),
        goal=at_least(1.0),
        note="ratio = ping's CPU per reply / probetop's (> 1: probetop spends less); "
        f"rounds {min(ratios):.3f}-{max(ratios):.3f}",
    )
    if vs_base:
        print(f"median baseline / this CPU per reply: {statistics.median(vs_base):.3f}")
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
