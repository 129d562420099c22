"""`probetop cpu`: sysbench 1.0.20 ``cpu`` events/s, latency and fairness, live."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes import cpu
from probetop.probes.core.base import Probe
from probetop.probes.cpu import (
    CpuProbe,
    CpuSettings,
    format_report,
    json_document,
)
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import RunResult

SPEC = cpu.SPEC  # the family declares the options; this module runs them
FOCUS = "cpu"


def settings(values: Mapping[str, Any], common: CommonOptions) -> CpuSettings:
    return CpuSettings.from_options(
        values,
        time_s=common.time_s,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
    )


def build_probes(plan: RunPlan[CpuSettings]) -> list[Probe]:
    return [CpuProbe(plan.settings)]


def deadline_s(plan: RunPlan[CpuSettings]) -> float | None:
    """None: the probe ends itself after --time (per thread count with
    --sweep) or --events; a generic deadline would cut a sweep short."""
    return None


def demo_probes(ctx: Any) -> list[Probe]:
    """One thread, no end, so the machine stays usable while the demo runs."""
    settings = CpuSettings(time_s=0, events=0, interval_s=ctx.interval_s, unbounded_ok=True)
    return [CpuProbe(settings)]


def report(plan: RunPlan[CpuSettings], result: RunResult) -> int:
    """sysbench-style text, or one JSON document with --json. Exit 1 on probe errors."""
    probe = result.probes[0]
    summary = dict(result.summaries.get(probe.id, {}))
    error = result.errors.get(probe.id)
    if plan.common.json:
        doc = json_document(summary, reason=result.reason)
        if error:
            doc["error"] = error
        json.dump(doc, sys.stdout, indent=2, allow_nan=False, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(
            format_report(
                summary,
                show_intervals=plan.settings.report_intervals,
                report_interval_s=plan.settings.interval_s
                if plan.settings.report_intervals
                else None,
                reason=result.reason,
            )
        )
        if error:
            sys.stdout.write(f"probetop: error: {error}\n")
    if error or summary.get("worker_errors"):
        return 1
    return result.signal_status
