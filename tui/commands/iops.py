"""`probetop iops TARGET`: fio-style IOPS and latency on a file or block device."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes import disk
from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.disk import (
    IopsSettings,
    iops_exit_code,
    iops_output,
)
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import RunResult

SPEC = disk.IOPS_SPEC  # the family declares the options; this module runs them
FOCUS = "iops"


def settings(values: Mapping[str, Any], common: CommonOptions) -> IopsSettings:
    s = IopsSettings.from_options(values, time_s=common.time_s, interval_s=common.interval_s)
    if common.json and s.output_format not in (None, "json", "json+"):
        raise UsageProbeError(
            f"--json is --output-format json: it cannot be combined with "
            f"--output-format {s.output_format}; give one of them"
        )
    return s


def output_format(plan: RunPlan[IopsSettings]) -> str:
    """fio's name of the report asked for: --output-format, else json for
    --json, else normal (the text report)."""
    return plan.settings.output_format or ("json" if plan.common.json else "normal")


def build_probes(plan: RunPlan[IopsSettings]) -> list[Probe]:
    """One probe. Writes to a block device without a confirmation make its
    ``prepare`` raise ConfirmationRequired (after every refusal)."""
    return [disk.IopsProbe(plan.settings)]


def confirmed(plan: RunPlan[IopsSettings]) -> RunPlan[IopsSettings]:
    """The plan once the user typed the target's name in the dashboard."""
    return dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, confirmed=True))


def deadline_s(plan: RunPlan[IopsSettings]) -> float | None:
    """None: the probe stops itself after --ramp + --time (fio's runtime
    excludes the ramp), so a generic deadline must not cut it short."""
    return None


def demo_probes(ctx: Any) -> list[Probe]:
    """4k random reads on a 64 MiB scratch file the demo creates and removes,
    capped at 2000 IOPS so the demo never saturates the disk it shares."""
    settings = IopsSettings(
        target=str(ctx.scratch / "iops.img"),
        size=64 << 20,
        rate_iops=2000,
        interval_s=max(ctx.interval_s, disk.MIN_INTERVAL_S),
    )
    return [disk.IopsProbe(settings)]


def report(plan: RunPlan[IopsSettings], result: RunResult) -> int:
    """The report in fio's --output-format (``output_format``): json/json+ is
    the document fio writes (probetop's own summary under "probetop"), terse
    fio's v3 line, normal the fio-like text. Exit 2 if it failed, 128 + the
    signal's number when one interrupted the run (after the partial report)."""
    probe = result.probes[0]
    error = result.errors.get(probe.id)
    fmt = output_format(plan)
    text = iops_output(
        result.summaries.get(probe.id, {}),
        error,
        fmt,
        target=plan.settings.target,
        reason=result.reason,
        duration_s=result.duration_s,
    )
    if text:
        print(text)
    if error and fmt == "terse":
        print(f"probetop iops: {error}", file=sys.stderr)
    return iops_exit_code(error, signal_status=result.signal_status)
