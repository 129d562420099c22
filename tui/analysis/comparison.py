"""Compare two recordings: per shared probe and metric, A's and B's per-interval
distributions, the relative change of the median and whether it is
significant (docs/compare.md).

Contract:
- ``compare_sessions(a, b, ...)`` pairs the probes of two ``Session``s (same
  id, else the one probe of a kind on each side), refuses (``CompareRefused``,
  exit 2) when the probes or their options differ unless ``force``, and
  returns a ``Comparison``: one ``MetricComparison`` per shared metric key,
  the warm-up plateau deltas, and the largest significant regression and
  improvement (``compare:regression`` / ``compare:improvement`` for
  ``--assert``; None when no metric had values in both recordings).
- The statistics are on per-interval values (one per sample line): the
  median, p95 and p99 of each side, the change of the median in percent of
  A's, and a two-sample test (Mann-Whitney U by default, Welch's t on
  request, ``stats.py``). A change is significant when p <= alpha (0.05);
  otherwise it is shown as ``~``, as benchstat does. When the samples are so
  small that no p-value can reach alpha, it says so instead of ``~``.
- Passive probes (``system.*``) are compared only when asked
  (``passive=True``) or when the recordings hold nothing else. A series
  that ended in either recording (a ``series_end`` line: a device gone) is
  named in ``notes``: its figures cover only the intervals it was there.
- Two ``probetop demo`` recordings ran against targets made afresh each
  time (a temporary file, a random port): their target parameters
  (``catalog.TARGET_PARAMS``) are not counted as differences.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from probetop.probes import disk
from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.sample import Sample, metric_key, split_key
from probetop.probes.core.stats import percentile
from probetop.probes.record import Session
from probetop.tui.analysis.catalog import ENTITY_PARAMS, TARGET_PARAMS, direction
from probetop.tui.analysis.stats import TESTS, TestResult, min_p_value

DEFAULT_ALPHA = 0.05
PASSIVE_PREFIX = "system."
# Common options that take a value: skipped when finding a recording's command.
_VALUE_OPTIONS = {
    "--record",
    "--time",
    "--interval",
    "--sample-interval",
    "--theme",
    "--assert",
    "--metrics",
    "--textfile",
}


class CompareRefused(UsageProbeError):
    """The recordings ran different probes or options (exit 2; ``--force`` overrides)."""

    code = "compare-refused"


@dataclass(frozen=True, slots=True)
class Distribution:
    """One side's per-interval values of one metric."""

    n: int
    median: float | None
    p95: float | None
    p99: float | None
    mean: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        ordered = sorted(values)
        mean = sum(ordered) / len(ordered) if ordered else None
        return cls(
            len(ordered),
            percentile(ordered, 50),
            percentile(ordered, 95),
            percentile(ordered, 99),
            mean,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median": self.median,
            "p95": self.p95,
            "p99": self.p99,
            "mean": self.mean,
        }


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric key of one probe pair, A against B."""

    probe: str
    kind: str
    key: str
    unit: str
    primary: bool
    direction: int
    a: Distribution
    b: Distribution
    change_pct: float | None
    test: TestResult
    significant: bool
    note: str | None = None
    b_key: str | None = None  # B's key when its entity has another name (http's URL label)

    @property
    def verdict(self) -> str:
        """ "better", "worse" or "" (not significant, or no direction)."""
        if not self.significant or not self.direction or not self.change_pct:
            return ""
        return "better" if self.change_pct * self.direction > 0 else "worse"

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "kind": self.kind,
            "metric": self.key,
            "metric_in_b": self.b_key or self.key,
            "unit": self.unit,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "change_pct": self.change_pct,
            "test": self.test.test,
            "statistic": self.test.statistic,
            "p_value": self.test.p_value,
            "df": self.test.df,
            "significant": self.significant,
            "verdict": self.verdict or None,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class PlateauSide:
    """One warm-up pass on one side: when the plateau was reached and its level."""

    reached_at_s: float | None
    iops: float | None
    bw_bps: float | None


@dataclass(frozen=True, slots=True)
class PlateauDelta:
    probe: str
    pass_name: str
    a: PlateauSide
    b: PlateauSide

    def to_dict(self) -> dict[str, Any]:
        def side(s: PlateauSide) -> dict[str, Any]:
            return {"reached_at_s": s.reached_at_s, "iops": s.iops, "bw_bytes": s.bw_bps}

        return {
            "probe": self.probe,
            "pass": self.pass_name,
            "a": side(self.a),
            "b": side(self.b),
            "reached_delta_s": _delta(self.a.reached_at_s, self.b.reached_at_s),
            "iops_change_pct": _pct(self.a.iops, self.b.iops),
            "bw_change_pct": _pct(self.a.bw_bps, self.b.bw_bps),
        }


@dataclass(frozen=True, slots=True)
class ProbePair:
    a: str
    b: str
    kind: str

    @property
    def label(self) -> str:
        return self.a if self.a == self.b else f"{self.a} | {self.b}"


@dataclass(frozen=True)
class EndedSeries:
    """A series of ``probe`` that ended in recording ``side`` ("A" or "B"):
    its device was gone at ``t_s`` seconds (the ``series_end`` line). The
    text note shows the first few; ``--json``'s ``series_ended`` lists all."""

    probe: str
    side: str
    entity: str
    t_s: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "side": self.side,
            "entity": self.entity,
            "t_s": self.t_s,
            "reason": self.reason,
        }


