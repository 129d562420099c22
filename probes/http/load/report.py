"""Load mode's report: the run's rates, latency by status class (corrected
and service), phases, errors and the generator's own figures, as text or as
one JSON document.

Contract: pure functions from a run's probe summaries (``HttpLoadProbe.summary``,
keyed by probe id; other probes' summaries are skipped) to a string or a
JSON-safe dict. Credentials are redacted. A run whose errors exceed
``ERROR_MARKER_SHARE`` and a generator-limited run get a loud line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.http.load.records import PCT_KEYS
from probetop.probes.http.status import ERROR_MARKER_SHARE, STATUS_CLASSES
from probetop.probes.http.waterfall import paint

# The module, not ``from ... import redact`` (see report.py).
from probetop.probes.record import redact

CLASS_NAMES = {"2xx_3xx": "2xx/3xx", "4xx": "4xx", "5xx": "5xx", "transport": "transport"}
_LIMIT_TEXT = {"cpu": "its CPU ran out", "busy": "its loop never waited", "late": "it sent late"}
ROWS_IN_TEXT = 60  # per-interval rows printed when the run has at most this many


def load_summaries(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The summaries of load probes, by probe id."""
    return {pid: s for pid, s in summaries.items() if s.get("mode") == "load"}


def load_json_report(
    summaries: Mapping[str, Mapping[str, Any]],
    duration_s: float,
    reason: str,
    errors: Mapping[str, str],
) -> dict[str, Any]:
    """The ``--json`` document of a load run."""
    return {
        "duration_s": round(duration_s, 3),
        "reason": reason,
        "probes": redact(load_summaries(summaries)),
        "errors": dict(errors),
    }


def render_load_report(
    summaries: Mapping[str, Mapping[str, Any]],
    duration_s: float,
    reason: str,
    colour: bool,
    *,
    head_printed: bool = False,
) -> str:
    """probetop's report between wrk's first lines and wrk's closing block
    (``wrkfmt``): the same lines in the same order as wrk's stdout, so a
    script that reads wrk's output (``grep Requests/sec``, ``tail -n 2``)
    reads this one; probetop's lines stand where wrk's run would be.
    ``head_printed``: wrk's first lines went out as the run started
    (``family.live_banner``), as wrk prints them."""
    from probetop.probes.http.load.wrkfmt import wrk_head, wrk_tail

    loads = list(load_summaries(summaries).values())
    out: list[str] = []
    for s in loads if not head_printed else ():
        out += wrk_head(s)
    out.append(f"probetop http load: ran {duration_s:.1f} s ({reason})")
    for s in loads:
        out += _one(s, colour)
    if loads:
        out.append("")
    for s in loads:
        out += wrk_tail(s)
    return "\n".join(out) + "\n"


