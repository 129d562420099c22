"""The cpu family's descriptor: ``probetop cpu`` run, reported and shown
(probes/core/family.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Probe
from probetop.probes.core.family import DemoContext, Family, Lazy, RunCommon, ends_itself
from probetop.probes.core.sysbench.options import DEBUG_VERBOSITY, settings_reader
from probetop.probes.core.sysbench.report import (
    debug_lines,
    insert_doing,
    live_text,
    report_interval,
    run_report,
)
from probetop.probes.cpu.probe import CpuProbe
from probetop.probes.cpu.records import KIND, CpuInterval
from probetop.probes.cpu.report import LiveLines, format_report, head_lines, json_document
from probetop.probes.cpu.settings import SPEC, CpuSettings, sweep_thread_counts


def build_probes(settings: CpuSettings, common: RunCommon) -> list[Probe]:
    return [CpuProbe(settings)]


DOING = "Doing CPU performance benchmark"  # sysbench's --verbosity 4 line


def live_head(settings: CpuSettings, summary: Mapping[str, Any]) -> list[str]:
    """The report's head from the probe before it ran; a sweep's thread
    counts are its plan (the summary lists the runs done so far)."""
    if settings.sweep:
        counts = settings.sweep_counts or sweep_thread_counts()
        summary = {**summary, "sweep": [{"threads": n} for n in counts]}
    lines = head_lines(
        summary,
        report_interval(settings),
        debug=settings.debug,
        validate=settings.validation,
    )
    lines = insert_doing(lines, DOING) if settings.verbosity > 3 else lines
    if settings.verbosity >= DEBUG_VERBOSITY:
        threads = int(summary.get("threads") or settings.threads)
        lines = debug_lines(lines, threads=threads, reporting=settings.report_intervals)
    return lines


def live_lines(settings: CpuSettings) -> LiveLines:
    return LiveLines(settings.percentile, settings.sweep, settings.time_s, settings.interval_s)


def demo_probes(ctx: DemoContext) -> list[Probe]:
    """One thread, no end, so the machine stays usable while the demo runs."""
    settings = CpuSettings(time_s=0, events=0, interval_s=ctx.interval_s)
    return [CpuProbe(settings)]


FAMILY = Family(
    spec=SPEC,
    settings=CpuSettings,
    read_settings=settings_reader(CpuSettings.from_options),
    build_probes=build_probes,
    # sysbench-style text, or one JSON document with --json; exit 1 on probe errors
    report=run_report(
        format_report,
        json_document,
        sections=("CPU speed:",),
        doing=DOING,
    ),
    # Headless text: the banner and each [ Ns ] line printed as the run goes.
    live_text=live_text(live_head, live_lines),
    records=lambda: (CpuInterval,),
    panes={KIND: "probetop.tui.ui.panes.cpu:CpuBenchPane"},
    tracker=Lazy("probetop.probes.cpu.metrics:TRACKER"),
    checks=Lazy("probetop.probes.cpu.checks:CHECKS"),
    docs="docs/cpu.md",
    # The probe ends itself after --time (per thread count with --sweep) or
    # --events; a generic deadline would cut a sweep short.
    deadline_s=ends_itself,
    demo_probes=demo_probes,
)
