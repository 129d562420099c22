"""Remote views over a real sshd on loopback (tests/tui/sshd_fixture.py).

The "remote" host is this machine through sshd, with its own state
directory, so the session, its recording and ``ls`` on the far side are
real; the link is real ssh, and dropping it means killing the ssh client.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.core.sample import Sample
from probetop.probes.record import RecordingError, load_session
from probetop.tui.sessions import remote as remote_mod
from probetop.tui.sessions.registry import SessionError, SessionInfo
from probetop.tui.sessions.remote import RemoteFollower
from probetop.tui.sessions.viewcodec import VIEW_OMITS
from probetop.tui.ui.widgets.history import fmt_value
from sshd_fixture import Sshd, Unavailable, start_sshd
from test_sessions import _screen, _tmux, wait_for

START_S = 60.0


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Sshd, Path]]:
    """(sshd, the far side's state directory); local state elsewhere."""
    base = Path(tempfile.mkdtemp(prefix="ptr-", dir="/tmp"))
    far_state, far_run = base / "far", base / "farrun"
    far_run.mkdir(mode=0o700)
    keys = base / "keys"
    keys.mkdir()
    try:
        sshd = start_sshd(keys, far_state, far_run)
    except Unavailable as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(str(exc))
    for key, value in sshd.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "near"))
    yield sshd, far_state / "probetop"
    for meta in (far_state / "probetop").glob("*.session.json"):  # never leave one running
        subprocess.run(
            [sys.executable, "-m", "probetop.tui.main", "stop", meta.name.split(".")[0]],
            env=dict(os.environ, XDG_STATE_HOME=str(far_state), XDG_RUNTIME_DIR=str(far_run)),
            capture_output=True,
            timeout=60,
        )
    sshd.stop()
    shutil.rmtree(base, ignore_errors=True)


def probetop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", *args],
        capture_output=True,
        text=True,
        timeout=START_S,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def start_remote(name: str, *extra: str) -> None:
    out = probetop("--remote", "ptest", "cpu", "--sample-interval", "0.5", *extra, "--detach",
                   "--name", name)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"session {name} started" in out.stdout


def sample_times(records: list[tuple[float, object]]) -> list[tuple[str, float]]:
    """(probe, t to the ms): the compact link carries times in ms."""
    return [(r.probe, round(t, 3)) for t, r in records if isinstance(r, Sample)]


def links_of(name: str) -> list[str]:
    """Every process of a view's link to session ``name``: the ssh client
    here and ``probetop follow`` there (this machine is both)."""
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"follow {name} " in line]


