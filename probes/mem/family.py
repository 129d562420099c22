"""The mem family's descriptor: ``probetop mem`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import Family, RunCommon, RunOutcome, ends_itself
from probetop.probes.core.sysbench.report import write_run_report
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.records import KIND, MemInterval
from probetop.probes.mem.report import format_report, json_document
from probetop.probes.mem.settings import SPEC, MemSettings

if TYPE_CHECKING:  # loaded on first use (tracker(), checks())
    from probetop.probes.core.checks import Checks
    from probetop.probes.core.tracker import Tracker


def read_settings(values: Mapping[str, Any], common: RunCommon) -> MemSettings:
    return MemSettings.from_options(
        values,
        time_s=common.time_s,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
    )


def build_probes(settings: MemSettings, common: RunCommon) -> list[Probe]:
    return [MemProbe(settings)]


def report(settings: MemSettings, common: RunCommon, result: RunOutcome) -> int:
    """sysbench-style text, or one JSON document with --json. Exit 1 on probe errors."""
    return write_run_report(
        result,
        as_json=common.json,
        text=format_report,
        document=json_document,
        report_interval_s=settings.interval_s if settings.report_intervals else None,
    )


def tracker() -> type[Tracker]:
    from probetop.probes.mem.metrics import TRACKER

    return TRACKER


def checks() -> Checks[Any]:
    from probetop.probes.mem.checks import CHECKS

    return CHECKS


FAMILY = Family(
    spec=SPEC,
    settings=MemSettings,
    read_settings=read_settings,
    build_probes=build_probes,
    report=report,
    records=lambda: (MemInterval,),
    panes={KIND: "probetop.tui.ui.panes.mem:MemBenchPane"},
    tracker=tracker,
    checks=checks,
    docs="docs/mem.md",
    deadline_s=ends_itself,  # the probe ends itself after --time or --memory-total-size
)
