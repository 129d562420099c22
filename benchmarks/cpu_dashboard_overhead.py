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

On a machine other people load, the wall ratio swings (other processes take
the cores at random moments), so it also measures the mechanism directly:
the CPU the dashboard process uses besides its worker threads (per-thread
/proc counters over the steady part of the run), and the lowest ratio that
much CPU could cause.

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
from typing import Any

from cpu_sched import PROBETOP, probetop_cpu_json, set_autogroup_nice
from figures import add_figures_option, at_least, report


def pane_pid(session: str) -> int:
    out = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.split()[0])


def headless(
    threads: int, max_prime: int, seconds: float, workdir: Path, nice: int | None
) -> dict[str, Any]:
    """The --json summary of a headless run, started in its own tmux session too:
    with sched_autogroup each session is scheduled as a group, so both modes
    must start the same way to compete equally with the rest of the machine."""
    out = workdir / f"headless-{threads}-{time.monotonic_ns()}.json"
    cmd = probetop_cpu_json(threads, max_prime, seconds)
    session = f"probetop-cpu-bench-h-{os.getpid()}"
    final, tmp = shlex.quote(str(out)), shlex.quote(f"{out}.tmp")
    shell = f"{shlex.join(cmd)} > {tmp} && mv {tmp} {final}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", shell], check=True
    )
    set_autogroup_nice(pane_pid(session), nice)
    try:
        deadline = time.monotonic() + seconds + 60
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.2)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)
    return dict(json.loads(out.read_text()))


def cpu_share(summary: dict[str, Any]) -> float:
    """CPU the workers got / (threads x run time): 1.0 = never descheduled."""
    cpu = sum(t.get("cpu_time_s") or 0.0 for t in summary["per_thread"])
    return cpu / (summary["threads"] * summary["total_time"])


def recorded_summary(path: Path) -> dict[str, Any] | None:
    """The finished run's summary, from the final sample the probe recorded."""
    from probetop.probes.record.reader import load_session

    try:
        session = load_session(path)
    except Exception:
        return None
    lines = session.samples("cpu")
    for line in reversed(lines):
        summary = (line.get("extra") or {}).get("phase_summary")
        if summary:
            found = dict(summary)
            found["intervals"] = [
                {
                    "t": line["t"] - lines[0]["t"] + lines[0]["interval"],
                    "interval_s": line["interval"],
                    "events": sum(line["extra"]["per_thread_events"]),
                    "full": line["extra"].get("full", True),
                }
                for line in lines
            ]
            return found
    return None


def steady_eps(summary: dict[str, Any], skip_s: float = 2.0) -> float:
    """events/s over the full intervals after the first ``skip_s`` seconds: leaves
    out start-up, when the dashboard is still drawing its first frames."""
    rows = [r for r in summary["intervals"] if r["full"] and r["t"] - r["interval_s"] >= skip_s]
    seconds = sum(r["interval_s"] for r in rows)
    return sum(r["events"] for r in rows) / seconds if seconds else float("nan")


def task_ticks(pid: int) -> dict[str, int]:
    """utime + stime (clock ticks) of every thread of ``pid``."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = int(fields[11]) + int(fields[12])
    return out


def ui_cores(before: dict[str, int], after: dict[str, int], workers: int, secs: float) -> float:
    """CPU (in cores) of every thread but the ``workers`` busiest: the dashboard's cost."""
    deltas = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
    return sum(deltas[workers:]) / os.sysconf("SC_CLK_TCK") / secs


