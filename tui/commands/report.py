"""`probetop report FILE`: a text summary per probe and charts of each metric.

Charts are drawn with plotext in the terminal; nothing opens a window. The
summary comes from the footer (each probe's own summary) and from the sample
lines (min / mean / max / p99 of every metric over the session). Series that
ended (a device or interface gone: ``series_end`` lines) are listed under
their probe with when they ended, and their rows are marked ``(gone)`` when
the entity never came back.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO, cast

from probetop.probes.core.options import CommandSpec, Option
from probetop.probes.core.sample import SeriesEnded, split_key
from probetop.probes.core.stats import RunningStats, percentile
from probetop.probes.record import Session, load_session
from probetop.tui.analysis.assertions import exit_status, print_outcomes, run_assertions
from probetop.tui.analysis.axis import axis_ticks
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import REPORT_WIDTH, stats_table, wrap_words
from probetop.tui.run.termtext import PrintableWriter, printable

SPEC = CommandSpec(
    name="report",
    help="summarise a recording: per-probe text summary and charts",
    description="""\
Print a recording's header facts, each probe's summary, min/mean/max/p99 of
every metric, and a terminal chart of each primary metric over time
(--all-charts: every metric). --json prints the same numbers as JSON.
""",
    options=(
        Option(("file",), "a recording (JSON Lines) made with --record", metavar="FILE"),
        Option(("--no-charts",), "text summary only", action="store_true", default=False),
        Option(
            ("--all-charts",),
            "chart every metric, not only primary ones",
            action="store_true",
            default=False,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class ReportSettings:
    file: str
    charts: bool = True
    all_charts: bool = False


def settings(values: Mapping[str, Any], common: CommonOptions) -> ReportSettings:
    return ReportSettings(
        file=values["file"],
        charts=not values.get("no_charts", False),
        all_charts=bool(values.get("all_charts", False)),
    )


def metric_series(session: Session, probe_id: str) -> dict[str, list[tuple[float, float]]]:
    """(t, value) points of every metric key of one probe, in time order."""
    return all_series(session).get(probe_id, {})


def all_series(session: Session) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """``metric_series`` of every probe, in one pass over the recording."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    # Four lookups a line: a line read by the fast path is a mapping whose
    # lookups are Python calls (probes/record/fastpath.py).
    for line in session.lines:
        if line.get("type") != "sample":
            continue
        values = line.get("values")
        if not values:
            continue
        probe = line["probe"]
        series = out.get(probe)
        if series is None:
            series = out[probe] = {}
        t = float(line["t"])
        for key, value in values.items():
            if value is not None:
                points = series.get(key)
                if points is None:
                    series[key] = [(t, float(value))]
                else:
                    points.append((t, float(value)))
    return out


def metric_table(points: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, Any]]:
    table = {}
    for key, pts in sorted(points.items()):
        values = [v for _, v in pts]
        stats = RunningStats()
        # RunningStats.add's arithmetic (Welford), inlined: the same numbers,
        # 3x faster over an hour of samples.
        mean = m2 = 0.0
        for n, v in enumerate(values, 1):
            delta = v - mean
            mean += delta / n
            m2 += delta * (v - mean)
        stats.count, stats._mean, stats._m2 = len(values), mean, m2
        stats.min, stats.max = min(values), max(values)
        ordered = sorted(values)
        table[key] = {**stats.as_dict(), "p99": percentile(ordered, 99), "last": pts[-1][1]}
    return table


SHOWN_ENDS = 12  # ended series named per probe in the text report; the rest counted


def series_ends(session: Session) -> dict[str, list[SeriesEnded]]:
    """The recording's ended series by probe id, in file order."""
    out: dict[str, list[SeriesEnded]] = {}
    for ended in session.series_ends:
        out.setdefault(ended.probe, []).append(ended)
    return out


def gone_entities(
    ends: list[SeriesEnded], series: dict[str, list[tuple[float, float]]]
) -> set[str]:
    """Entities whose last series ended and never came back (no point after it)."""
    ended_at: dict[str, float] = {}
    for ended in ends:
        ended_at[ended.entity] = max(ended_at.get(ended.entity, 0.0), ended.t_ns / 1e9)
    last: dict[str, float] = {}
    for key, pts in series.items():
        entity = split_key(key)[1]
        if entity is not None and pts:
            last[entity] = max(last.get(entity, 0.0), pts[-1][0])
    return {e for e, t in ended_at.items() if last.get(e, 0.0) <= t}


def _end_doc(ended: SeriesEnded) -> dict[str, Any]:
    return {
        "entity": ended.entity,
        "t_s": round(ended.t_ns / 1e9, 6),
        "last_t_s": round(ended.last_ns / 1e9, 6),
        "reason": ended.reason,
        "summaries": {name: s.as_dict() for name, s in ended.summaries.items()},
    }


