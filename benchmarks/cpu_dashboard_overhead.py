#!/usr/bin/env python3
"""Does the dashboard eat the benchmark? events/s with the full UI open vs headless.

For each thread count (default 1 and nproc) it runs, alternately (ABBA):

- headless: ``probetop cpu --json --time T --threads N``;
- dashboard: ``probetop cpu --time T --threads N --record FILE`` in a detached
  tmux window of 120x40 (the full dashboard: the CPU pane plus the passive
  CPU, disk and network panes drawing every second), then reads the events/s
  the probe recorded at the end of its run from FILE and quits the app.

and prints dashboard / headless (median of the paired ratios); the target is
>= 0.97. With N = nproc the UI has no idle core and competes with the workers,
which is the hard case.

Usage: .venv/bin/python benchmarks/cpu_dashboard_overhead.py [--time 10] [--rounds 3]
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


def headless(threads: int, max_prime: int, seconds: float) -> float:
    cmd = [
        *PROBETOP,
        "cpu",
        "--json",
        f"--threads={threads}",
        f"--time={seconds:g}",
        f"--max-prime={max_prime}",
    ]
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return float(doc["events_per_second"])


def recorded_eps(path: Path) -> float | None:
    """events/s of the finished run, from the final sample's phase summary."""
    from probetop.probes.replay import load_session

    try:
        session = load_session(path)
    except Exception:
        return None
    for line in reversed(session.samples("cpu")):
        summary = (line.get("extra") or {}).get("phase_summary")
        if summary:
            return float(summary["events_per_second"])
    return None


def dashboard(threads: int, max_prime: int, seconds: float, workdir: Path) -> float:
    record = workdir / f"dash-{threads}-{time.monotonic_ns()}.jsonl"
    session = f"probetop-cpu-bench-{os.getpid()}"
    cmd = [
        *PROBETOP,
        "cpu",
        f"--threads={threads}",
        f"--time={seconds:g}",
        f"--max-prime={max_prime}",
        "--record",
        str(record),
    ]
    env_cmd = "TERM=xterm-256color " + shlex.join(cmd)
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", env_cmd],
        check=True,
    )
    try:
        deadline = time.monotonic() + seconds + 30
        eps = None
        while time.monotonic() < deadline:
            time.sleep(0.5)
            eps = recorded_eps(record) if record.exists() else None
            if eps is not None:
                break
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.0)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)
    if eps is None:
        raise RuntimeError(f"the dashboard run recorded no final events/s ({record})")
    return eps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=10.0, help="seconds per run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="ABBA pairs per thread count")
    parser.add_argument("--threads", type=int, nargs="*", help="thread counts (default 1 nproc)")
    parser.add_argument("--max-prime", type=int, default=10000)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: apt-get install tmux", file=sys.stderr)
        return 2
    nproc = len(os.sched_getaffinity(0))
    counts = args.threads or sorted({1, nproc})
    print(f"# {nproc} CPUs, load average {os.getloadavg()[0]:.2f}; {args.rounds} ABBA pairs of")
    print(f"# {args.time:g} s runs, max-prime {args.max_prime}, dashboard at 120x40 in tmux")
    print(f"{'threads':>7} {'headless eps':>13} {'dashboard eps':>14} {'ratio':>7}  paired ratios")
    worst = 2.0
    with tempfile.TemporaryDirectory(prefix="probetop-cpu-bench-") as tmp:
        for threads in counts:
            ratios, hs, ds = [], [], []
            for r in range(args.rounds):
                order = ("h", "d") if r % 2 == 0 else ("d", "h")
                got = {}
                for who in order:
                    if who == "h":
                        got["h"] = headless(threads, args.max_prime, args.time)
                    else:
                        got["d"] = dashboard(threads, args.max_prime, args.time, Path(tmp))
                hs.append(got["h"])
                ds.append(got["d"])
                ratios.append(got["d"] / got["h"])
            ratio = statistics.median(ratios)
            worst = min(worst, ratio)
            print(
                f"{threads:>7} {statistics.median(hs):>13.2f} {statistics.median(ds):>14.2f} "
                f"{ratio:>7.3f}  " + " ".join(f"{x:.3f}" for x in ratios)
            )
    print(f"# lowest dashboard/headless ratio: {worst:.3f} (target >= 0.97)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
