"""The probetop dashboard: ``make_app(config)`` builds it, ``run()`` shows it.

The app is the shell every mode shares: layout, keys, focus, help,
maximise, theme, the job-control hooks, and routing records to panes.
Where the records come from is a mode controller's job (``tui/ui/modes/``),
made from the configuration's type (``tui/run/viewconfig.py``): ``LiveMode``
for a ``LiveView`` (probes run by a ``LiveSession``, ``tui/run/livesession.py``,
the object the headless runner uses), ``ReplayMode`` for a ``ReplayView``,
``AttachMode`` for an ``AttachView`` (both over ``Playback``,
``tui/ui/replay_view.py``). A mode's keys are enabled only in that mode.

Contract:
- ``route`` takes a mode's records (live: the session's LOSSY feed drained
  once per frame, never per record) and gives each Sample to its pane
  (``add_sample``) and to every other pane that looks (``observe``), each
  Status to its pane, each Announce to a new pane, then calls
  ``render_frame`` only on panes that got data.
- Layout (``tui/ui/widgets/panegrid.py``): every pane is visible. A grid of
  exact row heights is planned from the panes' natural heights and the
  terminal size, and re-planned only when one of them changes; when even a
  squeezed grid would not fit, a compact list shows each pane's headline
  and the focused pane below it (tab moves).
- Quit (q, ctrl+c), SIGTERM and SIGHUP all stop the probes, close the
  recording (footer written) and restore the terminal; ``return_code`` is
  0 (or 1 if a probe failed).
- Ctrl-Z / SIGTSTP suspends the view (terminal restored, job stopped),
  ``fg`` / SIGCONT brings it back redrawn; the probes and the recording run
  on meanwhile (``tui/sessions/jobcontrol.py``, ``tui/ui/quietdriver.py``). Where the
  whole process must stop (no waiter), each running probe's recording gets
  a "paused" and a "resumed" status: a gap with its reason.
- Replay (``ReplayView``): the same panes fed by ``ReplayPlayer`` from the
  records' time stamps; space / s / left / right / home / end.
- Attached (``AttachView``, ``probetop attach``): the same player over
  a detached session's recording, read from its start and followed live;
  seeking back leaves live, end returns to it; d detaches (the session goes
  on), q asks whether to stop the session. Nothing runs probes here.
- No clock, no animation, no per-record refresh: the screen changes only when
  data arrived, so an idle dashboard writes nothing to the terminal.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import probetop.themes as themes_package
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.sample import Announce, Record, Sample, SeriesEnded, Status
from probetop.probes.record import RecordingError
from probetop.themes import DEFAULT_THEME, check_theme_name, probetop_themes
from probetop.tui.run.hardexit import hard_exit
from probetop.tui.run.launch import fail
from probetop.tui.run.livesession import LiveSession, detach_from_dead_terminal, terminal_hung_up
from probetop.tui.run.viewconfig import AppConfig
from probetop.tui.sessions.foreground import DetachedSession
from probetop.tui.ui.modes import (
    DETACH_BINDING,
    LIVE_BINDINGS,
    MODE_ACTIONS,
    PLAYER_BINDINGS,
    LiveMode,
    Mode,
    PlayerMode,
    mode_for,
)
from probetop.tui.ui.quietdriver import QuietLinuxDriver, quiet_driver_class
from probetop.tui.ui.replay_clock import ReplayPlayer
from probetop.tui.ui.replay_view import Playback
from probetop.tui.ui.screens.help import KEY_ACTIONS, HelpScreen
from probetop.tui.ui.screens.maximised import MaximisedScreen
from probetop.tui.ui.screens.palette import dashboard_commands
from probetop.tui.ui.widgets.keybar import KeyBar
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.panegrid import GridPlan, PaneIndex, PaneLayout
from probetop.tui.ui.widgets.registry import pane_for
from probetop.tui.ui.widgets.textblock import TextBlock
from rich.cells import cell_len
from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.driver import Driver
from textual.geometry import Size
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widget import AwaitMount
from textual.widgets import Static

if TYPE_CHECKING:
    from probetop.probes.record import Recorder
    from rich.console import Console, ConsoleOptions, RenderResult

CSS_FILE = Path(themes_package.__file__).resolve().parent / "probetop.tcss"
MIN_WIDTH, MIN_HEIGHT = 60, 16
WIDE_COLUMNS = 180  # from this width panes go in two columns at least
CHROME_ROWS = 2  # the status line and the footer
HANGUP_EXIT_S = 3.0  # after a SIGHUP, exit this long after the recording is closed
TERMINAL_CHECK_S = 1.0  # how often the dashboard looks whether its terminal is gone
NOTIFY_S = {"error": 8.0, "warning": 10.0}


class _ErrorLine:
    """``probetop: error: MESSAGE`` on stderr, as main prints a RecordingError,
    once the terminal is restored (an ``App.exit`` message). Written as is:
    rich would crop a line longer than the terminal."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        fail(self.message)
        return ()