def dashboard(
    threads: int, max_prime: int, seconds: float, workdir: Path, nice: int | None
) -> tuple[dict[str, Any], float | None]:
    """(recorded summary, dashboard CPU in cores excluding the workers)."""
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
    ui: float | None = None
    try:
        launched = time.monotonic()
        pid = pane_pid(session)
        set_autogroup_nice(pid, nice)
        # Steady state: after start-up and JIT (~1-2 s), before the run ends.
        time.sleep(3.0)
        t0, before = time.monotonic(), task_ticks(pid)
        time.sleep(max(1.0, seconds - 4.0))  # ends well before the run does
        ui = ui_cores(before, task_ticks(pid), threads, time.monotonic() - t0)
        deadline = launched + seconds + 30
        summary = None
        while time.monotonic() < deadline:
            time.sleep(0.5)
            summary = recorded_summary(record) if record.exists() else None
            if summary is not None:
                break
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.0)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)
    if summary is None:
        raise RuntimeError(f"the dashboard run recorded no final events/s ({record})")
    return summary, ui


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time", type=float, default=10.0, help="seconds per run (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="ABBA pairs per thread count")
    parser.add_argument("--threads", type=int, nargs="*", help="thread counts (default 1 nproc)")
    parser.add_argument("--max-prime", type=int, default=10000)
    parser.add_argument(
        "--nice",
        type=int,
        default=None,
        help="give both modes' sessions this autogroup nice (e.g. -10; root): "
        "steadier wall figures on a shared machine (see cpu_sched.py)",
    )
    add_figures_option(parser)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed: apt-get install tmux", file=sys.stderr)
        return 2
    nproc = len(os.sched_getaffinity(0))
    counts = args.threads or sorted({1, nproc})
    print(f"# {nproc} CPUs, load average {os.getloadavg()[0]:.2f}; {args.rounds} ABBA pairs of")
    print(f"# {args.time:g} s runs, max-prime {args.max_prime}, dashboard at 120x40 in tmux")
    print(f"# scheduling: autogroup nice {args.nice if args.nice is not None else 0} for both")
    print(
        f"{'threads':>7} {'headless eps':>13} {'dashboard eps':>14} {'ratio':>7} "
        f"{'UI CPU':>8} {'bound':>7} {'CPU share h/d':>13} {'per-CPU':>8} {'steady':>7}"
        "  paired ratios"
    )
    worst = 2.0
    with tempfile.TemporaryDirectory(prefix="probetop-cpu-bench-") as tmp:
        for threads in counts:
            ratios, hs, ds, uis, h_share, d_share, cpu_ratios = [], [], [], [], [], [], []
            steady: list[float] = []
            for r in range(args.rounds):
                order = ("h", "d") if r % 2 == 0 else ("d", "h")
                got: dict[str, dict[str, Any]] = {}
                for who in order:
                    if who == "h":
                        got["h"] = headless(
                            threads, args.max_prime, args.time, Path(tmp), args.nice
                        )
                    else:
                        got["d"], ui = dashboard(
                            threads, args.max_prime, args.time, Path(tmp), args.nice
                        )
                        if ui is not None:
                            uis.append(ui)
                h_eps = float(got["h"]["events_per_second"])
                d_eps = float(got["d"]["events_per_second"])
                hs.append(h_eps)
                ds.append(d_eps)
                ratios.append(d_eps / h_eps)
                steady.append(steady_eps(got["d"]) / steady_eps(got["h"]))
                h_share.append(cpu_share(got["h"]))
                d_share.append(cpu_share(got["d"]))
                # events per worker CPU-second: what the code did with the CPU it got
                cpu_ratios.append((d_eps / d_share[-1]) / (h_eps / h_share[-1]))
            ratio = statistics.median(ratios)
            worst = min(worst, ratio)
            ui = statistics.median(uis) if uis else float("nan")
            # The UI can only take CPU the workers would have had when every
            # core is busy: the bound is 1 - ui / min(threads, nproc) then.
            free = max(0, nproc - threads)
            bound = 1.0 if ui <= free else 1.0 - (ui - free) / min(threads, nproc)
            print(
                f"{threads:>7} {statistics.median(hs):>13.2f} {statistics.median(ds):>14.2f} "
                f"{ratio:>7.3f} {100 * ui:>7.2f}% {bound:>7.3f} "
                f"{statistics.median(h_share):>6.2f}/{statistics.median(d_share):<5.2f} "
                f"{statistics.median(cpu_ratios):>8.3f} {statistics.median(steady):>7.3f}  "
                + " ".join(f"{x:.3f}" for x in ratios)
            )
            report(
                f"{threads} thread(s), max-prime {args.max_prime}",
                "events/s",
                statistics.median(ds),
                statistics.median(hs),
                unit="events/s",
                reference_tool="headless probetop cpu",
                ratio=ratio,
                goal=at_least(0.97),
            )
    print(f"# lowest dashboard/headless ratio: {worst:.3f} (target >= 0.97)")
    print("# UI CPU: the dashboard process minus its worker threads, in % of one core;")
    print("# bound: the lowest ratio that UI CPU can cause (1 - UI CPU / busy worker cores)")
    print("# CPU share: CPU the workers got / (threads x run time), headless/dashboard;")
    print("# per-CPU: dashboard/headless events per worker CPU-second")
    print("# steady: dashboard/headless events/s over the full intervals after the first 2 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
