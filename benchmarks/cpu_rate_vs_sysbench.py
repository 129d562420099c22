#!/usr/bin/env python3
"""sysbench cpu --rate=N: probetop beside sysbench 1.0.20, alternated in one run.

Per case (a target rate, one thread, the default --cpu-max-prime), each
round runs ``sysbench cpu --rate=N --time=T run`` and the same argv under
probetop, alternating which goes first, and reads both reports with the
same parser. Printed and reported as figures: the achieved events/s (its
ratio to sysbench's), the latency avg and 95th percentile (time ratios),
and, over-loaded (the rate at 4x the unlimited events/s), the last
interval's queue length. The "unlimited" case is --rate=0 (today's loop,
with one extra branch per event for the schedule): its events/s ratio is
the cost of that branch. The rated cases cost what the schedule costs.

    python benchmarks/cpu_rate_vs_sysbench.py [--rounds 3] [--time 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from figures import add_figures_option, between, report

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def parse(text: str) -> dict[str, Any]:
    from probetop.probes.cpu.report import parse_report

    return parse_report(text)


def run(tool: str, rate: int, seconds: float, state: str) -> dict[str, Any]:
    argv = ["cpu", f"--rate={rate}", f"--time={seconds:g}", "--report-interval=1", "run"]
    cmd = ["sysbench"] if tool == "sysbench" else [sys.executable, "-m", "probetop.tui.main"]
    done = subprocess.run(
        [*cmd, *argv],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, XDG_STATE_HOME=state),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{tool} --rate={rate} failed ({done.returncode}): {done.stdout}{done.stderr}"
        )
    return parse(done.stdout)


def med(docs: list[dict[str, Any]], key: str, sub: str | None = None) -> float:
    vals = [d[key][sub] if sub else d[key] for d in docs]
    return float(statistics.median(v for v in vals if v is not None))


def last_queue(docs: list[dict[str, Any]]) -> float | None:
    """The median queue length on the runs' last [ Ns ] queue line."""
    last = [d["intervals"][-1].get("queue_length") for d in docs if d["intervals"]]
    found = [q for q in last if q is not None]
    return float(statistics.median(found)) if found else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=float, default=3.0)
    add_figures_option(ap)
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("needs sysbench", file=sys.stderr)
        return 2
    state = tempfile.mkdtemp(prefix="cpu-rate-bench-")
    print(f"loadavg at start: {os.getloadavg()}")
    base = run("sysbench", 0, 1.0, state)["events_per_second"]
    cases = [("unlimited", 0), ("100/s", 100), ("1000/s", 1000), ("half", int(base / 2))]
    cases.append(("4x capacity", int(4 * base)))
    print(f"sysbench unlimited: {base:.0f} events/s; rates: {[r for _, r in cases]}")
    print(
        f"{'case':<12} {'rate':>7} {'eps sb':>9} {'eps pt':>9} {'ratio':>6} "
        f"{'avg sb':>8} {'avg pt':>8} {'p95 sb':>8} {'p95 pt':>8} {'queue sb':>9} {'queue pt':>9}"
    )
    for name, rate in cases:
        got: dict[str, list[dict[str, Any]]] = {"sysbench": [], "probetop": []}
        for r in range(args.rounds):
            order = ("sysbench", "probetop") if r % 2 == 0 else ("probetop", "sysbench")
            for tool in order:
                got[tool].append(run(tool, rate, args.time, state))

        eps = {t: med(docs, "events_per_second") for t, docs in got.items()}
        avg = {t: med(docs, "latency_ms", "avg") for t, docs in got.items()}
        p95 = {t: med(docs, "latency_ms", "p95") for t, docs in got.items()}
        q = {t: last_queue(docs) for t, docs in got.items()}
        print(
            f"{name:<12} {rate:>7} {eps['sysbench']:>9.1f} {eps['probetop']:>9.1f} "
            f"{eps['probetop'] / eps['sysbench']:>6.3f} {avg['sysbench']:>8.2f} "
            f"{avg['probetop']:>8.2f} {p95['sysbench']:>8.2f} {p95['probetop']:>8.2f} "
            f"{q['sysbench'] if q['sysbench'] is not None else '-':>9} "
            f"{q['probetop'] if q['probetop'] is not None else '-':>9}",
            flush=True,
        )
        case = f"--rate {name}"
        report(
            case,
            "achieved events/s",
            eps["probetop"],
            eps["sysbench"],
            unit="events/s",
            reference_tool="sysbench cpu",
            # over-loaded, both do what the machine can: no goal on a loaded machine
            goal=between(0.9, 1.1) if name != "4x capacity" else None,
            note=f"target {rate}/s (0: unlimited); median of {args.rounds} alternated runs",
        )
        if rate:
            report(
                case,
                "latency avg (from the arrival)",
                avg["probetop"],
                avg["sysbench"],
                unit="ms",
                reference_tool="sysbench cpu",
                note="time ratio; queueing counted in both",
            )
            report(
                case,
                "latency 95th percentile",
                p95["probetop"],
                p95["sysbench"],
                unit="ms",
                reference_tool="sysbench cpu",
                note="time ratio; a histogram bucket value in both",
            )
        if name == "4x capacity" and q["probetop"] is not None and q["sysbench"]:
            report(
                case,
                "queue length at the last [ Ns ] line",
                q["probetop"],
                q["sysbench"],
                unit="events",
                reference_tool="sysbench cpu",
                goal=between(0.5, 2.0),
                note="the queue grows by (rate - capacity) per second in both",
            )
    print(f"loadavg at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
