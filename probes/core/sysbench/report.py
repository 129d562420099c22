"""The parts of a sysbench 1.0.20 report that every test prints the same way.

Contract:
- ``cumulative_sections(summary)`` is sysbench's ``sb_report_cumulative``:
  "General statistics", "Latency (ms)" and "Threads fairness" with
  sysbench's names, widths and number formats, from a summary holding
  ``total_time``, ``total_events``, ``percentile``, ``latency_ms`` and
  ``fairness`` (``counters.latency_ms`` / ``counters.fairness``).
- ``banner(what_ran)`` is the first line and ``options_head(...)`` the
  block under it, to the seed line, as every test prints them; ``printed(row)``
  whether a kept interval row is one of the report's lines.
- ``stamp(t, interval_s)`` is the ``[ 1s ]`` that begins an interval line;
  ``prints_at_time(...)`` whether a run's last, partial interval is printed
  as its last line (it ended at --time, on the reporting grid), as in every
  sysbench test.
- ``parse_sections(text, patterns)`` finds a test's own lines and the shared
  sections (last match wins: a sweep's final block is the one that counts);
  ``cumulative_fields(found)`` reads the shared sections back, from our
  report or from real sysbench output, into the keys of the JSON document.
- ``json_document(summary, reason=...)`` is a ``--json`` output.
- ``histogram_lines(counts)`` is sysbench's ``--histogram`` block
  (``sb_histogram_print`` and the lines around it), from a histogram's
  bucket counts (``hist``'s layout) or its sparse JSON form.
- ``write_run_report(result, ...)`` writes a run's headless report (text or
  JSON) and gives its exit status; ``run_report(text, document)`` is a
  family's ``report`` hook that does so. After a run that printed the
  family's ``LiveText`` (banner and interval lines, ``live_text``), the text
  report is only the rest (``rest_only``).
- ``live_text(head, reader)`` is a sysbench family's ``LiveText``: ``head``
  gives the banner from the probe's summary before the run, ``reader`` the
  interval lines from its samples, the same lines ``text`` prints. Before
  the banner, at every --verbosity, sysbench's warning of a run with
  neither --time nor --events (``options.endless_warning``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from probetop.probes import version
from probetop.probes.core.base import Probe
from probetop.probes.core.family import LiveText, RunCommon, RunOutcome
from probetop.probes.core.intervallog import dropped_note
from probetop.probes.core.sample import Sample
from probetop.probes.core.sysbench import SYSBENCH_VERSION
from probetop.probes.core.sysbench.hist import HIST_SIZE, bucket_value_ms, percentile_key
from probetop.probes.core.sysbench.options import (
    DEBUG_VERBOSITY,
    DEFAULT_VERBOSITY,
    endless_warning,
    seed_line,
)

LATENCY_WIDTH = 53  # sysbench right-aligns latency values to this column
STAT_PREFIX = 41  # "    total time:" padded to this width
FAIRNESS_PREFIX = 35
PERCENTILE_DISABLED = "         percentile stats:               disabled"  # --percentile=0

NUM = r"([-+]?\d+(?:\.\d+)?)"  # a number as sysbench prints one
COMMON_PATTERNS = {
    "total_time": rf"total time:\s+{NUM}s",
    "total_events": rf"total number of events:\s+{NUM}",
    "lat_min": rf"^\s+min:\s+{NUM}$",
    "lat_avg": rf"^\s+avg:\s+{NUM}$",
    "lat_max": rf"^\s+max:\s+{NUM}$",
    "lat_pct": rf"^\s+([\d.]+)th percentile:\s+{NUM}$",
    "lat_sum": rf"^\s+sum:\s+{NUM}$",
    "fair_events": rf"events \(avg/stddev\):\s+{NUM}/{NUM}",
    "fair_time": rf"execution time \(avg/stddev\):\s+{NUM}/{NUM}",
    "threads": r"^Number of threads:\s+(\d+)\s*$",
}


def banner(what_ran: str) -> str:
    """sysbench's first line. The version is the sysbench whose method and
    report this follows (a script's ``sysbench (\\d+)\\.`` check picks the 1.0
    layout, which is the one printed); the parenthesis, where sysbench names
    its Lua runtime, names what really ran (``what_ran``: "llvm engine")."""
    return f"sysbench {SYSBENCH_VERSION} (using probetop {version()}, {what_ran})"


def options_head(
    threads: str,
    rate: object,
    report_interval_s: float | None,
    rand_seed: int,
    *,
    debug: bool = False,
    validate: bool = False,
) -> list[str]:
    """sysbench's "Running the test with following options:" block, to its
    seed line: the threads as given (``threads``), the target rate and the
    reporting interval when set, then --debug's and --validate's lines, each
    followed by an empty line (sysbench logs them with a trailing newline).
    The seed line is printed for every test (whether it draws random numbers
    or not), as sysbench prints it."""
    lines = ["Running the test with following options:", f"Number of threads: {threads}"]
    if rate:
        lines.append(f"Target transaction rate: {rate}/sec")
    if report_interval_s:
        lines.append(f"Report intermediate results every {report_interval_s:g} second(s)")
    if debug:
        lines += ["Debug mode enabled.", ""]
    if validate:
        lines += ["Validation checks: on.", ""]
    lines.append(seed_line(rand_seed))
    return lines


def printed(row: Mapping[str, Any]) -> bool:
    """An interval row the report prints: a full interval, or the last at --time."""
    return bool(row.get("full") or row.get("at_time"))


def latency_line(label: str, value: float | None) -> str:
    """``         min:        0.37``: the value right-aligned to column 53."""
    left = f"         {label}:"
    return left + f"{(value or 0.0):.2f}".rjust(LATENCY_WIDTH - len(left))


def percentile_line(pct: float, value: float | None) -> str:
    """``         95th percentile:    0.37``: sysbench's ``%3dth percentile:``
    after 8 spaces, so 5 and 100 shift the label, not the value's column
    (``          5th``, ``        100th``); the value right-aligned as
    ``latency_line``'s."""
    left = f"        {pct:3g}th percentile:"
    return left + f"{(value or 0.0):.2f}".rjust(LATENCY_WIDTH - len(left))


