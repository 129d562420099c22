#!/usr/bin/env python3
"""Does the dashboard slow the flood? replies/s with the full UI open vs headless.

ABBA pairs of:
- headless: ``probetop icmp --flood --size 1 --time T --json 127.0.0.1``;
- dashboard: the same without ``--json``, with ``--record FILE``, in a
  detached tmux window of 120x40 (the icmp pane plus the passive CPU, disk
  and network panes redrawing every second); replies/s is read from the
  recorded samples (sum of replies over the sum of interval lengths), then
  the app is quit.

Prints dashboard / headless per pair and the median; the target is >= 0.95
(issue 4). On 2 cores the UI competes with the flood loop and with the
kernel's loopback work, which is the hard case.

Usage (root): .venv/bin/python benchmarks/icmp_dashboard_overhead.py [--time 8] [--rounds 2]
Needs tmux.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBETOP = [sys.executable, "-m", "probetop.tui.cli"]
HOST = "127.0.0.1"


def headless(seconds: float) -> float:
    cmd = [*PROBETOP, "icmp", "--flood", "--size=1", f"--time={seconds:g}", "--json", HOST]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return float(json.loads(r.stdout)["replies_per_second"])


def recorded_rps(path: Path, seconds: float) -> float | None:
    """Replies/s over the recorded icmp samples, once the run has covered ``seconds``."""
    replies = covered = 0.0
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for text in lines:
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue  # a torn last line while the app is writing
        if line.get("type") == "sample" and line.get("probe") == f"icmp:{HOST}":
            interval = float(line["interval"])
            replies += float(line["values"].get("replies_per_s") or 0.0) * interval
            covered += interval
    if covered < seconds * 0.98:
        return None
    return replies / covered


def dashboard(seconds: float, workdir: Path) -> float:
    record = workdir / f"dash-{time.monotonic_ns()}.jsonl"
    session = f"probetop-icmp-bench-{os.getpid()}"
    cmd = [*PROBETOP, "icmp", "--flood", "--size=1", f"--time={seconds:g}", "--record"]
    cmd += [str(record), HOST]
    shell = "TERM=xterm-256color " + shlex.join(cmd)
    tmux = ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", shell]
    subprocess.run(tmux, check=True)
    try:
        deadline = time.monotonic() + seconds + 30
        rps = None
        while time.monotonic() < deadline and rps is None:
            time.sleep(0.5)
            rps = recorded_rps(record, seconds)
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.0)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)
    if rps is None:
        raise RuntimeError(f"the dashboard run recorded no full run of samples ({record})")
    return rps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=8.0)
    ap.add_argument("--rounds", type=int, default=2, help="ABBA pairs")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: apt-get install tmux", file=sys.stderr)
        return 2
    print(f"# load average {os.getloadavg()[0]:.2f}; {args.time:g} s flood runs to {HOST}")
    print(f"{'pair':>4} {'headless rps':>13} {'dashboard rps':>14} {'ratio':>6}")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="probetop-icmp-bench-") as tmp:
        for r in range(args.rounds):
            got: dict[str, float] = {}
            for who in ("h", "d") if r % 2 == 0 else ("d", "h"):
                got[who] = headless(args.time) if who == "h" else dashboard(args.time, Path(tmp))
            ratios.append(got["d"] / got["h"])
            print(f"{r + 1:>4} {got['h']:>13,.0f} {got['d']:>14,.0f} {ratios[-1]:>6.3f}")
    print(f"# median dashboard/headless: {statistics.median(ratios):.3f} (target >= 0.95)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
