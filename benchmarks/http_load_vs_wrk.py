"""The highest rate `probetop http --rate` holds on this machine, next to wrk
and a curl loop against the same loopback nginx, in one run.

- probetop (open model): `http URL --rate R --connections C --time T --json`
  for a ladder of rates (doubling from --start, then bisecting); a rate is
  *held* when probetop sent at least 98 % of it and at most one interval
  found the generator saturated (its loop busy >= 80 % or its CPU >= 90 %:
  see docs/http-load.md). The highest held rate is probetop's capacity as a
  generator here. Each step also says whether any interval was flagged for
  sending late (lag p99 > 1 ms and >= 25 % of the corrected p99): on a busy
  machine that happens at any rate, and says how far the corrected tail of
  a sub-millisecond server can be trusted.
- wrk (closed loop, `wrk -t1 -cC -dT`): as many requests as C connections
  can turn around: its requests/s is the most a tuned C generator gets from
  this server on this machine.
- a curl loop (one `curl --parallel --parallel-max C` fetching the URL N
  times over keep-alive): what a shell user would reach for.
- probetop's closed loop (`http URL --connections C --time T`, wrk's model)
  and a saturating open model (`--rate 100000 --connections C`), each right
  before a `wrk -cC` run of the same length: Requests/sec of both, over the
  run's own time (what finished within --time, divided by it, as wrk does),
  and their ratio per round. `--ladder 0` runs only these.

Each round runs the three back to back (wrk and curl between probetop's
ladder steps would disturb them less but not more fairly); the script prints
per round and the medians, and the ratios probetop / wrk and probetop / curl.
nginx runs with one worker, so the server is the same for all three.

Usage:
    .venv/bin/python benchmarks/http_load_vs_wrk.py [--rounds 3] [--time 2] [--connections 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from figures import add_figures_option, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nginx:
    """nginx on 127.0.0.1 serving a 6-byte file, one worker, keep-alive without limit."""

    def __init__(self, directory: Path) -> None:
        self.nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.dir = directory
        self.port = free_port()
        (directory / "www").mkdir()
        (directory / "www" / "index.html").write_text("hello\n")
        self.conf = directory / "nginx.conf"
        d = directory
        self.conf.write_text(
            f"daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;\n"
            f"error_log {d}/error.log; events {{ worker_connections 4096; }}\n"
            f"http {{ access_log off; keepalive_requests 10000000; "
            f"client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f; "
            f"uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n"
            f"  server {{ listen 127.0.0.1:{self.port}; root {d}/www; }} }}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/index.html"

    def __enter__(self) -> Nginx:
        self.proc = subprocess.Popen(
            [self.nginx, "-c", str(self.conf), "-p", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise SystemExit("nginx did not start")

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


def probetop_step(url: str, rate: float, connections: int, seconds: float) -> dict[str, Any]:
    argv = ["http", url, "--rate", f"{rate:g}", "--connections", str(connections)]
    argv += ["--time", f"{seconds:g}", "--json"]
    run = subprocess.run(
        [*PROBETOP, *argv],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        stdin=subprocess.DEVNULL,
    )
    if run.returncode != 0:
        raise SystemExit(f"probetop failed: {run.stderr.strip()}")
    (summary,) = json.loads(run.stdout)["probes"].values()
    sent = float(summary["sent_rps"] or 0.0)
    limits = summary.get("generator_limits") or {}
    saturated = int(limits.get("cpu", 0)) + int(limits.get("busy", 0))
    ok = summary["classes"].get("2xx_3xx", {})
    return {
        "rate": rate,
        "sent_rps": sent,
        "saturated": saturated,
        "late": int(limits.get("late", 0)),
        "intervals": int(summary["intervals"]),
        "held": sent >= 0.98 * rate and saturated <= 1,
        "corrected_p99_ms": (ok.get("corrected_ms") or {}).get("p99"),
        "service_p99_ms": (ok.get("service_ms") or {}).get("p99"),
        "lag_p99_ms": summary["gen_lag_ms"].get("p99"),
        "busy_pct": summary.get("gen_busy_pct"),
        "cpu_pct": summary.get("gen_cpu_pct"),
    }


def probetop_capacity(
    url: str, start: float, connections: int, seconds: float, bisect: int
) -> tuple[float, list[dict[str, Any]]]:
    """The highest held rate: double from ``start`` until a rate is not held,
    then bisect ``bisect`` times between the last held and the first not held."""
    steps = []
    low, high = 0.0, None
    rate = start
    while high is None and rate <= 100_000:
        step = probetop_step(url, rate, connections, seconds)
        steps.append(step)
        if step["held"]:
            low, rate = rate, rate * 2
        else:
            high = rate
    if high is None:
        return low, steps
    for _ in range(bisect):
        rate = round((low + high) / 2, -2) or (low + high) / 2
        if rate in (low, high):
            break
        step = probetop_step(url, rate, connections, seconds)
        steps.append(step)
        if step["held"]:
            low = rate
        else:
            high = rate
    return low, steps


def probetop_done_rps(url: str, connections: int, seconds: float, rate: float | None) -> float:
    """Requests/s finished within the run (probetop's ``done_rps``)."""
    argv = ["http", url, "--connections", str(connections), "--time", f"{seconds:g}", "--json"]
    if rate is not None:
        argv += ["--rate", f"{rate:g}"]
    run = subprocess.run([*PROBETOP, *argv], capture_output=True, text=True, timeout=seconds + 60)
    if run.returncode != 0:
        raise SystemExit(f"probetop failed: {run.stderr.strip()}")
    (summary,) = json.loads(run.stdout)["probes"].values()
    return float(summary["done_rps"] or 0.0)


def wrk_rate(url: str, connections: int, seconds: float) -> float | None:
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    run = subprocess.run(
        [wrk, "-t1", f"-c{connections}", f"-d{seconds:g}s", url],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
    )
    for line in run.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    return None


def curl_rate(url: str, connections: int, seconds: float, tmp: Path) -> float | None:
    """One curl process fetching the URL over keep-alive, ``connections`` in
    parallel; the count is sized from a first short try to last ~``seconds``."""
    curl = shutil.which("curl")
    if curl is None:
        return None

    def timed(n: int) -> float:
        config = tmp / f"curl-{n}.cfg"
        config.write_text(f'url = "{url}"\noutput = "/dev/null"\n' * n)
        t0 = time.monotonic()
        subprocess.run(
            [curl, "-s", "--parallel", "--parallel-max", str(connections), "-K", str(config)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return n / (time.monotonic() - t0)

    first = timed(2000)
    return timed(max(2000, int(first * seconds)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--time", type=float, default=2.0, help="seconds per step")
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--start", type=float, default=2000.0, help="first rate of the ladder")
    parser.add_argument("--bisect", type=int, default=3)
    parser.add_argument("--ladder", type=int, default=1, help="0: skip the open-model rate ladder")
    add_figures_option(parser)
    args = parser.parse_args()
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"machine: {cpu}, {len(os.sched_getaffinity(0))} CPUs, load average {load}")
    held, wrks, curls = [], [], []
    ours_rps: dict[str, list[float]] = {}
    wrk_rps: dict[str, list[float]] = {}
    closed_ratios: list[float] = []
    saturated_ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="probetop-load-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with Nginx(tmp) as nginx:
            for r in range(1, args.rounds + 1):
                print(f"round {r}:")
                # Closed loop and saturating open model, each beside a wrk run (alternated).
                for name, rate, into in (
                    ("closed loop --connections", None, closed_ratios),
                    ("--rate 100000 --connections", 100_000.0, saturated_ratios),
                ):
                    ours = probetop_done_rps(nginx.url, args.connections, args.time, rate)
                    theirs = wrk_rate(nginx.url, args.connections, args.time)
                    if theirs:
                        into.append(ours / theirs)
                        ours_rps.setdefault(name, []).append(ours)
                        wrk_rps.setdefault(name, []).append(theirs)
                    print(
                        f"   probetop {name} {args.connections}: {ours:.0f} req/s   "
                        f"wrk -c{args.connections}: {theirs or float('nan'):.0f} req/s   "
                        f"ratio {ours / theirs if theirs else float('nan'):.2f}"
                    )
                if not args.ladder:
                    continue
                capacity, steps = probetop_capacity(
                    nginx.url, args.start, args.connections, args.time, args.bisect
                )
                wrk = wrk_rate(nginx.url, args.connections, args.time)
                curl = curl_rate(nginx.url, args.connections, args.time, tmp)
                held.append(capacity)
                if wrk:
                    wrks.append(wrk)
                if curl:
                    curls.append(curl)
                for s in steps:
                    print(
                        f"   probetop --rate {s['rate']:>7g}: sent {s['sent_rps']:>8.0f}/s, "
                        f"saturated {s['saturated']}/{s['intervals']}, "
                        f"late {s['late']}/{s['intervals']}, "
                        f"lag p99 {s['lag_p99_ms']} ms, busy {s['busy_pct']} %, "
                        f"CPU {s['cpu_pct']} %, p99 corrected {s['corrected_p99_ms']} / "
                        f"service {s['service_p99_ms']} ms -> {'held' if s['held'] else 'NOT held'}"
                    )
                print(
                    f"   highest held: {capacity:.0f}/s   wrk -c{args.connections}: "
                    f"{wrk or float('nan'):.0f}/s   curl --parallel-max {args.connections}: "
                    f"{curl or float('nan'):.0f}/s"
                )
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\nload average at the end: {load}")
    for (name, ratios), key in zip(
        (
            ("closed loop (--connections, no --rate)", closed_ratios),
            ("saturating open model (--rate 100000)", saturated_ratios),
        ),
        ("closed loop --connections", "--rate 100000 --connections"),
        strict=True,
    ):
        if ratios:
            report(
                f"{name}, {args.connections} connections",
                "requests/s",
                statistics.median(ours_rps[key]),
                statistics.median(wrk_rps[key]),
                unit="req/s",
                reference_tool=f"wrk -c{args.connections}",
                ratio=statistics.median(ratios),
            )
            print(
                f"probetop {name} / wrk, Requests/sec, median of {len(ratios)}: "
                f"{statistics.median(ratios):.2f}  (rounds: "
                + ", ".join(f"{x:.2f}" for x in ratios)
                + ")"
            )
    if not held:
        return 0
    med = statistics.median(held)
    print(f"median of {args.rounds} rounds: probetop holds {med:.0f} req/s (open model)")
    if wrks:
        w = statistics.median(wrks)
        print(f"wrk (closed loop, max):        {w:.0f} req/s   probetop / wrk  = {med / w:.2f}")
        report(
            "highest rate held (open model) vs closed-loop maximum",
            "requests/s",
            med,
            w,
            unit="req/s",
            reference_tool=f"wrk -c{args.connections}",
        )
    if curls:
        c = statistics.median(curls)
        print(f"curl --parallel (closed loop): {c:.0f} req/s   probetop / curl = {med / c:.2f}")
        report(
            "highest rate held (open model) vs closed-loop maximum",
            "requests/s",
            med,
            c,
            unit="req/s",
            reference_tool=f"curl --parallel-max {args.connections}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
