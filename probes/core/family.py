"""A probe family as one typed descriptor: what the rest of the program needs
to run, show, report and document a family, in one frozen value.

Contract:
- Each family's front door (``probetop.probes.<family>``) exports its
  descriptor: ``FAMILY`` (disk: ``IOPS`` and ``WARMUP``; system: a
  ``PassiveFamily``). ``probetop.probes.registry`` lists them; nothing else
  keeps a list of families.
- ``Family`` is a probe command (``probetop cpu``): its option spec, its
  settings class (``from_options``/``validate``), how settings are read from
  the parsed values and the common options, the probe factory, the typed
  record classes, the headless report (text or ``--json``, returning the exit
  status), the pane shown for each probe kind it announces, its docs page,
  and optional hooks (a one-off mode, a destructive run's confirmation, when
  the run stops, what ``probetop demo`` runs, a text report printed as the
  run goes: ``LiveText``).
- ``PassiveFamily`` is the passive collectors every dashboard runs (system):
  no command, the same kinds, records, panes and docs.
- Each record class (``records()``, one per probe kind) declares the kind
  it lays out (``KIND``) and the metrics its samples may hold (``METRICS``,
  ``MetricSpec``s): ``sample_metrics`` reads them, so the sample metrics of
  every kind come from the descriptor and no list of them is kept elsewhere.
- Panes are import paths (``"probetop.tui.ui.panes.cpu:CpuBenchPane"``):
  strings, so ``probes/`` stays headless; the dashboard imports them.
- A probe kind is its family's name or starts with it and a dot
  (``http.load``, ``system.cpu``): the registry finds a kind's family
  without loading the others.
- ``tracker`` (Prometheus) and ``checks`` (``--assert``, compare) are the
  family's metric catalogues, each named by where it lives, ``Lazy("module:NAME")``,
  and imported on first call: one per probe kind (a family announcing
  several kinds names a tuple, one for each that has metrics;
  ``trackers_of`` / ``checks_of`` read either form); a family without one
  says why in ``no_tracker`` / ``no_checks`` (tests/core/test_families.py
  holds every family to that, and each ``Lazy`` to a module inside its
  family). ``tui/metrics`` and ``tui/analysis`` gather them through the
  registry.

The common options and a run's result are described here as protocols
(``RunCommon``, ``RunOutcome``) that the program's ``CommonOptions`` and
``RunResult`` satisfy, so a family's glue never imports the program.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from probetop.probes.core.base import MetricSpec, Probe
from probetop.probes.core.options import CommandSpec

if TYPE_CHECKING:  # loaded only when a run asks for metrics or assertions
    from probetop.probes.core.checks import Checks
    from probetop.probes.core.sample import Sample
    from probetop.probes.core.tracker import Tracker

SettingsT = TypeVar("SettingsT")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Lazy(Generic[T]):
    """A value named by where it lives, ``"package.module:NAME"``, imported
    on each call (``sys.modules`` makes every call after the first a lookup).
    A descriptor names its tracker and checks this way, so building the
    descriptor imports neither. The value's type is the field's
    (``Lazy[type[Tracker]]``): tests/core/test_families.py resolves every one
    and checks it, and that its module is inside its family (import-linter
    does not read the string)."""

    path: str

    def __post_init__(self) -> None:
        module, colon, name = self.path.partition(":")
        if not (colon and name.isidentifier() and all(p.isidentifier() for p in module.split("."))):
            raise ValueError(f"not a 'package.module:NAME' path: {self.path!r}")

    @property
    def module(self) -> str:
        return self.path.partition(":")[0]

    def __call__(self) -> T:
        value: T = getattr(importlib.import_module(self.module), self.path.partition(":")[2])
        return value


class SampleRecord(Protocol):
    """A family's typed record of one probe kind's samples
    (``CpuInterval``): the kind, and every metric name its samples may hold
    in ``values`` (``to_sample`` lays a sample out, ``from_sample`` reads it)."""

    KIND: ClassVar[str]
    METRICS: ClassVar[tuple[MetricSpec, ...]]


class Confirmable(Protocol):
    """Settings (a dataclass) of a run that destroys data: ``confirmed`` lets it go on."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def confirmed(self) -> bool: ...


ConfirmableT = TypeVar("ConfirmableT", bound=Confirmable)


def confirm(settings: ConfirmableT) -> ConfirmableT:
    """The ``confirmed`` hook of a family whose settings are a dataclass with
    a ``confirmed`` field: the same settings, confirmed (the user typed the
    target's name)."""
    return dataclasses.replace(settings, confirmed=True)