def stamp(t: float, interval_s: float) -> str:
    """``[ 1s ]``: the measured time since the start, as sysbench prints it
    (``[ %.0fs ]``: whole seconds, its --report-interval being an integer);
    for a fractional ``interval_s`` (probetop's own), with as many decimals
    as the interval has (0.5: ``[ 1.5s ]``). The interval decides the format,
    never the measured time: an interval that ended late on a loaded machine
    still reads ``[ 2s ]``, as in sysbench, not ``[ 2.1s ]``."""
    return f"[ {t:.{stamp_decimals(interval_s)}f}s ]"


def stamp_decimals(interval_s: float) -> int:
    """Decimals that write ``interval_s`` exactly (at most 3: a millisecond)."""
    for decimals in range(3):
        scaled = interval_s * 10**decimals
        if abs(scaled - round(scaled)) < 1e-6:
            return decimals
    return 3


def prints_at_time(
    *, full: bool, sliver: bool, stopped_by: str | None, time_s: float, interval_s: float
) -> bool:
    """Whether a run's last interval is printed as its last [ Ns ] line, as
    sysbench does: it ended at --time, on the reporting grid (--time 5,
    --report-interval 1: 5 lines), and is not a sliver."""
    ticks = time_s / interval_s if interval_s > 0 else 0.0
    on_grid = time_s > 0 and abs(ticks - round(ticks)) < 1e-6
    return not full and stopped_by == "time" and not sliver and on_grid


def cumulative_sections(s: Mapping[str, Any]) -> list[str]:
    """General statistics, Latency (ms) and Threads fairness (no trailing blank)."""
    lat = s["latency_ms"]
    fair = s["fairness"]
    pct = float(s.get("percentile", 95))
    pct_value = lat.get(percentile_key(pct), lat.get("p95"))
    return [
        "General statistics:",
        "    total time:".ljust(STAT_PREFIX) + f"{s['total_time']:.4f}s",
        "    total number of events:".ljust(STAT_PREFIX) + f"{s['total_events']}",
        "",
        "Latency (ms):",
        latency_line("min", lat.get("min")),
        latency_line("avg", lat.get("avg")),
        latency_line("max", lat.get("max")),
        percentile_line(pct, pct_value) if pct > 0 else PERCENTILE_DISABLED,
        latency_line("sum", lat.get("sum")),
        "",
        "Threads fairness:",
        "    events (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['events_avg']:.4f}/{fair['events_stddev']:3.2f}",
        "    execution time (avg/stddev):".ljust(FAIRNESS_PREFIX)
        + f"{fair['time_avg']:.4f}/{fair['time_stddev']:3.2f}",
    ]


