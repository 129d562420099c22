"""The mem family's descriptor: ``probetop mem`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import Family, RunCommon, RunOutcome, ends_itself
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
    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if common.json:
        doc = json_document(summary, reason=result.reason)
        if error:
            doc["error"] = error
        json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(
            format_report(
                summary,
                show_intervals=settings.report_intervals,
                report_interval_s=settings.interval_s if settings.report_intervals else None,
                reason=result.reason,
            )
        )
        if error:
            sys.stdout.write(f"probetop: error: {error}\n")
    if error or summary.get("worker_errors"):
        return 1
    return result.signal_status


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
