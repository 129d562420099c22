"""The typed-name confirmation before a destroying write, at a real terminal
(an interactive bash in tmux): Ctrl-Z and Ctrl-C act as in the dashboard.

Before: Ctrl-Z at the prompt did nothing (a stock Textual app: the key
reached no handler), and Ctrl-C showed Textual's "Do you want to quit?
Press ctrl+q to quit the app" instead of cancelling."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from test_tui_jobcontrol import EXE, alternate, ended, shell, type_line, wait, wait_alternate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "disk"))
from disk_fixtures import loop_device

PROMPT = "type the name here"


def test_ctrl_z_at_the_confirmation_suspends_and_fg_brings_it_back() -> None:
    with loop_device(16 << 20) as dev, shell() as tmux:
        type_line(tmux, shlex.join([EXE, "iops", "--rw", "randwrite", "--time", "60", dev]))
        wait(tmux, lambda s: PROMPT in s, "the confirmation")
        tmux("send-keys", "-t", "t", "C-z")
        text = wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        wait_alternate(tmux, False)
        assert "Traceback" not in text
        type_line(tmux, "fg")
        wait_alternate(tmux, True)
        wait(tmux, lambda s: PROMPT in s and "DESTROYED" in s, "the prompt redrawn")
        type_line(tmux, dev)  # the name typed after fg still confirms
        wait(tmux, lambda s: "write IOPS" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "q")
        wait_alternate(tmux, False)
        type_line(tmux, "echo RC=$?")
        text = wait(tmux, ended, "the exit status")
        assert "RC=0" in text and "Traceback" not in text, text


def test_ctrl_c_at_the_confirmation_cancels() -> None:
    with loop_device(16 << 20) as dev, shell() as tmux:
        line = shlex.join([EXE, "iops", "--rw", "randwrite", "--time", "60", dev])
        type_line(tmux, f"{line}; echo RC=$?")
        wait(tmux, lambda s: PROMPT in s, "the confirmation")
        tmux("send-keys", "-t", "t", "C-c")
        text = wait(tmux, ended, "the prompt to end")
        assert not alternate(tmux)
        assert "not confirmed: nothing was written" in text and "RC=1" in text, text
