"""One figure per measured result, shared by every benchmark.

A benchmark prints its results for people as before and also calls
``report(...)`` once per figure it measured: what case, probetop's value, the
reference tool's value, their ratio and the goal. When the environment names a
results file (``PROBETOP_FIGURES=FILE``, which ``make bench`` sets, or
``--figures FILE`` through ``add_figures_option``), each figure is appended to
it as one JSON line at once, so a run cut short keeps what it measured.
``benchmarks/bench.py`` runs the benchmarks and renders docs/figures.md from
these lines; no page states a figure by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "PROBETOP_FIGURES"


@dataclass(frozen=True)
class Goal:
    """Met when ``lo <= value <= hi``; ``value`` is the ratio, or probetop's own
    value for a budget that has no reference tool (``of="probetop"``)."""

    lo: float | None = None
    hi: float | None = None
    of: str = "ratio"
    # of="diff": on abs(probetop - reference), e.g. a median within 1 ms of
    # curl's; of="abs": on abs(probetop), for a signed drift.

    def value(self, fig: Figure) -> float | None:
        if self.of == "ratio":
            return fig.ratio
        if self.of == "diff":
            if fig.reference is None:
                return None
            if fig.probetop is None:
                return None
            return abs(fig.probetop - fig.reference)
        if self.of == "abs" and fig.probetop is not None:
            return abs(fig.probetop)
        return fig.probetop

    def met(self, fig: Figure) -> bool | None:
        v = self.value(fig)
        if v is None or math.isnan(v):
            return None
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)

    def text(self, unit: str = "") -> str:
        subject = {"ratio": "ratio", "diff": "|diff|", "abs": "|value|"}.get(self.of, "value")
        suffix = f" {unit}" if unit and self.of != "ratio" else ""
        if self.lo is not None and self.hi is not None:
            return f"{subject} {self.lo:g}-{self.hi:g}{suffix}"
        if self.lo is not None:
            return f"{subject} >= {self.lo:g}{suffix}"
        if self.hi is not None:
            return f"{subject} <= {self.hi:g}{suffix}"
        return ""


def at_least(lo: float, of: str = "ratio") -> Goal:
    return Goal(lo=lo, of=of)


def at_most(hi: float, of: str = "ratio") -> Goal:
    return Goal(hi=hi, of=of)


def between(lo: float, hi: float, of: str = "ratio") -> Goal:
    return Goal(lo=lo, hi=hi, of=of)


@dataclass(frozen=True)
class Figure:
    """One measured figure, as written to the results file (one JSON line)."""

    benchmark: str
    case: str
    what: str
    probetop: float | None
    unit: str
    reference: float | None = None
    reference_tool: str = ""
    ratio: float | None = None
    goal: str = ""
    met: bool | None = None
    note: str = ""


def benchmark_name() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or sys.argv[0]
    return Path(path).stem


def add_figures_option(parser: argparse.ArgumentParser) -> None:
    """``--figures FILE``: the same as PROBETOP_FIGURES=FILE for this run."""
    parser.add_argument(
        "--figures",
        metavar="FILE",
        type=_set_figures_file,
        help=f"also append every figure to FILE as JSON lines (as {ENV}=FILE does)",
    )


def _set_figures_file(path: str) -> str:
    os.environ[ENV] = path
    return path


def report(
    case: str,
    what: str,
    probetop: float | None,
    reference: float | None = None,
    *,
    unit: str = "",
    reference_tool: str = "",
    ratio: float | None = None,
    goal: Goal | None = None,
    note: str = "",
) -> Figure:
    """Record one figure. ``ratio`` defaults to probetop / reference (pass it
    when the benchmark's ratio is a median of paired ratios, or inverted for a
    lower-is-better time). Appends to the results file when one is set."""
    if ratio is None and reference and probetop is not None:
        ratio = probetop / reference
    fig = Figure(
        benchmark=benchmark_name(),
        case=case,
        what=what,
        probetop=_finite(probetop),
        unit=unit,
        reference=_finite(reference),
        reference_tool=reference_tool,
        ratio=_finite(ratio),
        note=note,
    )
    if goal is not None:
        fig = Figure(**{**asdict(fig), "goal": goal.text(unit), "met": goal.met(fig)})
    path = os.environ.get(ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(fig), allow_nan=False, default=str) + "\n")
    return fig


def _finite(x: float | None) -> float | None:
    """JSON has no NaN: a figure that could not be measured is null."""
    return None if x is None or not math.isfinite(x) else float(x)


def read(path: Path) -> list[Figure]:
    """The figures in a results file (a line that does not parse is skipped:
    a run killed mid-write leaves at most one)."""
    figs = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                figs.append(Figure(**json.loads(line)))
            except (ValueError, TypeError):
                continue
    return figs