@dataclass
class Comparison:
    """Everything ``probetop compare`` prints (text or ``--json``)."""

    a_path: str
    b_path: str
    test: str
    alpha: float
    pairs: list[ProbePair]
    metrics: list[MetricComparison]
    plateaus: list[PlateauDelta] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    series_ended: list[EndedSeries] = field(default_factory=list)

    @property
    def regression_pct(self) -> float | None:
        """The largest significant change for the worse, in percent (0: none;
        None when no metric had values on both sides: nothing was compared,
        so ``--assert 'compare:regression<5%'`` fails instead of passing)."""
        return self._largest("worse")

    @property
    def improvement_pct(self) -> float | None:
        """The largest significant change for the better, in percent (0: none;
        None when nothing was compared)."""
        return self._largest("better")

    def gate(
        self, verdict: str, test: Callable[[float, float], bool], threshold: float
    ) -> tuple[float | None, str | None]:
        """An ``--assert`` on the largest change toward ``verdict`` ("worse":
        ``compare:regression``, "better": ``compare:improvement``): (the
        measured value, why it cannot be decided or None).

        Never a pass on nothing: the measured value counts significant
        changes only, so it is decided only if no other metric could flip
        ``test(value, threshold)``. A metric whose test cannot reach alpha
        (too few intervals; no p-value) could hide any change: undecided
        unless no amount could flip it (a ``>`` gate that already passes).
        A change that is not significant but would flip it (-78 % with
        p = 0.1 against ``regression<5%``) is undecided too."""
        measured = self._largest(verdict)
        if measured is None or not test(measured, threshold):
            return measured, None
        sign = -1.0 if verdict == "worse" else 1.0
        for m in self.metrics:
            if m.significant or not m.direction or m.change_pct is None:
                continue
            amount = sign * m.change_pct * m.direction
            where = f"{m.probe}: {m.key} {m.change_pct:+.2f}%, {_p_text(m)}"
            if m.note is not None:  # nothing can be said: any change could hide here
                if not test(math.inf, threshold):
                    return measured, (
                        f"cannot tell with n={m.a.n}+{m.b.n}; need at least "
                        f"{_needed(self.test, self.alpha)} intervals on each side ({where})"
                    )
            elif amount > 0 and not test(max(measured, amount), threshold):
                return measured, (
                    f"cannot tell: a change beyond the threshold is not significant "
                    f"at alpha {self.alpha:g} ({where}); record more intervals"
                )
        return measured, None

    def _largest(self, verdict: str) -> float | None:
        if not self.metrics:
            return None
        return max(
            (abs(m.change_pct or 0.0) for m in self.metrics if m.verdict == verdict), default=0.0
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a_path,
            "b": self.b_path,
            "test": self.test,
            "alpha": self.alpha,
            "probes": [{"a": p.a, "b": p.b, "kind": p.kind} for p in self.pairs],
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
            "differences": self.differences,
            "notes": self.notes,
            "series_ended": [e.to_dict() for e in self.series_ended],
            "regression_pct": self.regression_pct,
            "improvement_pct": self.improvement_pct,
            "metrics": [m.to_dict() for m in self.metrics],
            "plateaus": [p.to_dict() for p in self.plateaus],
        }


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b - a) / abs(a) * 100.0


