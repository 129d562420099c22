"""The footer line (tui/ui/widgets/keybar.py) and rows redrawn at a new width
(issue 15: first frame, the compact-list bug), checked in a real terminal
(tmux) where what matters is what the terminal shows."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from probetop.tui.ui.screens.help import HelpScreen
from probetop.tui.ui.widgets.keybar import KeyBar, KeyEntry, layout_keys
from probetop.tui.ui.widgets.sparkrow import SparkRow
from rich.cells import cell_len
from textual.geometry import Size
from tui_fixtures import DEMO_FILE, live_app, replay_app, wait_for

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
EXE = str(Path(sys.executable).parent / "probetop")
LIVE_KEYS = ("Quit", "Help", "Maximise", "Pause", "Add probe", "Record", "Detach", "Idle devs")

ENTRIES = [KeyEntry(k, k, d) for k, d in (("q", "Quit"), ("?", "Help"), ("m", "Maximise"))]
PALETTE = KeyEntry("ctrl+p", "^p", "palette")


def text(pieces: list) -> str:  # type: ignore[type-arg]
    return "".join(p.text for p in pieces)


def test_layout_keys_roomy_then_compact_then_cut_never_drops_a_key() -> None:
    roomy = text(layout_keys(ENTRIES, PALETTE, 60))
    assert roomy.startswith(" q Quit  ? Help  m Maximise ") and roomy.endswith("▏^p palette ")
    assert len(roomy) == 60
    assert len(text(layout_keys(ENTRIES, PALETTE, 40))) == 40  # roomy: just fits
    compact = text(layout_keys(ENTRIES, PALETTE, 39))
    assert compact.startswith("q Quit ? Help m Maximise") and compact.endswith(" ▏^p palette")
    assert len(compact) == 39
    key_only = text(layout_keys(ENTRIES, PALETTE, 28))
    assert key_only == "q Quit ? Help m Maximise ▏^p"
    cut = text(layout_keys(ENTRIES, PALETTE, 22))
    assert len(cut) == 22 and "…" in cut and cut.endswith(" ▏^p")
    for key in ("q", "?", "m"):  # every key still there
        assert f"{key} " in cut or cut.startswith(key)
    assert text(layout_keys([], None, 10)) == " " * 10


async def test_keybar_follows_bindings_and_a_click_presses_the_key() -> None:
    app = replay_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar)
        # Replay: no add-probe / record (check_action hides them), play keys shown.
        assert "Play/pause" in bar.text and "Add probe" not in bar.text
        x = bar.text.index("? Help")
        await pilot.hover(KeyBar, offset=(x + 1, 0))
        await pilot.pause()
        assert bar.hover == 1  # the entry under the mouse: highlighted
        hovered = bar.render_line(0)
        bar._set_hover(-1)
        assert hovered.text == bar.render_line(0).text and hovered != bar.render_line(0)
        await pilot.click(KeyBar, offset=(x + 1, 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_sparkrow_drawn_for_one_width_is_never_drawn_at_another() -> None:
    """The root cause of the rows above: a SparkRow's cells, drawn for one
    width, were reused at another until its Resize event came (Textual
    paints a new layout before that). Asked before that event, the row must
    already be exactly as wide as the widget now is, and its latest cells."""
    app = live_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        row = SparkRow("cpu", "cpu")
        await app.mount(row, before=app.footer)
        row.set("busy 42 %", [float(v % 7) for v in range(200)])
        await pilot.pause()
        wide = row.render_line(0)
        assert sum(cell_len(s.text) for s in wide) == row.line_width == 120
        row._size_updated(Size(70, 1), Size(70, 1), Size(120, 30))  # the layout, first
        narrow = row.render_line(0)
        assert sum(cell_len(s.text) for s in narrow) == narrow.cell_length == 70
        assert narrow.text == row._draw(70)[1] + row._draw(70)[2]


async def _footer_row(footer: type, size: tuple[int, int], theme: str) -> list[tuple[str, str]]:
    """The bottom screen row, cell by cell (character, style), of a replay
    whose footer is ``footer``."""
    app = replay_app()
    if footer is not KeyBar:
        compose = type(app).compose

        def with_footer(self):  # type: ignore[no-untyped-def]
            for widget in compose(self):
                yield footer() if isinstance(widget, KeyBar) else widget

        app.compose = with_footer.__get__(app)  # type: ignore[method-assign]
    async with app.run_test(size=size) as pilot:
        app.theme = theme
        await pilot.pause()
        app.set_focus(None)
        await pilot.pause(0.2)

        def bottom_row() -> str:
            return "".join(seg.text for seg in app.screen._compositor.render_strips()[-1])

        # Textual's Footer composes its keys after a refresh that follows the
        # bindings signal: on a loaded machine the row was still blank after
        # the pause above. Both footers show the first key and the palette.
        drawn = await wait_for(pilot, lambda: all(k in bottom_row() for k in ("q Quit", "palette")))
        assert drawn, f"{footer.__name__} never drew its keys: {bottom_row()!r}"
        row = app.screen._compositor.render_strips()[-1]
        return [(ch, str(seg.style)) for seg in row for ch in seg.text]


@pytest.mark.parametrize(
    ("size", "theme"), [((120, 40), "probetop-dark"), ((100, 30), "probetop-light")]
)
async def test_keybar_draws_what_textuals_footer_drew(size: tuple[int, int], theme: str) -> None:
    """Same characters in the same styles where Textual's footer fitted."""
    from textual.widgets import Footer

    assert await _footer_row(KeyBar, size, theme) == await _footer_row(Footer, size, theme)