def _one(s: Mapping[str, Any], colour: bool) -> list[str]:
    rate = float(s.get("rate") or 0)  # 0: closed loop
    conn = "keep-alive" if s.get("connection") == "reuse" else "a new connection per request"
    head = (
        f"   target {rate:g} req/s on a fixed schedule, at most {s.get('connections')} in flight"
        if rate
        else f"   closed loop, {s.get('connections')} connections: each sends its next "
        "request when its response is in (wrk -c)"
    )
    out = [
        "",
        paint(f"== {s.get('url', '?')}", "1", colour),
        f"{head} ({conn}); report every {s.get('interval_s')} s",
    ]
    sent_rps = s.get("sent_rps")
    share = f", {100.0 * sent_rps / rate:.1f} % of target" if sent_rps and rate else ""
    run_s = s.get("run_s", s.get("seconds", 0))
    drained = int(s.get("done_in_drain") or 0)
    out.append(
        f"   sent {s.get('sent', 0)} ({_num(sent_rps)}/s{share})   "
        f"done {s.get('done', 0) - drained} ({_num(s.get('done_rps'))}/s)   over {run_s} s"
        + (f"   (+{drained} finished in the drain after it)" if drained else "")
    )
    if s.get("unfinished") or s.get("unsent"):
        out.append(
            f"   at the end: {s.get('unfinished', 0)} requests still in flight, "
            f"{s.get('unsent', 0)} due but never sent (not in the latencies)"
        )
    classes: Mapping[str, Mapping[str, Any]] = s.get("classes") or {}
    counts = "   ".join(
        f"{CLASS_NAMES[c.value]} {int((classes.get(c.value) or {}).get('count', 0))}"
        for c in STATUS_CLASSES
    )
    share_err = s.get("error_share")
    err_text = "" if share_err is None else f"   (errors {100.0 * share_err:.2f} %)"
    out.append(f"   status: {counts}{err_text}")
    errors = s.get("errors") or {}
    if errors:
        out.append("   errors by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(errors.items())))
    if s.get("error_marker"):
        out.append(
            paint(
                f"   !! errors above {100 * ERROR_MARKER_SHARE:g} % of requests: the latencies "
                "below are over successful responses only; read the error counts first",
                "1;31",
                colour,
            )
        )
    if s.get("last_error"):
        out.append(f"   last error: {s['last_error']}")
    head = "".join(f"{k:>10}" for k in PCT_KEYS)
    out.append("")
    out.append(f"   {'latency, ms':<22}{head}{'n':>9}")
    for cls in STATUS_CLASSES:
        table = classes.get(cls.value)
        if not table or not table.get("count"):
            continue
        for which, key in (("corrected", "corrected_ms"), ("service", "service_ms")):
            cells = "".join(_cell((table.get(key) or {}).get(k)) for k in PCT_KEYS)
            name = f"{which} {CLASS_NAMES[cls.value]}"
            out.append(f"   {name:<22}{cells}{int(table['count']):>9}")
    out.append(
        "   corrected: from each request's scheduled send time (what a user arriving on "
        "schedule waits); service: from the actual send (what wrk/ab report)"
    )
    phases: Mapping[str, Mapping[str, Any]] = s.get("phases_ms") or {}
    if phases:
        out.append("")
        out.append(f"   {'phases 2xx/3xx, ms':<22}{head}{'mean':>10}")
        for phase, table in phases.items():
            cells = "".join(_cell(table.get(k)) for k in PCT_KEYS)
            out.append(f"   {phase:<22}{cells}{_cell(table.get('mean'))}")
    out.append("")
    out.append(
        f"   in flight: at most {s.get('in_flight_max', 0)}   waited for a free connection: "
        f"{s.get('waited', 0)}   connections opened: {s.get('connects', 0)}"
    )
    lag = s.get("gen_lag_ms") or {}
    out.append(
        f"   generator: lag p50 {_num(lag.get('p50'))} ms, p99 {_num(lag.get('p99'))} ms, "
        f"max {_num(lag.get('max'))} ms; loop busy {_num(s.get('gen_busy_pct'))} %, "
        f"CPU {_num(s.get('gen_cpu_pct'))} %, waiting for a CPU {_num(s.get('gen_wait_pct'))} %; "
        f"limited in {s.get('generator_limited_intervals', 0)} of {s.get('intervals', 0)} intervals"
    )
    limits = s.get("generator_limits") or {}
    if s.get("generator_limited") or s.get("generator_limited_intervals"):
        kinds = ", ".join(f"{_LIMIT_TEXT.get(k, k)} in {n}" for k, n in sorted(limits.items()))
        out.append(
            paint(
                f"   !! generator-limited ({kinds or 'the run as a whole'}): in those intervals "
                "the rate and the corrected tail are probetop's (or this machine's) limit, not "
                "the server's. Lower --rate, free the machine, or run the generator elsewhere.",
                "1;33",
                colour,
            )
        )
    sent_share = sent_rps / rate if sent_rps and rate else None
    if sent_share is not None and sent_share < 0.98 and not s.get("generator_limited"):
        out.append(
            paint(
                f"   !! rate not kept: {100.0 * sent_share:.1f} % of the target was sent while the "
                f"generator was not saturated: all {s.get('connections')} connections were busy "
                "(the server's answers, plus the client's turn-around, set how fast they free); "
                "more --connections sends more",
                "1;33",
                colour,
            )
        )
    if s.get("waited"):
        conns = s.get("connections")
        which = "the connection" if conns == 1 else f"one of the {conns} connections"
        out.append(
            f"   {s['waited']} requests waited for {which}: "
            "that wait is in the corrected latency (users would wait too); more --connections "
            "tests more concurrency"
        )
    rows = s.get("interval_rows") or []
    if rows and int(s.get("intervals") or 0) <= ROWS_IN_TEXT:
        out.append("")
        out.append(
            f"   {'t, s':>7}{'sent/s':>9}{'done/s':>9}{'ok':>7}{'err':>6}"
            f"{'corr p50':>10}{'p99':>9}{'p99.9':>9}{'svc p50':>9}{'p99':>9}{'p99.9':>9}"
            f"{'flight':>7}{'backlog':>8}{'lag99':>7}"
        )
        for row in rows:
            c, v = row.get("corrected_ms") or {}, row.get("service_ms") or {}
            mark = "  generator-limited" if row.get("generator_limited") else ""
            out.append(
                f"   {_num(row.get('t_s')):>7}{_num(row.get('sent_rps')):>9}"
                f"{_num(row.get('done_rps')):>9}{row.get('ok', 0):>7}{row.get('errors', 0):>6}"
                f"{_num(c.get('p50')):>10}{_num(c.get('p99')):>9}{_num(c.get('p99.9')):>9}"
                f"{_num(v.get('p50')):>9}{_num(v.get('p99')):>9}{_num(v.get('p99.9')):>9}"
                f"{row.get('in_flight_max', 0):>7}{row.get('backlog', 0):>8}"
                f"{_num(row.get('gen_lag_p99_ms')):>7}{mark}"
            )
    elif rows and s.get("intervals_dropped"):
        out.append(
            f"   ({s.get('intervals')} intervals: the newest {len(rows)} rows in --json, "
            "every one in --record)"
        )
    elif rows:
        out.append(f"   ({s.get('intervals')} intervals: per-interval rows in --json and --record)")
    if s.get("reference_command"):
        out.append(f"   reference: {s['reference_command']}")
    return out


def _cell(value: Any) -> str:
    return f"{'-':>10}" if not isinstance(value, (int, float)) else f"{value:>10.3f}"


def _num(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value else "0"
