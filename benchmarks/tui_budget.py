#!/usr/bin/env python3
"""Measure what the dashboard costs a user over SSH, against the issue's budget.

Runs each command in a detached tmux pane (a private tmux server, so no other
session is touched) at COLSxROWS, captures every byte written to the terminal
(``pipe-pane``), and after a settle period measures for SECONDS:

- CPU: CPU time of every process in the pane's process tree (all their
  threads; the scheduler's ns account, /proc/PID/task/TID/schedstat), % of
  one core. A live ``probetop`` is two processes: a waiter
  that only waits (so that ``d`` can detach) and the dashboard it forked;
  measuring the pane's first process alone measures the waiter (~0 %);
- main %: the dashboard process's main thread alone (Textual, the event loop
  and the asyncio probes; in the demo the rest is the probes' own threads);
- wakeups/s: voluntary context switches of the dashboard's threads (an idle
  dashboard should sleep, not poll);
- bytes/s written to the terminal; RSS of the dashboard process at the end.

The method of /work/shared/tools/tui-meter.sh (which produced the reference
figures in reference.md), extended to the process tree and made finer than
its 10 ms ticks.

``--reference PATH`` measures another build's probetop too, alternating the
two run by run (``--repeat`` pairs) so both see the same machine load, and
prints medians and ranges: the way to report a before / after.

usage: benchmarks/tui_budget.py [--seconds 30] [--settle 15] [--size 120x40]
       [--skip-demo | --only-demo] [--probetop PATH] [--reference PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from figures import add_figures_option, at_most, report

REPO = Path(__file__).resolve().parent.parent
PROBETOP = str(REPO / ".venv" / "bin" / "probetop")
SOCKET = f"probetop-budget-{os.getpid()}"
SETTLE_S = 3.0  # as tui-meter.sh; demo panes keep joining for ~10 s, see --settle


@dataclass(frozen=True)
class Budget:
    """Issue 15's budget: passive panes <= 0.35 % of a core (btop: 0.35 %),
    the demo's main thread < 2 %, terminal traffic and RSS as before."""

    cpu_pct: float = 0.35
    demo_main_pct: float = 2.0
    bytes_per_s: float = 10_000
    rss_mb: float = 80.0


BUDGET = Budget()


@dataclass(frozen=True)
class Result:
    """One measured run."""

    cpu_pct: float  # the whole process tree, % of one core
    main_pct: float  # the dashboard's main thread
    wakeups_per_s: float  # voluntary context switches of the dashboard's threads
    bytes_per_s: float
    rss_mb: float


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], check=True, capture_output=True, text=True
    ).stdout


def _stat_fields(path: str) -> list[str]:
    # Fields after the command name (which may contain spaces and parentheses).
    return Path(path).read_text().rsplit(")", 1)[1].split()


