"""The repeated-mode report: per URL and phase, the distribution of every
request's timings and the errors by kind, as text or as one JSON document.

Contract: pure functions from a run's probe summaries (``HttpProbe.summary``,
keyed by probe id; summaries of other probes are skipped) to a string or a
JSON-safe dict. Credentials are redacted in the JSON document. Colours only
when asked (``waterfall.use_colour``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.http.waterfall import paint

# The module, not ``from ... import redact``: ``redact`` is also the name of a
# record submodule, and the import contracts would read it as that module.
from probetop.probes.record import redact

_STAT_COLS = ("min", "p50", "p90", "p99", "max", "mean", "stddev")


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
    """Repeated mode as text: per URL, per phase distribution (ms) and error counts."""
    out = [f"probetop http: ran {duration_s:.1f} s ({reason})"]
    for summary in http_summaries(summaries).values():
        conn = summary.get("connection", "fresh")
        out.append(f"connections: {conn}; interval {summary.get('interval_s')} s")
        if summary.get("reference_command"):
            out.append(f"reference (one sample): {summary['reference_command']}")
        for label, url_stats in summary.get("urls", {}).items():
            out.append("")
            out.append(paint(f"== {url_stats.get('url', label)}", "1", colour))
            errors = url_stats.get("errors") or {}
            err_text = ", ".join(f"{k} {v}" for k, v in sorted(errors.items())) or "none"
            codes = url_stats.get("http_codes") or {}
            code_text = ", ".join(f"{k}: {v}" for k, v in codes.items()) or "-"
            out.append(
                f"   requests {url_stats.get('requests', 0)}   status {code_text}   "
                f"errors {err_text}"
            )
            if url_stats.get("last_error"):
                out.append(f"   last error: {url_stats['last_error']}")
            if any(d.get("count") for d in url_stats.get("phases_ms", {}).values()):
                header = "".join(f"{c:>10}" for c in _STAT_COLS)
                out.append(f"   {'ms':<9}{header}{'n':>7}")
            for series, dist in url_stats.get("phases_ms", {}).items():
                if not dist.get("count"):
                    continue
                cells = "".join(_cell(dist.get(c)) for c in _STAT_COLS)
                out.append(f"   {series:<9}{cells}{dist['count']:>7}")
    return "\n".join(out) + "\n"


def _cell(value: float | None) -> str:
    return f"{'-':>10}" if value is None else f"{value:>10.3f}"
