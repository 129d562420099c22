"""The question asked when quitting a view attached to a detached session.

``StopSessionScreen(name)`` dismisses with True (stop the session: ``y``),
False (leave it running and detach: ``d``), or None (stay: ``n`` / Escape).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class StopSessionScreen(ModalScreen[bool | None]):
    """See the module docstring."""

    BINDINGS = [
        Binding("y", "answer(True)", "Stop it"),
        Binding("d", "answer(False)", "Detach"),
        Binding("n,escape", "answer(None)", "Stay"),
    ]
    DEFAULT_CSS = """
    StopSessionScreen { align: center middle; }
    StopSessionScreen > Vertical {
        border: heavy $warning; padding: 1 2; width: 64; height: auto;
    }
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.session_name = name

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Stop session {self.session_name}?", markup=False)
            yield Static(
                "y: stop its probes and close its recording\n"
                "d: detach, leaving it running\n"
                "n / Escape: stay",
                markup=False,
            )

    def action_answer(self, answer: bool | None) -> None:
        self.dismiss(answer)
