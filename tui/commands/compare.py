"""`probetop compare A.jsonl B.jsonl`: did B get better or worse than A?

For each probe and metric the two recordings share: A's and B's median,
p95 and p99 over the intervals, the change of the median, and whether it
is significant (Mann-Whitney U, or Welch's t with --test welch; ``~`` when
it is not, as benchstat prints it). Warm-ups add their plateau deltas.
Charts overlay A and B from t = 0 (plotext in the terminal; --plot FILE.svg
writes an SVG). The statistics are ``tui/analysis/comparison.py``'s; this module
reads the recordings, prints, and checks ``--assert``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import CommandSpec, Option, OptionValueError, user_path
from probetop.probes.core.sample import split_key
from probetop.probes.record import (
    RecordingError,
    Session,
    check_output,
    load_session,
    replace_file,
)
from probetop.tui.analysis.assertions import evaluate, exit_status, print_outcomes, resolve
from probetop.tui.analysis.axis import axis_ticks
from probetop.tui.analysis.comparison import (
    DEFAULT_ALPHA,
    Comparison,
    MetricComparison,
    PlateauDelta,
    compare_sessions,
    series,
)
from probetop.tui.analysis.stats import TESTS
from probetop.tui.analysis.svg import Panel, overlay_svg
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import REPORT_WIDTH
from probetop.tui.run.termtext import PrintableWriter, printable


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise OptionValueError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise OptionValueError(f"must be between 0 and 1 (e.g. 0.05), got {text}")
    return value


SPEC = CommandSpec(
    name="compare",
    help="compare two recordings: medians, percentiles, change and its significance",
    description="""\
For each probe and metric two recordings share: A's and B's median, p95 and
p99 over the intervals, the change of the median from A to B, and whether it
is significant (Mann-Whitney U test on the per-interval values, p <= 0.05;
`~` when it is not). Warm-ups add when the plateau was reached and its level.
Charts overlay A and B from t = 0. Recordings of different probes or options
are refused unless --force. See docs/compare.md.
""",
    epilog="""\
examples:
  probetop compare before.jsonl after.jsonl
  probetop compare a.jsonl b.jsonl --metric eps --plot eps.svg
  probetop compare a.jsonl b.jsonl --no-charts --assert 'compare:regression<5%'
