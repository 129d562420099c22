#!/usr/bin/env python3
"""Run the benchmarks and write docs/figures.md, the one table of figures.

``make bench`` runs every benchmark in its quick mode (the arguments in PLAN:
fewer and shorter rounds than the script's defaults, still alternating
probetop and the reference tool) and writes docs/figures.md: the machine
(kernel, CPU model, cores, memory, load average at start and end, tool
versions), the git commit, and one row per figure the benchmarks reported
through benchmarks/figures.py. A benchmark whose needs are missing (root, a
tool) is listed as skipped with the reason. ``make bench-one B=NAME`` (or
``bench.py NAME ...``) runs only those and merges them into the same file: the
other benchmarks' rows stay, each with its own date and load.

Docs pages link docs/figures.md instead of stating figures by hand
(tests/core/test_docs_figures.py).

    python benchmarks/bench.py [NAME ...] [--defaults] [--list] [--budget S]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from figures import ENV, Figure, read

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = REPO / "docs" / "figures.md"
# Not benchmarks: helpers, and compile_side_by_side (a pass/fail stress check
# of `probetop compile` runs sharing one cache; it reports no figures).
NOT_BENCHMARKS = {"bench", "figures", "cpu_sched", "sshd_fixture", "compile_side_by_side"}
DATA_BEGIN = "<!-- figures-data"
DATA_END = "-->"


@dataclass(frozen=True)
class Plan:
    """How ``make bench`` runs one benchmark: its quick arguments, what it
    needs (``root``, executables, python modules as ``py:NAME``), a limit."""

    args: str = ""  # split on spaces
    needs: tuple[str, ...] = ()
    timeout_s: float = 180.0
    skip: str = ""  # never run by make bench, and why


LOOP = ("root", "losetup", "fio")
SOAK = "an hour by design (RSS growth per hour): make bench-one B=NAME runs it"
PLAN: dict[str, Plan] = {
    "aio_floor": Plan("--rounds 2 --seconds 1 --size-mb 128", (*LOOP, "gcc")),
    "cpu_codegen_variants": Plan("--time 1 --rounds 1 --max-prime 10000", ("sysbench",)),
    "cpu_dashboard_overhead": Plan("--time 3 --rounds 2", ("tmux",)),
    "cpu_vs_sysbench": Plan("--time 2 --rounds 2", ("sysbench",)),
    "cpu_rate_vs_sysbench": Plan("--time 3 --rounds 2", ("sysbench",)),
    "dashboard_scale": Plan("--seconds 6 --settle 5 --keys 3", ("tmux",)),
    "deadline_check_cost": Plan("--rounds 3 --seconds 1", (*LOOP, "git")),
    "efs_method": Plan("--rounds 2 --seconds 1", ("fio",)),
    "fio_buffer_alignment": Plan("--rounds 2 --seconds 1 --size-mb 128", ("fio",)),
    "http_errors_vs_curl": Plan("--rounds 80", ("curl",)),
    "http_load_vs_wrk": Plan("--rounds 1 --time 1 --bisect 1", ("nginx", "wrk", "curl")),
    "http_oneoff_vs_pycurlb": Plan("--rounds 10", ("nginx", "py:pycurlb")),
    "http_scale": Plan("--count 3 --alone-urls 6"),
    "http_ttfb_vs_curl": Plan("--rounds 20 --interval 0.1", ("curl", "tmux")),
    "icmp_dashboard_overhead": Plan("--time 4 --rounds 2", ("root", "tmux")),
    "icmp_loss_vs_ping": Plan("--time 1 --drops 0,10", ("root", "ip", "nft", "ping")),
    "icmp_rate_accuracy": Plan("--time 2 --rates 1000,10000,100000", ("root",)),
    # Rounds swing 0.94-1.14 on a quiet machine (both tools are kernel-bound:
    # the same system time per reply); 2 rounds gave medians of 0.96, two runs
    # of 6 rounds 1.00 and 1.10. More rounds, a less noisy median.
    "icmp_vs_ping": Plan("--time 3 --rounds 6", ("root", "ping")),
    "icmp_cpu_per_reply": Plan("--time 3 --rounds 2", ("root", "ping", "perf")),
    "ioengines_vs_fio": Plan(
        "--seconds 1 --size-mb 128 --depths 1,8,32 --workloads randread,randwrite --targets loop",
        LOOP,
    ),
    "iops_fio_json_parity": Plan("--rounds 1 --seconds 1 --size-mb 128", LOOP),
    "iops_vs_fio": Plan("--rounds 2 --seconds 1 --size-mb 128 --cpus-allowed 1", LOOP),
    # Rounds, not seconds: both tools start their clock before the workers
    # wake and stop it once the last has ended, a few ms past a 1 s --time at
    # most; but the median of 2 rounds is their mean (quiet: rnd write 1K
    # rounds 0.72 and 1.11). 5 rounds give a true median (docs/mem.md).
    "mem_vs_sysbench": Plan("--time 1 --rounds 5", ("sysbench",)),
    "mem_control_vs_sysbench": Plan("--rounds 3", ("sysbench", "gcc"), 300.0),
    "mem_oplatency_vs_sysbench": Plan("--rounds 2 --time 1", ("sysbench",)),
    "mem_sysbench_event_swap": Plan("--rounds 2 --time 1", ("sysbench", "gcc")),
    "mem_undisturbed_vs_sysbench": Plan("--rounds 4", ("sysbench", "gcc", "nm"), 600.0),
    "mem_instructions_by_function": Plan("--only 1024B", ("sysbench", "valgrind", "gcc"), 600.0),
    "mem_loop_alignment": Plan("--rounds 2 --ops 2000", ("sysbench", "objdump"), 600.0),
    "metrics_overhead": Plan("--pairs 2 --time 1"),
    "recorder_throughput": Plan("--seconds 10 --rounds 2", ("tmux",), 300.0),
    "recording_zstd": Plan("10"),
    "remote_budget": Plan(
        "--window 30 --settle 15 --rounds 1", ("tmux", "ss", "/usr/sbin/sshd"), 600.0
    ),
    "sessions_budget": Plan("--window 3 --rounds 1", ("tmux",)),
    "soak": Plan(skip=SOAK, timeout_s=7200.0),
    "soak_demo": Plan(skip=SOAK, timeout_s=7200.0),
    "startup": Plan("--repeat 5", ("tmux",), 900.0),  # issue 28: the median of 5
    "tui_budget": Plan("--seconds 8 --settle 5", ("tmux",)),
    "warmup_fresh": Plan("--rounds 1 --size-mb 128", LOOP),
    "warmup_vs_fio": Plan("--rounds 1 --size-mb 256 --ioengines libaio", LOOP),
}


@dataclass
class Run:
    """One benchmark's last run, as docs/figures.md keeps it."""

    status: str
    args: list[str]
    started: str = ""
    seconds: float = 0.0
    load_before: str = ""
    load_after: str = ""
    commit: str = ""
    figures: list[dict] = field(default_factory=list)