def interrupted_line(reason: str | None, total_time: float) -> str | None:
    """probetop's own line after a stopped run's report (None if it ran out)."""
    if not (reason and reason.startswith("interrupted")):
        return None
    return (
        f"INTERRUPTED {reason[len('interrupted') :].strip()}: this report covers the "
        f"{total_time:.2f} s that ran."
    )


def dropped_intervals_line(summary: Mapping[str, Any]) -> str | None:
    """probetop's note when a long run kept only its newest interval rows."""
    return dropped_note(
        int(summary.get("intervals_dropped") or 0), len(summary.get("intervals") or [])
    )


def json_document(summary: Mapping[str, Any], *, reason: str | None = None) -> dict[str, Any]:
    """The ``--json`` document: the summary plus how the run ended."""
    doc = dict(summary)
    doc["interrupted"] = bool(reason and reason.startswith("interrupted"))
    doc["reason"] = reason
    return doc


def parse_sections(
    text: str, patterns: Mapping[str, str], *, required: tuple[str, ...], what: str
) -> dict[str, re.Match[str]]:
    """The last match of each of ``patterns`` and ``COMMON_PATTERNS`` in
    ``text``; ValueError naming ``what`` when one of ``required`` is missing."""
    found: dict[str, re.Match[str]] = {}
    for key, pattern in {**COMMON_PATTERNS, **patterns}.items():
        matches = list(re.finditer(pattern, text, re.MULTILINE))
        if matches:
            found[key] = matches[-1]
    missing = [k for k in required if k not in found]
    if missing:
        raise ValueError(f"not a sysbench {what} report: missing {', '.join(missing)}")
    return found


def number(found: Mapping[str, re.Match[str]], key: str, group: int = 1) -> float | None:
    m = found.get(key)
    return float(m.group(group)) if m else None


def cumulative_fields(found: Mapping[str, re.Match[str]], text: str) -> dict[str, Any]:
    """The shared sections as JSON keys: total_time, total_events,
    percentile, latency_ms, fairness, interrupted (and threads when printed)."""
    pct = number(found, "lat_pct", 1) or 95.0
    doc: dict[str, Any] = {
        "total_time": number(found, "total_time"),
        "total_events": int(number(found, "total_events") or 0),
        "percentile": pct,
        "latency_ms": {
            "min": number(found, "lat_min"),
            "avg": number(found, "lat_avg"),
            "max": number(found, "lat_max"),
            percentile_key(pct): number(found, "lat_pct", 2),
            "sum": number(found, "lat_sum"),
        },
        "fairness": {
            "events_avg": number(found, "fair_events", 1),
            "events_stddev": number(found, "fair_events", 2),
            "time_avg": number(found, "fair_time", 1),
            "time_stddev": number(found, "fair_time", 2),
        },
        "interrupted": "INTERRUPTED" in text,
    }
    if "threads" in found:
        doc["threads"] = int(found["threads"].group(1))
    return doc


HISTOGRAM_TITLE = "Latency histogram (values are in milliseconds)"
HISTOGRAM_HEADER = "       value  ------------- distribution ------------- count"
HISTOGRAM_BAR = 40


def histogram_lines(counts: Sequence[int] | Mapping[str, int]) -> list[str]:
    """sysbench's --histogram block, printed after the interval lines and
    before the test's report: the title, then (when any event was counted)
    the header and one ``%12.3f |%-40s %lu`` row per non-empty bucket (its
    value in ms; a bar of ``floor(count * 40 / max + 0.5)`` stars), then a
    line holding one space. ``counts``: bucket counts, or ``{"index": count}``."""
    if isinstance(counts, Mapping):
        sparse = sorted((int(i), int(c)) for i, c in counts.items() if int(c))
    else:
        sparse = [(i, int(c)) for i, c in enumerate(counts) if c]
    lines = [HISTOGRAM_TITLE]
    top = max((c for _, c in sparse), default=0)
    if top:
        lines.append(HISTOGRAM_HEADER)
        for index, count in sparse:
            width = int(count * float(HISTOGRAM_BAR) / top + 0.5)
            value = bucket_value_ms(min(index, HIST_SIZE - 1))
            lines.append(f"{value:12.3f} |{'*' * width:<{HISTOGRAM_BAR}} {count}")
    lines.append(" ")
    return lines


