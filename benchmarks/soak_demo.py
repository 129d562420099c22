"""Soak: `probetop demo --record` for a long time; memory stays flat, the recording stays valid.

Runs the demo headless (every probe against its embedded local targets, the
passive panes, a recording) for --seconds (default 3600), samples the
process tree's RSS every --every seconds, then stops it with SIGINT and
checks the recording: it loads, has a footer, every probe's samples arrive
at its interval without gaps, and its size per hour. Prints one verdict line
per claim:

    memory flat within 10 %   (RSS at the end vs RSS after the warm-up tenth)
    recording valid           (footer present, no torn line, samples complete)
    size per hour             (bytes of JSON Lines per hour of recording)

Usage: .venv/bin/python benchmarks/soak_demo.py [--seconds 3600] [--every 10] [--out DIR]
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from figures import Goal, add_figures_option, report
from probetop.probes.record import load_session

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def tree_rss(proc: psutil.Process) -> int:
    """RSS of the process and its children (the HTTP worker process counts)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--every", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=None, help="keep the recording here")
    add_figures_option(ap)
    args = ap.parse_args()

    workdir = Path(args.out or tempfile.mkdtemp(prefix="probetop-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    record = workdir / "soak.jsonl"
    cmd = [*PROBETOP, "demo", "--headless", "--record", str(record)]
    print(f"soak: {' '.join(cmd[2:])} for {args.seconds:.0f} s (RSS every {args.every:g} s)")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)
    samples: list[tuple[float, int]] = []
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < args.seconds:
            if proc.poll() is not None:
                print(f"FAIL: probetop exited early ({proc.returncode}): {proc.stderr.read()}")
                return 1
            samples.append((time.monotonic() - t0, tree_rss(ps)))
            time.sleep(args.every)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            print("FAIL: probetop did not stop within 10 s of SIGINT")
            return 1
    wall = time.monotonic() - t0

    tenth = max(1, len(samples) // 10)
    early = statistics.median(r for _t, r in samples[tenth : 2 * tenth] or samples[:1])
    late = statistics.median(r for _t, r in samples[-tenth:])
    growth = (late - early) / early
    print(
        f"RSS (process tree): after warm-up {early / 2**20:.1f} MiB, at the end "
        f"{late / 2**20:.1f} MiB, change {100 * growth:+.1f} %, peak "
        f"{max(r for _t, r in samples) / 2**20:.1f} MiB"
    )
    print(f"memory flat within 10 %: {'yes' if abs(growth) <= 0.10 else 'NO'}")
    report(
        f"probetop demo --headless --record, {wall:.0f} s",
        "RSS change after warm-up",
        100 * growth,
        unit="%",
        goal=Goal(hi=10.0, of="abs"),
    )
    # The trajectory says what one ratio cannot: levelling off or still climbing.
    marks = [samples[min(i * tenth, len(samples) - 1)] for i in range(11)]
    print("RSS by tenth: " + ", ".join(f"{t:.0f}s {r / 2**20:.1f}" for t, r in marks) + " (MiB)")

    session = load_session(record)
    size = os.path.getsize(record)
    per_probe: dict[str, list[float]] = {}
    for line in session.samples():
        per_probe.setdefault(line["probe"], []).append(float(line["t"]))
    # Complete = no gap: consecutive samples of a probe at most 3 intervals
    # apart (the demo samples once a second). A probe that ends by itself
    # (the warm-up's pass completes) stops sending; that is not a gap.
    short = {
        pid: sum(1 for a, b in itertools.pairwise(ts) if b - a > 3.0)
        for pid, ts in per_probe.items()
    }
    short = {pid: n for pid, n in short.items() if n}
    valid = session.footer is not None and not session.warnings and not short
    print(
        f"recording: {size / 1e6:.2f} MB, {session.duration_s:.0f} s, "
        f"{sum(len(ts) for ts in per_probe.values())} samples from {len(per_probe)} probes, "
        f"footer {'present' if session.footer else 'MISSING'}, "
        f"warnings {session.warnings or 'none'}"
    )
    if short:
        print(f"probes with gaps in their samples (count of gaps > 3 s): {short}")
    print(f"recording valid: {'yes' if valid else 'NO'}")
    print(f"size per hour: {size / max(session.duration_s, 1) * 3600 / 1e6:.1f} MB/h")
    print(f"wall time {wall:.0f} s; recording kept at {record}")
    return 0 if valid and abs(growth) <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
