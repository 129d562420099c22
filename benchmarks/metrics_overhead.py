#!/usr/bin/env python3
"""Does --metrics perturb the probes? Paired runs of the same probe with and
without the endpoint, the endpoint scraped hard the whole time.

Each pair runs ``probetop cpu --threads 1`` (events/s) or ``probetop icmp
127.0.0.1 --rate R`` (mean RTT, when this process may send ICMP) twice, in
alternating order: plain, and with ``--metrics`` while a client scrapes
/metrics every ``--every`` seconds (default 0.05 s: 20 scrapes a second, 300
times Prometheus' usual rate). Prints each pair and the median ratio
(metrics / plain); 1.00 means no effect. Also prints the median scrape time.

Usage: .venv/bin/python benchmarks/metrics_overhead.py [--pairs 5] [--time 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from figures import add_figures_option, report

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_loop(url: str, stop: threading.Event, every: float, times: list[float]) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                r.read()
            times.append(time.perf_counter() - t0)
        except OSError:
            pass
        stop.wait(every)


def run(argv: list[str], metrics: bool, every: float, times: list[float]) -> dict:
    stop = threading.Event()
    scraper = None
    if metrics:
        port = free_port()
        argv = [*argv, "--metrics", str(port)]
        scraper = threading.Thread(
            target=scrape_loop,
            args=(f"http://127.0.0.1:{port}/metrics", stop, every, times),
            daemon=True,
        )
    proc = subprocess.Popen([*PROBETOP, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if scraper is not None:
        scraper.start()
    out, err = proc.communicate(timeout=120)
    stop.set()
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: exit {proc.returncode}: {err.decode()[-500:]}")
    return json.loads(out)


def pairs(name: str, argv: list[str], figure, n: int, every: float) -> None:
    ratios, times = [], []
    plain, scraped = [], []
    for i in range(n):
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {m: figure(run(argv, m, every, times)) for m in order}
        ratio = got[True] / got[False]
        plain.append(got[False])
        scraped.append(got[True])
        ratios.append(ratio)
        print(
            f"  {name} pair {i + 1}: plain {got[False]:.4g}  "
            f"with --metrics {got[True]:.4g}  ratio {ratio:.3f}"
        )
    print(
        f"{name}: median ratio (with --metrics / plain) "
        f"{statistics.median(ratios):.3f} over {n} pairs"
    )
    report(
        f"{name.rsplit(' ', 1)[0]}, /metrics scraped every {every:g} s",
        name.split(" ", 1)[1],
        statistics.median(scraped),
        statistics.median(plain),
        reference_tool="the same run without --metrics",
        ratio=statistics.median(ratios),
        note="1.00 = no effect",
    )
    if times:
        print(f"{name}: {len(times)} scrapes, median {statistics.median(times) * 1e3:.2f} ms each")


def format_cost(recording: str, n: int = 300) -> None:
    """CPU time of one scrape's work (formatting the published families), for
    the state a whole `probetop demo` recording builds: what a scrape costs
    the probetop process beyond the HTTP exchange."""
    from probetop.probes.record import stream_session
    from probetop.tui.metrics.families import StaticCollector, build_families, make_registry
    from probetop.tui.metrics.state import MetricsState
    from prometheus_client import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as om_latest

    state = MetricsState()
    with stream_session(recording) as stream:
        for _t, record in stream.records():
            state.feed(record)
    collector = StaticCollector()
    registry = make_registry(collector)
    t0 = time.process_time()
    for _ in range(n):
        collector.publish(build_families(state.points()))
    publish = (time.process_time() - t0) / n
    for name, fmt in (("text 0.0.4", generate_latest), ("OpenMetrics", om_latest)):
        t0 = time.process_time()
        for _ in range(n):
            size = len(fmt(registry))
        cost = (time.process_time() - t0) / n
        print(f"scrape formatting ({name}, {size} bytes): {cost * 1e3:.2f} ms CPU per scrape")
    print(f"rebuilding the families after a sample batch: {publish * 1e3:.2f} ms CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--every", type=float, default=0.05)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--recording", default="tests/data/demo_session.jsonl")
    add_figures_option(ap)
    a = ap.parse_args()
    format_cost(a.recording)
    t = str(a.time)
    pairs(
        "cpu events/s",
        ["cpu", "--threads", "1", "--time", t, "--json"],
        lambda doc: doc["events_per_second"],
        a.pairs,
        a.every,
    )
    icmp_ok = os.geteuid() == 0
    if icmp_ok:
        pairs(
            "icmp mean RTT µs",
            ["icmp", "127.0.0.1", "--rate", str(a.rate), "--time", t, "--json"],
            lambda doc: doc["rtt_us"]["avg"],
            a.pairs,
            a.every,
        )
    else:
        print("icmp: skipped (needs root for --rate)")


if __name__ == "__main__":
    main()
