"""The help screen (``?`` / F1): every key, then what each pane's numbers mean."""

from __future__ import annotations

from collections.abc import Iterable

from probetop.tui.widgets.pane import PaneHelp
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
    ("ctrl+p", "command palette: every action, stop a probe, change theme"),
    ("? or f1", "this help"),
    ("q or ctrl+c", "quit (the recording is closed properly)"),
)
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


def general_help() -> Group:
    """The keys and the notes on layout and tables, as one renderable."""
    # One key column for both lists, so every description starts in one column.
    width = max(len(key) for key, _text in KEYS + REPLAY_KEYS)
    return Group(
        Text.from_markup(INTRO),
        Text(""),
        Text.from_markup("[b]Keys[/b]"),
        Padding(key_table(KEYS, width), (0, 0, 0, 2)),
        Text.from_markup("[b]Replay[/b]"),
        Padding(key_table(REPLAY_KEYS, width), (0, 0, 0, 2)),
        Text(""),
        key_table(NOTES, bold_keys=True),
    )


class HelpScreen(ModalScreen[None]):
    """Keys and the meaning of every pane's numbers."""

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close"),
    ]

    def __init__(self, pane_help: Iterable[PaneHelp]) -> None:
        super().__init__()
        self.pane_help = list(pane_help)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(general_help(), id="help-keys")
            yield Static(panes_help(self.pane_help), id="help-panes")

    def action_close(self) -> None:
        self.dismiss(None)
