"""The http family's descriptor: ``probetop http URL... [curl options]`` run,
reported and shown (probes/core/family.py).

One-off (the default): ``one_off`` makes one request per URL and prints a
waterfall (or, with ``--json``, one pycurlb-compatible JSON document, or
with ``-w FORMAT`` curl's write-out); the exit code is curl's. Repeated
(``--count``, ``--sample-interval``, ``--watch``, ``--time`` or ``--record``):
without ``--watch`` the run is headless even on a terminal and ends with
per-phase statistics (``report``); with ``--watch`` the dashboard opens.

The repeated and load mode modules load on first use: a one-off request
pays only for what it prints (issue 28).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.core.family import (
    DemoContext,
    Family,
    Lazy,
    LiveText,
    RunCommon,
    RunOutcome,
)
from probetop.probes.core.sample import Sample
from probetop.probes.http.settings import HttpSettings, curl_json_data
from probetop.probes.http.spec import KIND, LOAD_KIND, SPEC
from probetop.probes.http.waterfall import use_colour


def read_settings(values: Mapping[str, Any], common: RunCommon) -> HttpSettings:
    # The common --sample-interval has no default in the namespace (None: not given),
    # so `--sample-interval 1` still asks for repeated sampling.
    settings = HttpSettings.from_options(
        values,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
        time_s=common.time_s,
        recording=common.record is not None,
    )
    data = curl_json_data(settings.urls) if common.json else None
    if data is not None:  # before anything is sent: curl would have POSTed it
        raise UsageProbeError(
            f"curl's --json DATA (DATA POSTed as JSON) is not probetop's --json (the result "
            f"as pycurlb's JSON document), so {data!r} is not a URL here: for curl's "
            "meaning write --data-binary DATA -H 'Content-Type: application/json' "
            "-H 'Accept: application/json'"
        )
    if common.json and settings.cookie_jar == "-":
        # the jar would follow the document on stdout: no JSON reader takes that
        raise UsageProbeError(
            "-c - writes the cookie jar to stdout, where --json writes its document: give -c FILE"
        )
    if common.assertions:  # one mode runs: refuse the other's figures (exit 2)
        from probetop.probes.http.load.checks import other_mode

        why = other_mode((str(getattr(a, "metric", "")) for a in common.assertions),
                         load=settings.load is not None)  # fmt: skip
        if why:
            raise UsageProbeError(why)
    return settings


def build_probes(settings: HttpSettings, common: RunCommon) -> list[Probe]:
    if settings.load is not None:  # --rate: load mode
        from probetop.probes.http.load.probe import HttpLoadProbe

        return [HttpLoadProbe(settings)]
    from probetop.probes.http.probe import HttpProbe

    return [HttpProbe(settings)]


def deadline_s(settings: HttpSettings, common: RunCommon) -> float | None:
    """--time (0: no time limit, as in cpu); the probe also ends itself after
    --count requests per URL. Load mode ends itself after --time (its worker
    lets the requests in flight finish), so no deadline cuts it."""
    if settings.load is not None:
        return None
    return common.time_limit_s


def demo_probes(ctx: DemoContext) -> list[Probe]:
    """Two local URLs on the demo server: a 20 ms wait and a 100 kB body."""
    from probetop.probes.http.probe import HttpProbe

    base = ctx.http_url
    urls = (f"{base}/delay?ms=20", f"{base}/bytes?n=100000")
    return [HttpProbe(HttpSettings(urls=urls, interval_s=1.0))]


def one_off(settings: HttpSettings, common: RunCommon) -> int | None:
    """One-off mode: the waterfall or JSON and an exit code per error kind.
    None for repeated mode (headless without --watch: ``headless_only``)."""
    if settings.watch or not settings.one_off:
        return None
    if common.assertions:  # one request has no distribution to assert on
        raise UsageProbeError(
            "--assert needs repeated requests: add --count N or --sample-interval S "
            "(one-off mode prints a single exchange)"
        )
    from probetop.probes.http.oneoff import one_off as run_one_off

    return run_one_off(settings, as_json=common.json)


def headless_only(settings: HttpSettings) -> bool:
    """Repeated without --watch: a headless run and its report, even on a terminal."""
    return not settings.watch


def report(settings: HttpSettings, common: RunCommon, result: RunOutcome) -> int:
    """Per URL: status classes, per phase min, p50, p90, p99, max, mean,
    stddev over successes, jitter, outage; exit 128 + the signal's number when one
    interrupted the run (130 for Ctrl-C), else curl's code when every request
    to a URL failed (``no_response_exit``)."""
    if settings.load is not None:
        return load_report(common, result)
    from probetop.probes.http.report import json_report, render_report

    if common.json:
        doc = json_report(result.summaries, result.duration_s, result.reason, result.errors)
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        colour = use_colour(sys.stdout)
        sys.stdout.write(render_report(result.summaries, result.duration_s, result.reason, colour))
        print_errors(result.errors)
    if result.errors:
        return 1
    # Ctrl-C (or SIGTERM): the partial report is out, and the exit status says
    # the run did not finish, as in load mode.
    if result.signal_status:
        return result.signal_status
    return no_response_exit(result.summaries)


def no_response_exit(summaries: Mapping[str, Mapping[str, Any]]) -> int:
    """Repeated mode is curl in a loop: a URL none of whose requests got a
    response (each a transport error: refused, DNS, timeout, TLS ...) exits
    with curl's code for its latest failure (7 refused, 6 DNS, 28 timeout,
    ...), said on stderr; with several such URLs the last one's, as curl's
    last URL decides. A response of any status is curl's exit 0 (no -f)."""
    from probetop.probes.http.report import http_summaries

    code = 0
    for summary in http_summaries(summaries).values():
        for label, url_stats in (summary.get("urls") or {}).items():
            requests = int(url_stats.get("requests") or 0)
            failed = int((url_stats.get("classes") or {}).get("transport") or 0)
            if not requests or failed < requests:
                continue
            code = int(url_stats.get("last_curl_code") or 1)
            print(
                f"probetop: error: {label}: no request got a response ({requests} failed; "
                f"last: {url_stats.get('last_error')}); exit {code}, curl's code for it",
                file=sys.stderr,
            )
    return code


