"""100 URLs sampled every second vs each URL sampled alone: do timings drift?

Four local servers (probetop's demo target, each in a process of its own on
127.0.0.1) serve /delay?ms=20&u=I for 100 URLs, 25 each. In one run:

1. alone: each of --alone-urls URLs (default 20, spread over the 100)
   sampled by itself (one `HttpProbe` per URL, N requests, same interval);
2. together: one probe samples all 100 URLs every interval (one worker
   process, one libcurl multi handle), N requests each.

Per URL it compares the median TTFB (libcurl starttransfer) together against
alone and prints the median and the largest absolute drift, and how many
URLs drift less than 1 ms; then the together run again, against the first
one, as the noise floor of per-URL medians on this machine. The first request
of every run is a warm-up and dropped in all modes. Usage:
    .venv/bin/python benchmarks/http_scale.py [--urls 100] [--count 10] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from figures import Goal, add_figures_option, report
from probetop.probes.http import HttpProbe, HttpSettings
from probetop.tui.run.runner import run_headless

SERVER = """
import sys
from probetop.tui.run.demo_targets import DemoTargets
with DemoTargets() as t:
    print(t.http_url, flush=True)
    sys.stdin.read()
"""


def start_servers(n: int) -> tuple[list[subprocess.Popen[str]], list[str]]:
    procs, bases = [], []
    for _ in range(n):
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        procs.append(proc)
        bases.append(proc.stdout.readline().strip())
    return procs, bases


def median_ttfbs(result, probe: HttpProbe) -> dict[str, float | None]:
    """Median TTFB (ms) per URL from every request of the run (Sample.extra)."""
    values: dict[str, list[float]] = {}
    for sample in result.samples[probe.id]:
        for label, series in sample.extra.get("ttfb_ms", {}).items():
            values.setdefault(label, []).extend(v for v in series if v is not None)
    by_url = {}
    for url in probe.urls:
        # The first request of a run is a warm-up (new worker process, cold
        # libcurl): dropped in every mode alike.
        vals = values.get(probe.labels[url], [])[1:]
        by_url[url] = statistics.median(vals) if vals else None
    return by_url


async def sample(urls: list[str], interval: float, count: int) -> dict[str, float | None]:
    probe = HttpProbe(HttpSettings(urls=tuple(urls), interval_s=interval, count=count))
    result = await run_headless([probe], duration_s=count * interval + 30)
    return median_ttfbs(result, probe)


async def main_async(args: argparse.Namespace) -> int:
    procs, bases = start_servers(args.servers)
    try:
        urls = [f"{bases[i % len(bases)]}/delay?ms={args.delay_ms}&u={i}" for i in range(args.urls)]
        t0 = time.monotonic()
        alone: dict[str, float | None] = {}
        step = max(1, len(urls) // max(1, args.alone_urls))
        for url in urls[::step][: args.alone_urls]:
            alone.update(await sample([url], args.alone_interval, args.count))
        t_alone = time.monotonic() - t0
        t0 = time.monotonic()
        together = await sample(urls, args.interval, args.count)
        t_together = time.monotonic() - t0
        # Noise floor: the same "together" run again, compared with the first.
        again = await sample(urls, args.interval, args.count)
    finally:
        for proc in procs:
            proc.communicate("", timeout=10)
    drifts = []
    missing = 0
    for url in alone:
        a, t = alone.get(url), together.get(url)
        if a is None or t is None:
            missing += 1
            continue
        drifts.append(t - a)
    if not drifts:
        print("no URL answered in both runs")
        return 1
    within = sum(1 for d in drifts if abs(d) < 1.0)
    floor = [
        again[u] - together[u]  # type: ignore[operator]
        for u in urls
        if again.get(u) is not None and together.get(u) is not None
    ]
    med_alone = statistics.median(v for v in alone.values() if v is not None)
    med_together = statistics.median(
        v for u, v in together.items() if v is not None and alone.get(u) is not None
    )
    print(
        f"{args.urls} URLs on {args.servers} local servers (/delay?ms={args.delay_ms}), "
        f"{args.count} requests per URL; load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"alone     ({len(drifts)} URLs, each by itself, every {args.alone_interval} s): "
        "median of medians "
        f"{med_alone:.3f} ms   ({t_alone:.0f} s)"
    )
    print(
        f"together  (all {args.urls} every {args.interval} s, one worker): median of medians "
        f"{med_together:.3f} ms   ({t_together:.0f} s)"
    )
    print(
        f"drift together - alone per URL: median {statistics.median(drifts):+.3f} ms, "
        f"largest |drift| {max(abs(d) for d in drifts):.3f} ms, "
        f"{within}/{len(drifts)} URLs within 1 ms, ratio of medians "
        f"{med_together / med_alone:.4f}" + (f"; {missing} URLs without data" if missing else "")
    )
    print(
        f"noise floor, together run twice, per URL: median {statistics.median(floor):+.3f} ms, "
        f"largest |drift| {max(abs(d) for d in floor):.3f} ms, "
        f"{sum(1 for d in floor if abs(d) < 1.0)}/{len(floor)} URLs within 1 ms"
    )
    case = f"{args.urls} URLs every {args.interval:g} s vs each alone ({len(drifts)} URLs)"
    report(
        case,
        "per-URL drift of the median, median over URLs",
        statistics.median(drifts),
        unit="ms",
        goal=Goal(hi=1.0, of="abs"),
    )
    report(case, "largest per-URL |drift|", max(abs(d) for d in drifts), unit="ms")
    report(
        case,
        "median of per-URL medians",
        med_together,
        med_alone,
        unit="ms",
        reference_tool="the same URLs each alone",
    )
    return 0 if abs(statistics.median(drifts)) < 1.0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100)
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--alone-interval", type=float, default=1.0)
    parser.add_argument(
        "--alone-urls", type=int, default=20, help="URLs also sampled alone (spread over all)"
    )
    parser.add_argument("--delay-ms", type=int, default=20)
    add_figures_option(parser)
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