def cpu_ns(pid: int, tid: int | None = None) -> int:
    """CPU time of the process (all its threads), or of one thread ``tid``, in
    ns: the scheduler's own account (schedstat), not utime+stime, whose 10 ms
    ticks are 0.05 % of a core over a 20 s run (too coarse for a 0.35 % budget)."""
    tids = [tid] if tid is not None else [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    total = 0
    for t in tids:
        try:
            total += int(Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()[0])
        except OSError:
            continue  # a thread that just ended
    return total


def process_tree(root: int) -> list[int]:
    """``root`` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(f"/proc/{entry}/stat")[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def tree_ns(pids: list[int]) -> dict[int, int]:
    used = {}
    for pid in pids:
        try:
            used[pid] = cpu_ns(pid)
        except OSError:
            pass  # exited
    return used


def dashboard_pid(pane_pid: int) -> int:
    """The process that draws: the pane's own, or the child a live
    ``probetop`` forked (same command line) while the parent waits."""
    try:
        cmdline = Path(f"/proc/{pane_pid}/cmdline").read_bytes()
    except OSError:
        return pane_pid
    for pid in process_tree(pane_pid)[1:]:
        try:
            if (
                Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline
                and int(_stat_fields(f"/proc/{pid}/stat")[1]) == pane_pid
            ):
                return pid
        except OSError:
            continue
    return pane_pid


def wakeups(pid: int) -> int:
    """Voluntary context switches of all threads of ``pid`` (each one a sleep)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(
    name: str, command: list[str], seconds: float, cols: int, rows: int, settle: float = SETTLE_S
) -> Result:
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
        pane = int(tmux("list-panes", "-t", name, "-F", "#{pane_pid}").strip())
        main = dashboard_pid(pane)
        t0 = tree_ns(process_tree(pane))
        b0, w0 = out.stat().st_size if out.exists() else 0, time.monotonic()
        m0, v0 = cpu_ns(main, main), wakeups(main)
        time.sleep(seconds)
        t1 = tree_ns(process_tree(pane))
        b1, w1 = out.stat().st_size, time.monotonic()
        m1, v1 = cpu_ns(main, main), wakeups(main)
        rss = rss_kb(main)
        screen = tmux("capture-pane", "-p", "-t", name)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-session", "-t", name], capture_output=True)
    wall = w1 - w0
    # A process that started during the window counts from zero; one that
    # ended is lost (the dashboard's own processes live throughout).
    used = sum(t1[pid] - t0.get(pid, 0) for pid in t1)
    (out.parent / f"{name}.screen").write_text(screen)
    print(f"  (final screen of {name}: {out.parent / (name + '.screen')})", file=sys.stderr)
    return Result(
        cpu_pct=used / 1e9 / wall * 100.0,
        main_pct=(m1 - m0) / 1e9 / wall * 100.0,
        wakeups_per_s=(v1 - v0) / wall,
        bytes_per_s=(b1 - b0) / wall,
        rss_mb=rss / 1024.0,
    )


def verdicts(name: str, r: Result) -> list[str]:
    """ok/OVER per budgeted figure; the demo's CPU is its probes', so only
    its main thread and its terminal traffic are budgeted."""
    if name.startswith("demo"):
        checks = [("main", r.main_pct, BUDGET.demo_main_pct)]
    else:
        checks = [("cpu", r.cpu_pct, BUDGET.cpu_pct), ("rss", r.rss_mb, BUDGET.rss_mb)]
    checks.append(("bytes", r.bytes_per_s, BUDGET.bytes_per_s))
    return [f"{k}:{'ok' if v <= limit else 'OVER'}" for k, v, limit in checks]


def row(label: str, r: Result) -> str:
    return (
        f"{label:<16} {r.cpu_pct:7.2f} {r.main_pct:7.2f} {r.wakeups_per_s:8.1f} "
        f"{r.bytes_per_s:9.0f} {r.rss_mb:7.1f}"
    )


def summary(label: str, results: list[Result]) -> str:
    """Median and range of each figure over repeated runs."""

    def fmt(values: list[float], spec: str) -> str:
        med = statistics.median(values)
        return f"{med:{spec}} ({min(values):{spec}}-{max(values):{spec}})"

    return (
        f"{label:<16} cpu {fmt([r.cpu_pct for r in results], '.2f')} %  "
        f"main {fmt([r.main_pct for r in results], '.2f')} %  "
        f"wakeups/s {fmt([r.wakeups_per_s for r in results], '.1f')}  "
        f"bytes/s {fmt([r.bytes_per_s for r in results], '.0f')}  "
        f"RSS {fmt([r.rss_mb for r in results], '.1f')} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--only-demo", action="store_true")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_S, help="seconds to wait before measuring"
    )
    parser.add_argument("--probetop", default=PROBETOP, help="the probetop to measure")
    parser.add_argument(
        "--reference", help="another build's probetop, measured alternately (before / after)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (alternated)")
    add_figures_option(parser)
    args = parser.parse_args()
    cols, rows = (int(x) for x in args.size.split("x"))
    builds = [("ours", args.probetop)]
    if args.reference:
        builds.insert(0, ("ref", args.reference))
    commands: list[tuple[str, list[str]]] = []
    if not args.only_demo:
        commands.append(("probetop", []))
    if not args.skip_demo:
        commands.append(("demo", ["demo"]))
    print(
        f"terminal {cols}x{rows}, {args.seconds:g} s after a {args.settle:g} s settle; "
        f"budget: probetop cpu <= {BUDGET.cpu_pct}% of a core, RSS <= {BUDGET.rss_mb:g} MB; "
        f"demo main thread < {BUDGET.demo_main_pct}%; <= {BUDGET.bytes_per_s:g} B/s"
    )
    print(
        f"{'run':<16} {'cpu %':>7} {'main %':>7} {'wakeup/s':>8} {'bytes/s':>9} "
        f"{'RSS MB':>7}  verdict"
    )
    results: dict[str, list[Result]] = {}
    failed = False
    for i in range(args.repeat):
        for cmd_name, cmd_args in commands:
            for build, exe in builds:
                label = f"{cmd_name}/{build}" if args.reference else cmd_name
                try:
                    r = measure(cmd_name, [exe, *cmd_args], args.seconds, cols, rows, args.settle)
                except (subprocess.CalledProcessError, OSError, ValueError) as exc:
                    print(f"{label:<16} could not be measured (did it exit early?): {exc}")
                    failed = True
                    continue
                results.setdefault(label, []).append(r)
                v = verdicts(cmd_name, r)
                if build == "ours":
                    failed |= any(x.endswith("OVER") for x in v)
                print(f"{row(label, r)}  {' '.join(v)}  [run {i + 1}]", flush=True)
    for label, rs in results.items():
        if label.endswith("/ref"):
            continue
        med = {k: statistics.median(getattr(r, k) for r in rs) for k in Result.__annotations__}
        case = f"{label} {cols}x{rows}, {args.seconds:g} s, median of {len(rs)}"
        if label.startswith("demo"):
            report(
                case,
                "main thread CPU",
                med["main_pct"],
                unit="% of a core",
                goal=at_most(BUDGET.demo_main_pct, of="probetop"),
            )
        else:
            report(
                case,
                "CPU, process tree",
                med["cpu_pct"],
                unit="% of a core",
                goal=at_most(BUDGET.cpu_pct, of="probetop"),
            )
            report(
                case, "RSS", med["rss_mb"], unit="MB", goal=at_most(BUDGET.rss_mb, of="probetop")
            )
        report(
            case,
            "terminal output",
            med["bytes_per_s"],
            unit="B/s",
            goal=at_most(BUDGET.bytes_per_s, of="probetop"),
        )
    if args.repeat > 1:
        print("medians (ranges):")
        for label, rs in results.items():
            print(summary(label, rs))
    print(
        "reference (reference.md, same method): btop 0.35% / 7.1 KB/s / 6 MB; "
        "bare Textual app with 5 sparklines 1.45% / 38 KB/s / 39 MB"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