def subcommand(command: Sequence[str]) -> str | None:
    """The probetop command a recording's header ``command`` ran (``demo``, ``cpu``...)."""
    skip = False
    for token in list(command)[1:]:
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in _VALUE_OPTIONS
            continue
        return token
    return None


def _kind(info: Mapping[str, Any]) -> str:
    return str(info.get("kind", ""))


def pair_probes(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]
) -> tuple[list[ProbePair], list[str], list[str]]:
    """Pairs (same id, else the one probe of a kind left on each side), and
    the ids left over in A and in B."""
    pairs = [
        ProbePair(pid, pid, _kind(a[pid]))
        for pid in a
        if pid in b and _kind(a[pid]) == _kind(b[pid])
    ]
    used_a = {p.a for p in pairs}
    used_b = {p.b for p in pairs}
    left_a = [pid for pid in a if pid not in used_a]
    left_b = [pid for pid in b if pid not in used_b]
    for kind in dict.fromkeys(_kind(a[pid]) for pid in left_a):
        side_a = [pid for pid in left_a if _kind(a[pid]) == kind]
        side_b = [pid for pid in left_b if _kind(b[pid]) == kind]
        if len(side_a) == 1 and len(side_b) == 1:
            pairs.append(ProbePair(side_a[0], side_b[0], kind))
            left_a.remove(side_a[0])
            left_b.remove(side_b[0])
    return pairs, left_a, left_b


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def param_differences(
    pair: ProbePair, a: Mapping[str, Any], b: Mapping[str, Any], *, ignore: Iterable[str] = ()
) -> list[str]:
    """``cpu: threads 1 (A) vs 2 (B)`` for every parameter that differs."""
    skip = set(ignore)
    fa, fb = _flatten(a), _flatten(b)
    out = []
    for key in sorted(set(fa) | set(fb)):
        if key.split(".")[0] in skip:
            continue
        va, vb = fa.get(key, "(not set)"), fb.get(key, "(not set)")
        if va != vb:
            out.append(f"{pair.label}: {key} {_show(va)} (A) vs {_show(vb)} (B)")
    return out


def _series(session: Session, probe: str) -> dict[str, list[tuple[float, float]]]:
    """(t, value) of every metric key of one probe, in file order."""
    out: dict[str, list[tuple[float, float]]] = {}
    for line in session.samples(probe):
        t = float(line["t"])
        for key, value in line.get("values", {}).items():
            if value is not None:
                out.setdefault(key, []).append((t, float(value)))
    return out


def series(session: Session, probe: str) -> dict[str, list[tuple[float, float]]]:
    """Public: the per-interval points of one probe (charts use them)."""
    return _series(session, probe)


def metric_matches(patterns: Sequence[str], kind: str, key: str) -> bool:
    """``--metric``: a metric name (``eps``), a key (``read_iops@vda``),
    ``kind.name`` (``cpu.eps``), or a shell pattern of any of them."""
    if not patterns:
        return True
    name = split_key(key)[0]
    forms = (name, key, f"{kind}.{name}", f"{kind}.{key}")
    return any(fnmatch.fnmatchcase(form, pat) for pat in patterns for form in forms)


def _p_text(m: MetricComparison) -> str:
    p = "-" if m.test.p_value is None else f"{m.test.p_value:.3f}"
    return f"p={p} n={m.a.n}+{m.b.n}"


def _needed(test: str, alpha: float) -> int:
    """The fewest intervals per side with which ``test`` can decide at ``alpha``."""
    return intervals_needed(alpha) if test == "mann-whitney" else 2


def intervals_needed(alpha: float) -> int:
    """The fewest intervals per side for which Mann-Whitney can reach ``alpha``."""
    n = 1
    while min_p_value(n, n) > alpha and n < 1000:
        n += 1
    return n


