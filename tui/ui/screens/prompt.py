"""A one-line input dialog: the add-probe and record dialogs.

``PromptScreen(title, hint, placeholder, value)`` dismisses with the typed
text on Enter (stripped; empty counts as cancel) or ``None`` on Escape;
``record_prompt()`` and ``add_probe_prompt()`` are the dashboard's two; the
add-probe one lists the typed command's options (its spec) under the line.

Keys typed in one burst (``r``, C-u, a path and Enter sent by tmux or a
script) land whole and in order:
- the app opens the dialog when ``r`` arrives (tui/ui/app.py), not once it
  has bubbled back from the focused pane, by when the path had gone there;
- ``PromptInput`` runs its own key bindings (C-u, backspace, Enter...) as
  each key comes, in turn with the characters. Textual runs them when the
  key has bubbled up to the app, after every character of the burst had
  been inserted: C-u then erased the path just typed;
- the default value is selected (typing replaces it) by the Input's
  select-on-focus, as before.
"""

from __future__ import annotations

from collections.abc import Callable

from probetop.tui.cli.parser import command_help
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class PromptInput(Input):
    """An Input that runs its bindings in the order its keys come (see the
    module docstring)."""

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, []):
                event.stop()
                event.prevent_default()
                await self.run_action(binding.action)
                return
        await super()._on_key(event)


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
            yield PromptInput(
                value=self.value,
                placeholder=self.placeholder,
                id="prompt-input",
            )
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
