"""``probetop http URL... [curl options]``: HTTP phase timings.

One-off (the default): ``run`` makes one request per URL and prints a
waterfall (or, with ``--json``, one pycurlb-compatible JSON document, or
with ``-w FORMAT`` curl's write-out); the exit code is curl's. Repeated (``--count``,
``--sample-interval``, ``--watch``, ``--time`` or ``--record``): without ``--watch``
``run`` samples headless and prints per-phase statistics (``report``); with
``--watch`` it returns None and the generic path opens the dashboard.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes import http
from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.http import HttpSettings
from probetop.probes.record import redact_text
from probetop.tui.cli.plan import CommonOptions, RunPlan

if TYPE_CHECKING:  # the headless runner loads for repeated mode only (asyncio ...)
    from probetop.tui.run.runner import RunResult

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
    return [http.HttpProbe(plan.settings)]


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
    return [http.HttpProbe(HttpSettings(urls=urls, interval_s=1.0))]


def run(plan: RunPlan[HttpSettings]) -> int | None:
    """One-off: the waterfall or JSON and an exit code per error kind.
    Repeated without --watch: a headless run and its report, even on a
    terminal. --watch: None (the dashboard, unless --json/--headless)."""
    if plan.settings.watch:
        return None
    if not plan.settings.one_off:
        from probetop.tui.run.launch import run_headless_plan

        return run_headless_plan(plan, build_probes(plan), sys.modules[__name__])
    if plan.common.assertions:  # one request has no distribution to assert on
        raise UsageProbeError(
            "--assert needs repeated requests: add --count N or --sample-interval S "
            "(one-off mode prints a single exchange)"
        )
    return one_off(plan.settings, as_json=plan.common.json)


def one_off(settings: HttpSettings, *, as_json: bool) -> int:
    """One request per URL, then the waterfall, the JSON document or the -w
    output; curl's exit code, the last URL's as with curl."""
    request = settings.request
    http.check_http_version(request.http_version)
    if as_json and settings.write_out is not None:
        raise UsageProbeError(
            "--json and -w/--write-out both choose the output: give one "
            "(-w '%{json}' prints curl's JSON of each transfer)"
        )
    writer = http.WriteOut(settings.write_out) if settings.write_out is not None else None
    docs: list[dict[str, Any]] = []
    code = 0
    colour = http.use_colour(sys.stdout)
    for i, raw in enumerate(settings.urls):
        exchange: http.Exchange | None = None
        try:
            url = http.check_url(raw)
        except http.HttpUrlError as exc:
            print(f"probetop: error: {exc}", file=sys.stderr)
            code, errormsg = exc.exit_code, str(exc)
        else:
            exchange = http.fetch(request, url, fail=settings.fail)
            code = exchange.exit_status(fail=settings.fail)
            errormsg = exchange.curl_error(fail=settings.fail)
            message = exchange.message(fail=settings.fail)
            if as_json:
                docs.append(http.pycurlb_document(exchange))
            elif writer is None:
                if i:
                    sys.stdout.write("\n")
                sys.stdout.write(http.render_exchange(exchange, colour=colour))
            if message:
                print(f"probetop: error: {message}", file=sys.stderr)
        if writer is not None:
            write_out(writer, settings, http.Transfer(exchange, raw, i, code, errormsg))
    if as_json and docs:
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    sys.stdout.flush()
    return code


def write_out(writer: http.WriteOut, settings: HttpSettings, transfer: http.Transfer) -> None:
    """curl's -w output of one URL, on stdout and stderr as the format says."""
    transfer = dataclasses.replace(
        transfer,
        method=settings.request.initial_method(),
        output=settings.output,
        referer=settings.request.referer,
        curl_version=http.libcurl_version(),
    )
    chunks, warnings = writer.render(transfer)
    for warning in warnings:  # curl warns, and goes on
        print(f"probetop: {warning}", file=sys.stderr)
    for name, text in chunks:
        stream = sys.stdout if name == "stdout" else sys.stderr
        stream.flush()
        stream.buffer.write(text.encode("utf-8", "surrogateescape"))
        stream.buffer.flush()


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
