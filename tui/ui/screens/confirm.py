"""The typed-name confirmation shown before any run that destroys data.

One flow for every command: a probe's settings raise ``ConfirmationRequired``
when a write needs confirming, ``tui.main`` shows this small app before the
dashboard opens, and only the exact target name goes on.

At this prompt the keys a terminal user reaches for act as in the
dashboard: Ctrl-C cancels (as Escape: nothing written; Textual's default
said "Press ctrl+q to quit"), Ctrl-Z suspends to the shell and ``fg``
brings the prompt back redrawn (the dashboard's driver and job control,
``tui/ui/quietdriver.py``; Ctrl-Z did nothing here).
"""

from __future__ import annotations

from typing import Any

from probetop.tui.ui.quietdriver import QuietLinuxDriver, quiet_driver_class
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.driver import Driver
from textual.widgets import Input, Label, Static


class ConfirmDestroyApp(App[bool]):
    """Type the target's name to confirm a write pass; Escape cancels."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+c", "cancel", "Cancel", show=False, priority=True),
        Binding("ctrl+z", "suspend_process", "Suspend", show=False, priority=True),
    ]
    CSS = """
    #box { border: heavy $error; padding: 1 2; height: auto; margin: 2 4; }
    #warning { color: $error; text-style: bold; }
    """

    def __init__(self, target: str, action: str, signatures: list[str]) -> None:
        super().__init__()
        self.target = target
        self.action = action
        self.signatures = signatures

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver_class(super().get_driver_class())

    def on_mount(self) -> None:
        if isinstance(self._driver, QuietLinuxDriver):
            self._driver.on_resume = self._redraw

    def _redraw(self, *_args: Any) -> None:
        self.refresh(layout=True)
        self.screen.refresh(layout=True)

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
