"""The mem family's descriptor: ``probetop mem`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import Family, Lazy, RunCommon, ends_itself
from probetop.probes.core.sysbench.options import DEBUG_VERBOSITY, settings_reader
from probetop.probes.core.sysbench.report import (
    debug_lines,
    live_text,
    report_interval,
    run_report,
)
from probetop.probes.mem.probe import MemProbe
from probetop.probes.mem.records import KIND, MemInterval
from probetop.probes.mem.report import LiveLines, format_report, head_lines, json_document
from probetop.probes.mem.settings import SPEC, MemSettings


def build_probes(settings: MemSettings, common: RunCommon) -> list[Probe]:
    return [MemProbe(settings)]


def live_head(settings: MemSettings, summary: Mapping[str, Any]) -> list[str]:
    lines = head_lines(
        summary,
        report_interval(settings),
        debug=settings.debug,
        validate=settings.validation,
    )
    if settings.verbosity >= DEBUG_VERBOSITY:
        threads = int(summary.get("threads") or settings.threads)
        lines = debug_lines(lines, threads=threads, reporting=settings.report_intervals)
    return lines


def live_lines(settings: MemSettings) -> LiveLines:
    return LiveLines(settings.interval_s, settings.time_s)


FAMILY = Family(
    spec=SPEC,
    settings=MemSettings,
    read_settings=settings_reader(MemSettings.from_options),
    build_probes=build_probes,
    # sysbench-style text, or one JSON document with --json; exit 1 on probe errors
    report=run_report(format_report, json_document, sections=("Total operations:",)),
    # Headless text: the banner and each [ Ns ] line printed as the run goes.
    live_text=live_text(live_head, live_lines),
    records=lambda: (MemInterval,),
    panes={KIND: "probetop.tui.ui.panes.mem:MemBenchPane"},
    tracker=Lazy("probetop.probes.mem.metrics:TRACKER"),
    checks=Lazy("probetop.probes.mem.checks:CHECKS"),
    docs="docs/mem.md",
    deadline_s=ends_itself,  # the probe ends itself after --time or --memory-total-size
)
