"""The disk family's two descriptors: ``probetop iops`` and ``probetop warmup``
run, reported and shown (probes/core/family.py).

The probes load on first use (they bring numpy and the I/O engine), so
``probetop --help`` does not pay for them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import Probe, UsageProbeError
from probetop.probes.core.family import (
    DemoContext,
    Family,
    Lazy,
    RunCommon,
    RunOutcome,
    confirm,
    ends_itself,
)
from probetop.probes.disk.capacity import MIN_INTERVAL_S
from probetop.probes.disk.records import IOPS_KIND, IopsInterval
from probetop.probes.disk.report import iops_exit_code, iops_output
from probetop.probes.disk.settings import IOPS_SPEC, IopsSettings
from probetop.probes.disk.warmup.records import WARMUP_KIND, WarmupInterval
from probetop.probes.disk.warmup.report import (
    format_warmup_report,
    warmup_document,
    warmup_exit_code,
)
from probetop.probes.disk.warmup.settings import WARMUP_SPEC, WarmupSettings

# -- iops -------------------------------------------------------------------


def read_iops_settings(values: Mapping[str, Any], common: RunCommon) -> IopsSettings:
    s = IopsSettings.from_options(
        values, time_s=common.time_s, interval_s=common.interval_s, job_name=common.name
    )
    if common.json and s.output_format not in (None, "json", "json+"):
        raise UsageProbeError(
            f"--json is --output-format json: it cannot be combined with "
            f"--output-format {s.output_format}; give one of them"
        )
    return s


def output_format(settings: IopsSettings, common: RunCommon) -> str:
    """fio's name of the report asked for: --output-format, else json for
    --json, else normal (the text report)."""
    return settings.output_format or ("json" if common.json else "normal")


def build_iops_probes(settings: IopsSettings, common: RunCommon) -> list[Probe]:
    """One probe. Writes to a block device without a confirmation make its
    ``prepare`` raise ConfirmationRequired (after every refusal)."""
    from probetop.probes.disk.iops import IopsProbe

    return [IopsProbe(settings)]


DEMO_IOPS_BYTES = 64 << 20


def iops_demo_probes(ctx: DemoContext) -> list[Probe]:
    """4k random reads on a 64 MiB scratch file the demo creates (with data,
    as the probe would lay it out) and removes, capped at 2000 IOPS so the
    demo never saturates the disk it shares."""
    from probetop.probes.disk.iops import IopsProbe

    settings = IopsSettings(
        target=str(ctx.data_file("iops.img", DEMO_IOPS_BYTES)),
        size=DEMO_IOPS_BYTES,
        rate_iops=2000,
        interval_s=max(ctx.interval_s, MIN_INTERVAL_S),
    )
    return [IopsProbe(settings)]


def iops_report(settings: IopsSettings, common: RunCommon, result: RunOutcome) -> int:
    """The report in fio's --output-format (``output_format``): json/json+ is
    the document fio writes (probetop's own summary under "probetop"), terse
    fio's v3 line, normal the fio-like text. Exit 2 if it failed, 128 + the
    signal's number when one interrupted the run (after the partial report)."""
    probe = result.probes[0]
    error = result.errors.get(probe.id)
    fmt = output_format(settings, common)
    text = iops_output(
        result.summaries.get(probe.id, {}),
        error,
        fmt,
        target=settings.target,
        reason=result.reason,
        duration_s=result.duration_s,
    )
    if text:
        print(text)
    if error and fmt == "terse":
        print(f"probetop iops: {error}", file=sys.stderr)
    return iops_exit_code(error, signal_status=result.signal_status)


IOPS = Family(
    spec=IOPS_SPEC,
    settings=IopsSettings,
    read_settings=read_iops_settings,
    build_probes=build_iops_probes,
    report=iops_report,
    records=lambda: (IopsInterval,),
    panes={IOPS_KIND: "probetop.tui.ui.panes.disk:IopsPane"},
    tracker=Lazy("probetop.probes.disk.iops_metrics:IOPS_TRACKER"),
    checks=Lazy("probetop.probes.disk.checks:IOPS_CHECKS"),
    docs="docs/iops.md",
    example=("/tmp/probetop-example.img",),
    # The probe stops itself after --ramp + --time (fio's runtime excludes
    # the ramp), so a generic deadline must not cut it short.
    deadline_s=ends_itself,
    confirmed=confirm,  # the user typed the target's name
    blocks_in_kernel=True,  # I/O to a device that stopped answering
    failed_exit=2,  # iops_exit_code / warmup_exit_code: a failed probe is 2
    demo_probes=iops_demo_probes,
    names_job=True,  # fio's --name=JOB: jobname in every report
)

# -- warmup -----------------------------------------------------------------

DEMO_WARMUP_BYTES = 128 << 20


def read_warmup_settings(values: Mapping[str, Any], common: RunCommon) -> WarmupSettings:
    return WarmupSettings.from_options(
        values, time_s=common.time_s, interval_s=common.interval_s, job_name=common.name
    )


def build_warmup_probes(settings: WarmupSettings, common: RunCommon) -> list[Probe]:
    """One probe. A write pass without a confirmation makes its ``prepare``
    raise ConfirmationRequired (after every refusal: mounted, holders, swap...)."""
    from probetop.probes.disk.warmup import WarmupProbe

    return [WarmupProbe(settings)]


def switched_to_write(settings: WarmupSettings) -> WarmupSettings | None:
    """What the dashboard's "write then read" switch runs after a read pass
    showed a fresh volume (same target, range and options; not yet confirmed:
    ``prepare`` raises ConfirmationRequired, answered by the usual typed-name
    screen). None when the settings are not a read pass."""
    if settings.pass_name != "read":
        return None
    return dataclasses.replace(
        settings, pass_name="write+read", resume=False, verify=False, confirmed=False
    )


def warmup_demo_probes(ctx: DemoContext) -> list[Probe]:
    """A read warm-up of a 128 MiB scratch file the demo creates and fills (never a
    device); 4 KiB blocks, one in flight, capped at 250 IOPS (1 MB/s) so the pass
    lasts about two minutes and leaves the shared disk alone."""
    from probetop.probes.disk.warmup import WarmupProbe

    path = ctx.data_file("warmup.img", DEMO_WARMUP_BYTES)
    settings = WarmupSettings(
        target=str(path),
        bs=4096,
        iodepth=1,
        rate_iops=250,
        checkpoint=str(ctx.scratch / "warmup.ckpt.json"),
        interval_s=max(ctx.interval_s, MIN_INTERVAL_S),
    )
    return [WarmupProbe(settings)]


def warmup_report(settings: WarmupSettings, common: RunCommon, result: RunOutcome) -> int:
    """JSON (--json) or text. Exit 2 when a pass failed, 1 when --verify found
    bad sectors, 128 + the signal's number when one interrupted the run
    (after the partial report)."""
    probe = result.probes[0]
    error = result.errors.get(probe.id)
    doc = warmup_document(result.summaries.get(probe.id, {}), error)
    if common.json:
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(format_warmup_report(doc, reason=result.reason))
    if error:
        print(f"probetop: error: {error}", file=sys.stderr)
    return warmup_exit_code(doc, error, signal_status=result.signal_status)


WARMUP = Family(
    spec=WARMUP_SPEC,
    settings=WarmupSettings,
    read_settings=read_warmup_settings,
    build_probes=build_warmup_probes,
    report=warmup_report,
    records=lambda: (WarmupInterval,),
    panes={WARMUP_KIND: "probetop.tui.ui.panes.disk:WarmupPane"},
    tracker=Lazy("probetop.probes.disk.warmup.metrics:WARMUP_TRACKER"),
    checks=Lazy("probetop.probes.disk.checks:WARMUP_CHECKS"),
    docs="docs/warmup.md",
    example=("/tmp/probetop-example.img",),
    deadline_s=ends_itself,  # the probe stops itself on --time, checkpoint saved first
    confirmed=confirm,  # the user typed the target's name
    blocks_in_kernel=True,  # I/O to a device that stopped answering
    failed_exit=2,  # iops_exit_code / warmup_exit_code: a failed probe is 2
    switched=switched_to_write,
    demo_probes=warmup_demo_probes,
    names_job=True,  # fio's --name=JOB, in the equivalent fio command
)
