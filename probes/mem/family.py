"""The mem family's descriptor: ``probetop mem`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

from probetop.probes.core.base import Probe
from probetop.probes.core.family import Family, Lazy, RunCommon, ends_itself
from probetop.probes.core.sysbench.options import settings_reader
from probetop.probes.core.sysbench.report import run_report
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.records import KIND, MemInterval
from probetop.probes.mem.report import format_report, json_document
from probetop.probes.mem.settings import SPEC, MemSettings


def build_probes(settings: MemSettings, common: RunCommon) -> list[Probe]:
    return [MemProbe(settings)]


FAMILY = Family(
    spec=SPEC,
    settings=MemSettings,
    read_settings=settings_reader(MemSettings.from_options),
    build_probes=build_probes,
    # sysbench-style text, or one JSON document with --json; exit 1 on probe errors
    report=run_report(format_report, json_document),
    records=lambda: (MemInterval,),
    panes={KIND: "probetop.tui.ui.panes.mem:MemBenchPane"},
    tracker=Lazy("probetop.probes.mem.metrics:TRACKER"),
    checks=Lazy("probetop.probes.mem.checks:CHECKS"),
    docs="docs/mem.md",
    deadline_s=ends_itself,  # the probe ends itself after --time or --memory-total-size
)
