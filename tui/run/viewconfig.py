"""What the dashboard is asked to show: built by the CLI, read by the App.

One frozen configuration per mode; the app picks its mode controller from
the configuration's type (``tui/ui/modes/``), never from which fields are
set:

- ``LiveView``: probes to run now (``probetop``, a probe command, ``demo``).
- ``ReplayView``: a recording to play (``probetop replay FILE``).
- ``AttachView``: a detached session to follow (``probetop attach``, and
  ``--remote HOST``'s view of a session there).

Each holds the ``Display`` options every mode shares. Kept free of Textual
imports so the CLI can build them before deciding whether a screen is shown
at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from probetop.probes.core.base import Probe, ProbeError
    from probetop.probes.record import FooterFields, Session, SessionLoader
    from probetop.tui.metrics.live import MetricsExporter
    from probetop.tui.sessions.attach import AttachedSession
    from probetop.tui.sessions.foreground import ForegroundLink

JoinOutcome: TypeAlias = "tuple[list[Probe], list[str]] | ProbeError"
"""What ``LiveView.joining`` delivers: a group of prepared probes with notes
on any skipped, or the error that stopped a group."""


@dataclass(frozen=True, slots=True)
class Display:
    """What every mode shows the same way.

    - ``theme``: a theme name (checked by ``make_app``), None for the default.
    - ``interval_s``: the sampling interval; a live dashboard draws a frame
      per interval (kept within 0.2..1 s).
    - ``focus``: the probe kind whose pane gets focus first ("cpu", ...); a
      family's kinds share it ("http" also focuses "http.load").
    - ``title``: what the view is ("probetop replay FILE").
    - ``command``: the command line that started it (a recording's header,
      a detached session's record).
    """

    theme: str | None = None
    interval_s: float = 1.0
    focus: str | None = None
    title: str = "probetop"
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", tuple(self.command))


@dataclass(frozen=True, slots=True)
class Detachable:
    """How ``d`` turns a live dashboard into a background session
    (``tui.sessions.foreground``): the ``link`` to the waiter process, or
    None and ``why_not`` says why there is none; ``command_name`` and
    ``name`` name that session."""

    link: ForegroundLink | None = None
    why_not: str | None = None
    command_name: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class LiveView:
    """A live dashboard: run ``probes`` and show them.

    - ``probes``: prepared probes to run (passive ones included).
    - ``record``: a path to record the session to (checked writable).
    - ``duration_s``: stop the probes (not the UI) after this many seconds.
    - ``footer_fields``: extra fields for the recording's footer (the
      ``--assert`` outcomes), passed to the session's recorder.
    - ``metrics``: the opened ``--metrics``/``--textfile`` exporter the
      session feeds (``tui.run.launch.open_metrics``).
    - ``detach``: how ``d`` detaches this dashboard (None: it cannot, "not
      available here").
    - ``joining``: probes that join after the first frame: called once in a
      worker thread when the dashboard is up, with ``deliver``; it hands each
      group of probes to ``deliver`` as soon as that group is prepared, with
      notes on any skipped, or a ``ProbeError`` to notify, from any thread
      and as many times as it has groups (the demo's targets and JIT
      warm-ups take seconds: a user should not stare at a blank terminal,
      nor the HTTP pane wait for the disk's scratch files).
    """

    probes: Sequence[Probe] = ()
    display: Display = field(default_factory=Display)
    record: Path | None = None
    duration_s: float | None = None
    footer_fields: FooterFields | None = None
    metrics: MetricsExporter | None = None
    detach: Detachable | None = None
    joining: Callable[[Callable[[JoinOutcome], None]], None] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "probes", tuple(self.probes))


def parse_speed(text: str) -> float:
    """A replay speed: ``"max"`` (as fast as the display keeps up, ``math.inf``)
    or a factor: ``"10"``."""
    return math.inf if text == "max" else float(text)


@dataclass(frozen=True, slots=True)
class ReplayView:
    """Play a recording: ``session`` as loaded so far; when ``loader`` has
    not read all of it, the rest is read after the first frame. ``speed``:
    the initial speed factor (``math.inf``: as fast as the display keeps up)."""

    session: Session
    display: Display = field(default_factory=Display)
    loader: SessionLoader | None = None
    speed: float = 1.0


@dataclass(frozen=True, slots=True)
class AttachView:
    """Follow a detached session (``probetop attach``): its recording is read
    from the start, then followed as it grows. ``attached`` is a
    ``RemoteAttachedSession`` (which knows its host) for ``--remote HOST``."""

    attached: AttachedSession
    display: Display = field(default_factory=Display)


AppConfig: TypeAlias = LiveView | ReplayView | AttachView
"""Everything ``make_app`` needs: one of the three modes."""
