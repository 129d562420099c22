"""The help screen (``?`` / F1): every key, then what each pane's numbers mean.

Only the keys that work here are listed: ``HelpScreen(..., available=)``
is asked for each key's action (the app's ``check_action``), so a replay
lists its playback keys and not add-probe, record or detach (which do
nothing in a replay), and a live run the reverse."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from probetop.tui.ui.widgets.pane import PaneHelp
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

TERM_WIDTH = 32  # a pane's term column at most: "write latency ms (write_lat_ms)"

INTRO = "[b]probetop[/b]: live probes that measure like fio, sysbench, ping -f and curl."

# (key, what it does). One line of source per entry and no line breaks of
# our own: the screen wraps each description in its own column, hanging
# under the description, at whatever width the dialog has (text broken for
# a 110-cell box was broken again at 80 cells, with stubs at the left edge).
KEYS: tuple[tuple[str, str], ...] = (
    ("tab / shift+tab", "move between panes"),
    ("m or enter", "maximise the focused pane (chart of a longer history); escape restores"),
    ("p", "pause / resume the display (probes and recording go on)"),
    (
        "i",
        "show / hide idle and virtual devices (ifb, veth, bridges, idle NICs and loop"
        " devices: hidden by default, the pane names them)",
    ),
    ("a", "add a probe: type a probetop command line, e.g. cpu --threads 1"),
    ("r", "start / stop recording to a file"),
    (
        "d",
        "detach: the run goes on as a background session and the shell gets its"
        " terminal back (probetop attach NAME to come back)",
    ),
    ("ctrl+z", "suspend to the shell (fg brings it back); the probes measure on"),
    ("ctrl+p", "command palette: every action, stop a probe, change theme"),
    ("? or f1", "this help"),
    ("q or ctrl+c", "quit (the recording is closed properly)"),
)
# The action behind a key that is not always there (tui/ui/app.py's check_action).
KEY_ACTIONS = {
    "a": "add_probe",
    "r": "toggle_record",
    "d": "detach",
    "space": "play_pause",
    "s  (or 1 / 2 / 3)": "cycle_speed",
    "left / right": "seek",
    "home / end": "seek_to",
}
REPLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("space", "pause / resume playback"),
    ("s  (or 1 / 2 / 3)", "speed 1x -> 10x -> max"),
    ("left / right", "seek 10 s back / forward (back rebuilds the panes from the start)"),
    ("home / end", "jump to the start / the end"),
)
NOTES: tuple[tuple[str, str], ...] = (
    (
        "Layout",
        "every pane is on screen: in a grid when they fit (rows share the height; m"
        " shows a pane in full), else as a compact list of headline figures above the"
        " focused pane's details (tab / shift+tab move through the list).",
    ),
    (
        "Tables",
        "latest = last interval; min / max / mean over the whole run; p99* = 99th"
        " percentile of the last 300 intervals. Every number is per interval (a rate"
        " over the measured interval), never a cumulative counter.",
    ),
)


def key_table(
    rows: Iterable[tuple[str, str]],
    key_width: int = 0,
    bold_keys: bool = False,
    max_key_width: int | None = None,
) -> Table:
    """Two columns: the key (never wrapped, at least ``key_width`` cells)
    and what it does, wrapped within its own column so a continuation line
    hangs under the description. ``max_key_width``: keys may be longer (a
    metric's label and name), wrapped in their column beyond it."""
    table = Table.grid(padding=(0, 2))
    table.add_column(
        no_wrap=max_key_width is None,
        min_width=key_width,
        max_width=max_key_width,
        style="bold" if bold_keys else "",
    )
    table.add_column(ratio=1)
    for key, text in rows:
        table.add_row(Text(key), Text(text))
    return table


def panes_help(panes: Iterable[PaneHelp]) -> Group:
    """Per pane: its title, then each number's name and meaning in two columns."""
    parts: list[RenderableType] = [Text(""), Text.from_markup("[b]Panes[/b]")]
    for pane in panes:
        parts += [Text(""), Text(pane.title, style="bold")]
        parts.append(Padding(key_table(pane.rows, max_key_width=TERM_WIDTH), (0, 0, 0, 2)))
    return Group(*parts)


def general_help(available: Callable[[str], bool] | None = None) -> Group:
    """The keys (those whose action is ``available``; None: all) and the
    notes on layout and tables, as one renderable."""

    def shown(rows: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        if available is None:
            return rows
        return tuple(r for r in rows if r[0] not in KEY_ACTIONS or available(KEY_ACTIONS[r[0]]))

    keys, replay_keys = shown(KEYS), shown(REPLAY_KEYS)
    # One key column for both lists, so every description starts in one column.
    width = max(len(key) for key, _text in keys + replay_keys)
    parts: list[RenderableType] = [
        Text.from_markup(INTRO),
        Text(""),
        Text.from_markup("[b]Keys[/b]"),
        Padding(key_table(keys, width), (0, 0, 0, 2)),
    ]
    if replay_keys:
        parts += [
            Text.from_markup("[b]Replay[/b]"),
            Padding(key_table(replay_keys, width), (0, 0, 0, 2)),
        ]
    return Group(*parts, Text(""), key_table(NOTES, bold_keys=True))


class HelpScreen(ModalScreen[None]):
    """Keys and the meaning of every pane's numbers."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
    ]

    def __init__(
        self, pane_help: Iterable[PaneHelp], available: Callable[[str], bool] | None = None
    ) -> None:
        super().__init__()
        self.pane_help = list(pane_help)
        self.available = available  # action name -> does its key work here

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(general_help(self.available), id="help-keys")
            yield Static(panes_help(self.pane_help), id="help-panes")

    def action_close(self) -> None:
        self.dismiss(None)
