"""The disk family's options (one declarative spec per command) and its frozen
settings.

Contract:
- ``IOPS_SPEC`` is what ``probetop iops`` accepts (``WARMUP_SPEC``, what
  ``probetop warmup`` accepts, is in probes/disk/warmup/settings.py); the
  CLI, the add-probe prompt and docs/iops.md, docs/warmup.md read them. An option both commands take
  with the same meaning is declared once below (``JOBS``, ``BS``, ...); a
  command that words its help differently derives its copy with
  ``dataclasses.replace``, so flag, parser and metavar cannot drift apart.
- ``IopsSettings`` is what one IOPS probe runs with (the warm-up's spec and
  settings are probes/disk/warmup/settings.py, built from the options
  declared here).
  ``from_options`` builds them from parsed option values; ``validate`` raises
  ``UsageProbeError`` with a message naming the option.
- ``confirmed`` says a run that destroys data may go on: True when
  ``--yes-destroy-data`` names the target (``yes_destroy_data`` keeps the
  value), or after the dashboard's typed confirmation (the CLI replaces the
  settings with ``confirmed=True``). Without it the probe's ``prepare`` raises
  ``ConfirmationRequired`` (after every refusal that no flag overrides).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import (
    CommandSpec,
    Option,
    OptionValueError,
    Spelling,
    byte_size,
    duration,
    parse_duration,
    whole_number,
)
from probetop.probes.disk import ioengines
from probetop.probes.disk.capacity import check_bs, check_interval, check_seconds
from probetop.probes.disk.sizes import parse_range, split_size

RW_MODES = ("read", "write", "randread", "randwrite", "randrw", "rw")
OUTPUT_FORMATS = ("normal", "terse", "json", "json+")  # fio's --output-format names
FILENAME_FORMAT = "$jobname.$jobnum.$filenum"  # fio's default name of a job's file
JOB_NAME = "probetop"  # fio's --name in the equivalent command ($jobname)


FILE_SERVICE_TYPES = ("roundrobin", "sequential", "random")  # fio's uniform ones
MAX_FILES = 4096  # jobs x nrfiles: open file descriptors of one run


def file_service_type(text: str) -> str:
    """fio's --file_service_type: roundrobin, sequential or random, with an
    optional ":N" (I/Os before the next file); the distributions fio also
    has (zipf, pareto, normal, gauss) are refused, naming the ones there are."""
    kind, sep, count = text.partition(":")
    if kind not in FILE_SERVICE_TYPES:
        raise OptionValueError(
            f"{text!r}: probetop has fio's {', '.join(FILE_SERVICE_TYPES)} (optionally "
            "with :N, the I/Os before switching files); fio's zipf, pareto and normal "
            "file choices are not implemented"
        )
    if sep and not (count.isdigit() and int(count) >= 1):
        raise OptionValueError(f"{text!r}: N in {kind}:N is a number of I/Os, 1 or more")
    return text


def job_file_name(fmt: str, jobnum: int, filenum: int = 0, jobname: str = JOB_NAME) -> str:
    """fio's --filename_format expanded for one job's file ($jobname, $jobnum, $filenum)."""
    return (
        fmt.replace("$jobname", jobname)
        .replace("$jobnum", str(jobnum))
        .replace("$filenum", str(filenum))
    )


MAX_JOBS = 256
MAX_IODEPTH = 1024
# Byte positions are int64 inside the native loops; 2**62 (4 EiB) is beyond any device.
MAX_BYTES = 1 << 62


def names_target(given: str | None, target: str) -> bool:
    """True if a --yes-destroy-data value names ``target`` (same path or same file)."""
    if not given:
        return False
    return given == target or os.path.realpath(given) == os.path.realpath(target)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """fio's --cpus_allowed list ("0", "0-3,6"), as sorted CPU numbers."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high) if high else int(low)
            if first < 0 or last < first or last > 4095:
                raise ValueError
            cpus.update(range(first, last + 1))
    except ValueError:
        raise OptionValueError(
            f"{text!r} is not a CPU list: CPU numbers and ranges, e.g. 0 or 0-3,6"
        ) from None
    return tuple(sorted(cpus))


