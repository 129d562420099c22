"""What the dashboard is asked to show: built by the CLI, read by the App.

Kept free of Textual imports so the CLI can build it before deciding whether
a screen is shown at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probetop.probes.core.base import Probe
    from probetop.probes.record import FooterFields, Session
    from probetop.tui.metrics.live import MetricsExporter
    from probetop.tui.sessions.attach import AttachedSession
    from probetop.tui.sessions.foreground import ForegroundLink


@dataclass
class AppConfig:
    """Everything ``make_app`` needs.

    - ``probes``: prepared probes to run live (passive ones included).
    - ``session``: a loaded recording to replay instead of live probes.
    - ``record``: a path to record the live session to (checked writable).
    - ``focus``: the probe kind whose pane gets focus first ("cpu", ...).
    - ``duration_s``: stop the probes (not the UI) after this many seconds.
    - ``footer_fields``: extra fields for the recording's footer (the
      ``--assert`` outcomes), passed to the session's recorder.
    - ``metrics``: the opened ``--metrics``/``--textfile`` exporter the
      session feeds (``tui.run.launch.open_metrics``).
    - ``attached``: a detached session to show (``probetop attach``): its
      recording is read from the start, then followed as it grows.
    - ``foreground``: the link to the waiter process that lets ``d`` detach
      this live dashboard into a background session
      (``tui.sessions.foreground``); ``foreground_unavailable`` says why
      there is none. ``command_name`` and ``name`` name that session.
    - ``joining``: probes that join after the first frame: called once in a
      worker thread when the dashboard is up, it returns them prepared, with
      notes on any skipped (the demo's targets and JIT warm-ups take seconds
      a user should not stare at a blank terminal for); a ``ProbeError`` it
      raises is notified.
    """

    probes: list[Probe] = field(default_factory=list)
    session: Session | None = None
    record: Path | None = None
    theme: str | None = None
    interval_s: float = 1.0
    focus: str | None = None
    duration_s: float | None = None
    command: list[str] = field(default_factory=list)
    title: str = "probetop"
    extra: dict[str, Any] = field(default_factory=dict)
    footer_fields: FooterFields | None = None
    metrics: MetricsExporter | None = None
    attached: AttachedSession | None = None
    foreground: ForegroundLink | None = None
    foreground_unavailable: str | None = None
    command_name: str | None = None
    name: str | None = None
    joining: Callable[[], tuple[list[Probe], list[str]]] | None = None
