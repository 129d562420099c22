"""``probetop http URL... [curl options]``: HTTP phase timings.

One-off (the default): ``run`` makes one request per URL and prints a
waterfall (or, with ``--json``, one pycurlb-compatible JSON document); the
exit code tells the error kind (``http.EXIT_CODES``). Repeated (``--count``,
``--sample-interval``, ``--watch``, ``--time`` or ``--record``): without ``--watch``
``run`` samples headless and prints per-phase statistics (``report``); with
``--watch`` it returns None and the generic path opens the dashboard.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes import http
from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.http import HttpProbe, HttpSettings
from probetop.probes.record import redact_text
from probetop.tui.launch import run_headless_plan
from probetop.tui.plan import CommonOptions, RunPlan
from probetop.tui.runner import RunResult

SPEC = http.SPEC  # the family declares the options; this module runs them
FOCUS = http.KIND


def settings(values: Mapping[str, Any], common: CommonOptions) -> HttpSettings:
    # The common --sample-interval has no default in the namespace (None: not given),
    # so `--sample-interval 1` still asks for repeated sampling.
    return HttpSettings.from_options(
        values,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
        time_s=common.time_s,
        recording=common.record is not None,
    )


def build_probes(plan: RunPlan[HttpSettings]) -> list[Probe]:
    if plan.settings.load is not None:
        return [http.HttpLoadProbe(plan.settings)]  # --rate: load mode
    return [HttpProbe(plan.settings)]


def deadline_s(plan: RunPlan[HttpSettings]) -> float | None:
    """--time (0: no time limit, as in cpu); the probe also ends itself after
    --count requests per URL. Load mode ends itself after --time (its worker
    lets the requests in flight finish), so no deadline cuts it."""
    if plan.settings.load is not None:
        return None
    return plan.common.time_limit_s


def demo_probes(ctx: Any) -> list[Probe]:
    """Two local URLs on the demo server: a 20 ms wait and a 100 kB body."""
    base = ctx.http_url
    urls = (f"{base}/delay?ms=20", f"{base}/bytes?n=100000")
    return [HttpProbe(HttpSettings(urls=urls, interval_s=1.0))]


def run(plan: RunPlan[HttpSettings]) -> int | None:
    """One-off: the waterfall or JSON and an exit code per error kind.
    Repeated without --watch: a headless run and its report, even on a
    terminal. --watch: None (the dashboard, unless --json/--headless)."""
    if plan.settings.watch:
        return None
    if not plan.settings.one_off:
        return run_headless_plan(plan, build_probes(plan), sys.modules[__name__])
    if plan.common.assertions:  # one request has no distribution to assert on
        raise UsageProbeError(
            "--assert needs repeated requests: add --count N or --sample-interval S "
            "(one-off mode prints a single exchange)"
        )
    return one_off(plan.settings, as_json=plan.common.json)


def one_off(settings: HttpSettings, *, as_json: bool) -> int:
    """One request per URL; the first URL's error kind is the exit code."""
    request = settings.request
    http.check_http_version(request.http_version)
    docs: list[dict[str, Any]] = []
    code = 0
    colour = http.use_colour(sys.stdout)
    for i, raw in enumerate(settings.urls):
        try:
            url = http.check_url(raw)
        except http.HttpUrlError as exc:
            print(f"probetop: error: {exc}", file=sys.stderr)
            code = code or exc.exit_code
            continue
        exchange = http.fetch(request, url)
        if as_json:
            docs.append(http.pycurlb_document(exchange))
        else:
            if i:
                sys.stdout.write("\n")
            sys.stdout.write(http.render_exchange(exchange, colour=colour))
        message = exchange.message()
        if message:
            print(f"probetop: error: {message}", file=sys.stderr)
        code = code or exchange.exit_code
    if as_json and docs:
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    sys.stdout.flush()
    return code


def report(plan: RunPlan[HttpSettings], result: RunResult) -> int:
    """Per URL: status classes, per phase min, p50, p90, p99, max, mean,
    stddev over successes, jitter, outage; exit 128 + the signal's number when one
    interrupted the run (130 for Ctrl-C)."""
    if plan.settings.load is not None:
        return load_report(plan, result)
    if plan.common.json:
        doc = http.json_report(result.summaries, result.duration_s, result.reason, result.errors)
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        colour = http.use_colour(sys.stdout)
        sys.stdout.write(
            http.render_report(result.summaries, result.duration_s, result.reason, colour)
        )
        for pid, err in result.errors.items():
            print(f"probetop: error: {pid}: {redact_text(err)}", file=sys.stderr)
    if result.errors:
        return 1
    # Ctrl-C (or SIGTERM): the partial report is out, and the exit status says
    # the run did not finish, as in load mode.
    return result.signal_status


def load_report(plan: RunPlan[HttpSettings], result: RunResult) -> int:
    """Load mode: rates, latency by status class (corrected and service),
    the generator's own figures. Exit 128 + the signal's
    number when one interrupted the run, 1 on probe errors."""
    if plan.common.json:
        doc = http.load_json_report(
            result.summaries, result.duration_s, result.reason, result.errors
        )
        json.dump(doc, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        colour = http.use_colour(sys.stdout)
        sys.stdout.write(
            http.render_load_report(result.summaries, result.duration_s, result.reason, colour)
        )
        for pid, err in result.errors.items():
            print(f"probetop: error: {pid}: {redact_text(err)}", file=sys.stderr)
    if result.errors:
        return 1
    return result.signal_status
