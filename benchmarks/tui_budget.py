#!/usr/bin/env python3
"""Measure what the dashboard costs a user over SSH, against the issue's budget.

Runs each command in a detached tmux pane (a private tmux server, so no other
session is touched) at COLSxROWS, captures every byte written to the terminal
(``pipe-pane``), and after a settle period measures for SECONDS:

- CPU: utime+stime of the pane's process (all its threads), % of one core,
  and of its main thread alone (Textual and the event loop: in the demo the
  rest is the probes' own worker threads);
- bytes/s written to the terminal;
- RSS at the end.

Same method as /work/shared/tools/tui-meter.sh (which produced the reference
figures in reference.md), so the numbers are comparable.

usage: benchmarks/tui_budget.py [--seconds 20] [--size 120x40] [--skip-demo]
       [--probetop PATH]  (another build's probetop, to measure before / after)
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBETOP = str(REPO / ".venv" / "bin" / "probetop")
SOCKET = f"probetop-budget-{os.getpid()}"
BUDGET = {"cpu_pct": 1.5, "bytes_per_s": 10_000, "rss_mb": 80.0}
SETTLE_S = 3.0  # as tui-meter.sh; demo panes keep joining for ~10 s, see --settle


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], check=True, capture_output=True, text=True
    ).stdout


def cpu_ticks(pid: int, tid: int | None = None) -> int:
    """utime + stime of the process (all threads), or of one thread ``tid``."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(
    name: str, command: list[str], seconds: float, cols: int, rows: int, settle: float = SETTLE_S
) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="tui-budget-")) / f"{name}.bytes"
    # Killing the last session ends the private server; a new session started
    # while it is still going away fails, so wait until it has gone.
    for _ in range(50):
        alive = subprocess.run(["tmux", "-L", SOCKET, "list-sessions"], capture_output=True)
        if alive.returncode != 0:
            break
        time.sleep(0.1)
    tmux(
        "new-session",
        "-d",
        "-s",
        name,
        "-x",
        str(cols),
        "-y",
        str(rows),
        "exec " + shlex.join(command),
    )
    try:
        tmux("pipe-pane", "-o", "-t", name, f"cat >> {shlex.quote(str(out))}")
        time.sleep(settle)
        pid = int(tmux("list-panes", "-t", name, "-F", "#{pane_pid}").strip())
        hz = os.sysconf("SC_CLK_TCK")
        t0, b0, w0 = cpu_ticks(pid), out.stat().st_size if out.exists() else 0, time.monotonic()
        m0 = cpu_ticks(pid, pid)
        time.sleep(seconds)
        t1, b1, w1 = cpu_ticks(pid), out.stat().st_size, time.monotonic()
        m1 = cpu_ticks(pid, pid)
        rss = rss_kb(pid)
        screen = tmux("capture-pane", "-p", "-t", name)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-session", "-t", name], capture_output=True)
    wall = w1 - w0
    result = {
        "cpu_pct": (t1 - t0) / hz / wall * 100.0,
        # The main thread: Textual, the event loop and the asyncio probes; the
        # demo's CPU, disk and native loops run in threads of their own.
        "main_pct": (m1 - m0) / hz / wall * 100.0,
        "bytes_per_s": (b1 - b0) / wall,
        "rss_mb": rss / 1024.0,
    }
    (out.parent / f"{name}.screen").write_text(screen)
    print(f"  (final screen of {name}: {out.parent / (name + '.screen')})", file=sys.stderr)
    return result


def verdict(key: str, value: float) -> str:
    return "ok" if value <= BUDGET[key] else "OVER"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_S, help="seconds to wait before measuring"
    )
    parser.add_argument("--probetop", default=PROBETOP, help="the probetop to measure")
    args = parser.parse_args()
    cols, rows = (int(x) for x in args.size.split("x"))
    runs = [("probetop", [args.probetop])]
    if not args.skip_demo:
        runs.append(("demo", [args.probetop, "demo"]))
    print(
        f"terminal {cols}x{rows}, {args.seconds:g} s after a {args.settle:g} s settle; "
        f"budget: cpu <= {BUDGET['cpu_pct']}% of a core, <= {BUDGET['bytes_per_s']} B/s, "
        f"RSS <= {BUDGET['rss_mb']:g} MB"
    )
    print(f"{'command':<12} {'cpu %':>7} {'main %':>7} {'bytes/s':>9} {'RSS MB':>7}  verdict")
    failed = False
    for name, command in runs:
        try:
            r = measure(name, command, args.seconds, cols, rows, args.settle)
        except (subprocess.CalledProcessError, FileNotFoundError, ProcessLookupError) as exc:
            print(f"{name:<12} could not be measured (did it exit early?): {exc}")
            failed = True
            continue
        checks = ["bytes_per_s"] if name == "demo" else ["cpu_pct", "bytes_per_s", "rss_mb"]
        verdicts = [f"{k}:{verdict(k, r[k])}" for k in checks]
        failed |= any(v.endswith("OVER") for v in verdicts)
        print(
            f"{name:<12} {r['cpu_pct']:7.2f} {r['main_pct']:7.2f} {r['bytes_per_s']:9.0f} "
            f"{r['rss_mb']:7.1f}  " + " ".join(verdicts)
        )
    print(
        "reference (reference.md, same method): btop 0.35% / 7.1 KB/s / 6 MB; "
        "bare Textual app with 5 sparklines 1.45% / 38 KB/s / 39 MB"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
