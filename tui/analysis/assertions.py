"""``--assert EXPR``: pass/fail thresholds checked at the end of a run.

``http.p95<200ms``, ``icmp.loss<0.1%``, ``cpu.events_per_second>2900``,
``iops.read.iops>=40k``, ``compare:regression<5%``.

Contract:
- ``parse_assertion(text)`` reads the syntax (``METRIC OP VALUE``, OP one of
  ``< <= > >= == !=``); it is the option's parser, so a malformed expression
  is an argparse usage error (exit 2).
- ``resolve(assertions, command)`` checks every metric name against what
  the command can measure (``catalog.py``: the families' checks;
  ``compare:`` metrics only on ``probetop compare``) and every threshold's
  unit against the metric's (``probes/core/units.py``).
  ``AssertionUsageError`` (exit 2, before any probe starts) names the bad
  expression and lists the known metrics.
- ``evaluate(checks, summaries, kinds)`` checks each assertion against the
  summary of every probe of its kind (all must pass); a metric with no
  value (the probe did not run, an older recording) fails, and so does one
  whose observations are too few to decide it (a p99 of fewer than 100
  values, an error rate below 1 % from fewer than 100 requests:
  ``Assertable.undecided``), saying why. ``Outcome``s
  are JSON-safe (``to_dict``): the recording's footer stores them under
  ``assertions`` (``footer_fields``).
- ``ASSERTIONS_FAILED_EXIT`` (99, as k6's failed thresholds) is the exit
  status of a run that completed with a failed assertion; a run that failed
  or was interrupted keeps its own status.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import OptionValueError
from probetop.probes.core.units import Unit, UnitError, format_quantity, parse_quantity

ASSERTIONS_FAILED_EXIT = 99

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}
_EXPR = re.compile(r"^\s*([A-Za-z][\w.:-]*)\s*(<=|>=|==|!=|<|>)\s*(\S.*?)\s*$")

COMPARE_PREFIX = "compare:"
Test = Callable[[float, float], bool]
CompareGate = Callable[[str, Test, float], tuple[float | None, str | None]]
"""``Comparison.gate``: (verdict, the test, the threshold) -> (measured, why
it cannot be decided or None)."""
# The change each compare: metric measures: toward "worse" or "better".
COMPARE_VERDICTS = {"compare:regression": "worse", "compare:improvement": "better"}
COMPARE_METRICS: dict[str, tuple[Unit, str]] = {
    "compare:regression": (
        Unit.of("%"),
        "the largest significant change for the worse from A to B (0 when none)",
    ),
    "compare:improvement": (
        Unit.of("%"),
        "the largest significant change for the better from A to B (0 when none)",
    ),
}


class AssertionUsageError(UsageProbeError):
    """An ``--assert`` names an unknown metric or a unit that does not fit (exit 2)."""

    code = "assertion"


@dataclass(frozen=True, slots=True)
class Assertion:
    """One ``--assert`` expression, read but not yet checked against a command."""

    text: str
    metric: str
    op: str
    value: str


def parse_assertion(text: str) -> Assertion:
    """The option's parser: ``METRIC OP VALUE`` (OptionValueError otherwise)."""
    match = _EXPR.match(text)
    if not match:
        raise OptionValueError(
            f"{text!r} is not METRIC OP VALUE (e.g. 'http.p95<200ms', 'icmp.loss<0.1%'; "
            "OP is one of < <= > >= == !=)"
        )
    metric, op, value = match.groups()
    return Assertion(text.strip(), metric, op, value)


