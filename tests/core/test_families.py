"""Every family the registry lists is whole, and its panes depend on it alone.

probes/registry.py is the one list of families; everything else reads their
descriptors (probes/core/family.py). These tests fail when a family lacks a
part (spec, settings, factory, records, report, pane, docs page), when two
families claim one probe kind, and when a pane reaches past its own family:
the pane contract stated once for every family, over the import graph
import-linter itself reads (grimp).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import grimp
import pytest
from probetop.probes import registry
from probetop.probes.core.family import Family, PassiveFamily
from probetop.probes.core.options import CommandSpec
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.registry import load_pane, pane_class

REPO = Path(__file__).resolve().parents[2]
ALL = registry.all_families()
IDS = [f.name for f in ALL]
COMMANDS = registry.families()


def documented(flag: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def test_the_registry_lists_each_family_once_in_command_order() -> None:
    assert tuple(f.name for f in COMMANDS) == registry.NAMES
    assert len(set(IDS)) == len(IDS)
    assert all(isinstance(f, Family) for f in COMMANDS)
    assert all(isinstance(f, PassiveFamily) for f in registry.passive_families())
    assert registry.family("no-such-family") is None


@pytest.mark.parametrize("family", COMMANDS, ids=registry.NAMES)
def test_a_command_family_has_every_part(family: Family) -> None:
    assert isinstance(family.spec, CommandSpec) and family.spec.name == family.name
    assert family.help and family.help == family.spec.help
    settings = family.settings
    assert inspect.isclass(settings)
    assert callable(getattr(settings, "from_options", None)), "settings.from_options"
    assert callable(getattr(settings, "validate", None)), "settings.validate"
    for hook in ("read_settings", "build_probes", "report", "deadline_s"):
        assert callable(getattr(family, hook)), hook
    assert family.focus in family.kinds


@pytest.mark.parametrize("family", COMMANDS, ids=registry.NAMES)
def test_the_example_command_line_parses_into_the_settings(family: Family) -> None:
    from probetop.tui.cli.parser import build_parser, make_plan, parse_args

    argv = [family.name, *family.example]
    plan = make_plan(parse_args(build_parser({family.name}), argv), ["probetop", *argv])
    assert isinstance(plan.settings, family.settings)


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_records_are_typed(family: Family | PassiveFamily) -> None:
    records = family.records()
    assert records, f"{family.name} lists no record class"
    for record in records:
        assert inspect.isclass(record)
        assert callable(getattr(record, "to_sample", None)), record
        assert inspect.ismethod(getattr(record, "from_sample", None)), record  # a classmethod


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_each_kind_has_one_record_declaring_its_sample_metrics(
    family: Family | PassiveFamily,
) -> None:
    """The sample metrics of every kind come from its record class
    (``sample_metrics``): a kind without a record, or a record without its
    ``KIND`` and ``METRICS``, fails here, never falls back to "no metrics"."""
    from probetop.probes.core.base import MetricSpec
    from probetop.probes.core.family import sample_metrics

    kinds = [getattr(record, "KIND", None) for record in family.records()]
    assert sorted(map(str, kinds)) == sorted(family.kinds), f"{family.name}: one record per kind"
    for kind, specs in sample_metrics(family).items():
        names = [m.name for m in specs]
        assert specs and all(isinstance(m, MetricSpec) for m in specs), kind
        assert len(names) == len(set(names)), f"{kind}: a metric declared twice"


def _built_probes(family: Family | PassiveFamily) -> list:
    """Probes as a run makes them (not prepared): the example command line's,
    the passive ones at a 1 s interval."""
    if isinstance(family, PassiveFamily):
        return list(family.probes(1.0))
    from probetop.tui.cli.parser import build_parser, make_plan, parse_args

    argv = [family.name, *family.example]
    plan = make_plan(parse_args(build_parser({family.name}), argv), ["probetop", *argv])
    return family.build_probes(plan.settings, plan.common)


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_probes_announce_their_record_s_metrics(family: Family | PassiveFamily) -> None:
    """What a probe announces (the recording's probe line, the generic pane)
    is what its kind's record declares: one list, not two kept in step."""
    from probetop.probes.core.family import sample_metrics

    declared = sample_metrics(family)
    probes = _built_probes(family)
    assert probes, family.name
    for probe in probes:
        assert tuple(probe.metrics) == declared[probe.kind], probe.kind


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_every_kind_has_its_pane(family: Family | PassiveFamily) -> None:
    assert family.kinds, f"{family.name} announces no kind"
    for kind, path in family.panes.items():
        # The kind starts with the family's name: the registry finds its
        # family without loading the others.
        assert kind == family.name or kind.startswith(f"{family.name}."), kind
        cls = load_pane(path)
        assert issubclass(cls, ProbePane) and pane_class(kind) is cls
        assert registry.for_kind(kind) is family


def test_kinds_are_unique_across_families() -> None:
    kinds = [k for f in ALL for k in f.kinds]
    assert len(kinds) == len(set(kinds)), sorted(k for k in kinds if kinds.count(k) > 1)


def test_a_kind_no_family_claims_gets_the_generic_pane() -> None:
    from probetop.tui.ui.widgets.generic_pane import GenericPane

    assert registry.for_kind("gone.kind") is None
    assert pane_class("gone.kind") is GenericPane


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_the_docs_page_exists_and_names_every_option(family: Family | PassiveFamily) -> None:
    page = REPO / family.docs
    assert page.is_file(), f"{family.name}: no {family.docs}"
    if isinstance(family, Family):
        text = page.read_text()
        missing = [
            max(o.flags, key=len)
            for o in family.spec.options
            if not o.hidden and not o.positional and not documented(max(o.flags, key=len), text)
        ]
        assert missing == [], f"{family.docs} does not mention {missing}"


def test_no_family_keeps_a_command_module_of_its_own() -> None:
    """One ProbeCommand drives every family: a tui/commands/<family>.py
    would be a second place to keep in step."""
    kept = [n for n in registry.NAMES if (REPO / "tui" / "commands" / f"{n}.py").exists()]
    assert kept == []


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_metrics_and_checks_are_present_or_declared_absent(
    family: Family | PassiveFamily,
) -> None:
    """A family has its Prometheus tracker and its --assert checks, or says
    why it has none (system: node_exporter exports the machine's counters)."""
    from probetop.probes.core.checks import Checks
    from probetop.probes.core.family import checks_of, trackers_of
    from probetop.probes.core.tracker import Tracker

    if family.tracker is None:
        assert family.no_tracker, f"{family.name}: no tracker, and no reason given"
    else:
        trackers = trackers_of(family)
        assert trackers, f"{family.name}: an empty tuple of trackers"
        for tracker in trackers:
            assert issubclass(tracker, Tracker) and tracker.DEFS
            assert tracker.KIND in family.kinds and family.name == tracker.COMMAND
        kinds = [t.KIND for t in trackers]
        assert len(kinds) == len(set(kinds)), f"{family.name}: two trackers for one kind"
        # Every kind it announces, not the first only (http.load once had none).
        assert sorted(kinds) == sorted(family.kinds), f"{family.name}: kinds without metrics"
    if family.checks is None:
        assert family.no_checks, f"{family.name}: no checks, and no reason given"
    else:
        found = checks_of(family)
        assert found, f"{family.name}: an empty tuple of checks"
        for checks in found:
            assert isinstance(checks, Checks) and checks.assertables
            assert checks.kind in family.kinds
        kinds = [c.kind for c in found]
        assert len(kinds) == len(set(kinds)), f"{family.name}: two checks for one kind"
        assert sorted(kinds) == sorted(family.kinds), f"{family.name}: kinds without --assert"


@pytest.mark.parametrize("family", ALL, ids=IDS)
def test_what_a_family_names_lazily_lives_inside_it(family: Family | PassiveFamily) -> None:
    """A ``Lazy`` path is an import edge import-linter does not read: it may
    only point into the family's own package (no hidden edge across a contract)."""
    door = FRONT_DOORS[family.name]
    for lazy in (family.tracker, family.checks):
        if lazy is not None:
            inside = lazy.module.startswith(door + ".")
            assert inside, f"{family.name}: {lazy.path} is outside {door}"


def test_a_lazy_path_is_checked_when_the_descriptor_is_built() -> None:
    from probetop.probes.core.family import Lazy

    for bad in ("probetop.probes.cpu.metrics", "probetop.probes.cpu.metrics:", "a b:C", ":C"):
        with pytest.raises(ValueError, match=r"not a 'package\.module:NAME' path"):
            Lazy(bad)
    assert Lazy("probetop.probes.cpu.records:KIND")() == "cpu"


# -- panes depend on their own family only ------------------------------------

FRONT_DOORS = {listed.name: listed.module for listed in registry.COMMANDS + registry.PASSIVE}
FAMILY_PACKAGES = sorted(set(FRONT_DOORS.values()))
ALLOWED_PREFIXES = ("probetop.probes.core", "probetop.tui.ui.widgets")
NEVER_REACHED = ("probetop.probes.registry", "probetop.tui.cli", "probetop.tui.commands")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("probetop.probes", "probetop.tui", "probetop.themes", cache_dir=None)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def pane_violations(graph: grimp.ImportGraph, pane: str, door: str) -> list[str]:
    """What ``pane`` imports beyond probes.core, its family's front door
    ``door`` and tui.ui.widgets; and any chain reaching another family, the
    registry or the command line."""
    out = [
        f"{pane} imports {m}"
        for m in sorted(graph.find_modules_directly_imported_by(pane))
        if m.startswith("probetop.")
        and m != door
        and not any(_within(m, p) for p in ALLOWED_PREFIXES)
    ]
    for other in [p for p in FAMILY_PACKAGES if p != door] + list(NEVER_REACHED):
        for chain in sorted(graph.find_shortest_chains(pane, other, as_packages=True)):
            out.append(" -> ".join(chain))
    return out


def test_each_pane_depends_on_its_own_family_only(graph: grimp.ImportGraph) -> None:
    violations: list[str] = []
    for family in ALL:
        for path in sorted(set(family.panes.values())):
            pane = path.partition(":")[0]
            violations += pane_violations(graph, pane, FRONT_DOORS[family.name])
    assert violations == []


def test_the_pane_check_catches_a_pane_reaching_another_family() -> None:
    """The check itself can fail: a pane importing another family's door,
    or a module behind its own door, is listed."""
    graph = grimp.build_graph("probetop.probes", "probetop.tui", cache_dir=None)
    graph.add_import(importer="probetop.tui.ui.panes.cpu", imported="probetop.probes.http")
    graph.add_import(importer="probetop.tui.ui.panes.cpu", imported="probetop.probes.cpu.probe")
    found = pane_violations(graph, "probetop.tui.ui.panes.cpu", "probetop.probes.cpu")
    assert "probetop.tui.ui.panes.cpu imports probetop.probes.http" in found
    assert "probetop.tui.ui.panes.cpu imports probetop.probes.cpu.probe" in found
    assert "probetop.tui.ui.panes.cpu -> probetop.probes.http" in found
