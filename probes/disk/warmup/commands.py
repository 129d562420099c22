"""Warm-up job: the probetop commands a report offers, as one shell line each.

- ``fix_command(settings)``: write then read over the same target and range
  (what warms a fresh volume), with the confirmation a headless run needs.
- ``resume_command(settings, checkpoint)``: the same run again with
  ``--resume`` and the checkpoint, every option that the checkpoint checks
  (pass, block size, range) or that shapes the pass (jobs, depth, engine,
  rate, CPUs, buffered, verify, plateau criterion) as it was given; a pass
  that writes carries its confirmation again. ``--time`` is left out: the
  command finishes the pass.

Both are ``shlex.join``ed, so a target with spaces pastes as one argument.
"""

from __future__ import annotations

import shlex

from probetop.probes.disk.sizes import format_size
from probetop.probes.disk.warmup.settings import SEQ_BS, WarmupSettings
from probetop.probes.disk.warmup.steady import DEFAULT_SPEC

PASS_FLAGS = {"read": [], "write": ["--write"], "write+read": ["--write", "--read"]}


def _range_args(settings: WarmupSettings) -> list[str]:
    if settings.range_start is None and settings.range_end is None:
        return []
    start = settings.range_start if settings.range_start is not None else ""
    end = settings.range_end if settings.range_end is not None else ""
    return ["--range", f"{start}-{end}"]


def fix_command(settings: WarmupSettings) -> str:
    """The command that warms a fresh volume: write then read, confirmed."""
    args = ["probetop", "warmup", settings.target, "--write", "--read"]
    if settings.bs != SEQ_BS:
        args += ["--bs", format_size(settings.bs)]
    args += _range_args(settings)
    return shlex.join([*args, f"--yes-destroy-data={settings.target}"])


def resume_command(settings: WarmupSettings, checkpoint: str) -> str | None:
    """The command that continues this run's sequential pass from
    ``checkpoint``; None for the time-based pattern (nothing to resume)."""
    s = settings
    if s.pass_name not in PASS_FLAGS:
        return None
    args = ["probetop", "warmup", s.target, *PASS_FLAGS[s.pass_name]]
    if s.bs != SEQ_BS:
        args += ["--bs", format_size(s.bs)]
    args += _range_args(s)
    if s.jobs != 1:
        args += ["--jobs", str(s.jobs)]
    if s.iodepth != 32:
        args += ["--iodepth", str(s.iodepth)]
    if s.ioengine:
        args += ["--ioengine", s.ioengine]
    if s.rate_iops:
        args += ["--rate-iops", str(s.rate_iops)]
    if s.cpus_allowed:
        args += ["--cpus-allowed", ",".join(map(str, s.cpus_allowed))]
    if s.direct is False:
        args.append("--buffered")
    if s.verify:
        args.append("--verify")
    if s.steadystate != DEFAULT_SPEC:
        args += ["--steadystate", s.steadystate]
    if s.ss_dur != 30.0:
        args += ["--ss-dur", f"{s.ss_dur:g}"]
    if s.ss_ramp:
        args += ["--ss-ramp", f"{s.ss_ramp:g}"]
    args += ["--checkpoint", checkpoint, "--resume"]
    if s.writes:
        args.append(f"--yes-destroy-data={s.target}")
    return shlex.join(args)