@dataclass(frozen=True, slots=True)
class Check:
    """An assertion resolved against the catalog: what it reads and its threshold."""

    assertion: Assertion
    kind: str | None  # the probe kind it reads; None for compare: metrics
    unit: Unit
    threshold: float
    reader: Callable[[Mapping[str, Any]], float | None] | None = None
    # Why a summary's observations are too few to decide it (catalog.Entry.undecided).
    undecided: Callable[[Mapping[str, Any], str, float], str | None] | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One assertion checked against one probe (or the comparison)."""

    expr: str
    metric: str
    op: str
    threshold: float
    unit: str
    probe: str | None
    measured: float | None
    passed: bool
    why: str | None = None  # set: it failed because the data cannot decide it

    def to_dict(self) -> dict[str, Any]:
        return {
            **({"why": self.why} if self.why is not None else {}),
            "expr": self.expr,
            "metric": self.metric,
            "op": self.op,
            "threshold": self.threshold,
            "unit": self.unit,
            "probe": self.probe,
            "measured": self.measured,
            "passed": self.passed,
        }

    def describe(self) -> str:
        unit = Unit.of(self.unit)
        where = f" ({self.probe})" if self.probe else ""
        verdict = "ok  " if self.passed else "FAIL"
        if self.why is not None:
            if self.measured is not None and not self.metric.startswith(COMPARE_PREFIX):
                measured = format_quantity(self.measured, unit)
                return f"{verdict} {self.expr}{where}: measured {measured}, but {self.why}"
            return f"{verdict} {self.expr}{where}: {self.why}"
        if self.measured is None:
            why = (
                "no metric has values in both recordings"
                if self.metric.startswith("compare:")
                else "the probe did not report it"
            )
            return f"{verdict} {self.expr}{where}: no value measured ({why})"
        return (
            f"{verdict} {self.expr}{where}: measured {format_quantity(self.measured, unit)}, "
            f"wanted {self.op} {format_quantity(self.threshold, unit)}"
        )


def checked_by() -> set[str]:
    """The commands that check ``--assert`` (the others refuse it)."""
    from probetop.tui.analysis.catalog import COMMAND_KINDS

    return {*COMMAND_KINDS, "demo", "report", "compare"}


def kinds_for(command: str | None) -> tuple[str, ...]:
    """The probe kinds a command runs (every kind for demo, replay, report, compare)."""
    from probetop.tui.analysis.catalog import ALL_KINDS, COMMAND_KINDS

    if command is None:
        return ()
    return COMMAND_KINDS.get(command, ALL_KINDS)


def known_metrics(command: str | None) -> list[str]:
    """Every metric name ``--assert`` accepts for this command, with its unit."""
    from probetop.tui.analysis.catalog import assertables

    names = [f"{a.name} ({a.unit.describe()})" for a in assertables(kinds_for(command))]
    if command == "compare":
        names += [f"{name} ({unit.describe()})" for name, (unit, _h) in COMPARE_METRICS.items()]
    return names


def resolve(assertions: Sequence[Assertion], command: str | None) -> tuple[Check, ...]:
    """Check names and units against the command (AssertionUsageError, exit 2)."""
    if not assertions:
        return ()  # before the catalog: it loads every probe family (start-up)
    from probetop.tui.analysis.catalog import CATALOG

    if command is not None and command not in checked_by():
        raise AssertionUsageError(
            f"--assert is not checked by probetop {command}; it is checked by the probe "
            "commands, demo, report (against a recording) and compare"
        )
    kinds = kinds_for(command)
    checks = []
    for a in assertions:
        if a.metric in COMPARE_METRICS and command == "compare":
            unit, _help = COMPARE_METRICS[a.metric]
            checks.append(Check(a, None, unit, _threshold(a, unit)))
            continue
        entry = CATALOG.get(a.metric)
        if entry is None or entry.kind not in kinds:
            raise AssertionUsageError(_unknown(a, command, entry is not None))
        checks.append(
            Check(a, entry.kind, entry.unit, _threshold(a, entry.unit), entry.read, entry.undecided)
        )
    return tuple(checks)


def _threshold(a: Assertion, unit: Unit) -> float:
    try:
        return parse_quantity(a.value, unit)
    except UnitError as exc:
        raise AssertionUsageError(f"--assert {a.text!r}: {exc}") from None


def _unknown(a: Assertion, command: str | None, other_kind: bool) -> str:
    what = f"probetop {command}" if command else "probetop (the passive panes)"
    known = known_metrics(command)
    if a.metric.startswith(COMPARE_PREFIX) and command != "compare":
        why = f"{a.metric} is measured by probetop compare only"
    elif other_kind:
        why = f"{a.metric} is not measured by {what}"
    else:
        why = f"unknown metric {a.metric!r}"
    if not known:
        return f"--assert {a.text!r}: {why}; {what} has no metric to assert on"
    return f"--assert {a.text!r}: {why}; {what} knows: " + ", ".join(known)


def evaluate(
    checks: Iterable[Check],
    summaries: Mapping[str, Mapping[str, Any]],
    kinds: Mapping[str, str],
    compare_gate: CompareGate | None = None,
) -> list[Outcome]:
    """Every check against every probe of its kind (probe id -> kind in
    ``kinds``); ``compare:`` metrics through ``compare_gate`` (a comparison's
    ``gate``), which fails what the data cannot decide."""
    out: list[Outcome] = []
    for check in checks:
        a = check.assertion
        test = OPERATORS[a.op]
        if check.kind is None:
            measured, why = None, None
            if compare_gate is not None:
                measured, why = compare_gate(COMPARE_VERDICTS[a.metric], test, check.threshold)
            out.append(_outcome(check, None, measured, test, why))
            continue
        probes = [pid for pid, kind in kinds.items() if kind == check.kind]
        if not probes:  # never a pass: say which kinds did run (http vs http.load)
            ran = ", ".join(sorted(set(kinds.values()))) or "none"
            why = f"no value measured (no {check.kind} probe ran; this run's probes: {ran})"
            out.append(_outcome(check, None, None, test, why))
        for pid in probes:
            summary = summaries.get(pid) or {}
            assert check.reader is not None
            measured = check.reader(summary)
            why = None
            if measured is not None and check.undecided is not None:
                why = check.undecided(summary, a.op, check.threshold)
            out.append(_outcome(check, pid, measured, test, why))
    return out


def _outcome(
    check: Check,
    probe: str | None,
    measured: float | None,
    test: Callable[[float, float], bool],
    why: str | None = None,
) -> Outcome:
    a = check.assertion
    passed = measured is not None and why is None and bool(test(measured, check.threshold))
    return Outcome(
        a.text, a.metric, a.op, check.threshold, check.unit.label, probe, measured, passed, why
    )


def failed(outcomes: Iterable[Outcome]) -> bool:
    return any(not o.passed for o in outcomes)


def format_outcomes(outcomes: Sequence[Outcome]) -> str:
    """``assertions: 2 passed, 1 failed`` and one line per assertion."""
    if not outcomes:
        return ""
    bad = sum(1 for o in outcomes if not o.passed)
    head = f"assertions: {len(outcomes) - bad} passed, {bad} failed"
    return "\n".join([head, *(f"  {o.describe()}" for o in outcomes)]) + "\n"


def print_outcomes(outcomes: Sequence[Outcome], out: TextIO) -> None:
    text = format_outcomes(outcomes)
    if text:
        out.write(text)
        out.flush()


def exit_status(code: int, outcomes: Iterable[Outcome]) -> int:
    """The run's exit status once the assertions are checked (see the contract)."""
    if code == 0 and failed(outcomes):
        return ASSERTIONS_FAILED_EXIT
    return code


@dataclass(frozen=True, slots=True)
class RunAssertions:
    """A run's checks, as the recorder's footer hook (``FooterFields``): called
    with the final summaries and the probe descriptions (id -> {kind, ...}),
    it gives the footer's ``assertions``; ``outcomes`` gives the same checks
    for the report printed at the end."""

    checks: tuple[Check, ...]

    def outcomes(
        self, summaries: Mapping[str, Mapping[str, Any]], probes: Mapping[str, Mapping[str, Any]]
    ) -> list[Outcome]:
        kinds = {pid: str(info.get("kind", "")) for pid, info in probes.items()}
        return evaluate(self.checks, summaries, kinds)

    def __call__(
        self, summaries: Mapping[str, Mapping[str, Any]], probes: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, Any]:
        return {"assertions": [o.to_dict() for o in self.outcomes(summaries, probes)]}


def run_assertions(assertions: Sequence[Assertion], command: str | None) -> RunAssertions | None:
    """The checks of a probe run (resolved: exit 2 on a bad one); None without any."""
    checks = resolve(assertions, command)
    return RunAssertions(checks) if checks else None