@contextmanager
def tmux_session(
    command: list[str], width: int, height: int, size_env: tuple[str, ...] = ()
) -> Iterator:  # type: ignore[type-arg]
    """``command`` in a private tmux server's WIDTHxHEIGHT window; ``size_env``
    (``COLUMNS=..``, ``LINES=..``) in its environment, else neither."""
    server = f"probetop-test-{os.getpid()}"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True).stdout

    run = shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *size_env, *command])
    tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), run)
    try:
        yield tmux
    finally:
        tmux("send-keys", "-t", "t", "q")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and tmux("list-sessions"):
            time.sleep(0.05)
        tmux("kill-server")


def wait_screen(tmux, needle: str | tuple[str, ...], timeout: float = 60.0) -> str:  # type: ignore[no-untyped-def]
    """The screen once it shows ``needle`` (any one of a tuple of them)."""
    needles = (needle,) if isinstance(needle, str) else needle
    deadline = time.monotonic() + timeout
    while True:
        screen: str = tmux("capture-pane", "-p", "-t", "t")
        if any(n in screen for n in needles):
            return screen
        assert time.monotonic() < deadline, f"{needle!r} never shown:\n{screen}"
        time.sleep(0.05)


@needs_tmux
def test_every_binding_in_the_footer_at_80x24() -> None:
    with tmux_session([EXE], 80, 24) as tmux:
        screen = wait_screen(tmux, "system.net")
        footer = screen.splitlines()[-1]
        assert all(key in footer for key in LIVE_KEYS), footer
        assert footer.rstrip().endswith("▏^p"), footer
        assert "…" not in footer, footer


@needs_tmux
def test_the_live_cpu_footer_fits_80x24_without_a_cut_label() -> None:
    """With the cpu pane's own key too (e), the labels were cut to fit
    ("e What … m Maxim… a Add p…"); now short words, every one whole."""
    with tmux_session([EXE, "cpu", "--threads", "1", "--time", "60"], 80, 24) as tmux:
        screen = wait_screen(tmux, "Event?")
        footer = screen.splitlines()[-1]
        assert "…" not in footer, footer
        for label in ("e Event?", "q Quit", "? Help", "m Max", "a Add", "r Rec", "i Idle"):
            assert label in footer, footer