def compare_metric(
    pair: ProbePair,
    key: str,
    unit: str,
    primary: bool,
    values_a: Sequence[float],
    values_b: Sequence[float],
    *,
    test: str,
    alpha: float,
) -> MetricComparison:
    da, db = Distribution.of(values_a), Distribution.of(values_b)
    result = TESTS[test](values_a, values_b)
    note = None
    if test == "mann-whitney" and min_p_value(len(values_a), len(values_b)) > alpha:
        note = (
            f"too few intervals to detect a difference at alpha {alpha:g}: "
            f"need {intervals_needed(alpha)} on each side "
            "(record longer, or a shorter --sample-interval)"
        )
    elif result.p_value is None:
        note = result.method or "no p-value"
    significant = result.p_value is not None and result.p_value <= alpha and note is None
    return MetricComparison(
        probe=pair.label,
        kind=pair.kind,
        key=key,
        unit=unit,
        primary=primary,
        direction=direction(pair.kind, split_key(key)[0], unit),
        a=da,
        b=db,
        change_pct=_pct(da.median, db.median),
        test=result,
        significant=significant,
        note=note,
    )


def _warmup_passes(session: Session, probe: str) -> dict[str, PlateauSide]:
    """Per pass: when the plateau was first reached and the median IOPS and
    bandwidth of its intervals, until it was left (the family's records read them)."""
    rows: dict[str, list[tuple[float, disk.WarmupInterval]]] = {}
    for t, record in session.records():
        if isinstance(record, Sample) and record.probe == probe:
            interval = disk.WarmupInterval.from_sample(record)
            rows.setdefault(interval.pass_name or "?", []).append((t, interval))
    out: dict[str, PlateauSide] = {}
    for pass_name, items in rows.items():
        reached: float | None = None
        since: float | None = None
        for t, interval in items:
            view = interval.plateau_view
            if view is not None and view.reached_at_s is not None:
                reached, since = view.reached_at_s, t
                break
        steady = []  # from the plateau's first interval until it was left, if it was
        for t, interval in items:
            if since is None or t < since:
                continue
            view = interval.plateau_view
            if view is not None and view.left_at_s is not None:
                break
            steady.append(interval)
        iops = sorted(iv.iops for iv in steady if iv.iops is not None)
        bw = sorted(iv.bw_bps for iv in steady if iv.bw_bps is not None)
        out[pass_name] = PlateauSide(reached, percentile(iops, 50), percentile(bw, 50))
    return out