class TextReport(Protocol):
    def __call__(
        self,
        summary: Mapping[str, Any],
        *,
        show_intervals: bool = ...,
        report_interval_s: float | None = ...,
        reason: str | None = ...,
        rest_only: bool = ...,
        histogram: bool = ...,
    ) -> str: ...


class JsonReport(Protocol):
    def __call__(
        self, summary: Mapping[str, Any], *, reason: str | None = ...
    ) -> dict[str, Any]: ...


def write_run_report(
    result: RunOutcome,
    *,
    as_json: bool,
    text: TextReport,
    document: JsonReport,
    report_interval_s: float | None,
    histogram: bool = False,
) -> int:
    """A sysbench family's headless report on stdout: ``document``'s JSON with
    --json, else ``text`` (with its interval lines when ``report_interval_s``
    is given, sysbench's latency histogram with ``histogram``; only what
    follows them when they and the banner were printed
    live, ``result.live_printed``); a probe error follows it. Exit 1 on a
    probe or worker error, else the run's signal status."""
    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if as_json:
        doc = document(summary, reason=result.reason)
        if error:
            doc["error"] = error
        json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(
            text(
                summary,
                show_intervals=report_interval_s is not None,
                report_interval_s=report_interval_s,
                reason=result.reason,
                rest_only=result.live_printed,
                histogram=histogram,
            )
        )
        if error:
            sys.stdout.write(f"probetop: error: {error}\n")
    if error or summary.get("worker_errors"):
        return 1
    return result.signal_status


class IntervalSettings(Protocol):
    """What ``run_report`` reads of a sysbench family's settings."""

    @property
    def interval_s(self) -> float: ...
    @property
    def report_intervals(self) -> bool:
        """--report-interval was given: the text report prints [ Ns ] lines."""

    @property
    def histogram(self) -> bool:
        """--histogram was given: the text report prints sysbench's histogram."""

    @property
    def verbosity(self) -> int:
        """sysbench's --verbosity: below 3 no text report (sysbench prints none)."""

    @property
    def time_s(self) -> float:
        """--time (0: no time limit)."""

    @property
    def events(self) -> int:
        """--events as given (0: no event limit; memory reads it and ignores it)."""


def report_interval(settings: IntervalSettings) -> float | None:
    """The interval the text report's [ Ns ] lines are printed at, or None."""
    return settings.interval_s if settings.report_intervals else None


# What sysbench logs at --verbosity 4 as its workers reach each limit (the
# summary's ``stopped_by``; memory's total size: nothing but "Done.").
LIMIT_LINES = {
    "time": "Time limit exceeded, exiting...",
    "events": "Event limit exceeded, exiting...",
}


def exit_lines(summary: Mapping[str, Any], reason: str | None) -> list[str]:
    """sysbench's --verbosity 4 lines as its workers end: the limit reached
    (each thread logs it, and its log folds the repeats), then "Done.";
    none for a stopped (interrupted) run."""
    if summary.get("interrupted") or (reason or "").startswith("interrupted"):
        return []
    said = LIMIT_LINES.get(str(summary.get("stopped_by")))
    threads = int(summary.get("threads") or 1)
    lines = [] if said is None else [said]
    if said is not None and threads > 1:
        lines.append(f"(last message repeated {threads - 1} times)")
    return [*lines, "Done.", ""]


def with_progress(
    text: TextReport, *, sections: Sequence[str], doing: str | None, debug: bool = False
) -> TextReport:
    """``text`` with sysbench's --verbosity 4 lines: ``doing`` (cpu's "Doing
    CPU performance benchmark") and an empty line before the line after the
    head's two empty lines, and ``exit_lines`` before the first line that
    starts a section (``sections``, or the histogram's title)."""

    def report(summary: Mapping[str, Any], **kwargs: Any) -> str:
        lines = text(summary, **kwargs).split("\n")
        marks = (*sections, HISTOGRAM_TITLE)
        at = next((i for i, ln in enumerate(lines) if ln.startswith(marks)), None)
        if at is not None:
            lines[at:at] = exit_lines(summary, kwargs.get("reason"))
        if doing and not kwargs.get("rest_only"):
            lines = insert_doing(lines, doing)
        if debug and not kwargs.get("rest_only"):
            lines = debug_lines(
                lines,
                threads=int(summary.get("threads") or 1),
                reporting=kwargs.get("report_interval_s") is not None,
            )
        return "\n".join(lines)

    return report


