"""Median TTFB of `probetop http` against `curl -w %{time_starttransfer}`, in one run.

A local server (probetop's demo target, 127.0.0.1) answers /delay?ms=20 after
a fixed 20 ms. probetop samples it repeatedly (fresh connection each time, as
each curl run has), while this script runs curl at the same cadence, at a
random phase in each interval (probetop's worker jitters its phase too).

Modes (both by default):
- headless: `probetop http --count N --interval S --json URL`;
- dashboard: the same with --watch in a real terminal (tmux, 160x50) and
  --record, so the full dashboard (passive CPU/disk/net panes + the http
  pane) renders while probetop measures; TTFB values come from the recording.

Prints both medians, the difference and the ratio; the claim is
|median difference| < 1 ms. ``--metric total`` compares the whole request
(curl's %{time_total}, probetop's total_ms) instead of TTFB. Usage:
    .venv/bin/python benchmarks/http_ttfb_vs_curl.py [--rounds 60] [--interval 0.25]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from figures import Goal, add_figures_option
from figures import report as report_figure

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


WARM_CURL = False  # set by --warm-curl
# --metric: (curl's -w variable, the recording's extra key)
METRICS = {"ttfb": ("%{time_starttransfer}", "ttfb_ms"), "total": ("%{time_total}", "total_ms")}
METRIC = "ttfb"


def curl_ttfbs(url: str, rounds: int, interval: float, start_at: float) -> list[float]:
    """curl's time_starttransfer (ms) for ``rounds`` requests on a fixed grid.

    Default: one `curl -w` process per request, the reference command itself.
    With --warm-curl: ONE curl process fetching the URL ``rounds`` times at
    ``--rate`` with `Connection: close` (a new connection per request, as
    probetop's --fresh), so curl too is a warm process, as probetop's worker is.
    """
    delay = start_at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    if WARM_CURL:
        per_minute = round(60.0 / interval)
        run = subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", METRICS[METRIC][0] + "\\n"]
            + ["-H", "Connection: close", "--rate", f"{per_minute}/m"]
            + [arg for _ in range(rounds) for arg in ("-o", "/dev/null", url)],
            capture_output=True,
            text=True,
            check=True,
        )
        return [float(v) * 1000.0 for v in run.stdout.split()]
    out = []
    rng = random.Random()
    for k in range(rounds):
        # A random phase in each interval, as probetop's worker jitters its own.
        delay = start_at + (k + rng.random()) * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        run = subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", METRICS[METRIC][0], url],
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(float(run.stdout) * 1000.0)
    return out


def headless(url: str, rounds: int, interval: float) -> tuple[list[float], list[float]]:
    tmp = Path(tempfile.mkdtemp(prefix="probetop-bench-"))
    rec = tmp / "s.jsonl"
    proc = subprocess.Popen(
        [
            *PROBETOP,
            "http",
            "--count",
            str(rounds),
            "--interval",
            str(interval),
            "--record",
            str(rec),
            "--json",
            url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    # Both at random phases of the same cadence (curl's grid starts when
    # probetop's worker is about to).
    curl = curl_ttfbs(url, rounds, interval, time.monotonic() + 0.3 + interval / 4)
    proc.communicate(timeout=rounds * interval + 30)
    ours = recorded_ttfbs(rec)
    shutil.rmtree(tmp, ignore_errors=True)
    return ours, curl


def recorded_ttfbs(path: Path) -> list[float]:
    values: list[float] = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if rec.get("type") == "sample" and rec.get("probe", "").startswith("http"):
            for series in (rec.get("extra") or {}).get(METRICS[METRIC][1], {}).values():
                values += [v for v in series if v is not None]
    return values


def dashboard(url: str, rounds: int, interval: float) -> tuple[list[float], list[float]]:
    if shutil.which("tmux") is None:
        raise SystemExit("dashboard mode needs tmux (apt-get install tmux)")
    tmp = Path(tempfile.mkdtemp(prefix="probetop-bench-"))
    rec = tmp / "s.jsonl"
    session = f"ptbench{int(time.time())}"
    cmd = " ".join(
        [
            *PROBETOP,
            "http",
            "--watch",
            "--count",
            str(rounds),
            "--interval",
            str(interval),
            "--record",
            str(rec),
            f"'{url}'",
        ]
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", cmd], check=True
    )
    try:
        curl = curl_ttfbs(url, rounds, interval, time.monotonic() + 1.0 + interval / 4)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(recorded_ttfbs(rec)) < rounds:
            time.sleep(0.25)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    ours = recorded_ttfbs(rec)
    shutil.rmtree(tmp, ignore_errors=True)
    if not ours:
        raise SystemExit("the dashboard run recorded no http samples")
    return ours, curl


def report(name: str, ours: list[float], curl: list[float]) -> bool:
    ours_med, curl_med = statistics.median(ours), statistics.median(curl)
    diff = ours_med - curl_med
    ok = abs(diff) < 1.0
    # Noise floor: curl against itself (its odd rounds against its even rounds).
    floor = statistics.median(curl[1::2]) - statistics.median(curl[0::2])
    print(
        f"{name:<10} probetop median {METRIC} {ours_med:8.3f} ms (n={len(ours):>3})   "
        f"curl {curl_med:8.3f} ms (n={len(curl):>3})   diff {diff:+.3f} ms   "
        f"ratio {ours_med / curl_med:.4f}   {'OK (<1 ms)' if ok else 'FAIL (>=1 ms)'}"
    )
    q_ours = statistics.quantiles(ours, n=4)
    q_curl = statistics.quantiles(curl, n=4)
    print(
        f"{'':<10} quartiles probetop {' '.join(f'{v:.3f}' for v in q_ours)}   "
        f"curl {' '.join(f'{v:.3f}' for v in q_curl)}   "
        f"noise floor (curl odd vs even rounds) {floor:+.3f} ms   "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    report_figure(
        name,
        f"median {METRIC}",
        ours_med,
        curl_med,
        unit="ms",
        reference_tool="curl -w" + (" (one process)" if WARM_CURL else ""),
        goal=Goal(hi=1.0, of="diff"),
        note=f"noise floor {floor:+.3f} ms",
    )
    return ok


SERVER = """
import sys
from probetop.tui.run.demo_targets import DemoTargets
with DemoTargets() as t:
    print(t.http_url, flush=True)
    sys.stdin.read()
"""


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The demo server in a process of its own: this script's curl loop and
    GIL must not delay its answers."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--mode", choices=("both", "headless", "dashboard"), default="both")
    parser.add_argument(
        "--warm-curl",
        action="store_true",
        help="one curl process for all rounds (--rate, Connection: close) instead of one per round",
    )
    parser.add_argument("--metric", choices=tuple(METRICS), default="ttfb")
    add_figures_option(parser)
    args = parser.parse_args()
    global WARM_CURL, METRIC
    WARM_CURL = args.warm_curl
    METRIC = args.metric
    if shutil.which("curl") is None:
        raise SystemExit("needs curl (apt-get install curl)")
    results = []
    server, base = start_server()
    try:
        url = f"{base}/delay?ms={args.delay_ms}"
        version = subprocess.run(["curl", "--version"], capture_output=True, text=True)
        print(
            f"server: {url} (waits {args.delay_ms} ms); {args.rounds} rounds every "
            f"{args.interval} s; curl {version.stdout.split()[1]}"
        )
        if args.mode in ("both", "headless"):
            ours, curl = headless(url, args.rounds, args.interval)
            results.append(report("headless", ours, curl))
        if args.mode in ("both", "dashboard"):
            ours, curl = dashboard(url, args.rounds, args.interval)
            results.append(report("dashboard", ours, curl))
    finally:
        server.communicate("", timeout=10)
    return 0 if all(results) else 1


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
