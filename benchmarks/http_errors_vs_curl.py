"""Errors are not latencies: probetop's success-only percentiles against a
`curl -w` loop over the same successes, in one run.

A loopback server (this script with --serve, in its own process) answers
/mix with, per request at random: 200 after --slow-ms (default 20 ms), a
fast 404 (no wait) or a 500 after 2 ms, in the shares --mix gives (default
40/40/20 %). probetop samples it (`http --count N --interval S --json`,
fresh connections); at the same time one warm curl process fetches it N
times at the same rate with a new connection each time
(`curl -w '%{http_code} %{time_total}' -H 'Connection: close' --rate`).

Printed: per tool the requests per status class, the p50/p90/p99 of the total
time over successful responses, and the ratio probetop/curl for each; then
what a naive loop that mixes every response into its percentiles would have
reported (curl's all-responses p50 and mean), and their ratios to the
success figures: the bias `probetop http` no longer has. Usage:
    .venv/bin/python benchmarks/http_errors_vs_curl.py [--rounds 200] [--interval 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from figures import add_figures_option, between, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def serve(slow_ms: float, mix: tuple[int, int, int]) -> None:
    """The /mix server; prints its port, runs until killed."""
    rng = random.Random()
    lock = threading.Lock()
    weights = [("200", slow_ms), ("404", 0.0), ("500", 2.0)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            with lock:
                code, ms = rng.choices(weights, weights=mix)[0]
            time.sleep(ms / 1000.0)
            body = f"{code}\n".encode()
            self.send_response(int(code))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


def percentile(values: list[float], pct: float) -> float:
    """Linear-interpolated percentile (numpy's default, as probetop's)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def curl_run(url: str, rounds: int, interval: float, out: list[tuple[int, float]]) -> None:
    per_minute = max(1, round(60.0 / interval))
    run = subprocess.run(
        ["curl", "-s", "-w", "%{http_code} %{time_total}\\n", "-H", "Connection: close"]
        + ["--rate", f"{per_minute}/m"]
        + [arg for _ in range(rounds) for arg in ("-o", "/dev/null", url)],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in run.stdout.split("\n"):
        if line.strip():
            code, total = line.split()
            out.append((int(code), float(total) * 1000.0))


def probetop_run(url: str, rounds: int, interval: float, out: dict[str, object]) -> None:
    run = subprocess.run(
        [*PROBETOP, "http", "--count", str(rounds), "--interval", str(interval), "--json", url],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(run.stdout)
    (summary,) = doc["probes"].values()
    (stats,) = summary["urls"].values()
    out.update(stats)


def classes(codes: list[int]) -> dict[str, int]:
    out = {"2xx_3xx": 0, "4xx": 0, "5xx": 0, "transport": 0}
    for code in codes:
        key = (
            "transport"
            if code == 0
            else "5xx"
            if code >= 500
            else "4xx"
            if code >= 400
            else "2xx_3xx"
        )
        out[key] += 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--slow-ms", type=float, default=20.0)
    parser.add_argument("--mix", default="40,40,20", help="shares of 200,404,500 (weights)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    add_figures_option(parser)
    args = parser.parse_args()
    a, b, c = (int(x) for x in args.mix.split(","))
    if args.serve:
        serve(args.slow_ms, (a, b, c))
        return 0
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--slow-ms", str(args.slow_ms), "--mix", args.mix],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://127.0.0.1:{port}/mix"
        curl_out: list[tuple[int, float]] = []
        ours: dict[str, object] = {}
        threads = [
            threading.Thread(target=curl_run, args=(url, args.rounds, args.interval, curl_out)),
            threading.Thread(target=probetop_run, args=(url, args.rounds, args.interval, ours)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.kill()
        server.wait()
    curl_ok = [ms for code, ms in curl_out if 100 <= code < 400]
    curl_all = [ms for _code, ms in curl_out]
    total = ours["phases_ms"]["total"]  # type: ignore[index]
    print(
        f"server: 200 after {args.slow_ms:g} ms / fast 404 / 500 after 2 ms, weights {args.mix}; "
        f"{args.rounds} requests each, every {args.interval} s, load {os.getloadavg()[0]:.2f}"
    )
    print(f"classes   probetop {ours['classes']}")
    print(f"          curl     {classes([code for code, _ in curl_out])}")
    print(f"{'total ms, 2xx/3xx only':<26}{'probetop':>10}{'curl':>10}{'ratio':>8}")
    for pct in (50, 90, 99):
        mine = float(total[f"p{pct}"])  # type: ignore[index]
        theirs = percentile(curl_ok, pct)
        print(f"{'p' + str(pct):<26}{mine:>10.3f}{theirs:>10.3f}{mine / theirs:>8.3f}")
        report(
            f"200/404/500 mix {args.mix}, successes only",
            f"total time p{pct}",
            mine,
            theirs,
            unit="ms",
            reference_tool="curl -w loop",
            goal=between(0.98, 1.02) if pct == 50 else None,
        )
    naive, naive_mean = statistics.median(curl_all), statistics.fmean(curl_all)
    ok_p50, ok_mean = percentile(curl_ok, 50), statistics.fmean(curl_ok)
    print(
        f"a loop mixing every response: p50 {naive:.3f} ms = {naive / ok_p50:.3f} x the "
        f"success p50 ({ok_p50:.3f} ms), mean {naive_mean:.3f} ms = "
        f"{naive_mean / ok_mean:.3f} x the success mean ({ok_mean:.3f} ms)"
    )
    print(
        f"probetop's error marker: {ours['error_marker']} "
        f"(errors {100 * float(ours['error_share']):.1f} %)"  # type: ignore[arg-type]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
