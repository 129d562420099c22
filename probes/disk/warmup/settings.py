"""The warm-up's options (``WARMUP_SPEC``) and its frozen settings
(``WarmupSettings``).

Contract:
- ``WARMUP_SPEC`` is what ``probetop warmup`` accepts; options it shares with
  ``probetop iops`` come from probes/disk/settings.py, so flag, parser and
  metavar cannot drift apart.
- ``WarmupSettings.from_options`` builds the settings from parsed option
  values; ``validate`` raises ``UsageProbeError`` naming the option.
- ``confirmed``: as ``IopsSettings.confirmed`` (``--yes-destroy-data`` names
  the target, or the dashboard's typed confirmation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import CommandSpec, Option, Spelling, duration
from probetop.probes.disk import ioengines
from probetop.probes.disk.capacity import check_interval, check_seconds
from probetop.probes.disk.settings import (
    BS,
    BUFFERED,
    CPUS_ALLOWED,
    FIO,
    FIO_SPELLINGS,
    GROUP_REPORTING_ALWAYS,
    IODEPTH,
    IOENGINE,
    JOBS,
    MAX_IODEPTH,
    MAX_JOBS,
    RATE_IOPS,
    TARGET,
    YES_DESTROY_DATA,
    byte_range,
    check_bytes,
    check_confirmation,
    check_cpus,
    names_target,
)
from probetop.probes.disk.warmup.steady import DEFAULT_SPEC, SteadyState

PASSES = ("read", "write", "write+read", "randwrite")

WARMUP_DESCRIPTION = """\
A full pass over TARGET like `fio --rw=read --bs=1M --iodepth=32
--ioengine=libaio --direct=1` (the documented way to initialize a volume
restored from a snapshot), but parallel, observable and resumable: progress,
MB/s, IOPS, ETA, a map of done regions and plateau detection with fio's
steady-state criteria. Default: a read pass, which keeps the data.

--write DESTROYS every byte in the range. It needs a typed confirmation of
the target's name in the dashboard, or --yes-destroy-data=TARGET headless,
and is refused whatever the flags for a mounted device (or one with a mounted
partition), a device held by LVM/RAID/dm, active swap, or the device holding /.
"""
WARMUP_EPILOG = """\
examples:
  probetop warmup /dev/nvme1n1                         read pass (keeps data)
  probetop warmup /dev/nvme1n1 --resume                continue after Ctrl-C / kill / SSH drop
  probetop warmup /dev/nvme1n1 --write --yes-destroy-data=/dev/nvme1n1 --json
  probetop warmup /dev/nvme1n1 --pattern randwrite --time 600 --yes-destroy-data=/dev/nvme1n1
