"""The probetop dashboard: ``make_app(config)`` builds it, ``run()`` shows it.

The app is the screen: layout, keys, focus, and routing records to panes.
Running probes (hub, recorder, ``--time``, adding a probe from a command
line, signals) is the ``LiveSession``'s job (``tui/run/livesession.py``), the same
object the headless runner uses; replaying a recording or following a
detached session is ``Playback``'s (``tui/ui/replay_view.py``, over the
``ReplayPlayer`` of ``tui/ui/replay_clock.py``).

Contract:
- Live (``config.probes``): the app drains the session's LOSSY feed once per
  frame (``frame_seconds``), never per record, routes each Sample to its
  pane (``add_sample``) and to every other pane that looks (``observe``),
  each Status to its pane, each Announce to a new pane, then calls
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
- Replay (``config.session``): the same panes fed by ``ReplayPlayer`` from the
  records' time stamps; space / s / left / right / home / end.
- Attached (``config.attached``, ``probetop attach``): the same player over
  a detached session's recording, read from its start and followed live;
  seeking back leaves live, end returns to it; d detaches (the session goes
  on), q asks whether to stop the session. Nothing runs probes here.
- No clock, no animation, no per-record refresh: the screen changes only when
  data arrived, so an idle dashboard writes nothing to the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import probetop.themes as themes_package
from probetop.probes.core import stopsignals
from probetop.probes.core.base import Probe, ProbeError
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.sample import Announce, Record, Sample, Status, now_ns
from probetop.probes.record import Recorder, RecordingError
from probetop.themes import DEFAULT_THEME, check_theme_name, probetop_themes
from probetop.tui.run.hardexit import hard_exit
from probetop.tui.run.launch import fail
from probetop.tui.run.livesession import (
    HandledSignals,
    LiveSession,
    add_stop_signal_handlers,
    detach_from_dead_terminal,
    remove_stop_signal_handlers,
    terminal_hung_up,
)
from probetop.tui.run.viewconfig import AppConfig
from probetop.tui.sessions.foreground import DetachedSession, detach_session
from probetop.tui.sessions.jobcontrol import waiter_pid
from probetop.tui.sessions.registry import SessionError
from probetop.tui.ui.quietdriver import QuietLinuxDriver, quiet_driver_class
from probetop.tui.ui.replay_clock import ReplayPlayer
from probetop.tui.ui.replay_view import REPLAY_FRAME_S, Playback
from probetop.tui.ui.screens.help import KEY_ACTIONS, HelpScreen
from probetop.tui.ui.screens.maximised import MaximisedScreen
from probetop.tui.ui.screens.palette import dashboard_commands
from probetop.tui.ui.screens.prompt import add_probe_prompt, record_prompt
from probetop.tui.ui.screens.stop_session import StopSessionScreen
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
from textual.screen import ModalScreen, Screen
from textual.widget import AwaitMount
from textual.widgets import Static

if TYPE_CHECKING:  # replay only: the reader loads with the recording (tui/commands/replay.py)
    from probetop.probes.record import SessionLoader
    from rich.console import Console, ConsoleOptions, RenderResult

CSS_FILE = Path(themes_package.__file__).resolve().parent / "probetop.tcss"
MIN_WIDTH, MIN_HEIGHT = 60, 16
WIDE_COLUMNS = 180  # from this width panes go in two columns at least
CHROME_ROWS = 2  # the status line and the footer
HANGUP_EXIT_S = 3.0  # after a SIGHUP, exit this long after the recording is closed
TERMINAL_CHECK_S = 1.0  # how often the dashboard looks whether its terminal is gone
NOTIFY_S = {"error": 8.0, "warning": 10.0}


def frame_seconds(interval_s: float) -> float:
    """Frame period: the sampling interval, kept within 0.2..1 s.

    Redrawing faster than data arrives only costs CPU and terminal bytes.
    """
    return max(0.2, min(1.0, interval_s))


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
        # Priority: a dialog's key must open it when the key arrives, not when
        # it has bubbled back from the focused pane: by then the rest of a
        # burst ("r/tmp/x.jsonl<Enter>" typed by tmux) had gone to the pane
        # and was lost, and the Enter recorded to the default path.
        # check_action lets them fall through while a dialog is open.
        Binding("a", "add_probe", "Add probe", priority=True),
        Binding("r", "toggle_record", "Record", priority=True),
        Binding("d", "detach", "Detach"),
        Binding("i", "toggle_hidden", "Idle devs"),
        Binding("space", "play_pause", "Play/pause"),
        Binding("s", "cycle_speed", "Speed"),
        Binding("1", "speed(1)", "1x", show=False),
        Binding("2", "speed(10)", "10x", show=False),
        Binding("3", "speed(0)", "max", show=False),
        # Priority: the scrolling pane container binds these keys too and would
        # eat them first; in live mode check_action disables these, so the keys
        # fall through to scrolling again.
        Binding("left", "seek(-10)", "-10s", show=False, priority=True),
        Binding("right", "seek(10)", "+10s", show=False, priority=True),
        Binding("home", "seek_to(0)", "Start", show=False, priority=True),
        Binding("end", "seek_to(-1)", "End", show=False, priority=True),
        # Arrows move the selection: in the grid, to the pane above, below or
        # beside; in the compact list, up and down its ▸ cursor. Priority:
        # the scrolling pane container binds them too (left / right seek in
        # a replay: those bindings come first).
        Binding("up", "move(-1, 0)", "Up", show=False, priority=True),
        Binding("down", "move(1, 0)", "Down", show=False, priority=True),
        Binding("left", "move(0, -1)", "Left", show=False, priority=True),
        Binding("right", "move(0, 1)", "Right", show=False, priority=True),
    ]

    LIVE_ONLY = {"add_probe", "toggle_record"}
    DASHBOARD_ONLY = {"add_probe", "toggle_record"}  # priority keys: none while a modal is up
    REPLAY_ONLY = {"play_pause", "cycle_speed", "speed", "seek", "seek_to"}

    def get_driver_class(self) -> type[Driver]:
        # An input thread that sleeps until a key comes (tui/ui/quietdriver.py).
        return quiet_driver_class(super().get_driver_class())

    def __init__(self, config: AppConfig) -> None:
        super().__init__()
        self.config = config
        for theme in probetop_themes():
            self.register_theme(theme)
        self.theme = check_theme_name(config.theme) if config.theme else DEFAULT_THEME
        self.panes: dict[str, ProbePane] = {}
        self.session: LiveSession | None = None
        # Set when d detached this live dashboard: the session goes on after it.
        self.detached: DetachedSession | None = None
        self._detaching = False
        self.feed: Subscription | None = None
        # Replay and attached views (tui/ui/replay_view.py); None when live.
        self.playback: Playback | None = None
        self.display_paused = False
        self.show_hidden = False
        self.too_small = False
        self._dirty: set[str] = set()
        self._chart_dirty: set[str] = set()  # got samples since the maximised view was drawn
        self._shutting_down = False
        self._stopped_at_ns: int | None = None  # when Ctrl-Z / SIGTSTP stopped the job
        # A replay's or an attached dashboard's own handlers (a live one's
        # are its LiveSession's).
        self._signals: HandledSignals = []
        self._started = False  # panes announced after this are focused (added at runtime)
        self._first_mounts: list[AwaitMount] = []  # the first panes' mounts (see _start_live)
        self._status_text = ""
        # The terminal's width as the last Resize said (0: not known yet, use
        # self.size). Why not self.size alone: inside on_resize it can still be
        # the old size, and a status line fitted to it stayed too wide until
        # the next frame redrew it.
        self._width = 0
        self.status_bar = TextBlock([""], id="status-bar")
        self.index = PaneIndex([""], id="pane-index")
        self.pane_box = VerticalScroll(id="panes")
        self.layout = PaneLayout(self.pane_box, self.index, CHROME_ROWS, WIDE_COLUMNS)
        self.too_small_msg = Static("", id="too-small")
        self.footer = KeyBar(id="footer")  # one widget, not one per binding (start-up)

    @property
    def replay(self) -> bool:
        """Records come from a recording (replay, or attached to a session)."""
        return self.config.session is not None or self.config.attached is not None

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
        self._check_size()
        if os.isatty(1):
            self.set_interval(TERMINAL_CHECK_S, self._check_terminal)
        if self.config.attached is not None or self.replay:
            self._signals = add_stop_signal_handlers(self._on_signal)
            if (early := stopsignals.pending()) is not None:  # sent during start-up
                self._on_signal(early)
        if self.config.attached is not None:
            await self._start_attached()
        elif self.replay:
            self._start_replay()
        else:
            await self._start_live()
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
        if action in self.LIVE_ONLY and self.replay:
            return False
        if action in self.DASHBOARD_ONLY and isinstance(self.screen, ModalScreen):
            return False  # a dialog, help or the palette is up: the key is typed there
        if action == "detach" and self.config.session is not None:
            return False  # a replay has nothing running to leave behind
        return not (action in self.REPLAY_ONLY and not self.replay)

    # -- live ----------------------------------------------------------
    async def _start_live(self) -> None:
        self.session = LiveSession(
            self.config.probes,
            record=self.config.record,
            command=self.config.command or ["probetop"],
            notify=self._notify,
            on_change=self._update_status,
            footer_fields=self.config.footer_fields,
            metrics=self.config.metrics,
            # d detaches this dashboard: every record since the start is kept.
            keep_history=self.config.foreground is not None,
        )
        self.feed = await self.session.start()
        self.session.install_signal_handlers(self._on_signal)
        if (early := stopsignals.pending()) is not None:  # sent during start-up
            self._on_signal(early)
        self.set_interval(frame_seconds(self.config.interval_s), self._live_frame)
        if self.config.duration_s is not None:
            self.set_timer(self.config.duration_s, self._time_up)
        self._live_frame()  # announces: create the panes now, not a frame later
        # Mounted before on_mount returns: the first frame drawn holds the panes
        # (was one frame of status line and blank panes area, then a second full frame).
        mounts, self._first_mounts = self._first_mounts, []
        for mount in mounts:
            await mount
        self.relayout()  # their grid, in that same frame
        self._started = True
        if self.config.joining is not None:
            self._join_later(self.config.joining)

    def _join_later(self, joining: Callable[[], tuple[list[Probe], list[str]]]) -> None:
        """Run ``joining`` (AppConfig) in a daemon thread and add what it
        gives once the first frame is out. Not the loop's executor: a JIT
        warm-up cannot be interrupted, and asyncio.run would wait for it at
        exit."""
        loop = asyncio.get_running_loop()

        def deliver(outcome: tuple[list[Probe], list[str]] | ProbeError) -> None:
            if isinstance(outcome, ProbeError):
                self._notify(str(outcome), title="probes not started", severity="error")
                return
            probes, notes = outcome
            for note in notes:
                self._notify(note, title="skipped")
            if self.session is not None:
                self.session.add_probes(probes)

        def work() -> None:
            outcome: tuple[list[Probe], list[str]] | ProbeError
            try:
                outcome = joining()
            except ProbeError as exc:
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the loop closed: we quit meanwhile
                loop.call_soon_threadsafe(deliver, outcome)

        threading.Thread(target=work, name="probes-joining", daemon=True).start()

    def _notify(self, message: str, *, title: str = "", severity: str = "information") -> None:
        timeout = NOTIFY_S.get(severity)
        if timeout is None:
            self.notify(message, title=title, severity=severity)  # type: ignore[arg-type]
        else:
            self.notify(message, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]

    def _on_signal(self, signame: str) -> None:
        if signame == "SIGHUP" and terminal_hung_up():
            detach_from_dead_terminal()
        self.run_worker(self.shutdown(f"interrupted ({signame})"), exclusive=False)

    def _on_job_stop(self, whole_process: bool) -> None:
        """Before the job stops (signal handler, event-loop thread): when this
        process itself stops, its probes stop measuring; say so in the
        recording rather than leave a silent gap."""
        self._stopped_at_ns = now_ns()
        if whole_process and self.hub is not None:
            for probe_id in self.hub.running():
                message = "paused: the dashboard was suspended (Ctrl-Z / SIGTSTP)"
                self.hub.publish(Status(probe_id, self._stopped_at_ns, "warning", message))

    def _on_suspend_refused(self) -> None:
        self.notify(
            "not suspended: no shell with job control started this dashboard"
            " (a tmux pane's command, setsid, script -c), so nothing could resume it",
            severity="warning",
        )

    def _on_view_resumed(self) -> None:
        """The view is back (fg / SIGCONT): redraw all of it."""
        stopped_at, self._stopped_at_ns = self._stopped_at_ns, None
        if stopped_at is not None and self.hub is not None and not _has_waiter():
            away_s = (now_ns() - stopped_at) / 1e9
            for probe_id in self.hub.running():
                message = f"resumed after {away_s:.1f} s suspended"
                self.hub.publish(Status(probe_id, now_ns(), "info", message))
        if self.config.session is not None and self.playback is not None:
            # A replay goes on from where it was shown, not from where the
            # wall clock went while the job was stopped.
            self.playback.player.start_clock(time.monotonic())
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
            self._on_signal("SIGHUP")

    def _screens_gone(self) -> bool:
        """True once Textual has removed the last screen: the frame timers can
        still tick then (CI: ScreenStackError), and there is nothing to draw."""
        return not self.screen_stack

    def _live_frame(self) -> None:
        if self.feed is None or self._screens_gone():
            return
        self.route(self.feed.drain())
        if self.feed.dropped:
            self._update_status()

    async def _time_up(self) -> None:
        if self.session is not None and await self.session.time_up():
            self._live_frame()
            self.notify(f"probes stopped after {self.config.duration_s:g} s (--time)")

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
        if render and not self.display_paused:
            self.render_dirty()

    def render_dirty(self) -> None:
        """Render panes that got data; while another screen covers them, only
        the maximised view is updated and the panes stay dirty until it closes
        (updating hidden widgets made Textual repaint the whole top screen).
        Does nothing once the app is closing (``_screens_gone``)."""
        if self._screens_gone():
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
        focus_kind = self.config.focus
        # A family's kinds share its focus: "http" also focuses "http.load".
        if focus_kind and (pane.kind == focus_kind or pane.kind.startswith(focus_kind + ".")):
            mount = self.pane_box.mount(pane, before=0 if self.pane_box.children else None)
            self.call_after_refresh(pane.focus)
        else:
            mount = self.pane_box.mount(pane)
            if (len(self.panes) == 1 and not focus_kind) or self._started:
                # The first pane, or one added at runtime: show it.
                self.call_after_refresh(pane.focus)
        if self._started:
            self.layout.select(pane.probe_id)  # compact mode: show the new pane
        elif self.session is not None:
            self._first_mounts.append(mount)

    # -- recording -----------------------------------------------------
    async def _start_recording(self, path: Path) -> bool:
        return self.session is not None and await self.session.start_recording(path)

    async def _stop_recording(self, reason: str) -> None:
        if self.session is not None:
            await self.session.stop_recording(reason)

    def action_toggle_record(self) -> None:
        if self.session is None:
            return
        if self.recorder is not None:
            self.run_worker(self._stop_recording("stopped by user"))
            return

        async def answered(path: str | None) -> None:
            if path:
                await self._start_recording(Path(path).expanduser())

        self.push_screen(record_prompt(), answered)

    # -- add / stop probes -----------------------------------------------
    def action_add_probe(self) -> None:
        if self.session is None:
            return
        self.push_screen(add_probe_prompt(), self._add_probe_answered)

    def _add_probe_answered(self, line: str | None) -> None:
        self.add_probe_line(line)

    def add_probe_line(self, line: str | None) -> bool:
        """Parse a command line, build its probes and add them. False on any error."""
        if self.session is None or not self.session.add_probe_line(line):
            return False
        self._live_frame()
        return True

    async def stop_probe(self, probe_id: str) -> None:
        if self.session is not None:
            await self.session.stop_probe(probe_id)

    # -- replay and attached (tui/ui/replay_view.py) -------------------------
    def _start_replay(self) -> None:
        """Replay ``config.session``; when ``config.extra["loader"]`` (a
        ``SessionLoader``) has not read all of it yet, the rest is read after
        the first frame."""
        session = self.config.session
        assert session is not None
        self.playback = Playback(self, ReplayPlayer(session.records(), session.duration_s))
        loader: SessionLoader | None = self.config.extra.get("loader")
        if self.playback.start_replay(session, loader):
            assert loader is not None
            reader = self.playback.read_rest(loader)
            self.call_after_refresh(lambda: self.run_worker(reader))
        self.set_interval(REPLAY_FRAME_S, self._replay_frame)
        self._replay_frame()

    def _replay_frame(self) -> None:
        if self.playback is not None and not self._screens_gone():
            self.playback.replay_frame()

    async def _start_attached(self) -> None:
        self.playback = Playback(self, ReplayPlayer([]))
        await self.playback.start_attached()
        self.set_interval(REPLAY_FRAME_S, self._attached_frame)

    async def _attached_frame(self) -> None:
        if self.playback is not None and not self._screens_gone():
            await self.playback.attached_frame()

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

    async def action_detach(self) -> None:
        """Attached: leave the session running and close this view. Live:
        turn this run into a background session (tui.sessions.foreground)
        and give the terminal back; the probes never stop."""
        if self.config.attached is not None:
            self.exit(0, return_code=0)
            return
        if self.session is None or self._shutting_down or self._detaching:
            return
        link = self.config.foreground
        if link is None:
            why = self.config.foreground_unavailable or "not available here"
            self.notify(f"cannot detach: {why}", title="detach", severity="warning")
            return
        self._detaching = True  # a second d while this one awaits does nothing
        try:
            self.detached = await detach_session(
                self.session,
                link,
                command=self.config.command or ["probetop"],
                command_name=self.config.command_name,
                name=self.config.name,
            )
        except (SessionError, RecordingError) as exc:
            self._detaching = False
            self.notify(str(exc), title="not detached", severity="error", timeout=10)
            return
        if self.feed is not None:  # nobody draws any more
            self.session.hub.unsubscribe(self.feed)
            self.feed = None
        self.exit(0, return_code=0)

    def _quit_answered(self, answer: bool | None) -> None:
        if answer is None:
            return
        if answer is False:  # d at the question: leave the session running
            self.exit(0, return_code=0)
            return
        self.run_worker(self._stop_attached(), exclusive=True)

    async def _stop_attached(self) -> None:
        attached = self.config.attached
        assert attached is not None
        self.notify(f"stopping {attached.name}...")
        try:
            await asyncio.to_thread(attached.stop)
        except SessionError as exc:
            self.notify(str(exc), title="not stopped", severity="error", timeout=10)
            return
        self.exit(0, return_code=0)

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

    def action_play_pause(self) -> None:
        if self.playback is not None:
            self.playback.play_pause()

    def action_speed(self, speed: float) -> None:
        """Set the replay speed; 0 means as fast as the display keeps up ("max")."""
        if self.playback is not None:
            self.playback.set_speed(speed)

    def action_cycle_speed(self) -> None:
        if self.playback is not None:
            self.playback.cycle_speed()

    async def action_seek(self, delta: float) -> None:
        if self.playback is not None:
            await self.playback.seek(self.playback.player.position_s + float(delta))

    async def action_seek_to(self, where: float) -> None:
        if self.playback is not None:
            player = self.playback.player
            await self.playback.seek(player.duration_s if float(where) < 0 else float(where))

    async def _seek(self, t: float) -> None:
        if self.playback is not None:
            await self.playback.seek(t)

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
        if self.playback is not None:
            parts += self.playback.status_parts()
        elif self.session is not None:
            parts.append((5, "probes stopped" if self.session.probes_stopped else "live"))
            if self.recorder is not None:
                path = self.recorder.path
                parts.append((4, f"REC {path}", f"REC {path.name}"))
            if self.session.recording_failures:
                parts.append((6, "RECORDING FAILED: write error (see notification)"))
            if self.feed is not None and self.feed.dropped:
                parts.append((3, f"{self.feed.dropped} records dropped by a slow display"))
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

    # -- shutdown ------------------------------------------------------
    async def shutdown(self, reason: str = "completed") -> None:
        """Stop probes, close the recording, then exit. Safe to call twice."""
        if self._shutting_down:
            return
        self._shutting_down = True
        if self.session is not None:
            await self.session.shutdown(reason)
        if "SIGHUP" in reason:
            # Data is safe now (probes joined, footer written). Textual's own
            # exit can block writing to a hung-up terminal; never hang around.
            watchdog = threading.Timer(HANGUP_EXIT_S, hard_exit, args=(0,))
            watchdog.daemon = True
            watchdog.start()
        failed = self.session is not None and self.session.failed
        self.exit(1 if failed else 0, return_code=1 if failed else 0)

    async def action_quit(self) -> None:
        if self._detaching:
            return  # d is turning this run into a session: it must not stop now
        attached = self.config.attached
        if attached is not None and attached.state in ("starting", "running"):
            if not isinstance(self.screen, StopSessionScreen):
                self.push_screen(StopSessionScreen(attached.name), self._quit_answered)
            return
        await self.shutdown("completed")

    async def on_unmount(self) -> None:
        # Reached also when the app exits another way (an exception): never
        # leave probe threads running or a recording without its footer.
        if self.session is not None and self.detached is None:
            await self.session.shutdown("completed" if self._shutting_down else "aborted")
            self.session.remove_signal_handlers()
        remove_stop_signal_handlers(self._signals)
        if self.config.attached is not None:
            self.config.attached.close()


def _has_waiter() -> bool:
    return waiter_pid() is not None


def make_app(config: AppConfig) -> ProbetopApp:
    """The dashboard for ``config``. Raises UnknownThemeError for a bad theme."""
    return ProbetopApp(config)
