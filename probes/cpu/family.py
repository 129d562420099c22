"""The cpu family's descriptor: ``probetop cpu`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import DemoContext, Family, RunCommon, RunOutcome, ends_itself
from probetop.probes.core.sysbench.report import write_run_report
from probetop.probes.cpu.probe import CpuProbe
from probetop.probes.cpu.records import KIND, CpuInterval
from probetop.probes.cpu.report import format_report, json_document
from probetop.probes.cpu.settings import SPEC, CpuSettings

if TYPE_CHECKING:  # loaded on first use (tracker(), checks())
    from probetop.probes.core.checks import Checks
    from probetop.probes.core.tracker import Tracker


def read_settings(values: Mapping[str, Any], common: RunCommon) -> CpuSettings:
    return CpuSettings.from_options(
        values,
        time_s=common.time_s,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
    )


def build_probes(settings: CpuSettings, common: RunCommon) -> list[Probe]:
    return [CpuProbe(settings)]


def demo_probes(ctx: DemoContext) -> list[Probe]:
    """One thread, no end, so the machine stays usable while the demo runs."""
    settings = CpuSettings(time_s=0, events=0, interval_s=ctx.interval_s, unbounded_ok=True)
    return [CpuProbe(settings)]


def report(settings: CpuSettings, common: RunCommon, result: RunOutcome) -> int:
    """sysbench-style text, or one JSON document with --json. Exit 1 on probe errors."""
    return write_run_report(
        result,
        as_json=common.json,
        text=format_report,
        document=json_document,
        report_interval_s=settings.interval_s if settings.report_intervals else None,
    )


def tracker() -> type[Tracker]:
    from probetop.probes.cpu.metrics import TRACKER

    return TRACKER


def checks() -> Checks[Any]:
    from probetop.probes.cpu.checks import CHECKS

    return CHECKS


FAMILY = Family(
    spec=SPEC,
    settings=CpuSettings,
    read_settings=read_settings,
    build_probes=build_probes,
    report=report,
    records=lambda: (CpuInterval,),
    panes={KIND: "probetop.tui.ui.panes.cpu:CpuBenchPane"},
    tracker=tracker,
    checks=checks,
    docs="docs/cpu.md",
    # The probe ends itself after --time (per thread count with --sweep) or
    # --events; a generic deadline would cut a sweep short.
    deadline_s=ends_itself,
    demo_probes=demo_probes,
)
