"""The repeated-mode report: per URL, the requests by status class (a loud
``!!`` line when errors pass ``ERROR_MARKER_SHARE``), warm-up requests
discarded, skipped turns, jitter and outage time, and per phase the
distribution over the requests the statistics cover (2xx/3xx unless
``--include-errors``), as text or as one JSON document.

Contract: pure functions from a run's probe summaries (``HttpProbe.summary``,
keyed by probe id; summaries of other probes are skipped) to a string or a
JSON-safe dict. Credentials are redacted in the JSON document. Colours only
when asked (``waterfall.use_colour``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.latencyseries import EXACT_LIMIT
from probetop.probes.http.status import CLASS_LABELS, ERROR_MARKER_SHARE, STATUS_CLASSES
from probetop.probes.http.waterfall import paint

# The module, not ``from ... import redact``: ``redact`` is also the name of a
# record submodule, and the import contracts would read it as that module.
from probetop.probes.record import redact

_STAT_COLS = ("min", "p50", "p90", "p99", "max", "mean", "stddev")
#: How the text report names each status class, by its JSON key.
CLASS_NAMES = {c.value: label for c, label in CLASS_LABELS.items()}


def http_summaries(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The summaries of http probes (they have per-URL statistics), by probe id."""
    return {pid: s for pid, s in summaries.items() if "urls" in s}


def json_report(
    summaries: Mapping[str, Mapping[str, Any]],
    duration_s: float,
    reason: str,
    errors: Mapping[str, str],
) -> dict[str, Any]:
    """The ``--json`` document of a repeated run: duration, why it ended,
    every http probe's summary (redacted) and the probes' errors."""
    return {
        "duration_s": round(duration_s, 3),
        "reason": reason,
        "probes": redact(http_summaries(summaries)),
        "errors": dict(errors),
    }


def render_report(
    summaries: Mapping[str, Mapping[str, Any]], duration_s: float, reason: str, colour: bool
) -> str:
    """Repeated mode as text: per URL, status classes, per phase distribution
    (ms) over the covered requests, the other classes' totals, jitter, outage."""
    out = [f"probetop http: ran {duration_s:.1f} s ({reason})"]
    for summary in http_summaries(summaries).values():
        conn = summary.get("connection", "fresh")
        line = f"connections: {conn}; interval {summary.get('interval_s')} s"
        if summary.get("warmup"):
            line += f"; warm-up {summary['warmup']} request(s) per URL discarded"
        out.append(line)
        if summary.get("reference_command"):
            out.append(f"reference (one sample): {summary['reference_command']}")
        for label, url_stats in summary.get("urls", {}).items():
            out.append("")
            out.append(paint(f"== {url_stats.get('url', label)}", "1", colour))
            out.extend(_url_lines(url_stats, colour))
    return "\n".join(out) + "\n"


def _url_lines(url_stats: Mapping[str, Any], colour: bool) -> list[str]:
    out: list[str] = []
    classes = url_stats.get("classes") or {}
    class_text = "  ".join(
        f"{CLASS_NAMES.get(c.value, c.value)} {classes.get(c.value, 0)}" for c in STATUS_CLASSES
    )
    codes = url_stats.get("http_codes") or {}
    code_text = ", ".join(f"{k}: {v}" for k, v in codes.items()) or "-"
    out.append(
        f"   requests {url_stats.get('requests', 0)}   {class_text}   "
        f"discarded (warm-up) {url_stats.get('discarded', 0)}   "
        f"skipped turns {url_stats.get('skipped_turns', 0)}"
    )
    errors = url_stats.get("errors") or {}
    err_text = ", ".join(f"{k} {v}" for k, v in sorted(errors.items())) or "none"
    out.append(f"   status {code_text}   errors {err_text}")
    share = url_stats.get("error_share")
    if url_stats.get("error_marker") and isinstance(share, (int, float)):
        out.append(
            paint(
                f"   !! errors {100 * share:.1f} % of requests (above "
                f"{100 * ERROR_MARKER_SHARE:g} %): this URL is failing, not just slow or fast",
                "1;31",
                colour,
            )
        )
    if url_stats.get("last_error"):
        out.append(f"   last error: {url_stats['last_error']}")
    skipped = url_stats.get("skipped_turns") or 0
    if skipped:
        out.append(
            f"   !! {skipped} turn(s) skipped: the previous request was still running "
            "when the next was due (a slow URL; raise --sample-interval or -m)"
        )
    out.append(f"   {_continuity(url_stats)}")
    covers = url_stats.get("latency_covers", "2xx_3xx")
    phases = url_stats.get("phases_ms", {})
    if any(d.get("count") for d in phases.values()):
        what = "every response (--include-errors)" if covers == "responses" else "2xx/3xx only"
        out.append(f"   latency over {what}:")
        header = "".join(f"{c:>10}" for c in _STAT_COLS)
        out.append(f"   {'ms':<9}{header}{'n':>7}")
    else:
        out.append("   latency: no successful response to measure")
    for series, dist in phases.items():
        if not dist.get("count"):
            continue
        cells = "".join(_cell(dist.get(c)) for c in _STAT_COLS)
        out.append(f"   {series:<9}{cells}{dist['count']:>7}")
    for name, dist in (url_stats.get("total_ms_by_class") or {}).items():
        if name == "2xx_3xx" or not isinstance(dist, Mapping) or not dist.get("count"):
            continue
        cells = "".join(_cell(dist.get(c)) for c in _STAT_COLS)
        out.append(f"   {'total ' + CLASS_NAMES.get(name, name):<9}{cells}{dist['count']:>7}")
    dists = [*phases.values(), *(url_stats.get("total_ms_by_class") or {}).values()]
    binned = [d for d in dists if isinstance(d, Mapping) and d.get("exact") is False]
    if binned:
        err = max(float(d.get("relative_error") or 0.0) for d in binned)
        out.append(
            f"   NOTE: past {EXACT_LIMIT} distinct values a series keeps log buckets, not "
            f"every value: its percentiles are within {100 * err:g} % (min, max, mean exact)"
        )
    return out


def _continuity(url_stats: Mapping[str, Any]) -> str:
    jitter = url_stats.get("jitter_ms") or {}
    outage = url_stats.get("outage") or {}
    mean, peak = jitter.get("mean"), jitter.get("max")
    jit = "jitter -" if mean is None else f"jitter mean {mean:.3f} ms, max {peak:.3f} ms"
    seconds = outage.get("seconds") or 0.0
    text = f"{jit}   outage {seconds:.3f} s"
    if outage.get("count"):
        text += f" in {outage['count']} span(s), longest {outage.get('longest_s', 0.0):.3f} s"
        if outage.get("ongoing"):
            text += " (still down at the end)"
    return text


def _cell(value: float | None) -> str:
    return f"{'-':>10}" if value is None else f"{value:>10.3f}"