class RunCommon(Protocol):
    """The common options a family reads (``tui.cli.plan.CommonOptions``)."""

    @property
    def json(self) -> bool: ...
    @property
    def time_s(self) -> float | None: ...
    @property
    def interval_s(self) -> float: ...
    @property
    def time_limit_s(self) -> float | None:
        """--time, or None for no limit (not given, or 0)."""

    @property
    def record(self) -> Path | None: ...
    @property
    def detach(self) -> bool: ...
    @property
    def name(self) -> str | None:
        """--name: a detached session's name; for a family with ``names_job``
        also its job's name (fio's --name), with or without --detach."""

    @property
    def wants_headless(self) -> bool: ...
    @property
    def assertions(self) -> Sequence[object]: ...


class RunOutcome(Protocol):
    """What a headless run produced, as a report reads it (``tui.run.runner.RunResult``)."""

    @property
    def probes(self) -> Sequence[Probe]: ...
    @property
    def summaries(self) -> Mapping[str, Mapping[str, Any]]: ...
    @property
    def errors(self) -> Mapping[str, str]: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def reason(self) -> str:
        """ "completed", "time", "interrupted (SIGINT)", ..."""

    @property
    def signal_status(self) -> int:
        """128 + the stop signal's number, 0 when none stopped the run."""

    @property
    def live_printed(self) -> bool:
        """The family's ``LiveText`` (banner and per-interval lines) is already
        on stdout: the report prints only the rest."""


@dataclass(frozen=True, slots=True)
class DemoContext:
    """The local targets ``probetop demo`` made for the families' demo probes."""

    interval_s: float  # the sampling interval demo probes should use
    scratch: Path  # a directory removed when the demo ends
    http_url: str  # an HTTP server on 127.0.0.1: /, /delay?ms=N, /bytes?n=N
    icmp_allowed: bool  # whether this process may send ICMP echo
    # (name, size) -> the path of a file of ``size`` bytes of data in
    # ``scratch``, ready when it returns: the dashboard's demo lays its known
    # ones out from the process's start (tui/run/demo_scratch.py). OSError.
    data_file: Callable[[str, int], Path]


def until_time(settings: object, common: RunCommon) -> float | None:
    """The default deadline: --time (None: no limit)."""
    return common.time_limit_s


def ends_itself(settings: object, common: RunCommon) -> float | None:
    """A deadline for probes that stop themselves (after --time, a sweep, a
    pass): None, so a generic deadline never cuts them short."""
    return None


@dataclass(frozen=True, slots=True)
class LiveText(Generic[SettingsT]):
    """A headless text report printed as the run goes, as sysbench does: the
    headless runner (text mode only, never with --json or the dashboard)
    prints ``banner`` once the probes have started, then each sample's lines
    as it arrives (flushed), and ``report`` then prints only the rest
    (``RunOutcome.live_printed``). The whole is the same text the report
    prints at the end when nothing was printed live."""

    banner: Callable[[SettingsT, Sequence[Probe]], str]
    """The report's opening lines (each ending in a newline), from the
    settings and the prepared probes (read, not run)."""
    lines: Callable[[SettingsT], Callable[[Sample], Sequence[str]]]
    """A fresh per-run reader: a sample in, the report lines it completes out
    (none for samples the report does not print)."""


