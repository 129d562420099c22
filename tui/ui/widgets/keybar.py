"""The footer line of key bindings, drawn by ONE widget.

Textual's ``Footer`` composes a widget per binding (each styled, laid out
and rendered on its own) and composes them again whenever the bindings
change: at start-up it was the largest single part of the dashboard's
first frame after Textual's imports (docs/performance-budget.md). This bar
draws the same line, in the same theme variables, as one line of segments.

Contract:
- Shows the active bindings of its screen (``Screen.active_bindings``:
  the focused widget's, the screen's, the app's; ``show=False`` ones and
  those ``check_action`` hides left out; one entry per action, in Textual's
  order), and the command palette key at the right edge, as Textual's
  ``Footer`` does. It follows ``bindings_updated_signal`` (focus moved, a
  mode changed) and redraws only when the shown entries changed.
- Every entry stays on the line: when the roomy layout (`` q Quit  ? Help``,
  Textual's) does not fit the width, the compact one (``q Quit ? Help``),
  then the palette key without its description, then the short labels of
  ``SHORT`` (``m Max``: the live keys fit 80 columns whole), then
  descriptions cut to fit (``…``); only keys alone wider than the line are
  cut.
- A click on an entry presses its key (``App.simulate_key``); a disabled
  entry is drawn dim and rings the bell; the entry under the mouse is
  highlighted (``$block-hover-background``).
- ``layout_keys(entries, palette, width)`` is pure (tested with strings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probetop.tui.ui.widgets.linewidget import LineWidget
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.screen import Screen
from textual.strip import Strip

PALETTE_MARK = "▏"  # Textual's footer: a "vkey" left border before the palette key
# Short labels for a narrow line, each still a word (cut labels read
# "Maxim…", "Add p…"); a description not listed keeps its own words.
SHORT = {
    "Maximise": "Max",
    "Add probe": "Add",
    "Record": "Rec",
    "Idle devs": "Idle",
    "What is one event?": "Event?",
    "Play/pause": "Play",
}


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One binding as the bar shows it. ``key``: what a click presses."""

    key: str
    display: str
    description: str
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of cells: ``part`` is key / description / mark / base (the
    bar's own style); ``entry`` the index of the entry it belongs to
    (``len(entries)`` for the palette key), -1 for none."""

    text: str
    part: str
    entry: int


def _entry_pieces(entry: KeyEntry, i: int, roomy: bool, desc: str) -> list[Piece]:
    if roomy:  # Textual's footer: key padded by a cell each side, description then a cell
        return [Piece(f" {entry.display} ", "key", i), Piece(f"{desc} ", "description", i)]
    pieces = [Piece(entry.display, "key", i)]
    if desc:
        pieces.append(Piece(f" {desc}", "description", i))
    return pieces


def _palette_pieces(palette: KeyEntry, i: int, level: int) -> list[Piece]:
    pieces = [Piece(PALETTE_MARK, "mark", -1), Piece(palette.display, "key", i)]
    if level == 0:
        return [*pieces, Piece(f" {palette.description}", "description", i), Piece(" ", "base", i)]
    if level == 1:
        return [*pieces, Piece(f" {palette.description}", "description", i)]
    return pieces


def _width(pieces: Sequence[Piece]) -> int:
    return sum(cell_len(p.text) for p in pieces)


def _cut(text: str, cells: int) -> str:
    if cell_len(text) <= cells:
        return text
    return "" if cells <= 0 else set_cell_size(text, cells - 1) + "…"


def layout_keys(entries: Sequence[KeyEntry], palette: KeyEntry | None, width: int) -> list[Piece]:
    """The bar's cells for ``width``: entries from the left, the palette key
    at the right edge, blank ``base`` cells between (see the module docstring)."""
    n = len(entries)

    def row(roomy: bool, descs: Sequence[str]) -> list[Piece]:
        pieces: list[Piece] = []
        for i, (entry, desc) in enumerate(zip(entries, descs, strict=True)):
            if pieces and not roomy:
                pieces.append(Piece(" ", "base", -1))
            pieces.extend(_entry_pieces(entry, i, roomy, desc))
        return pieces

    full = [e.description for e in entries]
    short = [SHORT.get(d, d) for d in full]
    tries = (
        (True, 0, full),
        (False, 1, full),
        (False, 2, full),
        (False, 1, short),
        (False, 2, short),
    )
    for roomy, level, labels in tries:
        left = row(roomy, labels)
        right = _palette_pieces(palette, n, level) if palette is not None else []
        # A blank cell at least between the entries and the palette key.
        if _width(left) + _width(right) + (0 if roomy or not right else 1) <= width:
            break
    else:
        # Cut the longest descriptions first, one cell at a time, until it fits.
        full = short
        descs = list(full)
        right = _palette_pieces(palette, n, 2) if palette is not None else []
        room = width - _width(right) - (1 if right else 0)
        while _width(row(False, descs)) > room and any(descs):
            longest = max(range(n), key=lambda j: cell_len(descs[j]))
            descs[longest] = _cut(full[longest], cell_len(descs[longest]) - 1)
        left = row(False, descs)
    gap = width - _width(left) - _width(right)
    pieces = [*left, Piece(" " * max(0, gap), "base", -1), *right] if gap > 0 else [*left, *right]
    return pieces


class KeyBar(LineWidget):
    """The footer line of key bindings; see the module docstring."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {
        "keybar--key",
        "keybar--description",
        "keybar--mark",
        "keybar--hover",
    }

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyBar > .keybar--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyBar > .keybar--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyBar > .keybar--mark {
        color: $foreground 20%;
    }
    KeyBar > .keybar--hover {
        color: $footer-key-foreground;
        background: $block-hover-background;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.entries: tuple[KeyEntry, ...] = ()
        self.palette: KeyEntry | None = None
        self.hover = -1  # the entry under the mouse
        self._pieces: list[Piece] = []
        self._pieces_width = -1
        self._ready = False  # entries read from the screen at least once

    # -- what to show ----------------------------------------------------
    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)  # in the first frame, not after it

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is not self.screen:
            return
        self._ready = True
        app = self.app
        active = screen.active_bindings
        entries: list[KeyEntry] = []
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                entries.append(
                    KeyEntry(
                        binding.key, app.get_key_display(binding), binding.description, enabled
                    )
                )
        palette = None
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = KeyEntry(
                binding.key, app.get_key_display(binding), binding.description, enabled
            )
        self.show_entries(entries, palette)

    def show_entries(self, entries: Sequence[KeyEntry], palette: KeyEntry | None) -> None:
        """Show these entries; a redraw only if they changed."""
        entries = tuple(entries)
        if (entries, palette) != (self.entries, self.palette):
            self.entries, self.palette = entries, palette
            self._pieces_width = -1
            self.refresh()

    def pieces(self) -> list[Piece]:
        """The line as laid out for the current width."""
        if not self._ready and self.is_attached:
            self._bindings_changed(self.screen)  # drawn before on_mount: in the first frame
        width = self.line_width
        if width != self._pieces_width:
            self._pieces = layout_keys(self.entries, self.palette, width)
            self._pieces_width = width
        return self._pieces

    @property
    def text(self) -> str:
        """The line's characters (tests, and the tmux screen tests' counterpart)."""
        return "".join(p.text for p in self.pieces())

    # -- drawing ---------------------------------------------------------
    def _style(self, piece: Piece) -> Style:
        if piece.part == "base":  # blank cells: the bar's background, as Textual draws them
            style = self._part_styles.get("")
            if style is None:
                style = self._part_styles[""] = Style(bgcolor=self.rich_style.bgcolor)
        else:
            style = self.part_style(f"keybar--{piece.part}")
        if piece.entry < 0:
            return style
        entry = self.palette if piece.entry == len(self.entries) else self.entries[piece.entry]
        if piece.entry == self.hover:
            hover = self.part_style("keybar--hover")
            style += Style(bgcolor=hover.bgcolor)
        if entry is not None and not entry.enabled:
            style += Style(dim=True)
        return style

    def render_line(self, y: int) -> Strip:
        width = self.line_width
        if y != 0:
            return Strip.blank(width)
        segments = [Segment(p.text, self._style(p)) for p in self.pieces()]
        return Strip(segments).crop_extend(0, width, self._style(Piece("", "base", -1)))

    # -- mouse -----------------------------------------------------------
    def entry_at(self, x: int) -> KeyEntry | None:
        """The entry drawn at cell ``x`` (None: a blank or the palette mark)."""
        index = self._index_at(x)
        if index < 0:
            return None
        return self.palette if index == len(self.entries) else self.entries[index]

    def _index_at(self, x: int) -> int:
        at = 0
        for piece in self.pieces():
            at += cell_len(piece.text)
            if x < at:
                return piece.entry
        return -1

    def on_mouse_down(self, event: events.MouseDown) -> None:
        entry = self.entry_at(event.x)
        if entry is None:
            return
        event.stop()
        if entry.enabled:
            self.app.simulate_key(entry.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._index_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(-1)

    def _set_hover(self, index: int) -> None:
        if index != self.hover:
            self.hover = index
            self.refresh()