def compare_sessions(
    a: Session,
    b: Session,
    *,
    metrics: Sequence[str] = (),
    test: str = "mann-whitney",
    alpha: float = DEFAULT_ALPHA,
    force: bool = False,
    passive: bool = False,
) -> Comparison:
    """Compare two recordings (see the module docstring)."""
    probes_a, probes_b = a.probes, b.probes
    active_a = {k: v for k, v in probes_a.items() if not _kind(v).startswith(PASSIVE_PREFIX)}
    active_b = {k: v for k, v in probes_b.items() if not _kind(v).startswith(PASSIVE_PREFIX)}
    if passive or not (active_a or active_b):
        active_a, active_b = dict(probes_a), dict(probes_b)
    pairs, only_a, only_b = pair_probes(active_a, active_b)
    demo = (
        subcommand(a.header.get("command", [])) == "demo" == subcommand(b.header.get("command", []))
    )
    differences: list[str] = []
    for pair in pairs:
        ignore = TARGET_PARAMS.get(pair.kind, ()) if demo else ()
        differences += param_differences(
            pair,
            active_a[pair.a].get("params", {}),
            active_b[pair.b].get("params", {}),
            ignore=ignore,
        )
    if (only_a or only_b or differences) and not force:
        raise CompareRefused(_refusal(a, b, active_a, active_b, only_a, only_b, differences))
    comparison = Comparison(
        str(a.path), str(b.path), test, alpha, pairs, [], [], only_a, only_b, differences
    )
    matched_any = False
    for pair in pairs:
        info = active_a[pair.a]
        units = {m["name"]: m.get("unit", "") for m in info.get("metrics", [])}
        primary = {m["name"] for m in info.get("metrics", []) if m.get("primary")}
        sa, sb = _series(a, pair.a), _series(b, pair.b)
        b_keys = _entity_keys(pair, info, active_b[pair.b], sb) if demo else {k: k for k in sb}
        sb = {key: sb[b_key] for key, b_key in b_keys.items()}
        one_sided: list[str] = []
        for key in sorted(set(sa) | set(sb)):
            if not metric_matches(metrics, pair.kind, key):
                continue
            matched_any = True
            if key not in sa or key not in sb:
                one_sided.append(f"{key} ({'A' if key in sa else 'B'})")
                continue
            name = split_key(key)[0]
            comparison.metrics.append(
                _with_b_key(
                    b_keys[key],
                    compare_metric(
                        pair,
                        key,
                        units.get(name, ""),
                        name in primary,
                        [v for _t, v in sa[key]],
                        [v for _t, v in sb[key]],
                        test=test,
                        alpha=alpha,
                    ),
                )
            )
        if one_sided:
            shown = ", ".join(one_sided[:4]) + (", ..." if len(one_sided) > 4 else "")
            comparison.notes.append(
                f"{pair.label}: {len(one_sided)} metric key(s) with values in one recording "
                f"only, not compared: {shown}"
            )
        ends = [
            EndedSeries(pair.label, side, e.entity, e.t_ns / 1e9, e.reason)
            for side, session, probe in (("A", a, pair.a), ("B", b, pair.b))
            for e in session.series_ends
            if e.probe == probe
        ]
        comparison.series_ended.extend(ends)
        ended = [f"{e.entity} at {e.t_s:.1f} s ({e.side})" for e in ends]
        if ended:  # its intervals stop there: it was gone, not idle
            shown = ", ".join(ended[:4]) + (", ..." if len(ended) > 4 else "")
            comparison.notes.append(
                f"{pair.label}: {len(ended)} series ended during the recording "
                f"(a device gone; compared over the intervals it was there): {shown}"
            )
        if pair.kind == disk.WARMUP_KIND:
            pa, pb = _warmup_passes(a, pair.a), _warmup_passes(b, pair.b)
            for pass_name in pa:
                if pass_name in pb:
                    comparison.plateaus.append(
                        PlateauDelta(pair.label, pass_name, pa[pass_name], pb[pass_name])
                    )
    if metrics and not matched_any:
        known = sorted({f"{p.kind}.{split_key(k)[0]}" for p in pairs for k in _series(a, p.a)})
        raise UsageProbeError(
            f"--metric {', '.join(metrics)} matches no metric of these recordings; "
            f"known: {', '.join(known) or 'none'}"
        )
    return comparison


def _with_b_key(b_key: str, m: MetricComparison) -> MetricComparison:
    return m if b_key == m.key else dataclasses.replace(m, b_key=b_key)


def _entity_keys(
    pair: ProbePair,
    info_a: Mapping[str, Any],
    info_b: Mapping[str, Any],
    series_b: Mapping[str, Any],
) -> dict[str, str]:
    """A's key -> B's key: entities named after a fresh target (the demo's
    URLs on a random port) pair by their position in the probe's parameters."""
    param = ENTITY_PARAMS.get(pair.kind)
    la = info_a.get("params", {}).get(param) if param else None
    lb = info_b.get("params", {}).get(param) if param else None
    rename: dict[str, str] = {}
    if isinstance(la, list) and isinstance(lb, list) and len(la) == len(lb):
        rename = {str(eb): str(ea) for ea, eb in zip(la, lb, strict=True)}
    out = {}
    for key in series_b:
        name, entity = split_key(key)
        mapped = metric_key(name, rename[entity]) if entity in rename else key
        out[mapped] = key
    return out


def _refusal(
    a: Session,
    b: Session,
    probes_a: Mapping[str, Mapping[str, Any]],
    probes_b: Mapping[str, Mapping[str, Any]],
    only_a: list[str],
    only_b: list[str],
    differences: list[str],
) -> str:
    lines = [f"will not compare {a.path} (A) with {b.path} (B):"]
    if only_a or only_b:
        kinds_a = ", ".join(sorted({_kind(v) for v in probes_a.values()})) or "no probe"
        kinds_b = ", ".join(sorted({_kind(v) for v in probes_b.values()})) or "no probe"
        lines.append(f"  they ran different probes: A ran {kinds_a}; B ran {kinds_b}")
        if only_a:
            lines.append(f"  only in A: {', '.join(only_a)}")
        if only_b:
            lines.append(f"  only in B: {', '.join(only_b)}")
    if differences:
        lines.append("  they ran with different options:")
        lines += [f"    {d}" for d in differences]
    lines.append("  (--force compares the probes they share anyway)")
    return "\n".join(lines)