def load_no_response_exit(summaries: Mapping[str, Mapping[str, Any]]) -> int:
    """Load mode exits 1 when requests were sent and none got a response
    (each a transport error, or still in flight at the end), as wrk exits 1
    when it cannot connect ("unable to connect to ..."). HTTP error statuses
    are responses (wrk: "Non-2xx or 3xx responses", exit 0)."""
    from probetop.probes.http.errorkinds import kind_hint

    code = 0
    for pid, s in summaries.items():
        if s.get("mode") != "load" or not int(s.get("sent") or 0):
            continue
        if sum(int(n) for n in (s.get("codes") or {}).values()):
            continue
        errors = s.get("errors") or {}
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(errors.items())) or "none finished"
        top = max(errors, key=lambda k: errors[k]) if errors else None
        hint = kind_hint(top) if top else None
        print(
            f"probetop: error: {pid}: no request got a response ({kinds})"
            + (f": {hint}" if hint else ""),
            file=sys.stderr,
        )
        code = 1
    return code


def load_report(common: RunCommon, result: RunOutcome) -> int:
    """Load mode: rates, latency by status class (corrected and service),
    the generator's own figures. Exit 128 + the signal's
    number when one interrupted the run, 1 on probe errors and (as wrk) when
    no request got a response."""
    from probetop.probes.http.load.report import load_json_report, render_load_report

    if common.json:
        doc = load_json_report(result.summaries, result.duration_s, result.reason, result.errors)
        json.dump(doc, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        colour = use_colour(sys.stdout)
        sys.stdout.write(
            render_load_report(
                result.summaries,
                result.duration_s,
                result.reason,
                colour,
                head_printed=result.live_printed,
            )
        )
        print_errors(result.errors)
    if result.errors:
        return 1
    if result.signal_status:
        return result.signal_status
    return load_no_response_exit(result.summaries)


def live_banner(settings: HttpSettings, probes: Sequence[Probe]) -> str:
    """wrk's first two lines as the run starts, as wrk prints them (load mode's
    headless text report; nothing in repeated mode)."""
    load = settings.load
    if load is None or not settings.urls:
        return ""
    from probetop.probes.http.load.wrkfmt import wrk_head
    from probetop.probes.record import redact_url

    head = {"url": redact_url(settings.urls[0]), "time_s": load.time_s,
            "connections": load.connections}  # fmt: skip
    return "".join(f"{line}\n" for line in wrk_head(head))


def live_lines(settings: HttpSettings) -> Callable[[Sample], Sequence[str]]:
    """No per-sample lines: wrk prints nothing while it runs."""
    return lambda _sample: ()


def print_errors(errors: Mapping[str, str]) -> None:
    """The probes' errors on stderr, secrets redacted."""
    from probetop.probes.record import redact_text

    for pid, err in errors.items():
        print(f"probetop: error: {pid}: {redact_text(err)}", file=sys.stderr)


def records() -> tuple[type, ...]:
    from probetop.probes.http.load.records import LoadInterval
    from probetop.probes.http.records import HttpInterval

    return (HttpInterval, LoadInterval)


FAMILY = Family(
    spec=SPEC,
    settings=HttpSettings,
    read_settings=read_settings,
    build_probes=build_probes,
    report=report,
    records=records,
    panes={
        KIND: "probetop.tui.ui.panes.http:HttpPane",
        LOAD_KIND: "probetop.tui.ui.panes.httpload:HttpLoadPane",
    },
    tracker=Lazy("probetop.probes.http.catalogues:TRACKERS"),
    checks=Lazy("probetop.probes.http.catalogues:CHECKS"),
    docs="docs/http.md",
    example=("http://127.0.0.1:1/",),
    deadline_s=deadline_s,
    one_off=one_off,
    headless_only=headless_only,
    demo_probes=demo_probes,
    live_text=LiveText(banner=live_banner, lines=live_lines),
)
