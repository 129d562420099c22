"""A one-off `probetop http URL` beside pycurlb on the same URL: wall time per
process and the phases each measures, from one alternating run.

The HTTP method probetop follows runs one call per process in loops (issue
28), so the whole process counts: interpreter start, imports, the request,
the output, the exit. Each round runs, in turn, `probetop http --json URL`
(the console script, as a user runs it), pycurlb (`python pycurlb.py URL`,
its own `__main__`; the same interpreter and site-packages) and `probetop
http URL` (the waterfall), against one loopback nginx (one worker, 6 bytes).

Prints the median wall time of each, the ratio probetop / pycurlb (the claim:
<= 1.2), the median of the per-round ratios, the CPU time (user + system) of
each, and the medians of the phases both report (namelookup, connect,
pretransfer, starttransfer, total), which should agree.

Usage:
    .venv/bin/python benchmarks/http_oneoff_vs_pycurlb.py [--rounds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import add_figures_option, at_most, report
from http_load_vs_wrk import Nginx

PROBETOP = str(Path(sys.executable).with_name("probetop"))
STAMPS = ("namelookup", "connect", "pretransfer", "starttransfer", "total")


def timed(argv: list[str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the child, its stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout is not None else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    add_figures_option(parser)
    args = parser.parse_args()
    import pycurlb

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{len(os.sched_getaffinity(0))} CPUs, load average {load}; {args.rounds} rounds")
    walls: dict[str, list[float]] = {"probetop --json": [], "pycurlb": [], "probetop": []}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    phases: dict[str, dict[str, list[float]]] = {"probetop": {}, "pycurlb": {}}
    ratios = []
    with (
        tempfile.TemporaryDirectory(prefix="probetop-oneoff-bench-") as tmp,
        Nginx(Path(tmp)) as nginx,
    ):
        url = nginx.url
        commands = {
            "probetop --json": [PROBETOP, "http", "--json", url],
            "pycurlb": [sys.executable, pycurlb.__file__, url],
            "probetop": [PROBETOP, "http", url],
        }
        for argv in commands.values():  # warm the page cache and the .pyc files
            timed(argv)
        for r in range(args.rounds):
            order = list(commands) if r % 2 == 0 else list(reversed(commands))
            got: dict[str, float] = {}
            for name in order:
                wall, cpu, out = timed(commands[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
                got[name] = wall
                if name in ("probetop --json", "pycurlb"):
                    doc = json.loads(out)
                    who = "probetop" if name.startswith("probetop") else "pycurlb"
                    for stamp in STAMPS:
                        phases[who].setdefault(stamp, []).append(doc[f"{stamp}_time"] * 1000)
            ratios.append(got["probetop --json"] / got["pycurlb"])
    med = {name: statistics.median(v) for name, v in walls.items()}
    for name in walls:
        print(
            f"{name:>16}: wall median {med[name] * 1000:7.1f} ms   "
            f"CPU median {statistics.median(cpus[name]) * 1000:6.1f} ms"
        )
    print(
        f"probetop --json / pycurlb, wall: {med['probetop --json'] / med['pycurlb']:.2f} "
        f"(ratio of medians), {statistics.median(ratios):.2f} (median of per-round ratios)"
    )
    print(f"probetop (waterfall) / pycurlb, wall: {med['probetop'] / med['pycurlb']:.2f}")
    report(
        "one-off http --json, a process per call",
        "wall time",
        med["probetop --json"] * 1000,
        med["pycurlb"] * 1000,
        unit="ms",
        reference_tool="pycurlb",
        ratio=statistics.median(ratios),
        goal=at_most(1.2),
    )
    report(
        "one-off http (waterfall), a process per call",
        "wall time",
        med["probetop"] * 1000,
        med["pycurlb"] * 1000,
        unit="ms",
        reference_tool="pycurlb",
    )
    cpu_ratio = statistics.median(cpus["probetop --json"]) / statistics.median(cpus["pycurlb"])
    print(f"probetop --json / pycurlb, CPU: {cpu_ratio:.2f}")
    print("phases (cumulative ms, median): stamp  probetop  pycurlb")
    for stamp in STAMPS:
        ours = statistics.median(phases["probetop"][stamp])
        theirs = statistics.median(phases["pycurlb"][stamp])
        print(f"   {stamp:>14}  {ours:8.3f}  {theirs:8.3f}")
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"load average at the end: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
