"""The typed-name confirmation shown before any run that destroys data.

One flow for every command: a probe's settings raise ``ConfirmationRequired``
when a write needs confirming, ``tui.main`` shows this small app before the
dashboard opens, and only the exact target name goes on.
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static


class ConfirmDestroyApp(App[bool]):
    """Type the target's name to confirm a write pass; Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    CSS = """
    #box { border: heavy $error; padding: 1 2; height: auto; margin: 2 4; }
    #warning { color: $error; text-style: bold; }
    """

    def __init__(self, target: str, action: str, signatures: list[str]) -> None:
        super().__init__()
        self.target = target
        self.action = action
        self.signatures = signatures

    def compose(self) -> ComposeResult:
        found = (
            f"It holds: {', '.join(self.signatures)}."
            if self.signatures
            else "No partition table or filesystem signature was found."
        )
        with Vertical(id="box"):
            yield Label(
                f"{self.action}: every block written on {self.target} is DESTROYED.",
                id="warning",
            )
            yield Static(found, markup=False)
            yield Static(f"Type {self.target} and press Enter to go on; Escape cancels.",
                         markup=False)  # fmt: skip
            yield Input(placeholder="type the name here", id="confirm")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.exit(event.value.strip() == self.target)

    def action_cancel(self) -> None:
        self.exit(False)


def ask_destroy_confirmation(target: str, action: str, signatures: list[str]) -> bool:
    """True only if the user typed ``target`` exactly."""
    return bool(ConfirmDestroyApp(target, action, signatures).run())