def byte_range(text: str) -> tuple[int | None, int | None]:
    """``--range START-END`` (either end open) in bytes."""
    try:
        return parse_range(text)
    except ValueError as exc:
        raise OptionValueError(str(exc)) from None


def avg_time_ms(text: str) -> int:
    """fio's --bwavgtime/--iopsavgtime: a window in whole ms, at least 1 (a
    bare number is ms, as fio reads it; ``1s``, ``250ms`` are taken too)."""
    try:
        value = parse_duration(text, unit="ms")
    except OptionValueError:
        value = -1.0
    if value < 1 or value != int(value) or value > MAX_AVG_TIME_MS:
        raise OptionValueError(
            f"must be a whole number of ms from 1 to {MAX_AVG_TIME_MS}, got {text}"
        )
    return int(value)


MAX_AVG_TIME_MS = 3_600_000  # an hour: a window longer than that samples nothing useful


# -- option declarations shared by iops and warmup ---------------------------

_AT_LEAST_ONE = whole_number(minimum=1)

TARGET = Option(("target",), "regular file or block device", metavar="TARGET")
BS = Option(("--bs",), "block size: 1, 512, 4k, 1M...", byte_size(), 4096, "SIZE")
JOBS = Option(("--jobs",), "parallel jobs", _AT_LEAST_ONE, 1, "N")
IODEPTH = Option(("--iodepth",), "I/Os in flight per job", _AT_LEAST_ONE, 1, "N")
IOENGINE = Option(
    ("--ioengine",),
    "I/O engine, as fio's (default: psync at --iodepth 1, else libaio)",
    default=None,
    choices=ioengines.IOENGINES,
)
RATE_IOPS = Option(
    ("--rate-iops",),
    "cap each job at N I/Os per second (fio --rate_iops)",
    _AT_LEAST_ONE,
    None,
    "N",
)
BUFFERED = Option(
    ("--buffered",),
    "use the page cache (no O_DIRECT)",
    action="store_false",
    dest="direct",
    default=None,
)
CPUS_ALLOWED = Option(
    ("--cpus-allowed",),
    "run the I/O threads on these CPUs only, as fio's --cpus_allowed (e.g. 1 or 0-3,6; "
    "default: wherever the scheduler puts them)",
    parse_cpu_list,
    (),
    "LIST",
)
YES_DESTROY_DATA = Option(
    ("--yes-destroy-data",),
    "confirm writes to a block device without the dashboard; must name TARGET",
    metavar="TARGET",
)

# fio's names for these options, read as ours (tui/cli/parser.read_spellings);
# fio's --rate_iops, --cpus_allowed, --ss_dur ... need none: underscores are
# read as dashes in every command.
FIO = "fio"
FIO_SPELLINGS = (
    Spelling(FIO, "--filename", ""),
    Spelling(FIO, "--numjobs", "--jobs"),
    Spelling(FIO, "--blocksize", "--bs"),
    Spelling(FIO, "--runtime", "--time"),
)
# The warm-up reports its jobs as one group always; iops has --group-reporting.
GROUP_REPORTING_ALWAYS = Spelling(
    FIO,
    "--group_reporting",
    None,
    takes_value=False,
    note="the jobs are always reported as one group",
)

# -- probetop iops -----------------------------------------------------------

IOPS_DESCRIPTION = """\
Random or sequential I/O on TARGET (a regular file, created at --size for
writes, or a block device), measured the way fio measures it: per-interval
IOPS and bytes/s per direction and completion-latency percentiles, beside the
kernel's own counters for the same disk. O_DIRECT unless --buffered.
"""
IOPS_EPILOG = """\
examples:
  probetop iops /dev/nvme0n1                     4k random reads, 1 job, queue depth 1
  probetop iops /dev/nvme0n1 --jobs 4 --iodepth 32 --time 30 --json
  probetop iops ./test.img --size 1G --rw randwrite
  probetop iops /mnt/efs/dir --jobs 20 --size 1 --rw write --bs 1 --direct --sync
"""

