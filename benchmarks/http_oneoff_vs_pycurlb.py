"""A one-off `probetop http URL` beside pycurlb on the same URL: wall time per
process and the phases each measures, from one alternating run.

The HTTP method probetop follows runs one call per process in loops (issue
28), so the whole process counts: interpreter start, imports, the request,
the output, the exit. Each round runs, in turn, `probetop http --json URL`
(the console script, as a user runs it), pycurlb (`python pycurlb.py URL`,
its own `__main__`; the same interpreter and site-packages), `probetop
http URL` (the waterfall) and `probetop http -w FORMAT URL`, against one
loopback nginx (one worker, 6 bytes). The children read and write bytecode in a private cache, as an
installed package has it. ``--reference PATH`` adds another build's console
script (before/after), alternated with the rest.

Prints, for each, the median wall time, the median of the per-round ratios to
pycurlb (the claim: <= 1.2; the figure reported), the ratio of the medians and
the CPU time (user + system); then the medians of the phases both report
(namelookup, connect, pretransfer, starttransfer, total), which should agree.

Usage:
    .venv/bin/python benchmarks/http_oneoff_vs_pycurlb.py [--rounds 60] [--reference PATH]
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


def bytecode_env(cache: Path) -> dict[str, str]:
    """The children's environment: bytecode written to and read from
    ``cache``, as an installed package has it (pip compiles at install).
    PYTHONDONTWRITEBYTECODE, set in some shells and CI, left the warm-up
    round writing nothing: probetop's ~50 modules were compiled from source
    in every call, pycurlb's one module too."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the child, its stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read() if proc.stdout is not None else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, out


WRITE_OUT = "%{time_namelookup} %{time_connect} %{time_starttransfer} %{time_total}\\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument(
        "--reference",
        metavar="PATH",
        help="another build's probetop console script, alternated with ours (before/after)",
    )
    add_figures_option(parser)
    args = parser.parse_args()
    import pycurlb

    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{len(os.sched_getaffinity(0))} CPUs, load average {load}; {args.rounds} rounds")
    builds = {"probetop": PROBETOP, **({"reference": args.reference} if args.reference else {})}
    phases: dict[str, dict[str, list[float]]] = {"probetop": {}, "pycurlb": {}}
    with (
        tempfile.TemporaryDirectory(prefix="probetop-oneoff-bench-") as tmp,
        Nginx(Path(tmp)) as nginx,
    ):
        url = nginx.url
        env = bytecode_env(Path(tmp) / "pyc")
        commands = {"pycurlb": [sys.executable, pycurlb.__file__, url]}
        for build, exe in builds.items():
            commands[f"{build} --json"] = [exe, "http", "--json", url]
            commands[build] = [exe, "http", url]
            commands[f"{build} -w"] = [exe, "http", "-w", WRITE_OUT, url]
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        ratios: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the page cache and the .pyc files
            timed(argv, env)
        for r in range(args.rounds):
            order = list(commands) if r % 2 == 0 else list(reversed(commands))
            got: dict[str, float] = {}
            for name in order:
                wall, cpu, out = timed(commands[name], env)
                walls[name].append(wall)
                cpus[name].append(cpu)
                got[name] = wall
                if name in ("probetop --json", "pycurlb"):
                    doc = json.loads(out)
                    who = "probetop" if name.startswith("probetop") else "pycurlb"
                    for stamp in STAMPS:
                        phases[who].setdefault(stamp, []).append(doc[f"{stamp}_time"] * 1000)
            for name in commands:
                ratios[name].append(got[name] / got["pycurlb"])
    med = {name: statistics.median(v) for name, v in walls.items()}
    cpu = {name: statistics.median(v) for name, v in cpus.items()}
    for name in commands:
        print(
            f"{name:>20}: wall median {med[name] * 1000:7.1f} ms   "
            f"CPU median {cpu[name] * 1000:6.1f} ms   / pycurlb: wall "
            f"{statistics.median(ratios[name]):.2f} (median of per-round ratios), "
            f"{med[name] / med['pycurlb']:.2f} (ratio of medians), "
            f"CPU {cpu[name] / cpu['pycurlb']:.2f}"
        )
    for label, name in (
        ("--json", "probetop --json"),
        ("(waterfall)", "probetop"),
        ("-w", "probetop -w"),
    ):
        report(
            f"one-off http {label}, a process per call",
            "wall time",
            med[name] * 1000,
            med["pycurlb"] * 1000,
            unit="ms",
            reference_tool="pycurlb",
            ratio=statistics.median(ratios[name]),
            goal=at_most(1.2),
        )
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
