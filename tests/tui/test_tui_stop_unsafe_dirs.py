"""Issue 29 item 3: every session command refuses a state or runtime
directory that is group- or world-writable or another user's (docs/sessions.md).
``test_sessions_hostile.py`` runs ls, stop, attach, follow and --detach; these
are the session commands it leaves out: ``rm`` (which deletes files found
there) and ``d`` in a live dashboard (which detaches into a session there),
the latter in a real terminal (tmux)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_sessions import env, probetop
from test_sessions_hostile import forked, one_error
from test_tui_jobcontrol import EXE, shell, type_line, wait, wait_alternate

__all__ = ["env"]  # the fixture, used by name


def _unsafe(env: dict[str, str], which: str, unsafe: str) -> tuple[Path, str]:
    base = env["XDG_STATE_HOME"] if which == "state" else env["XDG_RUNTIME_DIR"]
    where = Path(base) / "probetop"
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    if unsafe == "nobody":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the directory to another user")
        os.chown(where, 65534, 65534)
        return where, "owner uid 65534"
    os.chmod(where, int(unsafe, 8))
    return where, f"mode {unsafe}"


@pytest.mark.parametrize("which", ["state", "runtime"])
@pytest.mark.parametrize("unsafe", ["0777", "0770", "nobody"])
def test_rm_refuses_an_unsafe_directory(env: dict[str, str], which: str, unsafe: str) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    planted = state / "x.session.json"  # what whoever can write there could plant
    planted.write_text("{}")
    where, says = _unsafe(env, which, unsafe)
    for args in (("rm", "x"), ("rm", "x", "y")):
        out = forked(env, *args)
        one_error(out, str(where), "not private", says)
        assert out.stdout == "", (args, out.stdout)
    assert planted.exists()  # nothing removed there


def test_d_in_the_dashboard_refuses_an_unsafe_directory(env: dict[str, str]) -> None:
    where, says = _unsafe(env, "state", "0777")
    run = f"env XDG_STATE_HOME={env['XDG_STATE_HOME']} XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}"
    with shell(width=120, height=40) as tmux:
        type_line(tmux, f"{run} {EXE} cpu --threads 1 --time 120; echo RC=$?")
        wait(tmux, lambda s: "events/s" in s and s.startswith("probetop"), "the dashboard", 90)
        tmux("send-keys", "-t", "t", "d")
        text = wait(tmux, lambda s: "not detached" in s, "the refusal")
        assert "not" in text and "private" in text and "Traceback" not in text, text
        tmux("send-keys", "-t", "t", "q")
        wait_alternate(tmux, False)
        wait(tmux, lambda s: "RC=0" in s, "the exit status")
    assert not list(where.iterdir())  # no session was started there
    assert probetop(env, "ls").returncode == 2  # still refused, as it was
    assert says