""",
    options=(
        Option(("a",), "the baseline recording", metavar="A"),
        Option(("b",), "the recording compared with it", metavar="B"),
        Option(
            ("--metric",),
            "compare only this metric: a name (eps), kind.name (cpu.eps), a key "
            "(read_iops@vda) or a shell pattern (repeatable)",
            action="append",
            metavar="NAME",
        ),
        Option(
            ("--force",),
            "compare even when the probes or their options differ",
            action="store_true",
            default=False,
        ),
        Option(
            ("--test",),
            "significance test: mann-whitney (default) or welch (Welch's t)",
            choices=tuple(TESTS),
            default="mann-whitney",
            metavar="TEST",
        ),
        Option(
            ("--alpha",),
            "significance level (default 0.05)",
            parse=_alpha,
            default=DEFAULT_ALPHA,
            metavar="P",
        ),
        Option(
            ("--passive",),
            "also compare the passive system.cpu/disk/net probes",
            action="store_true",
            default=False,
        ),
        Option(("--plot",), "write the overlay charts to FILE (SVG)", metavar="FILE"),
        Option(("--no-charts",), "no terminal charts", action="store_true", default=False),
    ),
)


@dataclass(frozen=True, slots=True)
class CompareSettings:
    a: str
    b: str
    metrics: tuple[str, ...] = ()
    force: bool = False
    test: str = "mann-whitney"
    alpha: float = DEFAULT_ALPHA
    passive: bool = False
    plot: Path | None = None
    charts: bool = True


def settings(values: Mapping[str, Any], common: CommonOptions) -> CompareSettings:
    plot = values.get("plot")
    if plot is not None and not str(plot).lower().endswith(".svg"):
        raise UsageProbeError(f"--plot {plot}: probetop writes SVG charts; name the file *.svg")
    return CompareSettings(
        a=values["a"],
        b=values["b"],
        metrics=tuple(values.get("metric") or ()),
        force=bool(values.get("force", False)),
        test=str(values.get("test") or "mann-whitney"),
        alpha=float(values.get("alpha") or DEFAULT_ALPHA),
        passive=bool(values.get("passive", False)),
        plot=user_path(plot) if plot else None,
        charts=not values.get("no_charts", False),
    )


# -- text ----------------------------------------------------------------


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e5:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


def change_cell(m: MetricComparison) -> str:
    """benchstat's column: ``+3.10% (p=0.002 n=15+15)``, ``~ (p=0.410 n=15+15)``
    when not significant, ``~ (p=0.100 n=3+3) ¹`` when too few intervals to tell."""
    n = f"n={m.a.n}+{m.b.n}"
    p = m.test.p_value
    stat = "p=?" if p is None else f"p={p:.3f}" if p >= 0.001 else "p<0.001"
    if m.note is not None:
        return f"~ ({stat} {n}) ¹"
    if not m.significant:
        return f"~ ({stat} {n})"
    change = "n/a" if m.change_pct is None else f"{m.change_pct:+.2f}%"
    return f"{change} ({stat} {n})"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append(("   " + "  ".join(cells)).rstrip())
    return out


def _plateau_line(p: PlateauDelta) -> str:
    def when(v: float | None) -> str:
        return "not reached" if v is None else f"{v:.1f} s"

    parts = [
        f"plateau ({p.pass_name} pass): A {when(p.a.reached_at_s)}, B {when(p.b.reached_at_s)}"
    ]
    if p.a.reached_at_s is not None and p.b.reached_at_s is not None:
        parts[0] += f" ({p.b.reached_at_s - p.a.reached_at_s:+.1f} s)"
    for label, va, vb, unit in (
        ("IOPS", p.a.iops, p.b.iops, "IO/s"),
        ("bandwidth", p.a.bw_bps, p.b.bw_bps, "B/s"),
    ):
        if va is not None or vb is not None:
            change = f" ({(vb - va) / va * 100:+.2f}%)" if va and vb is not None else ""
            parts.append(f"{label} at the plateau: A {_fmt(va)}, B {_fmt(vb)} {unit}{change}")
    return "; ".join(parts)


def format_comparison(c: Comparison, a: Session, b: Session) -> str:
    test = "Mann-Whitney U" if c.test == "mann-whitney" else "Welch's t"
    lines = []
    for tag, s in (("A", a), ("B", b)):
        command = " ".join(s.header.get("command", [])) or "?"
        lines.append(
            f"{tag}  {s.path}  {s.header.get('started_at', '?')}  {s.duration_s:.1f} s  {command}"
        )
    lines.append(
        f"per-interval values; {test} test, two-sided, alpha {c.alpha:g}; "
        "~ = no significant difference"
    )
    for d in c.differences:
        lines.append(f"differs (--force): {d}")
    for pid in c.only_a:
        lines.append(f"only in A (not compared): {pid}")
    for pid in c.only_b:
        lines.append(f"only in B (not compared): {pid}")
    for pair in c.pairs:
        rows = [m for m in c.metrics if m.probe == pair.label]
        plateaus = [p for p in c.plateaus if p.probe == pair.label]
        if not rows and not plateaus:
            continue
        lines.append("")
        lines.append(f"== {pair.label} ({pair.kind})")
        if rows:
            table = [
                [
                    "metric",
                    "unit",
                    "A median",
                    "A p95",
                    "A p99",
                    "B median",
                    "B p95",
                    "B p99",
                    "change",
                    "",
                ],
            ]
            for m in rows:
                table.append(
                    [
                        m.key,
                        m.unit or "-",
                        _fmt(m.a.median),
                        _fmt(m.a.p95),
                        _fmt(m.a.p99),
                        _fmt(m.b.median),
                        _fmt(m.b.p95),
                        _fmt(m.b.p99),
                        change_cell(m),
                        m.verdict,
                    ]
                )
            lines += _table(table, right={2, 3, 4, 5, 6, 7})
        for p in plateaus:
            lines.append(f"   {_plateau_line(p)}")
    notes = sorted({m.note for m in c.metrics if m.note is not None})
    for note in notes:
        lines.append(f"¹ {note}")
    for note in c.notes:
        lines.append(f"note: {note}")
    lines.append("")
    worse = [m for m in c.metrics if m.verdict == "worse"]
    better = [m for m in c.metrics if m.verdict == "better"]
    if c.regression_pct is None or c.improvement_pct is None:
        lines.append("regression: -, improvement: - (no metric has values in both recordings)")
    else:
        lines.append(
            f"regression: {c.regression_pct:.2f}% ({len(worse)} metric(s) significantly worse), "
            f"improvement: {c.improvement_pct:.2f}% ({len(better)} significantly better)"
        )
        if undecided := [m for m in c.metrics if m.direction and m.note is not None]:
            lines.append(
                f"undecided: {len(undecided)} metric(s) whose test cannot decide (too "
                "few intervals, or no p-value): a compare: gate fails on them"
            )
    return "\n".join(lines) + "\n"


# -- charts ----------------------------------------------------------------


def _charted(c: Comparison, wanted: bool) -> list[MetricComparison]:
    """Primary metrics (whole-probe keys), or every compared one with --metric."""
    return [m for m in c.metrics if wanted or (m.primary and split_key(m.key)[1] is None)]


_SERIES: dict[tuple[int, str], dict[str, list[tuple[float, float]]]] = {}


def _points(session: Session, probe: str, key: str) -> list[tuple[float, float]]:
    """One metric's points; each probe's lines are read once per session."""
    cached = _SERIES.get((id(session), probe))
    if cached is None:
        cached = _SERIES[(id(session), probe)] = series(session, probe)
    return cached.get(key, [])


def terminal_chart(
    title: str, unit: str, a: list[tuple[float, float]], b: list[tuple[float, float]], color: bool
) -> str:
    import plotext as plt  # charts only; plotext loads lazily

    plt.main()  # the whole figure: a chart drawn before may have left a subplot active
    plt.clear_figure()
    plt.plot([t for t, _ in a], [v for _, v in a], marker="braille", label="A")
    plt.plot([t for t, _ in b], [v for _, v in b], marker="braille", label="B")
    plt.title(title)
    plt.xlabel("seconds since the start")
    # Round ticks in the unit ("2.5 MB/s"), as the report's and the dashboard's charts.
    ticks, labels = axis_ticks([v for _, v in a + b], unit, 5)
    plt.ylim(ticks[0], ticks[-1])
    plt.yticks(ticks, labels)
    plt.plotsize(min(shutil.get_terminal_size((REPORT_WIDTH, 24)).columns, REPORT_WIDTH), 15)
    if not color:
        plt.theme("clear")
    text = str(plt.build())
    return text if color else str(plt.uncolorize(text))


def _pair_ids(c: Comparison, label: str) -> tuple[str, str]:
    for pair in c.pairs:
        if pair.label == label:
            return pair.a, pair.b
    raise KeyError(label)


def check_plot(path: Path) -> str:
    """The real file ``--plot`` writes, after the check every user-named
    output passes (no device, FIFO, kernel file or file in use); exit 2."""
    try:
        return check_output(path, verb="write")
    except RecordingError as exc:
        raise UsageProbeError(f"--plot: {exc}") from None


def write_plot(path: Path, c: Comparison, a: Session, b: Session, wanted: bool) -> None:
    panels = []
    for m in _charted(c, wanted):
        ida, idb = _pair_ids(c, m.probe)
        panels.append(
            Panel(
                f"{m.probe}: {m.key}",
                m.unit,
                (
                    (f"A {a.path.name}", _points(a, ida, m.key)),
                    (f"B {b.path.name}", _points(b, idb, m.b_key or m.key)),
                ),
            )
        )
    doc = overlay_svg(panels, title=f"probetop compare: A {a.path}  B {b.path}")
    try:  # whole or not at all: a full disk leaves the old file as it was
        with replace_file(path, verb="write") as f:
            f.write(doc)
    except RecordingError as exc:
        raise UsageProbeError(f"--plot: {exc}") from None


# -- the command -----------------------------------------------------------


def run(plan: RunPlan[CompareSettings], out: TextIO | None = None) -> int:
    # Recordings may come from anyone: their strings reach the terminal with
    # no control in them (tui/run/termtext.py); only our charts have colour.
    raw = out or sys.stdout  # the charts' own colours
    out = cast(TextIO, PrintableWriter(raw))
    s = plan.settings
    _SERIES.clear()  # keyed by id(session): never across runs
    checks = resolve(plan.common.assertions, "compare")  # exit 2 on a bad --assert
    if s.plot is not None:
        check_plot(s.plot)  # before the work: a bad --plot is known at once
    a = load_session(s.a)  # RecordingError: exit 2 with its message
    b = load_session(s.b)
    for warning in (*a.warnings, *b.warnings):
        print(f"probetop: warning: {printable(warning)}", file=sys.stderr)
    c = compare_sessions(
        a, b, metrics=s.metrics, test=s.test, alpha=s.alpha, force=s.force, passive=s.passive
    )
    if plan.common.json:
        json.dump(c.to_dict(), out, indent=2, allow_nan=False)
        out.write("\n")
    else:
        out.write(format_comparison(c, a, b))
        if s.charts:
            color = out.isatty() and not os.environ.get("NO_COLOR")
            for m in _charted(c, bool(s.metrics)):
                ida, idb = _pair_ids(c, m.probe)
                pa, pb = _points(a, ida, m.key), _points(b, idb, m.b_key or m.key)
                if len(pa) > 1 or len(pb) > 1:
                    title, unit = printable(f"{m.probe}: {m.key}"), printable(m.unit)
                    raw.write(terminal_chart(title, unit, pa, pb, color) + "\n")
    if s.plot is not None:
        write_plot(s.plot, c, a, b, bool(s.metrics))
        print(f"probetop: charts written to {s.plot}", file=sys.stderr)
    code = 0
    if checks:
        # compare: metrics from this comparison; the others from B's footer (the new run).
        kinds = {pid: str(info.get("kind", "")) for pid, info in b.probes.items()}
        summaries = (b.footer or {}).get("summaries", {})
        outcomes = evaluate(checks, summaries, kinds, c.gate)
        print_outcomes(outcomes, sys.stderr if plan.common.json else out)
        code = exit_status(code, outcomes)
    return code