IOPS_SPEC = CommandSpec(
    name="iops",
    help="fio-style IOPS, bandwidth and latency percentiles on a file or block device",
    description=IOPS_DESCRIPTION,
    epilog=IOPS_EPILOG,
    options=(
        replace(
            TARGET,
            help="regular file, block device, or a directory: one file per job in it "
            "(fio's --directory)",
        ),
        Option(
            ("--rw",),
            "I/O pattern, as fio's --rw (default randread)",
            default="randread",
            choices=RW_MODES,
        ),
        # argparse formats help text: "%%" shows as "%".
        Option(("--rwmixread",), "reads in %% for randrw/rw", whole_number(), 50, "PCT"),
        BS,
        JOBS,
        IODEPTH,
        IOENGINE,
        Option(("--size",), "area to use (file: create it)", byte_size(), None, "SIZE"),
        Option(("--offset",), "start of the area", byte_size(), 0, "OFF"),
        Option(
            ("--direct",),
            "force O_DIRECT",
            action="store_true",
            dest="direct",
            default=None,
            exclusive="io-mode",
        ),
        replace(BUFFERED, exclusive="io-mode"),
        Option(("--sync",), "open with O_SYNC (fio --sync=1)", action="store_true", default=False),
        RATE_IOPS,
        CPUS_ALLOWED,
        YES_DESTROY_DATA,
        Option(("--ramp",), "run S seconds before totals start", duration(), 0.0, "S"),
        Option(
            ("--bw-avg-time",),
            "average bandwidth over windows of MS ms for bw_min/max/mean/dev and their "
            "samples, as fio's --bwavgtime (a bare number is ms; default 500)",
            avg_time_ms,
            500,
            "MS",
        ),
        Option(
            ("--iops-avg-time",),
            "average IOPS over windows of MS ms for iops_min/max/mean/stddev and their "
            "samples, as fio's --iopsavgtime (a bare number is ms; default 500)",
            avg_time_ms,
            500,
            "MS",
        ),
        Option(
            ("--filename-format",),
            "TARGET is a directory: one file per job named so, as fio's --filename_format "
            f"with --directory ($jobname, $jobnum, $filenum; default {FILENAME_FORMAT})",
            default=None,
            metavar="FMT",
        ),
        Option(
            ("--nrfiles",),
            "TARGET is a directory: files per job, --size split between them, as fio's "
            "--nrfiles (names: --filename-format's $filenum)",
            _AT_LEAST_ONE,
            1,
            "N",
        ),
        Option(
            ("--file-service-type",),
            "which of a job's --nrfiles files the next I/O goes to, as fio's "
            "--file_service_type: roundrobin (the next file after each I/O), sequential "
            "(each file to its end, then the next), random; :N switches after N I/Os "
            "(default roundrobin)",
            file_service_type,
            "roundrobin",
            "TYPE",
        ),
        Option(
            ("--group-reporting",),
            "report the jobs as one group (fio's --group_reporting); without it, "
            "each of --jobs N has its own report, as fio's",
            action="store_true",
            default=False,
        ),
        Option(
            ("--output-format",),
            "headless report as fio writes it: normal (text), terse (fio's v3 line), "
            "json or json+ (json with clat_ns.bins); --json is json",
            default=None,
            choices=OUTPUT_FORMATS,
        ),
    ),
    spellings=(
        *FIO_SPELLINGS,
        Spelling(FIO, "--readwrite", "--rw"),
        Spelling(FIO, "--ramp_time", "--ramp"),
        Spelling(FIO, "--bwavgtime", "--bw-avg-time"),
        Spelling(FIO, "--iopsavgtime", "--iops-avg-time"),
        Spelling(FIO, "--direct", None, by_value={"1": "--direct", "0": "--buffered"}),
        Spelling(FIO, "--buffered", None, by_value={"1": "--buffered", "0": "--direct"}),
        Spelling(FIO, "--sync", None, by_value={"1": "--sync", "0": ""}),
        Spelling(
            FIO,
            "--time_based",
            None,
            takes_value=False,
            note="iops always runs for --time, whatever --size",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class IopsSettings:
    """What one IOPS probe runs with (fio's names in brackets).

    ``direct``: True forces O_DIRECT, False buffered, None O_DIRECT when the
    target allows it. ``time_s`` None runs until stopped; with ``ramp_s`` the
    probe runs ``ramp_s + time_s`` and ends by itself. ``rate_iops`` 0 is no cap.
    """

    target: str
    rw: str = "randread"  # --rw
    rwmixread: int = 50  # --rwmixread
    bs: int = 4096  # --bs
    jobs: int = 1  # --numjobs
    iodepth: int = 1  # --iodepth
    ioengine: str | None = None  # --ioengine; None: ioengines.resolve picks
    size: int | None = None  # --size
    offset: int = 0  # --offset
    direct: bool | None = None  # --direct
    sync: bool = False  # --sync
    time_s: float | None = None  # --runtime
    ramp_s: float = 0.0  # --ramp_time
    rate_iops: int = 0  # --rate_iops
    interval_s: float = 1.0
    yes_destroy_data: str | None = None
    confirmed: bool = False
    output_format: str | None = None  # --output-format; None: normal, or json with --json
    filename_format: str | None = None  # --filename_format; TARGET a directory: files per job
    nrfiles: int = 1  # --nrfiles
    file_service_type: str = "roundrobin"  # --file_service_type
    cpus_allowed: tuple[int, ...] = ()  # --cpus_allowed; (): not pinned
    group_reporting: bool = False  # --group_reporting: one report for all jobs
    bw_avg_ms: int = 500  # --bwavgtime: the bw_min/max/mean/dev window
    iops_avg_ms: int = 500  # --iopsavgtime: the iops_min/max/mean/stddev window
    job_name: str = JOB_NAME  # --name: fio's jobname, $jobname

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        time_s: float | None,
        interval_s: float,
        job_name: str | None = None,
    ) -> IopsSettings:
        """Settings from parsed ``IOPS_SPEC`` values plus the common
        --time/--sample-interval and --name (fio's job name); validated."""
        target = str(values["target"])
        yes = values.get("yes_destroy_data")
        settings = cls(
            target=target,
            rw=values.get("rw", "randread"),
            rwmixread=values.get("rwmixread", 50),
            bs=values.get("bs", 4096),
            jobs=values.get("jobs", 1),
            iodepth=values.get("iodepth", 1),
            ioengine=values.get("ioengine"),
            size=values.get("size"),
            offset=values.get("offset", 0),
            direct=values.get("direct"),
            sync=bool(values.get("sync", False)),
            time_s=time_s or None,
            ramp_s=values.get("ramp", 0.0),
            rate_iops=values.get("rate_iops") or 0,
            interval_s=interval_s or 1.0,
            yes_destroy_data=yes,
            confirmed=names_target(yes, target),
            output_format=values.get("output_format"),
            filename_format=values.get("filename_format"),
            nrfiles=values.get("nrfiles", 1),
            file_service_type=values.get("file_service_type") or "roundrobin",
            cpus_allowed=tuple(values.get("cpus_allowed") or ()),
            group_reporting=bool(values.get("group_reporting", False)),
            bw_avg_ms=values.get("bw_avg_time", 500),
            iops_avg_ms=values.get("iops_avg_time", 500),
            job_name=job_name or JOB_NAME,
        )
        settings.validate()
        return settings

    @property
    def readpct(self) -> int:
        """Reads in % of I/Os: 100 for read patterns, 0 for write patterns."""
        if self.rw in ("read", "randread"):
            return 100
        if self.rw in ("write", "randwrite"):
            return 0
        return self.rwmixread

    @property
    def sequential(self) -> bool:
        return not self.rw.startswith("rand")

    @property
    def per_job_files(self) -> bool:
        """TARGET is a directory: each job has its own file in it (fio's --directory)."""
        return self.filename_format is not None or os.path.isdir(self.target)

    def job_files(self) -> list[list[str]]:
        """Each job's files: TARGET itself unless ``per_job_files``, else its
        ``nrfiles`` files in TARGET, named by fio's --filename_format."""
        if not self.per_job_files:
            return [[self.target] for _ in range(self.jobs)]
        fmt = self.filename_format or FILENAME_FORMAT
        return [
            [
                os.path.join(self.target, job_file_name(fmt, j, f, self.job_name))
                for f in range(self.nrfiles)
            ]
            for j in range(self.jobs)
        ]

    def job_paths(self) -> list[str]:
        """Every file of the run, job by job (TARGET once per job unless ``per_job_files``)."""
        return [path for files in self.job_files() for path in files]

    def file_sizes(self) -> list[int] | None:
        """The --size of each of a job's files (fio's split over --nrfiles);
        None without --size."""
        return split_size(self.size, self.nrfiles, self.bs) if self.size else None

    @property
    def file_service(self) -> tuple[str, int]:
        """(kind, N): --file-service-type's kind and the I/Os before switching files."""
        kind, _, count = self.file_service_type.partition(":")
        return kind, int(count) if count else 1

    @property
    def writes(self) -> bool:
        return self.readpct < 100

    def validate(self) -> None:
        """Raise UsageProbeError for parameters fio would refuse."""
        if not 0 <= self.ramp_s < float("inf"):
            raise UsageProbeError("--ramp must be zero or more seconds")
        check_confirmation(self.yes_destroy_data, self.target)
        if self.rw not in RW_MODES:
            raise UsageProbeError(f"--rw must be one of {', '.join(RW_MODES)}, got {self.rw!r}")
        if not 0 <= self.rwmixread <= 100:
            raise UsageProbeError("--rwmixread must be 0..100")
        if self.jobs < 1 or self.jobs > MAX_JOBS:
            raise UsageProbeError(f"--jobs must be 1..{MAX_JOBS}")
        if self.iodepth < 1 or self.iodepth > MAX_IODEPTH:
            raise UsageProbeError(f"--iodepth must be 1..{MAX_IODEPTH}")
        ioengines.check(self.ioengine, self.iodepth)
        check_bytes(bs=self.bs, size=self.size, offset=self.offset)
        check_interval(self.interval_s)
        check_seconds("--time", self.time_s)
        check_seconds("--ramp", self.ramp_s)
        check_cpus(self.cpus_allowed)
        for flag, ms in (("--bw-avg-time", self.bw_avg_ms), ("--iops-avg-time", self.iops_avg_ms)):
            if not 1 <= ms <= MAX_AVG_TIME_MS:
                raise UsageProbeError(f"{flag} must be 1..{MAX_AVG_TIME_MS} ms, got {ms}")
        self._check_files()
        if self.filename_format is not None and not os.path.isdir(self.target):
            raise UsageProbeError(
                f"--filename-format needs TARGET to be a directory (fio's --directory); "
                f"{self.target} is not one"
            )
        if self.per_job_files:
            fmt = self.filename_format or FILENAME_FORMAT
            names = [job_file_name(fmt, j) for j in range(self.jobs)]
            # Each fault its own message: the path, the name, then the count.
            if any("/" in n for n in names):
                raise UsageProbeError(
                    f"--filename-format {fmt!r} names a path ({names[0]!r}): it is a file "
                    f"name inside {self.target}, without '/' (put the directory in TARGET)"
                )
            if any(n in ("", ".", "..") for n in names):
                raise UsageProbeError(
                    f"--filename-format {fmt!r} gives {names[0]!r}, which is not a file "
                    "name: give a name such as $jobname.$jobnum.$filenum (fio's default)"
                )
            if len(set(names)) < self.jobs:
                raise UsageProbeError(
                    f"--filename-format {fmt!r} must name one file per job: include "
                    "$jobnum (fio's default is $jobname.$jobnum.$filenum)"
                )
            if len(set(self.job_paths())) < self.jobs * self.nrfiles:
                raise UsageProbeError(
                    f"--filename-format {fmt!r} must name each of a job's --nrfiles "
                    f"{self.nrfiles} files: include $filenum (fio's default is "
                    "$jobname.$jobnum.$filenum)"
                )

    def _check_files(self) -> None:
        """--nrfiles and --file-service-type (fio's meaning; see docs/iops.md)."""
        try:
            file_service_type(self.file_service_type)
        except OptionValueError as exc:
            raise UsageProbeError(f"--file-service-type {exc}") from None
        if self.nrfiles < 1 or self.jobs * self.nrfiles > MAX_FILES:
            raise UsageProbeError(
                f"--nrfiles must be 1 or more, and --jobs x --nrfiles at most {MAX_FILES} "
                f"files (got {self.jobs} x {self.nrfiles})"
            )
        if self.nrfiles == 1:
            return
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and self.jobs * self.nrfiles + 64 > soft:
            raise UsageProbeError(
                f"--jobs {self.jobs} x --nrfiles {self.nrfiles} files stay open during the "
                f"run: more than this process may open (ulimit -n {soft}, less 64 for "
                "probetop itself); raise ulimit -n or use fewer files"
            )
        if not os.path.isdir(self.target):
            # fio's --filename with --nrfiles aborts (an assertion in filesetup.c).
            raise UsageProbeError(
                f"--nrfiles {self.nrfiles} needs TARGET to be a directory (fio's "
                f"--directory): each job makes its files in it; {self.target} is not one"
            )
        sizes = self.file_sizes()
        if sizes is not None and min(sizes) < self.bs:
            raise UsageProbeError(
                f"--size {self.size} over --nrfiles {self.nrfiles} gives files of "
                f"{min(sizes)} bytes, less than one --bs block ({self.bs}): give --size "
                f"at least {self.nrfiles * self.bs} (--nrfiles x --bs)"
            )


def check_bytes(
    *, bs: int, size: int | None = None, offset: int | None = None, end: int | None = None
) -> None:
    """Block size, size and positions in range (UsageProbeError naming the option)."""
    if bs < 1:
        raise UsageProbeError("--bs must be at least 1 byte")
    check_bs(bs)
    for name, value in (("--size", size), ("--offset", offset), ("--range", end)):
        if value is not None and not 0 <= value <= MAX_BYTES:
            raise UsageProbeError(f"{name} {value} is out of range: 0 to 4 EiB (2**62 bytes)")
    if size is not None and offset is not None and size + offset > MAX_BYTES:
        raise UsageProbeError("--offset + --size is beyond 4 EiB (2**62 bytes)")


def check_cpus(cpus: tuple[int, ...]) -> None:
    """--cpus-allowed names only CPUs this process may run on."""
    if not cpus:
        return
    allowed = os.sched_getaffinity(0)
    missing = [c for c in cpus if c not in allowed]
    if missing:
        raise UsageProbeError(
            f"--cpus-allowed: CPU {missing[0]} is not one this process may run on "
            f"(allowed: {', '.join(map(str, sorted(allowed)))})"
        )


def check_confirmation(given: str | None, target: str) -> None:
    if given and not names_target(given, target):
        raise UsageProbeError(
            f"--yes-destroy-data={given} does not name the target {target}: it must name it exactly"
        )
