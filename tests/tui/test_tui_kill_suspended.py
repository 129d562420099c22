"""``kill %1`` on a suspended replay, at a real interactive bash in tmux.

bash's ``kill`` sends a stopped job the signal and then a SIGCONT. A
replay has no waiter (the process itself stops on Ctrl-Z, as vim), and
its SIGCONT handler, finding the terminal the shell's, stopped it again
before the SIGTERM's callback ran: the job stayed ``Stopped`` until
``fg``. vim (and any process with default handlers) is ``Terminated`` at
once. Now the SIGTERM is acted on; ``bg`` still leaves it stopped."""

from __future__ import annotations

import re

from test_tui_jobcontrol import EXE, job_ended_as, shell, type_line, wait, wait_job_end
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
        type_line(tmux, "kill %1")
        text = wait_job_end(tmux)
        # bash may still say "Stopped" at the prompt after the kill (it has
        # not yet seen the continue); what counts is how the job ended, and
        # that nothing after the wait is stopped.
        after = text.split("kill %1")[-1]
        assert job_ended_as(after, "Done", "0"), text
        assert "Stopped" not in after.split("echo JOBRC=$rc")[-1], text
        assert "Traceback" not in text
