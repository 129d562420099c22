"""`probetop warmup TARGET`: a full, resumable read (or write) pass over a volume."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes import disk
from probetop.probes.core.base import Probe
from probetop.probes.disk import (
    WarmupSettings,
    format_warmup_report,
    make_data_file,
    warmup_document,
    warmup_exit_code,
)
from probetop.tui.cli.plan import CommonOptions, RunPlan
from probetop.tui.run.runner import RunResult

SPEC = disk.WARMUP_SPEC  # the family declares the options; this module runs them
FOCUS = "warmup"
DEMO_FILE_BYTES = 128 << 20


def settings(values: Mapping[str, Any], common: CommonOptions) -> WarmupSettings:
    return WarmupSettings.from_options(values, time_s=common.time_s, interval_s=common.interval_s)


def build_probes(plan: RunPlan[WarmupSettings]) -> list[Probe]:
    """One probe. A write pass without a confirmation makes its ``prepare``
    raise ConfirmationRequired (after every refusal: mounted, holders, swap...)."""
    return [disk.WarmupProbe(plan.settings)]


def confirmed(plan: RunPlan[WarmupSettings]) -> RunPlan[WarmupSettings]:
    """The plan once the user typed the target's name in the dashboard."""
    return dataclasses.replace(plan, settings=dataclasses.replace(plan.settings, confirmed=True))


def switched_to_write(plan: RunPlan[WarmupSettings]) -> RunPlan[WarmupSettings] | None:
    """The plan the dashboard's "write then read" switch runs after a read pass
    showed a fresh volume (same target, range and options; not yet confirmed:
    ``prepare`` raises ConfirmationRequired, answered by the usual typed-name
    screen). None when the plan is not a read pass."""
    s = plan.settings
    if s.pass_name != "read":
        return None
    switched = dataclasses.replace(
        s, pass_name="write+read", resume=False, verify=False, confirmed=False
    )
    return dataclasses.replace(plan, settings=switched)


def deadline_s(plan: RunPlan[WarmupSettings]) -> float | None:
    """None: the probe stops itself on --time and saves its checkpoint first."""
    return None


def demo_probes(ctx: Any) -> list[Probe]:
    """A read warm-up of a 128 MiB scratch file the demo creates and fills (never a
    device); 4 KiB blocks, one in flight, capped at 250 IOPS (1 MB/s) so the pass
    lasts about two minutes and leaves the shared disk alone."""
    path = ctx.scratch / "warmup.img"
    make_data_file(str(path), DEMO_FILE_BYTES)
    settings = WarmupSettings(
        target=str(path),
        bs=4096,
        iodepth=1,
        rate_iops=250,
        checkpoint=str(ctx.scratch / "warmup.ckpt.json"),
        interval_s=max(ctx.interval_s, disk.MIN_INTERVAL_S),
    )
    return [disk.WarmupProbe(settings)]


def report(plan: RunPlan[WarmupSettings], result: RunResult) -> int:
    """JSON (--json) or text. Exit 2 when a pass failed, 1 when --verify found
    bad sectors, 128 + the signal's number when
    one interrupted the run (after the partial report)."""
    probe = result.probes[0]
    error = result.errors.get(probe.id)
    doc = warmup_document(result.summaries.get(probe.id, {}), error)
    if plan.common.json:
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(format_warmup_report(doc, reason=result.reason))
    if error:
        print(f"probetop: error: {error}", file=sys.stderr)
    return warmup_exit_code(doc, error, signal_status=result.signal_status)
