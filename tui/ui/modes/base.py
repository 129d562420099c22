"""What a mode controller is, and what it may ask of the app shell.

The shell (``tui/ui/app.py``) owns what every mode shares: the pane grid,
keys, focus, help, maximise, theme, the job-control hooks and the routing
of records to panes. A ``Mode`` owns where the records come from and the
keys that only make sense there (``tui/ui/modes/live.py``, ``replay.py``,
``attach.py``). The shell makes exactly one, from the configuration's type.

Contract:
- ``ACTIONS``: the mode-specific actions (``tui.ui.modes.MODE_ACTIONS``) this
  mode serves; the shell disables the others' keys and palette entries.
- ``start()`` once the shell is mounted; ``status_parts()`` for the status
  line; ``commands()`` its command-palette entries.
- ``quit()`` True when the mode took ``q`` over (a question is up, a detach
  under way); ``shutdown(reason)`` stops what runs and says whether it
  failed; ``unmount(quitting)`` leaves nothing behind, however the app ends.
- ``session`` / ``feed`` / ``detached`` (live) and ``playback`` (replay,
  attached) are None in the modes that have none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from probetop.probes.core import stopsignals
from probetop.tui.run.livesession import (
    HandledSignals,
    add_stop_signal_handlers,
    remove_stop_signal_handlers,
)
from textual.binding import Binding

if TYPE_CHECKING:
    from probetop.probes.core.hub import Subscription
    from probetop.probes.core.sample import Record
    from probetop.probes.record import RecordingError
    from probetop.tui.run.livesession import LiveSession
    from probetop.tui.sessions.foreground import DetachedSession
    from probetop.tui.ui.replay_view import Playback
    from textual.app import SystemCommand
    from textual.screen import Screen

# d: live, it detaches this run into a background session; attached, it
# leaves the session running and closes the view.
DETACH_BINDING = Binding("d", "detach", "Detach")


class ModeHost(Protocol):
    """What a mode reaches on the shell (the app), so that no mode imports it."""

    @property
    def shutting_down(self) -> bool: ...
    @property
    def screen(self) -> Screen[Any]: ...

    def route(self, records: Iterable[Record], render: bool = True) -> None: ...
    def render_dirty(self) -> None: ...
    async def rebuild_panes(self, records: list[Record]) -> None: ...
    def refresh_status(self) -> None: ...
    def say(
        self,
        message: str,
        *,
        title: str = "",
        severity: str = "information",
        timeout: float | None = None,
    ) -> None: ...
    def fail(self, error: RecordingError) -> None: ...
    def stop_signalled(self, signame: str) -> None: ...
    def screens_gone(self) -> bool: ...
    def begin_first_panes(self) -> None: ...
    async def end_first_panes(self) -> None: ...
    def show_added_panes(self) -> None: ...
    # Textual's, as the App has them.
    def notify(self, *args: Any, **kwargs: Any) -> Any: ...
    def set_interval(self, *args: Any, **kwargs: Any) -> Any: ...
    def set_timer(self, *args: Any, **kwargs: Any) -> Any: ...
    def call_after_refresh(self, *args: Any, **kwargs: Any) -> Any: ...
    def run_worker(self, *args: Any, **kwargs: Any) -> Any: ...
    def push_screen(self, *args: Any, **kwargs: Any) -> Any: ...
    def exit(self, *args: Any, **kwargs: Any) -> Any: ...


class Mode:
    """A mode controller: see the module docstring. This base does nothing."""

    ACTIONS: ClassVar[frozenset[str]] = frozenset()

    session: LiveSession | None = None
    feed: Subscription | None = None
    detached: DetachedSession | None = None
    playback: Playback | None = None

    def __init__(self, host: ModeHost) -> None:
        self.host = host
        # A replay's or an attached view's own stop-signal handlers (a live
        # one's are its LiveSession's).
        self._signals: HandledSignals = []

    async def start(self) -> None:
        """Begin showing records (the shell is mounted)."""

    def status_parts(self) -> list[tuple[int, str] | tuple[int, str, str]]:
        """(rank, text[, short]) for the status line (``tui.ui.app.fit_status``)."""
        return []

    def commands(self) -> Iterable[SystemCommand]:
        """This mode's entries in the command palette."""
        return ()

    async def detach(self) -> None:
        """``d``."""

    async def quit(self) -> bool:
        """``q``: True when the mode handled it and the shell must not shut down."""
        return False

    async def shutdown(self, reason: str) -> bool:
        """Stop what runs (the app then exits); True when something failed."""
        return False

    async def unmount(self, quitting: bool) -> None:
        """The app is going (``quitting``: by its own shutdown, not an error)."""
        self.remove_signal_handlers()

    def job_stopping(self, whole_process: bool) -> None:
        """Ctrl-Z / SIGTSTP: the view (``whole_process``: the process) stops."""

    def view_resumed(self) -> None:
        """fg / SIGCONT: the view is back."""

    # -- for the modes without a LiveSession -----------------------------
    def install_signal_handlers(self) -> None:
        """SIGINT / SIGTERM / SIGHUP end the view (``host.stop_signalled``);
        one sent during start-up is handled now."""
        self._signals = add_stop_signal_handlers(self.host.stop_signalled)
        if (early := stopsignals.pending()) is not None:
            self.host.stop_signalled(early)

    def remove_signal_handlers(self) -> None:
        remove_stop_signal_handlers(self._signals)
        self._signals = []
