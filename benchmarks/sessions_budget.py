"""Detached sessions: CPU next to a headless run, and the time to attach.

1. CPU (issue 13: "a detached session costs no more CPU than the same probes
   headless, within 5 %"). The same probes run three ways, one after the
   other, ROUNDS times in alternation: headless, headless with --record (a
   detached session always records), and --detach. Each process tree's user
   + system CPU is read (psutil) over the same steady-state window after a
   warm-up, so start-up (imports, numba) is left out. Prints CPU seconds per
   minute of each and the ratio detached / headless+record (and / headless).

2. Attach (budget: first full frame under 1 s with an hour of history). A
   one-hour recording is built from a real `probetop demo` recording (its
   body repeated with shifted time stamps), registered as a session, and
   `probetop attach` is started in a real terminal (tmux, 120x40): the time
   from launching the command until the screen shows every pane and the
   status line "live 1:00:..." is printed, next to the same with a 10-second
   history (the start-up cost of Python and Textual alone).

Usage: .venv/bin/python benchmarks/sessions_budget.py [--window 20] [--rounds 2]
       [--probes passive|demo] [--skip-cpu] [--skip-attach]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from figures import add_figures_option, at_most, report
from probetop.tui.sessions.registry import SessionInfo, write_info

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
PROBES = {
    "passive": ["--interval", "0.2"],  # the passive panes, sampled 5x a second
    "demo": ["demo", "--only", "http", "--only", "icmp"],  # loopback targets, no disk
}


def tree_cpu(proc: psutil.Process) -> float:
    """User + system seconds of a process and its children (live ones)."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def window_cpu(pid: int, warmup_s: float, window_s: float) -> float:
    proc = psutil.Process(pid)
    time.sleep(warmup_s)
    start = tree_cpu(proc)
    time.sleep(window_s)
    return tree_cpu(proc) - start