@dataclass(frozen=True, eq=False, kw_only=True)
class Family(Generic[SettingsT]):
    """One probe command's family. See the module docstring."""

    spec: CommandSpec
    settings: type[SettingsT]
    """Frozen, validated: ``from_options(values, ...)`` and ``validate()``."""
    read_settings: Callable[[Mapping[str, Any], RunCommon], SettingsT]
    """The settings from the parsed option values (read once) and the common
    options; raises ``ProbeError`` (exit 2) for bad input."""
    build_probes: Callable[[SettingsT, RunCommon], list[Probe]]
    report: Callable[[SettingsT, RunCommon, RunOutcome], int]
    """Print the headless report (text, or one JSON document with --json)
    from a run's outcome; return the exit status."""
    records: Callable[[], tuple[type[SampleRecord], ...]]
    """The typed record classes (``to_sample``/``from_sample``), one per kind
    in ``panes``; a function, so a family loads them only when asked (http's
    one-off does not)."""
    panes: Mapping[str, str]
    """Per probe kind this family announces: its pane, ``"module:Class"``."""
    docs: str
    """Its docs page, relative to the repository (``docs/cpu.md``)."""
    example: tuple[str, ...] = ()
    """The operands a minimal command line needs (icmp: ``("127.0.0.1",)``);
    tests parse every command with them."""
    deadline_s: Callable[[SettingsT, RunCommon], float | None] = until_time
    confirmed: Callable[[SettingsT], SettingsT] | None = None
    """For a family whose probes raise ``ConfirmationRequired``: the settings
    once the user typed the target's name."""
    switched: Callable[[SettingsT], SettingsT | None] | None = None
    """The settings a pane's switch request runs next (the warm-up's "write
    then read" after a fresh volume), or None when there is none."""
    one_off: Callable[[SettingsT, RunCommon], int | None] | None = None
    """Take the run over (http's one request per URL): an exit status, or
    None for the usual path."""
    headless_only: Callable[[SettingsT], bool] | None = None
    """True when these settings run headless even on a terminal."""
    demo_probes: Callable[[DemoContext], list[Probe]] | None = None
    live_text: LiveText[SettingsT] | None = None
    """Text report lines printed while a headless run goes (sysbench's
    banner and ``[ 1s ]`` lines); None: the report is all printed at the end."""
    with_passive: bool = True
    """False when the command brings the passive probes itself."""
    failed_exit: int = 1
    """The exit status of a run whose probe failed (its report's, headless):
    1 as sysbench, ping and wrk; 2 for the disk families. A dashboard that
    ends with a failed probe exits with the same."""
    blocks_in_kernel: bool = False
    """True when its probes' threads may wait in the kernel for a device
    that stopped answering (disk I/O): a headless run is then split so the
    shell never waits for them (tui/sessions/waiter.py)."""
    tracker: Lazy[type[Tracker] | tuple[type[Tracker], ...]] | None = None
    """Its Prometheus tracker class (probes/core/tracker.py), or one per
    kind; ``Lazy``, so a run without --metrics, --textfile or export never
    builds it."""
    checks: Lazy[Checks[Any] | tuple[Checks[Any], ...]] | None = None
    """Its ``--assert`` figures and compare rules (probes/core/checks.py),
    or one per kind; ``Lazy``, for the same reason."""
    no_tracker: str = ""
    no_checks: str = ""
    """Why the family has no tracker / no checks, when it has none on purpose."""
    names_job: bool = False
    """``--name`` is also the reference tool's job name (fio's ``--name=test``,
    in every pasted fio line): a headless run takes it instead of refusing
    it as a session name with no session; ``read_settings`` reads it."""

    @property
    def name(self) -> str:
        """The command (``probetop NAME``)."""
        return self.spec.name

    @property
    def help(self) -> str:
        return self.spec.help

    @property
    def kinds(self) -> tuple[str, ...]:
        """The probe kinds it announces; the first is focused first."""
        return tuple(self.panes)

    @property
    def focus(self) -> str:
        return self.kinds[0]


@dataclass(frozen=True, eq=False, kw_only=True)
class PassiveFamily:
    """Collectors every dashboard runs beside the probes (no command of their own)."""

    name: str
    help: str
    probes: Callable[[float], Sequence[Probe]]
    """The probes at a sampling interval in seconds."""
    records: Callable[[], tuple[type[SampleRecord], ...]]
    panes: Mapping[str, str]
    docs: str
    tracker: Lazy[type[Tracker] | tuple[type[Tracker], ...]] | None = None
    checks: Lazy[Checks[Any] | tuple[Checks[Any], ...]] | None = None
    no_tracker: str = ""
    no_checks: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.panes)


AnyFamily = Family[Any] | PassiveFamily


def sample_metrics(family: AnyFamily) -> dict[str, tuple[MetricSpec, ...]]:
    """Per probe kind, the metrics its samples may hold, from the family's
    record classes (loads them). tests/core/test_families.py holds the keys
    to the kinds the family announces and each to what its probes announce."""
    return {record.KIND: record.METRICS for record in family.records()}


def trackers_of(family: AnyFamily) -> tuple[type[Tracker], ...]:
    """The family's Prometheus trackers, one per kind that has metrics (loads them)."""
    if family.tracker is None:
        return ()
    found = family.tracker()
    return found if isinstance(found, tuple) else (found,)


def checks_of(family: AnyFamily) -> tuple[Checks[Any], ...]:
    """The family's ``--assert`` checks, one per kind that has them (loads them)."""
    if family.checks is None:
        return ()
    found = family.checks()
    return found if isinstance(found, tuple) else (found,)
