"""The run plan: what one command line asks for, built once, then read-only.

Contract:
- ``tui.cli.make_plan`` turns the parsed command line into a ``RunPlan``: the
  common options (``CommonOptions``) plus the command's own frozen settings
  (the family's ``*Settings`` class, validated when built). Nothing changes a
  plan after that; code that needs a different value builds a new plan
  (``dataclasses.replace``).
- ``COMMON_OPTIONS`` is the one declaration of the options every command
  takes; the CLI renders it, docs/usage.md lists it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from probetop.probes.core.base import UsageProbeError
from probetop.probes.core.options import Option, duration, user_path
from probetop.probes.core.ranges import MAX_SECONDS, check_interval, check_seconds

if TYPE_CHECKING:
    from probetop.tui.analysis.assertions import Assertion
    from probetop.tui.metrics.address import MetricsAddress


# The parsers of --assert, --metrics and --textfile load their modules when
# the option is given: a command line without them (a one-off `probetop http
# URL`, a process per call in a script's loop) does not pay for them (issue 28).
# Each keeps its parser's name: argparse names it in "invalid ... value".
def parse_assertion(text: str) -> Assertion:
    """--assert: ``tui.analysis.assertions.parse_assertion``."""
    from probetop.tui.analysis import assertions

    return assertions.parse_assertion(text)


def parse_metrics_address(text: str) -> MetricsAddress:
    """--metrics: ``tui.metrics.address.parse_metrics_address``."""
    from probetop.tui.metrics import address

    return address.parse_metrics_address(text)


def parse_textfile_dir(text: str) -> Path:
    """--textfile: ``tui.metrics.address.parse_textfile_dir``."""
    from probetop.tui.metrics import address

    return address.parse_textfile_dir(text)


MAX_LINGER_S = 3600.0  # --metrics-linger: an hour covers any scrape interval
OLD_INTERVAL = "interval_old_spelling"  # where the common --interval lands (see cli.make_plan)

COMMON_OPTIONS: tuple[Option, ...] = (
    Option(
        ("--record",),
        "record the session to FILE (JSON Lines, mode 0600; zstandard if it ends in .zst)",
        metavar="FILE",
    ),
    Option(
        ("--headless",),
        "run without the dashboard and print a report at the end",
        action="store_true",
        default=False,
    ),
    Option(
        ("--json",),
        "headless, and print the report as one JSON document",
        action="store_true",
        default=False,
    ),
    Option(
        ("--time",),
        "stop the probes after S seconds (or 500ms, 10m, 2h; 0: no time limit, as in sysbench)",
        parse=duration(),
        metavar="S",
    ),
    Option(
        ("--sample-interval",),
        "sampling period in seconds: one sample (pane update, recorded line, metrics "
        "interval) every S (default 1; or 500ms, 1m); the same name in every command",
        parse=duration(positive=True),
        # None in the parsed values means "not given" (CommonOptions reads it
        # as 1 s): `http --sample-interval 1 URL` asks for repeated sampling.
        default=None,
        dest="interval",
        metavar="S",
    ),
    Option(
        ("--interval",),
        "the old spelling of --sample-interval (a hint says so; refused before icmp, "
        "whose -i/--interval is ping's send interval)",
        parse=duration(positive=True),
        dest=OLD_INTERVAL,
        metavar="S",
        hidden=True,
    ),
    Option(
        ("--theme",),
        "dashboard theme (probetop-dark, probetop-light, probetop-contrast, or any Textual theme)",
        metavar="NAME",
    ),
    Option(
        ("--assert",),
        "fail the run (exit 99) unless METRIC OP VALUE holds at the end, e.g. "
        "'http.p95<200ms', 'icmp.loss<0.1%%', 'cpu.events_per_second>2900' (repeatable; "
        "docs/usage.md#assertions)",
        parse=parse_assertion,
        action="append",
        dest="assertions",
        metavar="EXPR",
    ),
    Option(
        ("--metrics",),
        "serve Prometheus metrics on http://[ADDR:]PORT/metrics (127.0.0.1 unless ADDR "
        "is given; docs/metrics.md)",
        parse=parse_metrics_address,
        metavar="[ADDR:]PORT",
    ),
    Option(
        ("--metrics-linger",),
        "after a headless run ends, keep the --metrics endpoint up S seconds more (its "
        "final counters served), so Prometheus scrapes the last interval",
        parse=duration(),
        metavar="S",
        dest="metrics_linger",
    ),
    Option(
        ("--detach",),
        "run as a background session that outlives the terminal; prints its name "
        "(`probetop attach NAME`, `probetop stop NAME`; docs/sessions.md)",
        action="store_true",
        default=False,
    ),
    Option(
        ("--name",),
        "the detached session's name (default COMMAND-YYYYMMDD-HHMMSS)",
        metavar="NAME",
    ),
    Option(
        ("--remote",),
        "run on [USER@]HOST over ssh and show it here: probe commands start there as a "
        "detached session; ls, stop, attach NAME, follow act there (docs/sessions.md)",
        metavar="[USER@]HOST",
    ),
    Option(
        ("--with-system",),
        "headless or detached: sample (and record) this machine's CPU, disk and network "
        "too, the panes a dashboard shows beside the probe (a remote view asks it of the "
        "session it starts)",
        action="store_true",
        default=False,
    ),
    Option(
        ("--textfile",),
        "write the same metrics to DIR/probetop.prom every interval, for node_exporter's "
        "textfile collector",
        parse=parse_textfile_dir,
        metavar="DIR",
    ),
)


@dataclass(frozen=True, slots=True)
class CommonOptions:
    """The options every command takes, typed. ``interval_s`` is the sampling
    period, ``--sample-interval`` in every command (cpu's ``--report-interval``
    sets it too; icmp's ``-i/--interval`` is ping's send interval)."""

    record: Path | None = None
    headless: bool = False
    json: bool = False
    time_s: float | None = None
    interval_s: float = 1.0
    theme: str | None = None
    argv: tuple[str, ...] = ()
    # --assert, read but not yet checked against the command (cli.make_plan does)
    assertions: tuple[Assertion, ...] = ()
    metrics: MetricsAddress | None = None
    metrics_linger_s: float = 0.0  # --metrics-linger: the endpoint's time after a run
    textfile: Path | None = None
    detach: bool = False  # --detach: run as a background session (tui.sessions)
    name: str | None = None  # --name: the detached session's name
    remote: str | None = None  # --remote: [USER@]HOST the command runs on (tui.sessions.remote)
    with_system: bool = False  # --with-system: the passive panes' probes in a headless run too

    @classmethod
    def from_values(cls, values: Mapping[str, Any], argv: tuple[str, ...]) -> CommonOptions:
        """The common options from parsed values, validated (``validate``)."""
        record = values.get("record")
        interval = values.get("interval", 1.0)
        common = cls(
            record=user_path(record) if record is not None else None,  # "" is refused
            headless=bool(values.get("headless", False)),
            json=bool(values.get("json", False)),
            time_s=values.get("time"),
            interval_s=float(interval) if isinstance(interval, (int, float)) else 1.0,
            theme=values.get("theme"),
            argv=argv,
            assertions=tuple(values.get("assertions") or ()),
            metrics=values.get("metrics"),
            metrics_linger_s=float(values.get("metrics_linger") or 0.0),
            textfile=values.get("textfile"),
            detach=bool(values.get("detach", False)),
            name=values.get("name"),
            remote=values.get("remote"),
            with_system=bool(values.get("with_system", False)),
        )
        common.validate()
        return common

    def validate(self) -> None:
        """Raise LimitProbeError (exit 2) for a --time beyond what the deadline
        arithmetic holds or a sampling interval below the common floor (each
        family may ask more of its own interval, with its own message)."""
        if self.time_s is not None:
            check_seconds("--time", self.time_s, maximum=MAX_SECONDS, zero_means="no time limit")
        check_seconds("--metrics-linger", self.metrics_linger_s, maximum=MAX_LINGER_S)
        if self.metrics_linger_s and self.metrics is None:
            raise UsageProbeError(
                "--metrics-linger keeps the --metrics endpoint up after the run: "
                "give --metrics [ADDR:]PORT too"
            )
        check_interval("--sample-interval", self.interval_s)

    @property
    def time_limit_s(self) -> float | None:
        """When the generic runner stops the probes: --time, or None for no
        limit (not given, or 0, as sysbench's --time 0). Every command reads
        --time through this, so 0 means the same everywhere."""
        return self.time_s if self.time_s else None

    @property
    def wants_headless(self) -> bool:
        """Headless when asked, when --json or --output-format is asked, or when
        there is no terminal (or one that is not ours, or ``TERM=dumb``)."""
        return (
            self.headless
            or self.json
            # iops --output-format: a report as fio writes it is headless too
            or any(a.split("=")[0] == "--output-format" for a in self.argv)
            or not (sys.stdout.isatty() and sys.stdin.isatty())
            or _terminal_not_ours()
            or _dumb_terminal()
        )

    def note_theme_ignored(self) -> None:
        """Say on stderr that --theme is ignored when this run is headless: every
        command that could draw a dashboard but runs without one says it the
        same way (a probe run, demo, replay), none drops it silently."""
        if self.theme and self.wants_headless:
            print(
                f"probetop: note: --theme {self.theme} is ignored: this run is headless "
                "(--headless, --json, or no terminal)",
                file=sys.stderr,
            )


_said_dumb: bool | None = None


def _dumb_terminal() -> bool:
    """``TERM=dumb``: a terminal that says it cannot move the cursor (Emacs's
    ``M-x shell``, a CI log's pty). A dashboard there was a stream of escape
    sequences that waited for a q typed blind; the run is headless instead,
    as without a terminal, said once on stderr."""
    global _said_dumb
    if _said_dumb is None:
        _said_dumb = os.environ.get("TERM") == "dumb"
        if _said_dumb:
            print(
                "probetop: note: running headless: TERM=dumb (a terminal that cannot "
                "draw a dashboard); set TERM to your terminal's type for one",
                file=sys.stderr,
            )
    return _said_dumb


def _terminal_not_ours() -> bool:
    """The terminal is the shell's, not ours (``setsid`` without ``-w``):
    tui.sessions.jobcontrol.terminal_not_ours, loaded only at a terminal."""
    from probetop.tui.sessions.jobcontrol import terminal_not_ours

    return terminal_not_ours()


SettingsT = TypeVar("SettingsT")


@dataclass(frozen=True, slots=True)
class NoSettings:
    """The settings of a command that has none of its own (the passive dashboard)."""


@dataclass(frozen=True, slots=True)
class ToolWarning:
    """The reference tool's own warning about the command line (sysbench's
    deprecated names), printed where the tool prints it: stdout, before a
    headless text report's first line (stderr with --json, whose stdout is
    one document), or stderr (``on_stderr``) before the run."""

    line: str
    on_stderr: bool = False


@dataclass(frozen=True, slots=True)
class RunPlan(Generic[SettingsT]):
    """One command line, parsed and checked: the command's name (None for the
    passive dashboard), the common options and the command's own settings."""

    command: str | None
    common: CommonOptions
    settings: SettingsT
    extra: Mapping[str, Any] = field(default_factory=dict)
    hints: tuple[str, ...] = ()  # one line each, printed to stderr before the run
    tool_warnings: tuple[ToolWarning, ...] = ()