def _end_text(ended: SeriesEnded) -> str:
    return f"{ended.entity} at {ended.t_ns / 1e9:.1f} s ({ended.reason})"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        text = f"{value:.4g}"
        # 4 significant digits cannot show 5 integer digits (nor 9999.9):
        # .4g printed 1.066e+04 between 9107 and 30,897,773 in one column.
        return f"{value:,.0f}" if "e+" in text else text
    return str(value)


def envelope(pts: list[tuple[float, float]], columns: int) -> list[tuple[float, float]]:
    """``pts`` thinned to what a chart ``columns`` dots wide can show: in each
    column's time slice, its lowest and highest point (in time order), so
    every spike and dip stays visible, and the first and last points, so
    the axes stay the same. Unchanged when already that small."""
    if len(pts) <= 2 * columns:
        return pts
    t0, t1 = pts[0][0], pts[-1][0]
    width = (t1 - t0) / columns or 1.0
    keep = {pts[0], pts[-1]}
    bucket: list[tuple[float, float]] = []
    edge = t0 + width
    for point in pts:
        if point[0] >= edge and bucket:
            keep.add(min(bucket, key=_value))
            keep.add(max(bucket, key=_value))
            bucket = []
            edge = t0 + width * (int((point[0] - t0) / width) + 1)
        bucket.append(point)
    keep.add(min(bucket, key=_value))
    keep.add(max(bucket, key=_value))
    return sorted(keep)


def _value(point: tuple[float, float]) -> float:
    return point[1]


def command_lines(head: str, command: str | list[str]) -> str:
    """A command after ``head``, wrapped to the report's width with " \\"
    continuations, split between shell words (quoted as the shell reads
    them), so it still pastes whole; one line when it cannot be split."""
    try:
        words = command if isinstance(command, list) else shlex.split(command)
    except ValueError:  # unbalanced quotes: not ours to re-quote
        return head + str(command)
    return wrap_words(head, [shlex.quote(w) for w in words], cont=" \\")


def _chart(title: str, pts: list[tuple[float, float]], unit: str, color: bool) -> str:
    import plotext as plt  # charts only; plotext loads lazily

    width = min(shutil.get_terminal_size((REPORT_WIDTH, 24)).columns, REPORT_WIDTH)
    pts = envelope(pts, 2 * width)  # braille: 2 dots a cell
    plt.main()  # the whole figure: a maximised pane's chart may have left a subplot active
    plt.clear_figure()
    plt.plot([t for t, _ in pts], [v for _, v in pts], marker="braille")
    plt.title(title)
    plt.xlabel("seconds")
    # Round ticks written with the unit ("2.5 MB/s"), not raw floats ("1109791.6").
    ticks, labels = axis_ticks([v for _, v in pts], unit, 5)
    plt.ylim(ticks[0], ticks[-1])
    plt.yticks(ticks, labels)
    plt.plotsize(width, 15)
    if not color:
        plt.theme("clear")
    text = str(plt.build())
    return text if color else str(plt.uncolorize(text))