def insert_doing(lines: list[str], doing: str) -> list[str]:
    """The head's lines with ``doing`` and an empty line after the seed
    line's two empty lines (sysbench's --verbosity 4)."""
    at = next((i for i, ln in enumerate(lines) if ln.startswith(SEED_PREFIX)), None)
    if at is None:
        return lines
    return [*lines[: at + 3], doing, "", *lines[at + 3 :]]


SEED_PREFIX = "Initializing random number generator"


def debug_lines(lines: list[str], *, threads: int, reporting: bool) -> list[str]:
    """The head's lines with sysbench 1.0.20's --verbosity 5 (LOG_DEBUG)
    lines as it prints them for cpu and memory (src/sysbench.c):
    "DEBUG: Reporting thread started" before "Initializing worker
    threads..." with --report-interval, and "DEBUG: Worker thread (#N)
    started" / "... initialized" for each thread before "Threads started!"."""
    out = list(lines)
    if "Initializing worker threads..." not in out or "Threads started!" not in out:
        return out
    if reporting:
        out.insert(out.index("Initializing worker threads..."), "DEBUG: Reporting thread started")
    at = out.index("Threads started!")
    out[at:at] = [
        f"DEBUG: Worker thread (#{n}) {what}"
        for n in range(threads)
        for what in ("started", "initialized")
    ]
    return out


def run_report(
    text: TextReport,
    document: JsonReport,
    *,
    sections: Sequence[str] = (),
    doing: str | None = None,
) -> Callable[[IntervalSettings, RunCommon, RunOutcome], int]:
    """A sysbench family's ``report`` hook (``Family.report``): its ``text``
    and ``document`` written by ``write_run_report``, with the interval
    lines when --report-interval asked for them; --verbosity below 3 prints
    no text, 4 adds sysbench's progress lines (``with_progress``)."""

    def report(settings: IntervalSettings, common: RunCommon, result: RunOutcome) -> int:
        if settings.verbosity < DEFAULT_VERBOSITY and not common.json:
            return write_run_report(
                result, as_json=False, text=_silent, document=document, report_interval_s=None
            )
        shown = text
        if settings.verbosity > DEFAULT_VERBOSITY:
            shown = with_progress(
                text,
                sections=sections,
                doing=doing,
                debug=settings.verbosity >= DEBUG_VERBOSITY,
            )
        return write_run_report(
            result,
            as_json=common.json,
            text=shown,
            document=document,
            report_interval_s=report_interval(settings),
            histogram=settings.histogram,
        )

    return report


def _silent(summary: Mapping[str, Any], **_: Any) -> str:
    """--verbosity below 3: sysbench prints no report (a probe error still is)."""
    return ""


IntervalSettingsT = TypeVar("IntervalSettingsT", bound=IntervalSettings)


def live_text(
    head: Callable[[IntervalSettingsT, Mapping[str, Any]], list[str]],
    reader: Callable[[IntervalSettingsT], Callable[[Sample], Sequence[str]]],
) -> LiveText[IntervalSettingsT]:
    """A sysbench family's ``LiveText``: ``head(settings, summary)`` is the
    text report's lines up to its interval lines, read from the (one) probe's
    summary before it ran, whose banner fields (engine, threads, sizes) are
    the settings' and the prepared engine's; ``reader(settings)`` turns each
    sample into the interval lines the report prints for it (none when
    --report-interval was not given)."""

    def banner(settings: IntervalSettingsT, probes: Sequence[Probe]) -> str:
        # sysbench's endless-run warning comes first, at every --verbosity
        lines = endless_warning(settings.time_s, settings.events)
        if settings.verbosity >= DEFAULT_VERBOSITY:
            lines += head(settings, probes[0].summary())
        return "".join(line + "\n" for line in lines)

    def lines(settings: IntervalSettingsT) -> Callable[[Sample], Sequence[str]]:
        if not settings.report_intervals or settings.verbosity < DEFAULT_VERBOSITY:
            return lambda sample: ()
        return reader(settings)

    return LiveText(banner=banner, lines=lines)
