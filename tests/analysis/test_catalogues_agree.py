"""A family declares its metrics three times, once per reader, each beside
the others in its own folder: the sample metrics (``MetricSpec``s in its
records: panes, compare, export's CSV/JSON of samples), its Prometheus
tracker (``TRACKER``: --metrics, --textfile, export) and its --assert checks
(``CHECKS``, read from its typed summary; compare's direction). The three
read different data (one interval, the series so far, the run's summary)
under names fixed by others (sysbench's and fio's keys, blackbox_exporter's
and smokeping_prober's metric names), so none is derived from another;
these tests hold them together, and hold docs/usage.md's table to the
--assert catalogue."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

import pytest
from probetop.probes import registry
from probetop.probes.core.base import MetricSpec
from probetop.probes.core.family import sample_metrics
from probetop.tui.analysis.catalog import CATALOG, CHECKS, COMMAND_KINDS
from probetop.tui.metrics.state import TRACKERS

USAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"

# What each kind's samples declare, read from the descriptors' records.
SAMPLE_METRICS: dict[str, tuple[MetricSpec, ...]] = {
    kind: specs for family in registry.families() for kind, specs in sample_metrics(family).items()
}
PANE_KINDS = {kind for family in registry.families() for kind in family.kinds}
COMMAND_OF = {kind: command for command, kinds in COMMAND_KINDS.items() for kind in kinds}


def test_every_command_kind_has_a_tracker_and_checks() -> None:
    """A missing entry would silently give no metrics or refuse --assert."""
    kinds = set(COMMAND_OF)
    assert kinds == PANE_KINDS, "--assert/compare's kinds are the families' kinds"
    assert set(SAMPLE_METRICS) == kinds, "a kind without sample metrics (its record)"
    assert set(TRACKERS) == kinds
    assert {c.kind for c in CHECKS} == kinds
    assert len(CHECKS) == len(kinds), "one Checks per kind"
    for kind, tracker in TRACKERS.items():
        assert COMMAND_OF[kind] == tracker.COMMAND, kind


@pytest.mark.parametrize("checks", CHECKS, ids=lambda c: c.kind)
def test_assert_names_are_the_command_s(checks: Any) -> None:
    command = COMMAND_OF[checks.kind]
    assert checks.assertables, checks.kind
    for a in checks.assertables:
        assert a.name.startswith(f"{command}."), a.name
        assert CATALOG[a.name].kind == checks.kind


@pytest.mark.parametrize("checks", CHECKS, ids=lambda c: c.kind)
def test_compare_s_neutral_metrics_are_sample_metrics(checks: Any) -> None:
    """compare reads the sample metrics: a neutral name must be one of them
    (a renamed metric would otherwise silently gain a direction)."""
    declared = {m.name for m in SAMPLE_METRICS[checks.kind]}
    assert checks.neutral <= declared, checks.neutral - declared
    for name in checks.neutral:
        unit = next(m.unit for m in SAMPLE_METRICS[checks.kind] if m.name == name)
        assert checks.direction(name, unit) == 0


@pytest.mark.parametrize(
    "summary",
    [
        {},
        {"urls": None, "latency_ms": [], "fairness": "x", "read": 1, "plateau": 3},
        {"urls": {}, "rtt_us": {"avg": None}, "read": {"clat_ns": {"percentile": []}}},
        {k: "x" for k in ("total_events", "received", "bytes", "iops", "loss_pct", "pps")},
    ],
)
def test_a_summary_without_the_figure_reads_none(summary: dict[str, Any]) -> None:
    """Typed summaries read a missing or non-numeric value as None (never 0,
    never an exception), so an assertion on it fails instead of passing.
    (Within an http URL a missing count adds 0 to the sum over URLs.)"""
    for name, entry in CATALOG.items():
        assert entry.read(summary) is None, name


def _documented() -> list[str]:
    """The names docs/usage.md's --assert table gives, '/' alternatives
    expanded, as patterns (``http.dns.*``)."""
    section = USAGE.read_text().split("The metrics each probe offers to `--assert`:", 1)[1]
    rows = [ln for ln in section.split("\n\n", 2)[1].splitlines() if ln.startswith("| ")][1:]
    names: list[str] = []
    for row in rows:
        probe = row.split("|")[1].split()[0]  # "http (load mode)": http
        if probe == "compare":
            continue
        for code in re.findall(r"`([a-z][\w.*/]*)`", row):
            if not code.startswith(f"{probe}."):
                continue
            first, *more = code.split("/")
            head = first.rpartition(".")[0]
            names += [first, *(f"{head}.{alt}" for alt in more)]
    return names


def test_usage_md_lists_every_assert_metric() -> None:
    documented = _documented()
    # iops documents the read direction for all three
    catalogued = {re.sub(r"^iops\.(write|trim)\.", "iops.read.", n) for n in CATALOG}
    undocumented = [n for n in catalogued if not any(fnmatch.fnmatch(n, p) for p in documented)]
    assert not undocumented, "docs/usage.md's --assert table lacks " + ", ".join(undocumented)
    unknown = [p for p in documented if not any(fnmatch.fnmatch(n, p) for n in catalogued)]
    assert not unknown, "docs/usage.md names --assert metrics that do not exist: " + ", ".join(
        unknown
    )
