"""The help screen (``?`` / F1): every key, then what each pane's numbers mean."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

GENERAL = """\
[b]probetop[/b]: live probes that measure like fio, sysbench, ping -f and curl.

[b]Keys[/b]
  tab / shift+tab   move between panes
  m or enter        maximise the focused pane (chart of a longer history); escape restores
  p                 pause / resume the display (probes and recording go on)
  i                 show / hide idle and virtual devices (ifb, veth, bridges, idle NICs
                    and loop devices: hidden by default, the pane names them)
  a                 add a probe: type a probetop command line, e.g. cpu --threads 1
  r                 start / stop recording to a file
  d                 detach: the run goes on as a background session and the shell
                    gets its terminal back (probetop attach NAME to come back)
  ctrl+p            command palette: every action, stop a probe, change theme
  ? or f1           this help;  q or ctrl+c: quit (the recording is closed properly)
[b]Replay[/b]
  space             pause / resume playback
  s  (or 1 / 2 / 3) speed 1x -> 10x -> max
  left / right      seek 10 s back / forward (back rebuilds the panes from the start)
  home / end        jump to the start / the end

[b]Layout[/b]  every pane is on screen: in a grid when they fit (rows share the
  height; m shows a pane in full), else as a compact list of headline figures
  above the focused pane's details (tab / shift+tab move through the list).

[b]Tables[/b]  latest = last interval; min / max / mean over the whole run;
  p99* = 99th percentile of the last 300 intervals. Every number is per interval
  (a rate over the measured interval), never a cumulative counter.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and the meaning of every pane's numbers."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
    ]

    def __init__(self, pane_help: Iterable[str]) -> None:
        super().__init__()
        self.pane_help = list(pane_help)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(GENERAL, id="help-keys")
            yield Static("\n\n".join(["[b]Panes[/b]", *self.pane_help]), id="help-panes")

    def action_close(self) -> None:
        self.dismiss(None)