def benchmark_scripts() -> list[str]:
    """Every benchmark: each script in benchmarks/ with a ``__main__`` block."""
    return sorted(
        p.stem
        for p in HERE.glob("*.py")
        if p.stem not in NOT_BENCHMARKS and "__main__" in p.read_text(encoding="utf-8")
    )


def missing(needs: tuple[str, ...]) -> list[str]:
    out = []
    for need in needs:
        if need == "root":
            if os.geteuid() != 0:
                out.append("root")
        elif need.startswith("py:"):
            probe = [sys.executable, "-c", f"import {need[3:]}"]
            if subprocess.run(probe, capture_output=True).returncode != 0:
                out.append(f"python module {need[3:]}")
        elif shutil.which(need) is None:
            out.append(need)
    return out


def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def git_commit() -> str:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return proc.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "?"
    dirty = [
        line
        for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
        if not line.endswith("docs/figures.md")
    ]
    return commit + ("-dirty" if dirty else "")


def run_one(name: str, plan: Plan, args: list[str]) -> Run:
    """Run benchmarks/NAME.py with ``args``, its output passed through; the
    figures it reported are kept even when it fails or times out."""
    started, t0, before = now(), time.monotonic(), loadavg()
    with tempfile.TemporaryDirectory(prefix="probetop-bench-") as tmp:
        results = Path(tmp) / "figures.jsonl"
        env = dict(os.environ, **{ENV: str(results)})
        cmd = [sys.executable, str(HERE / f"{name}.py"), *args]
        print(f"== {name} {' '.join(args)}  (load {before})", flush=True)
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=plan.timeout_s)
            status = "ran" if rc == 0 else f"exit {rc}"
        except subprocess.TimeoutExpired:
            # SIGINT first: the benchmarks remove their loop devices and
            # namespaces on KeyboardInterrupt.
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            status = f"timed out after {plan.timeout_s:g} s (figures so far kept)"
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait()
            raise
        figs = [asdict(f) for f in read(results)]
    return Run(
        status=status,
        args=args,
        started=started,
        seconds=round(time.monotonic() - t0, 1),
        load_before=before,
        load_after=loadavg(),
        commit=git_commit(),
        figures=figs,
    )