def print_report(
    session: Session,
    *,
    charts: bool = True,
    all_charts: bool = False,
    as_json: bool = False,
    out: TextIO | None = None,
) -> int:
    """Write the report of ``session`` to ``out`` (stdout). Returns exit code 0.

    As text, the header lines come first and each probe's section is
    written (and flushed) as soon as it is computed: the first lines of a
    long recording's report appear while the rest is worked out."""
    # A recording may come from anyone: its strings reach the terminal with
    # no control in them (tui/run/termtext.py); only our charts have colour.
    raw = out or sys.stdout  # the charts' own colours
    out = cast(TextIO, PrintableWriter(raw))
    footer = session.footer or {}
    probes = session.probes
    by_probe = all_series(session)  # one pass over the samples for every table and chart
    ends = series_ends(session)

    def entry(pid: str, info: dict[str, Any]) -> dict[str, Any]:
        doc = {
            "kind": info.get("kind"),
            "params": info.get("params", {}),
            "reference_command": info.get("reference_command"),
            "summary": footer.get("summaries", {}).get(pid),
            "error": footer.get("errors", {}).get(pid),
            "metrics": metric_table(by_probe.get(pid, {})),
        }
        if pid in ends:  # recordings without series ends keep their JSON as it was
            doc["series_ended"] = [_end_doc(e) for e in ends[pid]]
        return doc

    doc: dict[str, Any] = {
        "file": str(session.path),
        "started_at": session.header.get("started_at"),
        "duration_s": session.duration_s,
        "reason": footer.get("reason", "unknown (no footer)"),
        "host": session.header.get("host", {}),
        "command": session.header.get("command", []),
        "warnings": session.warnings,
        "probes": {},
    }
    if as_json:
        doc["probes"] = {pid: entry(pid, info) for pid, info in probes.items()}
        json.dump(doc, out, indent=2)
        out.write("\n")
        return 0

    color = out.isatty() and not os.environ.get("NO_COLOR")
    host = doc["host"]
    out.write(f"recording  {session.path}\n")
    out.write(
        wrap_words(
            "started    ",
            [
                str(doc["started_at"]),
                f" duration {session.duration_s:.1f} s",
                f" ended: {doc['reason']}",
            ],
            sep="  ",
        )
        + "\n"
    )
    out.write(
        wrap_words(
            "host       ",
            [
                f"{host.get('hostname')}",
                f"{host.get('system')} {host.get('kernel')}",
                f"{host.get('cpu_model')}",
                f"{host.get('logical_cpus')} CPUs",
            ],
            sep="  ",
        )
        + "\n"
    )
    if doc["command"]:
        out.write(command_lines("command    ", [str(w) for w in doc["command"]]) + "\n")
    for warning in session.warnings:
        out.write(f"warning    {warning}\n")
    out.flush()
    for pid, info in probes.items():
        section = entry(pid, info)
        units = {m["name"]: m.get("unit", "") for m in info.get("metrics", [])}
        primary = {m["name"] for m in info.get("metrics", []) if m.get("primary")}
        out.write(f"\n== {pid}  ({section['kind']})\n")
        # Every line within REPORT_WIDTH: commands wrap between shell words,
        # the rest between words (params were one 650-cell line).
        if section["reference_command"]:
            out.write(command_lines("   reference: ", section["reference_command"]) + "\n")
        if section["params"]:
            # Parted at every ", ", inside a list or a dict too (a request's
            # options were one 400-cell word).
            params = ", ".join(f"{k}={v}" for k, v in section["params"].items()).split(", ")
            out.write(wrap_words("   params: ", params, sep=", ") + "\n")
        if section["error"]:
            out.write(wrap_words("   error: ", str(section["error"]).split(" ")) + "\n")
        if section["summary"]:
            for key, value in section["summary"].items():
                if isinstance(value, (dict, list)):
                    continue
                if key.endswith("command") and isinstance(value, str):
                    out.write(command_lines(f"   {key}: ", value) + "\n")
                else:
                    out.write(wrap_words(f"   {key}: ", _fmt(value).split(" ")) + "\n")
        table = section["metrics"]
        heads = ["min", "mean", "max", "p99", "last"]
        gone = gone_entities(ends.get(pid, []), by_probe.get(pid, {}))
        rows = [
            (
                key + (" (gone)" if split_key(key)[1] in gone else ""),
                [_fmt(row[h]) for h in heads],
                units.get(split_key(key)[0], ""),
            )
            for key, row in table.items()
        ]
        if rows:  # columns as wide as their longest cell: long metric@entity names align
            out.write(stats_table(rows, heads))
        else:  # say so: a silent section reads as a report cut short
            out.write("   no samples: this probe recorded no measurement\n")
        if pid in ends:
            shown = [_end_text(e) for e in ends[pid][:SHOWN_ENDS]]
            more = len(ends[pid]) - len(shown)
            words = shown + ([f"and {more} more"] if more > 0 else [])
            out.write(wrap_words("   series ended: ", words, sep=", ") + "\n")
        if charts:
            series = by_probe.get(pid, {})
            for key in sorted(series):
                if (all_charts or split_key(key)[0] in primary) and len(series[key]) > 1:
                    unit = printable(units.get(split_key(key)[0], ""))
                    title = printable(f"{pid}: {key}")
                    raw.write(_chart(title, series[key], unit, color) + "\n")
        out.flush()
    return 0


def run(plan: RunPlan[ReportSettings]) -> int:
    session = load_session(plan.settings.file)  # RecordingError: exit 2 with its message
    for warning in session.warnings:
        print(f"probetop: warning: {printable(warning)}", file=sys.stderr)
    code = print_report(
        session,
        charts=plan.settings.charts,
        all_charts=plan.settings.all_charts,
        as_json=plan.common.json,
    )
    checks = run_assertions(plan.common.assertions, "report")
    if checks is None:
        return code
    # --assert against the recording's footer: the summaries the run ended with.
    summaries = (session.footer or {}).get("summaries", {})
    outcomes = checks.outcomes(summaries, session.probes)
    print_outcomes(outcomes, sys.stderr if plan.common.json else sys.stdout)
    return exit_status(code, outcomes)
