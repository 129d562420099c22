"""A dialog's keys typed in one burst land whole (tui/ui/screens/prompt.py):
``r``, a path and Enter sent by tmux in one go recorded to the default file
(the path had gone to the pane behind the dialog), and with C-u first the
path was typed and then erased (the Input's bindings ran after its
characters). Checked in a real terminal, where the keys come as one read."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from probetop.tui.ui.screens.prompt import PromptScreen
from test_tui_keybar_repaint import EXE, needs_tmux, tmux_session, wait_screen
from tui_fixtures import live_app


@needs_tmux
@pytest.mark.parametrize("clear_first", [False, True], ids=["path", "C-u-path"])
def test_a_record_path_typed_in_one_burst_lands_whole(tmp_path: Path, clear_first: bool) -> None:
    target = tmp_path / "burst" / "x.jsonl"
    target.parent.mkdir()
    run = f"cd {shlex.quote(str(tmp_path))} && exec {shlex.quote(EXE)} cpu --threads 1 --time 60"
    with tmux_session(["sh", "-c", run], 100, 30) as tmux:
        wait_screen(tmux, "events/s")
        burst = ["send-keys", "-t", "t", "r", ";"]
        if clear_first:
            burst += ["send-keys", "-t", "t", "C-u", ";"]
        tmux(*burst, "send-keys", "-t", "t", str(target), "Enter")
        # The status line names the whole path when it fits the width, else
        # the file name (a tmp path of the right length made it fit exactly:
        # "REC x.jsonl" never showed). Either names this file, not the default.
        wait_screen(tmux, (f"REC {target}", "REC x.jsonl"), 15)
        assert target.exists()
    assert not (tmp_path / "probetop-session.jsonl").exists()  # not the default


async def test_r_typed_in_a_dialog_is_text_not_a_second_dialog() -> None:
    """``r`` and ``a`` open their dialogs when they arrive (priority), but
    not while a dialog is up: there they are letters of what is typed."""
    app = live_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("ctrl+u", *"cpu --threads 1 r a", "backspace", "backspace")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen) and len(app.screen_stack) == 2
        field = app.screen.query_one("#prompt-input")
        assert field.value == "cpu --threads 1 r"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1