STATUS_SEP = "  |  "


def fit_status(parts: Sequence[tuple[int, str] | tuple[int, str, str]], width: int) -> str:
    """The status line's ``(rank, text[, short])`` parts joined in order.

    While the line is wider than ``width``: a part with a ``short`` form
    takes it first (lowest rank first), then the lowest-ranked part is
    dropped (the first of equal ranks first); a part is never cut, unless
    one alone is too wide. The short forms keep what must show: a long
    recording path had the whole "REC ..." part dropped, so at 80 columns a
    recording dashboard did not say it was recording."""
    # (rank, text, short form or None)
    kept = [(p[0], p[1], p[2] if len(p) > 2 else None) for p in parts]

    def line() -> str:
        return STATUS_SEP.join(text for _rank, text, _short in kept)

    while width > 0 and cell_len(line()) > width:
        shortenable = [i for i, (_r, _t, short) in enumerate(kept) if short is not None]
        if shortenable:
            i = min(shortenable, key=lambda i: kept[i][0])
            rank, _text, short = kept[i]
            kept[i] = (rank, str(short), None)
            continue
        if len(kept) <= 1:
            break
        del kept[min(range(len(kept)), key=lambda i: kept[i][0])]
    return line()


class _PanesScreen(Screen):
    """The dashboard's screen. Textual's auto-focus would give the focus to
    the first focusable widget, the panes' box, which styles every pane
    again, then again when the first pane takes it (``_add_pane``): only a
    pane is ever focused at start (~5 ms before the first frame, issue 28)."""

    AUTO_FOCUS = "ProbePane"