def test_the_view_gets_the_hosts_numbers_paced_as_taken(
    remote: tuple[Sshd, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decode what a view received over the compact link and compare it with
    the host's recording: every sample, its time to the ms, every value as
    the panes print it (fmt_value, with its unit), extra as it is; and the
    live batches (2 s of samples each) are handed out at the pace the
    samples were taken, not all at once."""
    _sshd, far = remote
    monkeypatch.setenv("PROBETOP_REMOTE_BATCH", "2")
    start_remote("r3", "--time", "10", "--with-system")
    view = RemoteFollower("ptest", "r3")
    got: list[tuple[float, float, object]] = []  # (when handed out, t, record)
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and not (view.footer and view.link == "ended"):
            got.extend((time.monotonic(), t, r) for t, r in view.poll())
            time.sleep(0.02)
        got.extend((time.monotonic(), t, r) for t, r in view.poll())
    finally:
        view.close()
    raw = [json.loads(x) for x in (far / "r3.jsonl").read_bytes().splitlines()]
    unit = {(p["id"], m["name"]): m["unit"] for p in raw[0]["probes"] for m in p["metrics"]}
    expected = [x for x in raw if x["type"] == "sample"]
    samples = [(t, r) for _when, t, r in got if isinstance(r, Sample)]
    # Times travel in whole milliseconds; rounding a half-millisecond the
    # recording holds (4.6005) may land either side of Python's round(t, 3).
    assert [r.probe for _t, r in samples] == [x["probe"] for x in expected]
    for (t, _r), x in zip(samples, expected, strict=True):
        assert abs(t - x["t"]) <= 0.001 + 1e-9, (t, x["t"])
    for (_t, copy), line in zip(samples, expected, strict=True):
        assert list(copy.values) == list(line["values"])
        for key, value in line["values"].items():
            u = unit[line["probe"], key.split("@", 1)[0]]
            assert fmt_value(copy.values[key], u) == fmt_value(value, u), (key, value)
        kept = {k: v for k, v in line.get("extra", {}).items() if k not in VIEW_OMITS}
        # the history came as recorded; live samples leave VIEW_OMITS on the host
        assert {k: v for k, v in copy.extra.items() if k not in VIEW_OMITS} == kept
    # cpu samples every 0.5 s, sent 4 at a time: handed out about 0.5 s apart
    cpu = [when for when, _t, r in got if isinstance(r, Sample) and r.probe == "cpu"]
    gaps = [b - a for a, b in itertools.pairwise(cpu[4:-4])]  # live ones, not the end
    assert sum(g >= 0.2 for g in gaps) >= len(gaps) / 2, gaps


def test_ls_stop_and_headless_run_through_ssh(remote: tuple[Sshd, Path]) -> None:
    _sshd, far = remote
    start_remote("r1", "--time", "300")  # running until the stop below, however slow the checks
    listed = probetop("ls", "--remote", "ptest")
    assert listed.returncode == 0, listed.stderr
    assert "r1" in listed.stdout and "running" in listed.stdout
    assert (far / "r1.jsonl").exists()  # the session is on the far side
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "probetop" / "r1.jsonl").exists()
    stopped = probetop("stop", "--remote", "ptest", "r1")
    assert stopped.returncode == 0, stopped.stderr
    assert "events per second:" in stopped.stdout
    headless = probetop("--remote", "ptest", "cpu", "--time", "1", "--headless")
    assert headless.returncode == 0, headless.stderr
    assert "events per second:" in headless.stdout


def test_failures_are_one_line(remote: tuple[Sshd, Path]) -> None:
    sshd, _far = remote
    missing = probetop("ls", "--remote", "ptest", env=dict(os.environ, PROBETOP_REMOTE="/nope/pt"))
    assert missing.returncode == 2
    assert "was not found on ptest" in missing.stderr
    assert "pip install" in missing.stderr
    assert "Traceback" not in missing.stderr
    sshd.stop()  # nothing listens any more
    down = probetop("ls", "--remote", "ptest")
    assert down.returncode == 2
    assert "ssh ptest failed" in down.stderr and "Traceback" not in down.stderr
    for bad in ("-oProxyCommand=x", "a b", ""):
        out = probetop("ls", "--remote", bad)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (bad, out.stderr)
    local = probetop("replay", "x.jsonl", "--remote", "ptest")
    assert local.returncode == 2 and "reads a file on this machine" in local.stderr


def _ssh_of(follower: RemoteFollower) -> int:
    assert follower._proc is not None
    return follower._proc.pid


def test_link_drop_resumes_without_gap_or_duplicate(remote: tuple[Sshd, Path]) -> None:
    _sshd, far = remote
    start_remote("r2", "--time", "12")
    views = [RemoteFollower("ptest", "r2"), RemoteFollower("ptest", "r2")]  # two at once
    got: list[list[tuple[float, object]]] = [[], []]
    drops = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(v.footer for v in views):
        for i, view in enumerate(views):
            got[i].extend(view.poll())
        n = len(sample_times(got[0]))
        if (drops == 0 and n >= 6) or (drops == 1 and n >= 14):
            os.kill(_ssh_of(views[0]), signal.SIGKILL)  # the link of view 0 drops
            drops += 1
        time.sleep(0.1)
    for view in views:
        view.close()
    assert drops == 2
    assert views[0].reconnects >= 2
    assert all(v.footer is not None for v in views), "both views saw the session end"
    recorded = load_session(far / "r2.jsonl")
    assert recorded.footer is not None
    # The link's rule for a time in ms (viewcodec: round(t * 1000)), not
    # round(t, 3), which differs from it where t * 1000 ends in .5.
    expected = [
        (line["probe"], round(float(line["t"]) * 1000) / 1000) for line in recorded.samples()
    ]
    for records in got:
        seen = sample_times(records)
        assert seen == expected  # every sample once, in order: no gap, no duplicate
    cpu = [t for probe, t in expected if probe == "cpu"]
    assert max(b - a for a, b in itertools.pairwise(cpu)) < 1.5


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_remote_view_in_a_terminal_reconnects_and_stops(remote: tuple[Sshd, Path]) -> None:
    _sshd, far = remote
    sock = f"ptrv-{os.getpid()}"
    env = " ".join(
        f"{k}='{os.environ[k]}'" for k in ("PROBETOP_SSH", "PROBETOP_REMOTE", "XDG_STATE_HOME")
    )
    # --time 60: the session runs on while the link drops and comes back (cpu's
    # default 10 s ended it first on a loaded machine: "(finished)", not "(running)")
    cmd = (
        f"{sys.executable} -m probetop.tui.main --remote ptest cpu --sample-interval 0.5 "
        "--time 60 --name rv"
    )
    try:
        _tmux(sock, "new-session", "-d", "-x", "120", "-y", "40", "-s", "w", "bash --norc")
        _tmux(sock, "send-keys", "-t", "w", f"export {env} TERM=xterm-256color; {cmd}; "
              "echo EXIT=$?", "Enter")  # fmt: skip
        wait_for(lambda: "attached rv on ptest (running)" in _screen(sock, "w"), timeout=60,
                 what="remote view")  # fmt: skip
        wait_for(lambda: "events/s" in _screen(sock, "w"), what="cpu pane")
        ssh = subprocess.run(["pgrep", "-f", "-n", "ssh .*follow rv"], capture_output=True,
                             text=True).stdout.split()  # fmt: skip
        assert ssh, "the view's ssh link"
        os.kill(int(ssh[0]), signal.SIGKILL)
        wait_for(lambda: "reconnecting" in _screen(sock, "w"), what="reconnecting")
        wait_for(lambda: "(running)" in _screen(sock, "w"), what="back")
        # The history from before the drop is still there: seek to the start.
        _tmux(sock, "send-keys", "-t", "w", "Home")
        wait_for(lambda: "playing 00:0" in _screen(sock, "w"), what="seek to start")
        _tmux(sock, "send-keys", "-t", "w", "q")
        wait_for(lambda: "Stop session rv on ptest?" in _screen(sock, "w"), what="question")
        _tmux(sock, "send-keys", "-t", "w", "y")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="view closed")
        wait_for(lambda: not links_of("rv"), timeout=15, what="no ssh or follow left")
        session = load_session(far / "rv.jsonl")
        assert session.footer is not None  # stopped cleanly, report in its log
        # what a local `probetop cpu` shows: the host's panes beside the probe
        assert set(session.probes) == {"cpu", "system.cpu", "system.disk", "system.net"}
        assert "events per second:" in (far / "rv.log").read_text()
    finally:
        _tmux(sock, "kill-server")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctrl_c_in_the_view_leaves_no_link_behind(remote: tuple[Sshd, Path]) -> None:
    """Ctrl-C in a remote view asks what to do with the session; d leaves it
    running there and the view ends with nothing of its link left: no ssh
    here, no `probetop follow` there."""
    _sshd, _far = remote
    sock = f"ptcv-{os.getpid()}"
    env = " ".join(
        f"{k}='{os.environ[k]}'" for k in ("PROBETOP_SSH", "PROBETOP_REMOTE", "XDG_STATE_HOME")
    )
    cmd = f"{sys.executable} -m probetop.tui.main --remote ptest cpu --time 120 --name cv"
    try:
        _tmux(sock, "new-session", "-d", "-x", "120", "-y", "40", "-s", "w", "bash --norc")
        _tmux(sock, "send-keys", "-t", "w", f"export {env} TERM=xterm-256color; {cmd}; "
              "echo EXIT=$?", "Enter")  # fmt: skip
        wait_for(lambda: "events/s" in _screen(sock, "w"), timeout=60, what="cpu pane")
        assert links_of("cv"), "the view's link"
        _tmux(sock, "send-keys", "-t", "w", "C-c")
        wait_for(lambda: "Stop session cv on ptest?" in _screen(sock, "w"), what="question")
        _tmux(sock, "send-keys", "-t", "w", "d")
        wait_for(lambda: "EXIT=0" in _screen(sock, "w"), what="view closed")
        assert "keeps running on ptest" in " ".join(_screen(sock, "w").split())
        wait_for(lambda: not links_of("cv"), timeout=15, what="no ssh or follow left")
        listed = probetop("ls", "--remote", "ptest")
        assert re.search(r"cv\s+running", listed.stdout), listed.stdout
    finally:
        _tmux(sock, "kill-server")
        probetop("stop", "--remote", "ptest", "cv")


def test_ctrl_c_while_the_session_starts_there_says_it_may_run_on(
    remote: tuple[Sshd, Path],
) -> None:
    """Ctrl-C once HOST's `--detach` has claimed the name: ssh ends, the
    session there starts on. The command said nothing and exited 130, and
    the session ran on unnoticed; now it names it and how to stop it."""
    _sshd, far = remote
    sock = f"ptrc-{os.getpid()}"
    env = " ".join(
        f"{k}='{os.environ[k]}'" for k in ("PROBETOP_SSH", "PROBETOP_REMOTE", "XDG_STATE_HOME")
    )
    cmd = f"{sys.executable} -m probetop.tui.main --remote ptest cpu --threads 1 --name cc"
    meta = far / "cc.session.json"
    try:
        _tmux(sock, "new-session", "-d", "-x", "120", "-y", "40", "-s", "w", "bash --norc")
        _tmux(sock, "send-keys", "-t", "w", f"export {env} TERM=xterm-256color; {cmd}; "
              "echo EXIT=$?", "Enter")  # fmt: skip
        deadline = time.monotonic() + START_S
        while not meta.exists() and time.monotonic() < deadline:  # claimed there
            time.sleep(0.005)
        assert meta.exists(), _screen(sock, "w")
        _tmux(sock, "send-keys", "-t", "w", "C-c")
        # EXIT=<digits>: the typed command line shows "EXIT=$?" at once
        wait_for(lambda: re.search(r"EXIT=\d", _screen(sock, "w")), what="the command's end")
        screen = " ".join(_screen(sock, "w").split())
        assert "EXIT=130" in screen, screen
        assert "session cc may have started on ptest" in screen, screen
        assert "probetop stop --remote ptest cc" in screen, screen
        assert "Traceback" not in screen
    finally:
        _tmux(sock, "kill-server")


@contextlib.contextmanager
def _view_of_a_silent_server(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> Iterator[tuple[RemoteFollower, remote_mod.RemoteAttachedSession]]:
    """An attached view of session ``name`` whose ssh reaches a server that
    accepts and never speaks (a link that is half there); a stall is 0.5 s."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    monkeypatch.setenv("PROBETOP_SSH", f"ssh -p {port} -o StrictHostKeyChecking=no "
                       "-o UserKnownHostsFile=/dev/null")  # fmt: skip
    monkeypatch.setattr(remote_mod, "STALL_S", 0.5)
    follower = RemoteFollower("127.0.0.1", name)
    info = SessionInfo(name, [], "", 2, None, "", "", "")
    view = remote_mod.RemoteAttachedSession(info, follower, "running", host="127.0.0.1",
                                            _remote=follower)  # fmt: skip
    try:
        yield follower, view
    finally:
        follower.close()
        listener.close()


def test_the_status_says_when_a_reconnection_is_under_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that accepts and never speaks (a link that is half there):
    while ssh waits on it (up to ConnectTimeout, 10 s) the view said
    "reconnecting in 0 s" all along; it says the attempt is under way."""
    seen: list[str] = []
    with _view_of_a_silent_server(monkeypatch, "s") as (follower, view):
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline and not any("now" in s for s in seen):
            follower.poll()
            state = view.state
            if not seen or seen[-1] != state:
                seen.append(state)
            time.sleep(0.05)
    assert "reconnecting in 1 s: link lost (no data for 0.5 s)" in seen, seen
    assert seen[-1] == "reconnecting now (attempt 1): link lost (no data for 0.5 s)", seen
    assert not any(s.startswith("reconnecting in 0 s") for s in seen), seen


def test_a_refusal_on_the_far_side_is_said_once_not_retried(remote: tuple[Sshd, Path]) -> None:
    follower = RemoteFollower("ptest", "no-such-session")
    try:
        deadline = time.monotonic() + 30
        with pytest.raises(RecordingError, match="no session named 'no-such-session'"):
            while time.monotonic() < deadline:
                follower.poll()
                time.sleep(0.1)
        assert follower.link == "ended" and follower.reconnects == 0
    finally:
        follower.close()


def test_the_batch_period_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """$PROBETOP_REMOTE_BATCH: seconds in (0, 5]; anything else is one line
    naming the variable (SessionError: exit 2), said before a view's
    session starts on HOST (run_remote_plan checks it first)."""
    for bad in ("0", "-1", "6", "abc", "nan", "inf"):
        monkeypatch.setenv("PROBETOP_REMOTE_BATCH", bad)
        with pytest.raises(SessionError, match="PROBETOP_REMOTE_BATCH"):
            remote_mod.link_batch_s()
    monkeypatch.setenv("PROBETOP_REMOTE_BATCH", "1.5")
    assert remote_mod.link_batch_s() == 1.5
    monkeypatch.delenv("PROBETOP_REMOTE_BATCH")
    assert remote_mod.link_batch_s() == remote_mod.LINK_BATCH_S


def test_a_lost_link_is_said_first_in_a_narrow_status_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """sshd killed under a 100-column view: the status part carrying ssh's
    error was too long, so it was dropped whole and the line said "live 00:23
    d: detach" alone, as if nothing had happened. Now the link's state stays
    (shortened) at 80 and 100 columns, and "live" is not said."""
    from probetop.tui.ui.app import fit_status
    from probetop.tui.ui.replay_clock import ReplayPlayer
    from probetop.tui.ui.replay_view import Playback

    with _view_of_a_silent_server(monkeypatch, "h2-s") as (follower, view):
        playback = Playback(None, ReplayPlayer([], 23.0), attached=view)  # type: ignore[arg-type]
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not view.state.startswith("reconnecting"):
            follower.poll()
            time.sleep(0.05)
        assert view.state.startswith("reconnecting"), view.state
        for width in (80, 100):
            line = fit_status([(0, "probetop"), *playback.status_parts()], width)
            assert "attached h2-s on 127.0.0.1 (reconnecting" in line, (width, line)
            assert "live" not in line, (width, line)
