"""What ``--assert`` can check, and which way ``probetop compare`` reads a
change, per probe kind. Each family declares its ``Checks`` beside its
typed summary (``probes/<family>/checks.py``, exported by its front door);
``tui/analysis`` gathers them.

Contract:
- ``Assertable[S]``: one figure (``cpu.events_per_second``), a function of
  the family's typed summary ``S``, with its unit and a line of help.
  ``basis``: the count of observations the figure is a statistic of
  (events, I/Os, replies): with none, the figure reads None, so an
  assertion on it fails instead of passing on nothing (fio reports
  percentiles of 0 for a direction that did no I/O). ``count``: the
  observations the figure rests on, for ``undecided`` only (default: the
  ``basis``; None from it: unknown, as in an older recording, and not
  judged). ``share``: the figure is a percentage of those observations (a
  loss, an error rate).
- ``Assertable.undecided(summary, op, threshold)``: why the observations
  behind the figure cannot decide ``figure op threshold`` (an assertion
  that must then fail, saying why), or None. A percentile pX needs at
  least 100 / (100 - X) observations (p99: 100, p95: 20, p50: 2): with
  fewer, its top (100 - X) % holds no observation, and what is read as
  the pX is the largest value or a blend of the largest. A share bounded from
  above (``< T%``, ``<= T%``, T > 0) needs at least 100 / T observations:
  with fewer, one lost or failed among them is already more than T %, so
  zero of them says nothing about T. A deviation (a name ending in
  ``mdev`` or ``stddev``) needs at least 2: the spread of one value is 0
  by definition. Figures without a ``basis`` or ``count`` are never
  undecided here.
- ``Checks[S]``: one probe kind's figures and the reader of its typed
  summary (``summary``: a summary as stored, live, in a footer or a
  ``--json`` document, to ``S``; never raises). A value the summary lacks
  (an older recording, a probe that never ran) is None in ``S``, which
  fails an assertion rather than passing it. Also: ``neutral``, the sample
  metrics ``compare`` counts neither better nor worse; ``target_params``,
  the parameters naming a target ``probetop demo`` makes afresh for every
  run (a temporary file, a random port); ``entity_param``, the parameter
  listing a probe's entities in order (http's URL labels).
- ``direction(metric, unit, neutral)``: +1 when a larger per-interval value
  is better (rates), -1 when smaller is better (latencies, losses, errors),
  0 when neither (``neutral`` names, and what has no rate or time unit).
- ``number`` and ``dig``: what typed summaries read raw values with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, TypeVar

from probetop.probes.core.units import Unit

S = TypeVar("S")


def number(value: Any) -> float | None:
    """A summary's value as a number: a bool as 1 or 0, anything else not a
    number as None."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None


def dig(summary: Any, *keys: str) -> Any:
    """``summary[k1][k2]...``, or None where a level is missing or not a mapping."""
    value: Any = summary
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def scaled(value: float | None, factor: float) -> float | None:
    """``value * factor`` (ns to µs: 1e-3), None staying None."""
    return None if value is None else value * factor


@dataclass(frozen=True, slots=True)
class Assertable(Generic[S]):
    """One figure ``--assert`` can check: a function of a typed summary."""

    name: str
    unit: Unit
    figure: Callable[[S], float | None]
    help: str
    basis: Callable[[S], float | None] | None = None
    share: bool = False
    count: Callable[[S], float | None] | None = None

    def measure(self, summary: S) -> float | None:
        """The figure, or None when its ``basis`` counted no observation."""
        if self.basis is not None and not (self.basis(summary) or 0) > 0:
            return None
        return self.figure(summary)

    def undecided(self, summary: S, op: str, threshold: float) -> str | None:
        """Why too few observations cannot decide ``figure op threshold``
        (see the contract), or None."""
        observations = self.count or self.basis
        if observations is None:
            return None
        n = observations(summary)
        if n is None or not n > 0:
            return None  # unknown, or none: measure() reads None (fails as "no value")
        level = quantile_level(self.name)
        if level is not None:
            need = observations_for(level)
            if n < need:
                top = 100 - Fraction(level)
                return (
                    f"cannot tell with n={n:g}: a p{level} needs at least {need} values "
                    f"(its top {float(top):g} % must hold one)"
                )
        if n < 2 and _SPREAD.search(self.name):
            return f"cannot tell with n={n:g}: a deviation needs at least 2 values (one has none)"
        if self.share and op in ("<", "<=") and threshold > 0 and n * threshold < 100:
            need = math.ceil(100 / threshold)
            return (
                f"cannot tell with n={n:g}: one in {n:g} is already {100 / n:.3g} %; "
                f"a share {op} {threshold:g} % needs at least {need}"
            )
        return None