class ProbetopApp(App[int]):
    """The dashboard. See the module docstring."""

    CSS_PATH = str(CSS_FILE)
    TITLE = "probetop"
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        # Priority: suspends from a dialog's input too, as in vim's insert mode.
        Binding("ctrl+z", "suspend_process", "Suspend", show=False, priority=True),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("m,enter", "maximise", "Maximise", key_display="m"),
        Binding("p", "pause_display", "Pause"),
        # The modes' keys (tui/ui/modes/), enabled in their mode only
        # (check_action); in this order the footer shows them.
        *LIVE_BINDINGS,
        DETACH_BINDING,
        Binding("i", "toggle_hidden", "Idle devs"),
        *PLAYER_BINDINGS,
        # Arrows move the selection: in the grid, to the pane above, below or
        # beside; in the compact list, up and down its ▸ cursor. Priority:
        # the scrolling pane container binds them too (left / right seek in
        # a replay: those bindings come first).
        Binding("up", "move(-1, 0)", "Up", show=False, priority=True),
        Binding("down", "move(1, 0)", "Down", show=False, priority=True),
        Binding("left", "move(0, -1)", "Left", show=False, priority=True),
        Binding("right", "move(0, 1)", "Right", show=False, priority=True),
    ]

    DASHBOARD_ONLY = {"add_probe", "toggle_record"}  # priority keys: none while a modal is up

    def get_default_screen(self) -> Screen:
        return _PanesScreen(id="_default")

    def get_driver_class(self) -> type[Driver]:
        # An input thread that sleeps until a key comes (tui/ui/quietdriver.py).
        return quiet_driver_class(super().get_driver_class())

    def __init__(self, config: AppConfig) -> None:
        super().__init__()
        self.config = config
        for theme in probetop_themes():
            self.register_theme(theme)
        theme = config.display.theme
        self._first_theme(check_theme_name(theme) if theme else DEFAULT_THEME)
        self.panes: dict[str, ProbePane] = {}
        # Where the records come from, picked by the configuration's type.
        self.mode: Mode = mode_for(self, config)
        self.display_paused = False
        self._stop_signalled = False  # a stop signal is ending the view (QuietLinuxDriver.ending)
        self.show_hidden = False
        self.too_small = False
        self._dirty: set[str] = set()
        self._chart_dirty: set[str] = set()  # got samples since the maximised view was drawn
        self._shutting_down = False
        self._started = False  # the first panes are mounted (end_first_panes)
        # A pane announced after the start takes the focus when the user asked
        # for it (the add-probe prompt), or when it is the first to join: the
        # demo's probes join one family at a time, and each later one must not
        # pull the focus from where it is.
        self._focus_added = False
        self._joined = False
        # The first panes' mounts, while a live mode starts (begin_first_panes).
        self._first_mounts: list[AwaitMount] | None = None
        self._status_text = ""
        # The terminal's width as the last Resize said (0: not known yet, use
        # self.size). Why not self.size alone: inside on_resize it can still be
        # the old size, and a status line fitted to it stayed too wide until
        # the next frame redrew it.
        self._width = 0
        self.status_bar = TextBlock([""], id="status-bar")
        self.index = PaneIndex([""], id="pane-index")
        # Born in the grid layout, as nearly every first plan is: its first
        # apply_plan then changes no class, and no rule is matched again over
        # every pane before the first frame (~5 ms, issue 28).
        self.pane_box = VerticalScroll(id="panes", classes="-grid")
        self.layout = PaneLayout(self.pane_box, self.index, CHROME_ROWS, WIDE_COLUMNS)
        self.too_small_msg = Static("", id="too-small")
        self.footer = KeyBar(id="footer")  # one widget, not one per binding (start-up)

    # What the mode runs (None where it runs none): for main.py and tests.
    @property
    def session(self) -> LiveSession | None:
        return self.mode.session

    @property
    def feed(self) -> Subscription | None:
        return self.mode.feed

    @property
    def detached(self) -> DetachedSession | None:
        """Set when d detached this live dashboard: the session goes on after it."""
        return self.mode.detached

    @property
    def playback(self) -> Playback | None:
        return self.mode.playback

    @property
    def player(self) -> ReplayPlayer | None:
        return self.playback.player if self.playback is not None else None

    @property
    def hub(self) -> Hub | None:
        return self.session.hub if self.session is not None else None

    @property
    def recorder(self) -> Recorder | None:
        return self.session.recorder if self.session is not None else None

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def plan(self) -> GridPlan | None:
        return self.layout.plan

    @property
    def compact(self) -> bool:
        return self.layout.compact

    # -- layout --------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.index
        yield self.pane_box
        yield self.too_small_msg
        yield self.footer

    async def on_mount(self) -> None:
        self.index.display = False
        driver = self._driver
        if isinstance(driver, QuietLinuxDriver):
            driver.on_suspend = self._on_job_stop
            driver.on_resume = self._on_view_resumed
            driver.on_refused = self._on_suspend_refused
            driver.ending = lambda: self._stop_signalled
        self._check_size()
        if os.isatty(1):
            self.set_interval(TERMINAL_CHECK_S, self._check_terminal)
        await self.mode.start()
        self._update_status()
        # Textual drops what it draws while the app mounts (a batched update)
        # and only what changes after it is written: the status line and the
        # panes are, the footer was not (it came a frame later, 20 ms).
        self.footer.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._width = event.size.width
        self._check_size(event.size)
        self.relayout(event.size)
        self._update_status()  # fitted to the width

    def _check_size(self, size: Size | None = None) -> None:
        width, height = size or self.size
        self.pane_box.set_class(width >= WIDE_COLUMNS, "-wide")
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        if small != self.too_small or small:
            self.too_small = small
            self.too_small_msg.update(
                f"Terminal too small: {width}x{height}.\n"
                f"probetop needs at least {MIN_WIDTH}x{MIN_HEIGHT}. Enlarge it, or press q."
            )
            self.too_small_msg.display = small
            self.pane_box.display = not small
            self.status_bar.display = not small
            if small:
                self.index.display = False

    def _first_theme(self, name: str) -> None:
        """The theme the app starts with. Textual's watcher of ``theme`` sets
        the ``-theme-NAME`` class and the ANSI filter, then queues a parse of
        the whole stylesheet again with the theme's variables: before the
        first frame that parse is a second one (~10 ms of CPU, issue 28),
        since the app's start parses it anyway. So where the ANSI filters
        would not change (a theme as dark as Textual's default), the value,
        the class and the stylesheet's variables are set here, before that
        first parse, and nothing is queued. (The ANSI filters depend on the
        theme's ``dark`` and ``ansi`` only.)"""
        chosen, start = self.get_theme(name), self.current_theme
        if chosen is None or (chosen.dark, chosen.ansi) != (start.dark, start.ansi):
            self.theme = name  # the filters change: the watcher's whole work
            return
        self.set_reactive(App.theme, name)
        self.set_class(True, f"-theme-{name}", update=False)
        self.stylesheet.set_variables(self.get_css_variables())

    def relayout(self, size: Size | None = None) -> None:
        """Plan the panes' layout again; it is applied only if it changed."""
        if self.too_small:
            return
        width, height = size or self.size
        focused = self.focused if isinstance(self.focused, ProbePane) else None
        if self.layout.update(width, height, focused):
            self._update_status()

    def ordered_panes(self) -> list[ProbePane]:
        """Panes in screen order (the focused kind first)."""
        return self.layout.panes()

    def _show_in_compact(self, pane: ProbePane | None) -> None:
        if pane is not None:
            self.layout.select(pane.probe_id)
            self.relayout()
            self.call_after_refresh(pane.focus)

    def on_pane_index_selected(self, message: PaneIndex.Selected) -> None:
        panes = self.ordered_panes()
        if 0 <= message.index < len(panes):
            self._show_in_compact(panes[message.index])

    def action_focus_next(self) -> None:
        if self.compact:
            self._show_in_compact(self.layout.step(1))
        else:
            super().action_focus_next()

    def action_focus_previous(self) -> None:
        if self.compact:
            self._show_in_compact(self.layout.step(-1))
        else:
            super().action_focus_previous()

    def action_move(self, rows: int, columns: int) -> None:
        """Select the pane ``rows`` grid rows and ``columns`` places away
        (reading order); nothing at an edge."""
        if self.compact:
            self._show_in_compact(self.layout.step(rows or columns))
            return
        panes = self.ordered_panes()
        if not panes:
            return
        current = self.focused if isinstance(self.focused, ProbePane) else None
        if current is None or current not in panes:
            panes[0].focus()
            return
        width = self.plan.columns if self.plan is not None else 1
        target = panes.index(current) + rows * width + columns
        if 0 <= target < len(panes):
            panes[target].focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "move" and (len(self.screen_stack) > 1 or not self.panes):
            return False  # a dialog, help or a maximised pane: the arrows are theirs
        if action in MODE_ACTIONS and action not in self.mode.ACTIONS:
            return False  # another mode's key (a replay has nothing to record or detach)
        # A dialog, help or the palette is up: the key is typed there.
        return not (action in self.DASHBOARD_ONLY and isinstance(self.screen, ModalScreen))

    # -- start-up (ModeHost) -------------------------------------------
    def begin_first_panes(self) -> None:
        """The panes announced from now on are the first ones: their mounts
        are kept for ``end_first_panes``."""
        self._first_mounts = []

    async def end_first_panes(self) -> None:
        """Mount the first panes before on_mount returns, so the first frame
        drawn holds them (was one frame of status line and blank panes area,
        then a second full frame), in their grid; panes announced after this
        are focused as they come."""
        mounts, self._first_mounts = self._first_mounts or [], None
        for mount in mounts:
            await mount
        self.relayout()
        self._started = True

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Textual's notification, always as plain text (``markup`` is ignored).

        Why: what probetop says names things from outside it (a path, a URL,
        a session directory, a probe's error), and Textual reads a message as
        markup by default (a widget's or screen's ``notify`` asks for it
        explicitly): ``[b]`` in a path vanished, ``[/]`` raised
        ``MarkupError`` and ended the dashboard. No message here is markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def _notify(self, message: str, *, title: str = "", severity: str = "information") -> None:
        timeout = NOTIFY_S.get(severity)
        if timeout is None:
            self.notify(message, title=title, severity=severity)  # type: ignore[arg-type]
        else:
            self.notify(message, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]

    @property
    def stop_signalled_seen(self) -> bool:
        """A stop signal (not q, --time or a probe's end) is ending the view."""
        return self._stop_signalled

    def stop_signalled(self, signame: str) -> None:
        """ModeHost: SIGINT / SIGTERM / SIGHUP: shut down."""
        self._stop_signalled = True
        if signame == "SIGHUP" and terminal_hung_up():
            detach_from_dead_terminal()
        if self._run_had_ended():
            # The run had ended (--time, its probes' own end): the view showed
            # its results, and the signal closes it as q does. It interrupted
            # nothing (was: footer "interrupted", then a report and 128 + N).
            self.run_worker(self.shutdown("completed"), exclusive=False)
            return
        self.run_worker(self.shutdown(f"interrupted ({signame})"), exclusive=False)

    def _run_had_ended(self) -> bool:
        """A live run whose command's probes have all ended (--time, or their
        own end: cpu's deadline, icmp's --count): only the view is left. Not
        before they started: a stop signal while the view came up (a Ctrl-Z
        during start-up, then ``kill %1``) found no probe running and closed
        the run as q, "completed": no report, no recording, exit 0."""
        session = self.session
        if session is None or not session.started:
            return False
        own = [p.id for p in session.probes if not getattr(p, "background", False)]
        running = session.running()
        return session.probes_stopped or (bool(own) and not any(i in running for i in own))

    def _on_job_stop(self, whole_process: bool) -> None:
        """Before the job stops (signal handler, event-loop thread): the mode
        says so where it must (live: in the recording)."""
        self.mode.job_stopping(whole_process)

    def _on_suspend_refused(self) -> None:
        self.notify(
            "not suspended: no shell with job control started this dashboard"
            " (a tmux pane's command, setsid, script -c), so nothing could resume it",
            severity="warning",
        )

    def _on_view_resumed(self) -> None:
        """The view is back (fg / SIGCONT): redraw all of it."""
        self.mode.view_resumed()
        self.refresh(layout=True)
        self.screen.refresh(layout=True)
        self.footer.refresh()
        self._update_status()

    def _check_terminal(self) -> None:
        """A terminal can vanish without a SIGHUP reaching us: the shell
        that owned it dies and forwards nothing (`sh -c 'probetop; ...'` in a
        tmux window that is killed, an SSH drop under a wrapper script). The
        dashboard then ran its probes on, unseen, until someone killed it.
        A terminal found hung up is handled as its SIGHUP would be."""
        if not self._shutting_down and terminal_hung_up():
            self.stop_signalled("SIGHUP")

    def screens_gone(self) -> bool:
        """True once Textual has removed the last screen: the frame timers can
        still tick then (CI: ScreenStackError), and there is nothing to draw."""
        return not self.screen_stack

    # -- routing -------------------------------------------------------
    def route(self, records: Iterable[Record], render: bool = True) -> None:
        """Deliver records to panes (store only), then render panes that got data."""
        for record in records:
            if isinstance(record, Sample):
                for pid, pane in self.panes.items():
                    if pid == record.probe:
                        pane.add_sample(record)
                        self._dirty.add(pid)
                        self._chart_dirty.add(pid)
                    elif type(pane).observe is not ProbePane.observe:
                        pane.observe(record)  # only panes that look at others' samples
                        self._dirty.add(pid)
            elif isinstance(record, Status):
                pane = self.panes.get(record.probe)
                if pane is not None:
                    pane.add_status(record)
                    self._dirty.add(record.probe)
            elif isinstance(record, Announce):
                self._add_pane(record)
            elif isinstance(record, SeriesEnded):
                pane = self.panes.get(record.probe)
                if pane is not None:
                    pane.end_series(record)  # the device is gone: no frozen last value
                    self._dirty.add(record.probe)
                    self._chart_dirty.add(record.probe)
        if render and not self.display_paused:
            self.render_dirty()

    def render_dirty(self) -> None:
        """Render panes that got data; while another screen covers them, only
        the maximised view is updated and the panes stay dirty until it closes
        (updating hidden widgets made Textual repaint the whole top screen).
        Does nothing once the app is closing (``screens_gone``)."""
        if self.screens_gone():
            return
        screen = self.screen
        if isinstance(screen, MaximisedScreen) and screen.pane.probe_id in self._chart_dirty:
            screen.refresh_chart()
        self._chart_dirty.clear()
        if len(self.screen_stack) > 1:
            return
        dirty, self._dirty = self._dirty, set()
        for pid in dirty:
            pane = self.panes.get(pid)
            if pane is not None and pane.is_mounted:
                pane.render_frame()
            elif pane is not None:
                self._dirty.add(pid)  # not mounted yet: render next frame
        if dirty:
            self.relayout()

    def pop_screen(self) -> AwaitComplete:
        done = super().pop_screen()
        self.call_after_refresh(self._render_if_shown)  # catch up after a dialog / maximise
        return done

    def _render_if_shown(self) -> None:
        if not self.display_paused:
            self.render_dirty()

    def _add_pane(self, announce: Announce) -> None:
        if announce.probe in self.panes:
            return
        pane = pane_for(announce.info)
        pane.show_hidden(self.show_hidden)
        self.panes[announce.probe] = pane
        # Samples routed before the mount completes are drawn once it has.
        self.call_after_refresh(self._render_if_shown)
        self.call_after_refresh(self.relayout)
        focus_kind = self.config.display.focus
        # A family's kinds share its focus: "http" also focuses "http.load".
        if focus_kind and (pane.kind == focus_kind or pane.kind.startswith(focus_kind + ".")):
            mount = self.pane_box.mount(pane, before=0 if self.pane_box.children else None)
            show = True
        else:
            mount = self.pane_box.mount(pane)
            # The first pane, or one the user added, or the first to join: show it.
            first = len(self.panes) == 1 and not focus_kind
            show = first or (self._started and (self._focus_added or not self._joined))
        if show:
            self.call_after_refresh(pane.focus)
        if self._started:
            if show:
                self._joined = self._joined or not self._focus_added
                self._focus_added = False
                self.layout.select(pane.probe_id)  # compact mode: show the new pane
        elif self._first_mounts is not None:
            self._first_mounts.append(mount)

    def show_added_panes(self) -> None:
        """ModeHost: the next pane announced was asked for by the user: focus it."""
        self._focus_added = True

    # -- the mode's keys (tui/ui/modes/): enabled in its mode only -----------
    def action_toggle_record(self) -> None:
        if isinstance(self.mode, LiveMode):
            self.mode.toggle_record()

    def action_add_probe(self) -> None:
        if isinstance(self.mode, LiveMode):
            self.mode.add_probe()

    def add_probe_line(self, line: str | None) -> bool:
        """Parse a command line, build its probes and add them. False on any
        error, or where no probes run."""
        return isinstance(self.mode, LiveMode) and self.mode.add_probe_line(line)

    async def stop_probe(self, probe_id: str) -> None:
        if isinstance(self.mode, LiveMode):
            await self.mode.stop_probe(probe_id)

    async def action_detach(self) -> None:
        """Live: turn this run into a background session and give the
        terminal back. Attached: leave the session running, close the view."""
        await self.mode.detach()

    def action_play_pause(self) -> None:
        if isinstance(self.mode, PlayerMode):
            self.mode.play_pause()

    def action_speed(self, speed: float) -> None:
        """Set the replay speed; 0 means as fast as the display keeps up ("max")."""
        if isinstance(self.mode, PlayerMode):
            self.mode.set_speed(speed)

    def action_cycle_speed(self) -> None:
        if isinstance(self.mode, PlayerMode):
            self.mode.cycle_speed()

    async def action_seek(self, delta: float) -> None:
        if isinstance(self.mode, PlayerMode):
            await self.mode.seek_by(float(delta))

    async def action_seek_to(self, where: float) -> None:
        """Seek to ``where`` s from the start; a negative ``where``: the end."""
        if isinstance(self.mode, PlayerMode):
            await self.mode.seek(float(where))

    async def _seek(self, t: float) -> None:
        if self.playback is not None:
            await self.playback.seek(t)

    # -- what modes reach (ModeHost, PlaybackHost) --------------------------
    def refresh_status(self) -> None:
        """PlaybackHost: the status line says where the view stands."""
        self._update_status()

    def say(
        self,
        message: str,
        *,
        title: str = "",
        severity: str = "information",
        timeout: float | None = None,
    ) -> None:
        """PlaybackHost: a notification (errors and warnings stay longer;
        ``timeout`` s when given)."""
        if timeout is None:
            self._notify(message, title=title, severity=severity)
        else:
            self.notify(message, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]

    def fail(self, error: RecordingError) -> None:
        """PlaybackHost: the recording cannot be read; end with its exit status."""
        self.exit(return_code=error.exit_code, message=_ErrorLine(str(error)))

    async def rebuild_panes(self, records: list[Record]) -> None:
        """Drop every pane and feed ``records`` from the start (seek backwards)."""
        if isinstance(self.screen, MaximisedScreen):
            self.screen.dismiss(None)  # it shows a pane that is about to be replaced
        focused = self.focused.probe_id if isinstance(self.focused, ProbePane) else None
        self.panes.clear()
        await self.pane_box.remove_children()  # before new panes reuse their ids
        self._dirty.clear()
        self.layout.reset()
        self.route(records, render=False)

        def refocus() -> None:
            self.render_dirty()
            if focused in self.panes:
                self.panes[focused].focus()

        self.call_after_refresh(refocus)

    # -- display -------------------------------------------------------
    def action_pause_display(self) -> None:
        self.display_paused = not self.display_paused
        if not self.display_paused:
            self.render_dirty()
        self._update_status()

    def on_text_block_resized(self, _message: TextBlock.Resized) -> None:
        """A pane's content grew or shrank between frames (``e`` in a paused
        or ended replay showed nothing: its pane kept the height planned
        before); plan the grid again (applied only if it changed)."""
        self.relayout()

    def action_toggle_hidden(self) -> None:
        """Show / hide idle and virtual devices (NICs, loop devices)."""
        self.show_hidden = not self.show_hidden
        for pane in self.panes.values():
            pane.show_hidden(self.show_hidden)
        self.relayout()
        self._update_status()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        # Asked now, on the dashboard: with the help up, r and a are its letters.
        working = {action for action in KEY_ACTIONS.values() if self.check_action(action, ())}
        self.push_screen(
            HelpScreen(
                (pane.help_text() for pane in self.panes.values()),
                available=working.__contains__,
            )
        )

    def focused_pane(self) -> ProbePane | None:
        if isinstance(self.focused, ProbePane):
            return self.focused
        if self.compact and self.layout.selected in self.panes:
            return self.panes[self.layout.selected]
        return next(iter(self.panes.values()), None)

    def action_maximise(self, probe_id: str | None = None) -> None:
        pane = self.panes.get(probe_id) if probe_id else self.focused_pane()
        if pane is not None and not isinstance(self.screen, MaximisedScreen):
            self.push_screen(MaximisedScreen(pane))

    def _update_status(self) -> None:
        # (rank, text): what the line must say first when it does not fit the
        # width; shown in this order, the lowest ranks dropped first
        # ("DISPLAY PAUSED (p)" was cut to "DISPLAY PAU" at 100 columns).
        parts: list[tuple[int, str] | tuple[int, str, str]] = [(0, "probetop")]
        parts += self.mode.status_parts()
        if self.compact:
            parts.append((1, "compact (tab)"))
        if self.show_hidden:
            parts.append((2, "idle devices shown (i)"))
        if self.display_paused:
            parts.append((6, "DISPLAY PAUSED (p)"))
        text = fit_status(parts, self._width or self.size.width)
        if text != self._status_text:
            self._status_text = text
            self.status_bar.set_lines([text])

    # -- command palette -----------------------------------------------
    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from dashboard_commands(self)

    def mode_commands(self) -> Iterable[SystemCommand]:
        """The palette entries of this mode (tui/ui/modes/)."""
        return self.mode.commands()

    # -- shutdown ------------------------------------------------------
    async def shutdown(self, reason: str = "completed") -> None:
        """Stop probes, close the recording, then exit. Safe to call twice."""
        if self._shutting_down:
            return
        self._shutting_down = True
        failed = await self.mode.shutdown(reason)
        if "SIGHUP" in reason:
            # Data is safe now (probes joined, footer written). Textual's own
            # exit can block writing to a hung-up terminal; never hang around.
            watchdog = threading.Timer(HANGUP_EXIT_S, hard_exit, args=(0,))
            watchdog.daemon = True
            watchdog.start()
        self.exit(1 if failed else 0, return_code=1 if failed else 0)

    async def action_quit(self) -> None:
        if await self.mode.quit():
            return  # the mode took q over (a question is up, a detach under way)
        await self.shutdown("completed")

    async def on_unmount(self) -> None:
        # Reached also when the app exits another way (an exception): never
        # leave probe threads running or a recording without its footer.
        await self.mode.unmount(quitting=self._shutting_down)


def make_app(config: AppConfig) -> ProbetopApp:
    """The dashboard for ``config``. Raises UnknownThemeError for a bad theme."""
    return ProbetopApp(config)