def run_headless(args: list[str], env: dict[str, str], warmup: float, window: float,
                 record: Path | None) -> float:  # fmt: skip
    extra = ["--record", str(record)] if record is not None else []
    proc = subprocess.Popen(
        [*PROBETOP, *args, "--headless", "--time", str(warmup + window + 5), *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        return window_cpu(proc.pid, warmup, window)
    finally:
        proc.terminate()
        proc.wait(30)


def run_detached(args: list[str], env: dict[str, str], warmup: float, window: float,
                 name: str) -> float:  # fmt: skip
    out = subprocess.run(
        [*PROBETOP, *args, "--detach", "--name", name, "--time", str(warmup + window + 5)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(out.stdout.split("(PID ")[1].split(")")[0])
    try:
        return window_cpu(pid, warmup, window)
    finally:
        subprocess.run([*PROBETOP, "stop", name], env=env, capture_output=True, check=False)


def bench_cpu(env: dict[str, str], work: Path, args: list[str], window: float, rounds: int) -> None:
    warmup = 4.0
    totals = {"headless": 0.0, "headless --record": 0.0, "--detach": 0.0}
    for r in range(rounds):
        totals["headless"] += run_headless(args, env, warmup, window, None)
        totals["headless --record"] += run_headless(args, env, warmup, window, work / f"h{r}.jsonl")
        totals["--detach"] += run_detached(args, env, warmup, window, f"bench{r}")
    minutes = rounds * window / 60
    print(f"CPU over {rounds} x {window:g} s steady state, probes: {' '.join(args) or 'passive'}")
    for name, cpu in totals.items():
        print(f"  {name:<18} {cpu / minutes:7.3f} CPU s per minute")
    base = totals["headless --record"]
    print(f"  ratio --detach / headless --record: {totals['--detach'] / base:.3f}  (budget 1.05)")
    print(f"  ratio --detach / headless:          {totals['--detach'] / totals['headless']:.3f}")
    case = f"probes: {' '.join(args) or 'passive'}, {rounds} x {window:g} s"
    report(
        case,
        "CPU s per minute",
        totals["--detach"] / minutes,
        base / minutes,
        reference_tool="headless --record",
        goal=at_most(1.05),
    )
    report(
        case,
        "CPU s per minute",
        totals["--detach"] / minutes,
        totals["headless"] / minutes,
        reference_tool="headless",
    )


def hour_recording(work: Path, env: dict[str, str], hours: float) -> Path:
    """A recording of ``hours`` built from 10 s of a real demo recording."""
    base = work / "base.jsonl"
    if not base.exists():
        subprocess.run(
            [*PROBETOP, "demo", "--time", "10", "--headless", "--record", str(base)],
            env=env, capture_output=True, check=True,
        )  # fmt: skip
    lines = base.read_text().splitlines()
    header, body = lines[0], [json.loads(x) for x in lines[1:]]
    body = [x for x in body if x.get("type") in ("sample", "status", "probe")]
    span = 10.0
    out = work / f"hist-{hours:g}h.jsonl"
    repeats = max(1, int(hours * 3600 / span))
    with out.open("w") as f:
        f.write(header + "\n")
        for k in range(repeats):
            for line in body:
                if line["type"] == "probe" and k:
                    continue
                shifted = dict(line, t=round(float(line["t"]) + k * span, 6))
                f.write(json.dumps(shifted, separators=(",", ":")) + "\n")
    return out


def register(name: str, recording: Path) -> None:
    """A finished session whose recording is ``recording`` (attach reads it)."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_info(
        SessionInfo(
            name=name,
            command=["probetop", "demo"],
            started_at=now,
            pid=os.getpid(),
            start_ticks=None,
            recording=str(recording),
            socket="",
            log="",
            ended_at=now,
            exit_code=0,
        )
    )


def time_attach(env: dict[str, str], name: str, expect: str) -> tuple[float, float]:
    """Seconds from launch to the first full frame (every pane drawn), and
    to the screen showing ``expect`` (the whole history in)."""
    sock = f"bench-{os.getpid()}-{time.monotonic_ns()}"
    command = " ".join(
        [f"{k}={env[k]}" for k in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR")]
        + ["TERM=xterm-256color", *PROBETOP, "attach", name]
    )
    t0 = time.monotonic()
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "120", "-y", "40",
                    f"env {command}"], check=True)  # fmt: skip
    first = None
    try:
        while time.monotonic() - t0 < 60:
            screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"],
                                    capture_output=True, text=True).stdout  # fmt: skip
            drawn = "TTFB" in screen and "system.cpu" in screen and "attached" in screen
            if first is None and drawn:
                first = time.monotonic() - t0
            if first is not None and expect in screen:
                return first, time.monotonic() - t0
            time.sleep(0.01)
        raise RuntimeError(f"attach {name}: no full frame in 60 s")
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], check=False)


def bench_attach(env: dict[str, str], work: Path) -> None:
    short, hour = hour_recording(work, env, 10 / 3600), hour_recording(work, env, 1.0)
    register("short", short)
    register("hour", hour)
    size = hour.stat().st_size / (1 << 20)
    short_first, _ = min(time_attach(env, "short", "live 00:") for _ in range(3))
    hour_first, hour_all = min(time_attach(env, "hour", "live 1:00:") for _ in range(3))
    print("attach (best of 3, tmux 120x40, from launching the command):")
    print(f"  10 s of history, first full frame:       {short_first:.2f} s (start-up alone)")
    print(f"  1 h of history ({size:.1f} MiB), first full frame: {hour_first:.2f} s"
          f"  (+{hour_first - short_first:.2f} s over start-up; budget 1 s)")  # fmt: skip
    print(f"  1 h of history, whole history in the panes: {hour_all:.2f} s")
    report(
        "attach to a session with 1 h of history",
        "first full frame over start-up",
        hour_first - short_first,
        unit="s",
        goal=at_most(1.0, of="probetop"),
        note=f"start-up alone {short_first:.2f} s",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--probes", choices=sorted(PROBES), default="passive")
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--skip-attach", action="store_true")
    add_figures_option(ap)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ptb-", dir="/tmp"))
    (work / "run").mkdir(mode=0o700)
    env = dict(os.environ, XDG_STATE_HOME=str(work / "st"), XDG_RUNTIME_DIR=str(work / "run"))
    os.environ.update(XDG_STATE_HOME=env["XDG_STATE_HOME"], XDG_RUNTIME_DIR=env["XDG_RUNTIME_DIR"])
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    try:
        if not a.skip_cpu:
            bench_cpu(env, work, PROBES[a.probes], a.window, a.rounds)
        if not a.skip_attach:
            bench_attach(env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
