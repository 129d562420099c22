"""`probetop mem`: sysbench 1.0.20 ``memory`` operations/s, MiB/s, latency and fairness, live."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes import mem
from probetop.probes.core.base import Probe
from probetop.probes.mem import (
    MemProbe,
    MemSettings,
    format_report,
    json_document,
)
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import RunResult

SPEC = mem.SPEC  # the family declares the options; this module runs them
FOCUS = "mem"


def settings(values: Mapping[str, Any], common: CommonOptions) -> MemSettings:
    return MemSettings.from_options(
        values,
        time_s=common.time_s,
        interval_s=common.interval_s,
        interval_given=values.get("interval") is not None,
    )


def build_probes(plan: RunPlan[MemSettings]) -> list[Probe]:
    return [MemProbe(plan.settings)]


def deadline_s(plan: RunPlan[MemSettings]) -> float | None:
    """None: the probe ends itself after --time or --memory-total-size."""
    return None


def report(plan: RunPlan[MemSettings], result: RunResult) -> int:
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