@needs_tmux
def test_rows_redrawn_at_a_new_width_keep_their_length() -> None:
    """A paused replay (nothing redraws on its own) in the compact list at
    80x24; the cpu pane is shown (its sparkline rows drawn at that width)
    and hidden again, then the terminal grows to a two-column grid. Its rows
    kept the cells drawn for the old width and drew them at the new one
    (when the paint came before their Resize event: twice, two chances): a
    row one cell short, and Textual laid the rest of the screen row after
    it (the border one cell left, an old border cell left at the edge)."""
    with tmux_session([EXE, "replay", str(DEMO_FILE)], 80, 24) as tmux:
        wait_screen(tmux, "00:03 /")  # three seconds of data in every pane
        tmux("send-keys", "-t", "t", "space")
        wait_screen(tmux, "paused")
        for width in (130, 150):
            for _ in range(10):  # Tab: the next pane below the list, until cpu's
                tmux("send-keys", "-t", "t", "Tab")
                time.sleep(0.15)
                if "┏━ cpu ━" in tmux("capture-pane", "-p", "-t", "t"):  # focused: heavy
                    break
            tmux("send-keys", "-t", "t", "Tab")  # cpu's rows drawn at 80 cells: now hidden
            wait_screen(tmux, "┏━ iops")
            tmux("resize-window", "-t", "t", "-x", str(width), "-y", "40")
            deadline = time.monotonic() + 30
            while "compact" in (screen := tmux("capture-pane", "-p", "-t", "t")):
                assert time.monotonic() < deadline, f"no grid at {width}x40:\n{screen}"
                time.sleep(0.05)
            time.sleep(0.5)  # every frame of the new layout written
            lines = tmux("capture-pane", "-p", "-t", "t").splitlines()
            rows = [line for line in lines[1:-1] if line.strip()]
            assert len(rows) > 20, lines  # the demo's eight panes, two columns
            for line in rows:
                # The right column ends at the terminal's edge: a border there,
                # and a pane's own padding cell (blank) before a side border.
                assert len(line) == width and line[-1] in "│╮╯┃┓┛", line
                if line[-1] in "│┃":
                    assert line[-2] == " ", line
            tmux("resize-window", "-t", "t", "-x", "80", "-y", "24")
            wait_screen(tmux, "compact")


@needs_tmux
def test_columns_and_lines_in_the_environment_do_not_freeze_the_size() -> None:
    """A shell that exports COLUMNS/LINES: Textual took the size from them
    (shutil.get_terminal_size), so the dashboard kept that size and ignored
    every resize. The driver asks the terminal itself."""
    size_env = ("COLUMNS=100", "LINES=30")
    with tmux_session([EXE, "--interval", "0.5"], 120, 40, size_env) as tmux:
        screen = wait_screen(tmux, "system.cpu")
        border = next(line for line in screen.splitlines() if "system.cpu" in line)
        deadline = time.monotonic() + 30
        while not border.rstrip().endswith(("╮", "┓")) or cell_len(border.rstrip()) < 120:
            assert time.monotonic() < deadline, f"not 120 wide:\n{screen}"
            time.sleep(0.1)
            screen = tmux("capture-pane", "-p", "-t", "t")
            border = next(line for line in screen.splitlines() if "system.cpu" in line)
        tmux("resize-window", "-t", "t", "-x", "80", "-y", "24")
        deadline = time.monotonic() + 30
        while True:
            screen = tmux("capture-pane", "-p", "-t", "t")
            rows = screen.splitlines()
            border = next((line for line in rows if "system.cpu" in line), "")
            if cell_len(border.rstrip()) == 80 and border.rstrip().endswith(("╮", "┓")):
                break
            assert time.monotonic() < deadline, f"not redrawn at 80x24:\n{screen}"
            time.sleep(0.1)
