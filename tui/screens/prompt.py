"""A one-line input dialog: the add-probe and record dialogs.

``PromptScreen(title, hint, placeholder, value)`` dismisses with the typed
text on Enter (stripped; empty counts as cancel) or ``None`` on Escape;
``record_prompt()`` and ``add_probe_prompt()`` are the dashboard's two; the
add-probe one lists the typed command's options (its spec) under the line.
"""

from __future__ import annotations

from collections.abc import Callable

from probetop.tui.cli import command_help
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class PromptScreen(ModalScreen[str | None]):
    """See the module docstring."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        hint: str,
        placeholder: str = "",
        value: str = "",
        help_for: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.hint = hint
        self.placeholder = placeholder
        self.value = value
        self.help_for = help_for  # text typed so far -> hint (None: the default hint)

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.title_text, id="prompt-title")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static(self.hint, id="prompt-hint", markup=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.help_for is not None:
            hint = self.help_for(event.value) or self.hint
            self.query_one("#prompt-hint", Static).update(hint)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(text or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def record_prompt() -> PromptScreen:
    """Asks for the file to record the session to."""
    return PromptScreen(
        "Record this session to a file",
        "JSON Lines, mode 0600. Enter to start, escape to cancel.",
        placeholder="session.jsonl",
        value="probetop-session.jsonl",
    )


def add_probe_prompt() -> PromptScreen:
    """Asks for a probe command line, as typed after ``probetop``."""
    return PromptScreen(
        "Add a probe",
        "A probetop command line, as after `probetop`: e.g. "
        "cpu --threads 1  |  http http://127.0.0.1:8080/  |  icmp 127.0.0.1",
        placeholder="cpu --threads 1",
        help_for=command_help,  # the command's options, from its spec, as you type
    )