"""
SEQ_BS = 1 << 20  # fio's initialization command: --bs=1M
RANDWRITE_BS = 4096

WARMUP_SPEC = CommandSpec(
    name="warmup",
    help="warm up (initialize) a volume: a full, resumable, observable read or write pass",
    description=WARMUP_DESCRIPTION,
    epilog=WARMUP_EPILOG,
    options=(
        replace(TARGET, help="block device or regular file"),
        Option(("--read",), "read pass (the default)", action="store_true", default=False),
        Option(
            ("--write",),
            "write pass: DESTROYS DATA (with --read: write, read)",
            action="store_true",
            default=False,
        ),
        Option(
            ("--pattern",),
            "seq: one pass over the range (default); randwrite: random writes for --time "
            "seconds, the fresh-SSD curve (destroys data)",
            default="seq",
            choices=("seq", "randwrite"),
        ),
        replace(BS, help="block size (1M; 4k for randwrite)", default=None),
        JOBS,
        replace(IODEPTH, default=32),
        IOENGINE,
        Option(("--range",), "bytes to cover", byte_range, (None, None), "START-END"),
        Option(("--resume",), "continue from the checkpoint", action="store_true", default=False),
        Option(
            ("--verify",),
            "read pass checks the offset stamp a probetop write pass left in every sector",
            action="store_true",
            default=False,
        ),
        Option(("--checkpoint",), "checkpoint file (default: beside it)", metavar="FILE"),
        Option(
            ("--steadystate",),
            "plateau criterion as fio's: iops, bw, iops_slope, bw_slope "
            "(default iops_slope:0.01%%)",
            default=DEFAULT_SPEC,
            metavar="CRIT:LIMIT",
        ),
        Option(("--ss-dur",), "plateau window in seconds", duration(), 30.0, "S"),
        Option(("--ss-ramp",), "ignore the first S seconds", duration(), 0.0, "S"),
        RATE_IOPS,
        CPUS_ALLOWED,
        replace(BUFFERED, help="use the page cache instead of O_DIRECT"),
        replace(
            YES_DESTROY_DATA,
            help="confirm a write pass without the dashboard; must name TARGET exactly",
        ),
    ),
    spellings=(
        *FIO_SPELLINGS,
        GROUP_REPORTING_ALWAYS,
        Spelling(FIO, "--ss", "--steadystate"),
        # fio's warm-up lines (docs/warmup.md): --rw=write then --rw=read
        *(
            Spelling(
                FIO,
                flag,
                None,
                by_value={"read": "--read", "write": "--write", "randwrite": "--pattern=randwrite"},
            )
            for flag in ("--rw", "--readwrite")
        ),
        Spelling(FIO, "--direct", None, by_value={"1": "", "0": "--buffered"}),
        Spelling(FIO, "--buffered", None, by_value={"1": "--buffered", "0": ""}),
    ),
)


def pass_name(*, read: bool, write: bool, pattern: str) -> str:
    """The pass --read/--write/--pattern ask for (see ``PASSES``)."""
    if pattern == "randwrite":
        return "randwrite"
    if write and read:
        return "write+read"
    return "write" if write else "read"


@dataclass(frozen=True, slots=True)
class WarmupSettings:
    """What one warm-up probe runs with.

    ``pass_name`` is one of ``PASSES``: "read" keeps the data; "write",
    "write+read" (write, then read) and the time-based "randwrite" destroy it.
    ``range_start``/``range_end`` None mean the target's start/end.
    ``direct``: False buffered, None O_DIRECT when possible. ``time_s`` stops
    the run (a sequential pass stays resumable); ``checkpoint`` None puts the
    checkpoint in its default place. ``rate_iops`` 0 is no cap.
    """

    target: str
    pass_name: str = "read"
    verify: bool = False
    bs: int = SEQ_BS
    jobs: int = 1
    iodepth: int = 32
    ioengine: str | None = None  # --ioengine; None: ioengines.resolve picks
    range_start: int | None = None
    range_end: int | None = None
    resume: bool = False
    checkpoint: str | None = None
    time_s: float | None = None
    steadystate: str = DEFAULT_SPEC
    ss_dur: float = 30.0
    ss_ramp: float = 0.0
    direct: bool | None = None
    rate_iops: int = 0
    cpus_allowed: tuple[int, ...] = ()  # --cpus_allowed, as iops's; (): not pinned
    interval_s: float = 1.0
    yes_destroy_data: str | None = None
    confirmed: bool = False
    job_name: str = "warmup"  # --name: the job's name in the equivalent fio command

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        time_s: float | None,
        interval_s: float,
        job_name: str | None = None,
    ) -> WarmupSettings:
        """Settings from parsed ``WARMUP_SPEC`` values plus the common
        --time/--sample-interval and --name (fio's job name); validated."""
        target = str(values["target"])
        name = pass_name(
            read=bool(values.get("read", False)),
            write=bool(values.get("write", False)),
            pattern=values.get("pattern", "seq"),
        )
        start, end = values.get("range") or (None, None)
        yes = values.get("yes_destroy_data")
        bs = values.get("bs")  # 0 is a bad --bs (refused below), not "the default"
        settings = cls(
            target=target,
            pass_name=name,
            verify=bool(values.get("verify", False)),
            bs=bs if bs is not None else (RANDWRITE_BS if name == "randwrite" else SEQ_BS),
            jobs=values.get("jobs", 1),
            iodepth=values.get("iodepth", 32),
            ioengine=values.get("ioengine"),
            range_start=start,
            range_end=end,
            resume=bool(values.get("resume", False)),
            checkpoint=values.get("checkpoint"),
            time_s=time_s or None,
            steadystate=values.get("steadystate", DEFAULT_SPEC),
            ss_dur=values.get("ss_dur", 30.0),
            ss_ramp=values.get("ss_ramp", 0.0),
            direct=values.get("direct"),
            rate_iops=values.get("rate_iops") or 0,
            cpus_allowed=tuple(values.get("cpus_allowed") or ()),
            interval_s=interval_s or 1.0,
            yes_destroy_data=yes,
            confirmed=names_target(yes, target),
            job_name=job_name or "warmup",
        )
        settings.validate()
        return settings

    @property
    def passes(self) -> list[str]:
        """The passes to run, in order."""
        if self.pass_name == "write+read":
            return ["write", "read"]
        return [self.pass_name]

    @property
    def writes(self) -> bool:
        return self.pass_name != "read"

    @property
    def sequential(self) -> bool:
        """A pass over the range (checkpointed), not the time-based pattern."""
        return self.pass_name != "randwrite"

    def steady_state(self) -> SteadyState:
        """A fresh plateau detector for one pass (UsageProbeError for a bad spec)."""
        return SteadyState.parse(self.steadystate, self.ss_dur, self.ss_ramp, self.interval_s)

    def validate(self) -> None:
        """Raise UsageProbeError for contradicting or out-of-range parameters."""
        check_confirmation(self.yes_destroy_data, self.target)
        if self.yes_destroy_data and self.pass_name == "read":
            raise UsageProbeError("--yes-destroy-data is only for a write pass: add --write")
        if self.pass_name not in PASSES:
            raise UsageProbeError(f"unknown pass {self.pass_name!r}: one of {', '.join(PASSES)}")
        if not (1 <= self.jobs <= MAX_JOBS and 1 <= self.iodepth <= MAX_IODEPTH):
            raise UsageProbeError(f"--jobs must be 1..{MAX_JOBS} and --iodepth 1..{MAX_IODEPTH}")
        ioengines.check(self.ioengine, self.iodepth)
        check_cpus(self.cpus_allowed)
        check_bytes(bs=self.bs, offset=self.range_start, end=self.range_end)
        if (
            self.range_start is not None
            and self.range_end is not None
            and self.range_start >= self.range_end
        ):
            raise UsageProbeError(
                f"--range {self.range_start}-{self.range_end} is empty: START must be below END"
            )
        check_interval(self.interval_s)
        check_seconds("--time", self.time_s)
        check_seconds("--ss-dur", self.ss_dur)
        check_seconds("--ss-ramp", self.ss_ramp)
        self.steady_state()  # a bad --steadystate/--ss-dur fails before anything starts
