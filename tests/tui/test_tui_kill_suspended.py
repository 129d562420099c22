"""``kill %1`` on a suspended replay, at a real interactive bash in tmux.

bash's ``kill`` sends a stopped job the signal and then a SIGCONT. A
replay has no waiter (the process itself stops on Ctrl-Z, as vim), and
its SIGCONT handler, finding the terminal the shell's, stopped it again
before the SIGTERM's callback ran: the job stayed ``Stopped`` until
``fg``. vim (and any process with default handlers) is ``Terminated`` at
once. Now the SIGTERM is acted on; ``bg`` still leaves it stopped."""

from __future__ import annotations

import re

from test_tui_jobcontrol import EXE, shell, type_line, wait
from tui_fixtures import DEMO_FILE


def test_kill_on_a_suspended_replay_ends_it_and_bg_does_not() -> None:
    with shell() as tmux:
        type_line(tmux, f"{EXE} replay {DEMO_FILE}")
        wait(tmux, lambda s: "replay" in s and "system.cpu" in s, "the replay")
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        type_line(tmux, "bg; sleep 1; jobs; echo BG-END")
        text = wait(tmux, lambda s: "BG-END" in s.split("echo BG-END")[-1], "jobs after bg")
        assert re.search(r"\[1\]\+ +Stopped", text.split("echo BG-END")[-1]), text
        gone = "for i in $(seq 100); do jobs %1 >/dev/null 2>&1 || break; sleep 0.1; done"
        type_line(tmux, f"kill %1; {gone}; jobs; echo END")  # 10 s for the job to end
        text = wait(tmux, lambda s: "END" in s.split("echo END")[-1], "the job list")
        after = text.split("echo END")[-1]
        assert "Stopped" not in after and re.search(r"\[1\]\S* +Done", after), text
        assert "Traceback" not in text