def tool_version(argv: list[str], pattern: str) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    found = re.search(pattern, proc.stdout + proc.stderr)
    return found.group(1) if found else "?"


def machine() -> dict[str, str]:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    tools = {
        "fio": tool_version(["fio", "--version"], r"fio-(\S+)"),
        "sysbench": tool_version(["sysbench", "--version"], r"sysbench (\S+)"),
        "ping": tool_version(["ping", "-V"], r"iputils[- ](\S+)"),
        "curl": tool_version(["curl", "--version"], r"curl (\S+)"),
        "wrk": tool_version(["wrk", "-v"], r"wrk (\S+)"),
        "nginx": tool_version(["nginx", "-v"], r"nginx/(\S+)"),
    }
    return {
        "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": f"{mem_kb / 2**20:.1f} GiB",
        "python": platform.python_version(),
        "tools": ", ".join(f"{k} {v}" for k, v in tools.items()),
    }


# --- docs/figures.md ------------------------------------------------------


def load(path: Path) -> dict:
    """The data a previous run embedded in docs/figures.md (empty if none)."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    start = text.find(DATA_BEGIN)
    if start < 0:
        return {}
    end = text.index(DATA_END, start)
    return json.loads(text[start + len(DATA_BEGIN) : end])


def num(x: float | None) -> str:
    if x is None:
        return "—"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def figure_row(f: Figure) -> str:
    unit = f" {f.unit}" if f.unit else ""
    ours = "—" if f.probetop is None else num(f.probetop) + unit
    ref = "—" if f.reference is None else num(f.reference) + unit
    if f.reference_tool:
        ref = f"{ref} ({f.reference_tool})" if f.reference is not None else f.reference_tool
    ratio = "—" if f.ratio is None else f"{f.ratio:.3f}"
    met = {True: "yes", False: "**no**", None: "—"}[f.met if f.goal else None]
    case = f"{f.case}: {f.what}" if f.what else f.case
    case += f" ({f.note})" if f.note else ""
    cols = (f.benchmark, case, ours, ref, ratio, f.goal or "—", met)
    return "| " + " | ".join(cell(c) for c in cols) + " |"


def render(data: dict) -> str:
    m, run = data["machine"], data["run"]
    runs = {name: Run(**r) for name, r in sorted(data["benchmarks"].items())}
    lines = [
        "# Benchmark figures",
        "",
        "<!-- GENERATED by `make bench` (benchmarks/bench.py): do not edit by hand. -->",
        "",
        "Generated by `make bench` from the benchmarks' own results: **do not edit**;",
        "rerun `make bench` (every benchmark) or `make bench-one B=NAME` (one, merged",
        "in). This is the only page that states measured figures; the other pages",
        "link here. Each figure comes from one run that alternates probetop and the",
        "reference tool; the ratio is probetop / reference unless the row says",
        "otherwise. `make bench` runs each benchmark in a quick mode (the arguments",
        "under Runs; each script's defaults run longer) on whatever machine it is",
        "given: read the load average before trusting a figure.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| kernel | {m['kernel']} |",
        f"| CPU | {m['cpu']} ({m['cores']} cores) |",
        f"| memory | {m['memory']} |",
        f"| Python | {m['python']} |",
        f"| tools | {m['tools']} |",
        f"| last run | {run['started']} to {run['finished']}, "
        f"`{run['command']}`, commit {run['commit']} |",
        f"| load average (1/5/15 min) | {run['load_start']} at the start, "
        f"{run['load_end']} at the end |",
        *(
            f"| merged since | {m['started']} to {m['finished']}, `{m['command']}`, "
            f"commit {m['commit']}, load {m['load_start']} / {m['load_end']} |"
            for m in data.get("merged", [])
        ),
        "",
        "## Figures",
        "",
        "| benchmark | case | probetop | reference | ratio | goal | met? |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs.values():
        lines += [figure_row(Figure(**f)) for f in r.figures]
    figs = [Figure(**f) for r in runs.values() for f in r.figures]
    judged = [f for f in figs if f.goal and f.met is not None]
    skipped = [name for name, r in runs.items() if r.status.startswith("skipped")]
    lines[lines.index("## Figures") + 1 : lines.index("## Figures") + 1] = [
        "",
        f"{len(figs)} figures from {len(runs) - len(skipped)} benchmarks "
        f"({len(skipped)} skipped: {', '.join(skipped) or 'none'}); "
        f"{sum(bool(f.met) for f in judged)} of {len(judged)} figures with a goal met it.",
    ]
    lines += [
        "",
        "## Runs",
        "",
        "| benchmark | status | figures | arguments | seconds | started | load before / after |"
        " commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        args = f"`{' '.join(r.args)}`" if r.args else "(defaults)"
        ran = bool(r.started)
        load = f"{r.load_before} / {r.load_after}" if ran else ""
        seconds = f"{r.seconds:g}" if ran else ""
        cols = (name, r.status, str(len(r.figures)), args, seconds, r.started, load, r.commit)
        lines.append("| " + " | ".join(cell(c) for c in cols) + " |")
    # Two dashes end an HTML comment: escaped inside the JSON's strings (the
    # only place two can occur), restored by json.loads.
    blob = json.dumps(data, indent=1, sort_keys=True).replace("--", "-\\u002d")
    lines += ["", DATA_BEGIN, blob, DATA_END, ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and their plan")
    ap.add_argument("--defaults", action="store_true", help="each script's own (longer) defaults")
    ap.add_argument("--out", type=Path, default=OUT, help="default: docs/figures.md")
    ap.add_argument("--render", action="store_true", help="only rewrite --out from its own data")
    ap.add_argument(
        "--budget",
        type=float,
        default=30 * 60,
        help="seconds (default 1800); the benchmarks after it are skipped, with that reason",
    )
    args = ap.parse_args()
    scripts = benchmark_scripts()
    unplanned = sorted(set(scripts) - set(PLAN))
    if unplanned:
        ap.error(f"not in bench.py's PLAN: {', '.join(unplanned)} (add each with its quick args)")
    if args.render:
        args.out.write_text(render(load(args.out)), encoding="utf-8")
        return 0
    if args.list:
        for name in scripts:
            p = PLAN[name]
            print(f"{name:<24} {p.skip or p.args or '(defaults)'}")
        return 0
    unknown = [n for n in args.names if n.removesuffix(".py") not in scripts]
    if unknown:
        ap.error(f"no benchmark {', '.join(unknown)}; `bench.py --list` names them")
    chosen = [n.removesuffix(".py") for n in args.names] or scripts
    data = load(args.out) if args.names else {}
    data.setdefault("benchmarks", {})
    for gone in set(data["benchmarks"]) - set(scripts):  # a script since removed
        del data["benchmarks"][gone]
    command = "make bench" if not args.names else f"make bench-one B={' '.join(chosen)}"
    run = {"started": now(), "load_start": loadavg(), "command": command}
    t0 = time.monotonic()
    for name in chosen:
        plan = PLAN[name]
        quick = [] if args.defaults else plan.args.split()
        lacking = missing(plan.needs)
        if plan.skip and not args.names:  # named on the command line: run it
            result = Run(status=f"skipped: {plan.skip}", args=quick)
        elif lacking:
            result = Run(status=f"skipped: needs {', '.join(lacking)}", args=quick)
        elif time.monotonic() - t0 > args.budget:
            result = Run(
                status=f"skipped: the run's {args.budget:g} s budget was spent", args=quick
            )
        else:
            result = run_one(name, plan, quick)
        print(f"-- {name}: {result.status}, {len(result.figures)} figures", flush=True)
        data["benchmarks"][name] = asdict(result)
    run.update(finished=now(), load_end=loadavg(), commit=git_commit())
    if args.names and "run" in data:  # the full run's header stays; this one is listed
        data["merged"] = [*data.get("merged", []), run]
    else:
        data["run"], data["merged"] = run, []
    data["machine"] = machine()
    args.out.write_text(render(data), encoding="utf-8")
    total = time.monotonic() - t0
    print(f"wrote {args.out} ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