def assertable(
    name: str,
    unit: str,
    figure: Callable[[S], float | None],
    help: str = "",
    basis: Callable[[S], float | None] | None = None,
    share: bool = False,
    count: Callable[[S], float | None] | None = None,
) -> Assertable[S]:
    """An ``Assertable`` with its unit by label (``ms``, ``/s``, "" for a count)."""
    return Assertable(name, Unit.of(unit), figure, help, basis, share, count)


# A deviation in a figure's name: ping's ``mdev``, sysbench's fairness ``events_stddev``.
_SPREAD = re.compile(r"(?:^|[._])(?:mdev|stddev)$")
# A percentile in a figure's name: its last part, ``p99`` or ``p99.9``.
_QUANTILE = re.compile(r"(?:^|\.)p(\d+(?:\.\d+)?)$")


def quantile_level(name: str) -> str | None:
    """The percentile a figure's name ends in (``"99.9"`` for
    ``iops.read.clat.p99.9``), or None."""
    found = _QUANTILE.search(name)
    return found.group(1) if found else None


def observations_for(level: str) -> int:
    """The fewest values whose p``level`` is not their largest: at least
    one value lies above it (exact: ``Fraction`` of the written digits)."""
    above = 100 - Fraction(level)
    return math.ceil(100 / above) if above > 0 else 1


@dataclass(frozen=True, slots=True)
class Checks(Generic[S]):
    """One probe kind's ``--assert`` figures and compare rules (see the contract)."""

    kind: str
    summary: Callable[[Mapping[str, Any]], S]
    assertables: tuple[Assertable[S], ...]
    neutral: frozenset[str] = frozenset()
    target_params: tuple[str, ...] = ()
    entity_param: str | None = None

    def reader(self, entry: Assertable[S]) -> Callable[[Mapping[str, Any]], float | None]:
        """``entry`` read from a summary as stored (a mapping)."""
        read_summary = self.summary

        def read(summary: Mapping[str, Any]) -> float | None:
            return entry.measure(read_summary(summary))

        return read

    def judge(self, entry: Assertable[S]) -> Callable[[Mapping[str, Any], str, float], str | None]:
        """``entry.undecided`` read from a summary as stored (a mapping)."""
        read_summary = self.summary

        def judge(summary: Mapping[str, Any], op: str, threshold: float) -> str | None:
            return entry.undecided(read_summary(summary), op, threshold)

        return judge

    def direction(self, metric: str, unit: str) -> int:
        """Which way a change of this kind's sample ``metric`` counts (see ``direction``)."""
        return direction(metric, unit, self.neutral)


_LOWER_BETTER_WORDS = ("loss", "lost", "error", "drop", "late", "missed", "duplicate", "reorder")
_TIME_UNITS = {"ns", "us", "µs", "ms", "s"}


def direction(metric: str, unit: str, neutral: frozenset[str] = frozenset()) -> int:
    """+1 if larger is better, -1 if smaller is better, 0 if neither."""
    if metric in neutral:
        return 0
    if any(word in metric for word in _LOWER_BETTER_WORDS):
        return -1
    if unit in _TIME_UNITS:
        return -1
    if unit.endswith("/s"):
        return 1
    return 0
