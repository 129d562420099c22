"""Detached sessions with real processes, real sockets and a real terminal (tmux).

A session is started with ``--detach`` in a subprocess; ``ls``, ``stop`` and
``attach`` are the real command line; state and sockets live in a private
XDG_STATE_HOME / XDG_RUNTIME_DIR per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from probetop.probes.core.sample import Announce, Sample
from probetop.probes.record import RecordingFollower, load_session
from probetop.tui.sessions import control
from probetop.tui.sessions.attach import AttachedSession
from probetop.tui.sessions.control import ControlServer, request
from probetop.tui.sessions.registry import SessionError, SessionInfo, find, read_info

START_S = 60.0  # a cold numba cache on a loaded machine

# A session that runs until the test ends it: a cpu probe whose one worker
# takes 50 events a second (sysbench's --rate), not a core. The checks are the
# session's (sockets, states, recording); a detached session runs outside
# pytest's process tree, so tests/cputime.py never saw its CPU, taken from the
# test workers for the session's whole life.
QUIET_CPU = ("cpu", "--threads", "1", "--rate", "50")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Private state and runtime directories (short paths: a Unix socket path
    holds at most 107 bytes), also set in this process for the registry."""
    base = Path(tempfile.mkdtemp(prefix="pts-", dir="/tmp"))
    state, run = base / "st", base / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    environ = dict(os.environ, XDG_STATE_HOME=str(state), XDG_RUNTIME_DIR=str(run))
    yield environ
    for meta in (state / "probetop").glob("*.session.json"):  # never leave a session behind
        with contextlib.suppress(Exception):
            # Only a live session of this test, read through the registry's own
            # checks: a hand-written (damaged) file may say pid -1 or 1, and
            # kill(-1, SIGKILL) as root ends every process on the machine.
            info = read_info(meta)
            if isinstance(info, SessionInfo) and info.pid > 1 and info.live:
                os.kill(info.pid, signal.SIGKILL)
    shutil.rmtree(base, ignore_errors=True)


def probetop(
    env: dict[str, str], *args: str, timeout: float = START_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "probetop.tui.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def sessions(env: dict[str, str]) -> dict[str, dict[str, object]]:
    out = probetop(env, "ls", "--json")
    assert out.returncode == 0, out.stderr
    return {s["name"]: s for s in json.loads(out.stdout)["sessions"]}


def wait_for(predicate, timeout: float = 30.0, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def sample_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b'"type":"sample"')
    except OSError:
        return 0


def detach_cpu(env: dict[str, str], name: str) -> dict[str, object]:
    """A detached cpu session that runs until the test ends it: --time 300,
    not cpu's default 10 s, which a loaded machine spent before the test's
    `stop` (the session had finished: "not running"); QUIET_CPU."""
    started = probetop(
        env, *QUIET_CPU, "--interval", "0.5", "--time", "300", "--detach",
        "--name", name,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert f"session {name} started" in started.stdout
    assert f"probetop attach {name}" in started.stdout
    return sessions(env)[name]


def test_detach_ls_stop(env: dict[str, str]) -> None:
    info = detach_cpu(env, "c1")
    assert info["state"] == "running"
    recording = Path(str(info["recording"]))
    assert recording.parent == Path(env["XDG_STATE_HOME"]) / "probetop"
    assert stat.S_IMODE(recording.stat().st_mode) == 0o600
    sock = Path(env["XDG_RUNTIME_DIR"]) / "probetop" / "c1.sock"
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    # A new session (setsid), whose leader has exited: no terminal can signal
    # it, and it can never acquire one.
    pid = int(str(info["pid"]))
    assert os.getsid(pid) not in (os.getsid(0), pid)
    assert os.getpgid(pid) != os.getpgid(0)
    wait_for(lambda: sample_lines(recording) >= 2, what="samples")
    table = probetop(env, "ls")
    assert "c1" in table.stdout and "running" in table.stdout and "cpu --threads 1" in table.stdout
    assert request(sock, "status")["pid"] == pid

    stopped = probetop(env, "stop", "c1")
    assert stopped.returncode == 0, stopped.stderr
    assert "events per second" in stopped.stdout  # the cpu report, as --headless prints it
    assert "session c1 finished" in stopped.stdout
    session = load_session(recording)
    assert session.footer is not None and "SIGTERM" in session.footer["reason"]
    assert sessions(env)["c1"]["state"] == "finished"
    assert not sock.exists()
    # An ended session's name is free again: its files are kept under a
    # name of their own, and the message says which and where.
    again = probetop(env, *QUIET_CPU, "--time", "300", "--detach", "--name", "c1")
    assert again.returncode == 0, again.stderr
    listed = sessions(env)
    kept = [name for name in listed if name.startswith("c1-")]
    assert len(kept) == 1 and f"kept as {kept[0]}" in again.stderr, again.stderr
    assert str(recording.parent) in again.stderr
    assert listed[kept[0]]["state"] == "finished"
    old = load_session(Path(str(listed[kept[0]]["recording"])))
    assert old.footer is not None and "SIGTERM" in old.footer["reason"]
    assert listed["c1"]["state"] in ("starting", "running")
    # A live session's name is refused, saying where its files are.
    third = probetop(env, "cpu", "--detach", "--name", "c1")
    assert third.returncode == 2 and "pick another --name" in third.stderr
    assert "probetop stop c1" in third.stderr and str(recording.parent) in third.stderr


def test_sigkill_shows_died_and_recording_reads_back(env: dict[str, str]) -> None:
    info = detach_cpu(env, "k1")
    recording = Path(str(info["recording"]))
    pid = int(str(info["pid"]))
    wait_for(lambda: sample_lines(recording) >= 3, what="samples")
    os.kill(pid, signal.SIGHUP)  # no terminal to lose: a detached session ignores it
    time.sleep(0.5)
    assert sessions(env)["k1"]["state"] == "running"
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: sessions(env)["k1"]["state"] == "died", what="died")
    session = load_session(recording)  # valid up to its last whole line
    assert session.footer is None
    assert len(session.samples("cpu")) >= 3
    assert any("no footer" in w for w in session.warnings)
    stop = probetop(env, "stop", "k1")
    assert stop.returncode == 2 and "not running (died" in stop.stderr
    assert str(recording) in stop.stderr  # where its files are
    removed = probetop(env, "rm", "k1")
    assert removed.returncode == 0, removed.stderr
    assert f"removed {recording}" in removed.stdout
    assert not recording.exists() and "k1" not in sessions(env)


def test_stop_of_a_session_that_finished_gives_its_report_and_rm_forgets_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`stop` after --time ended it: the report and the session's status (a
    script's `stop` never races the session's own end); `rm` deletes what
    lives in the state directory, keeps a --record file elsewhere, and
    refuses a running session."""
    mine = tmp_path / "mine.jsonl"
    started = probetop(
        env, "cpu", "--threads", "1", "--time", "1", "--detach", "--name", "f1",
        "--record", str(mine),
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    wait_for(lambda: sessions(env)["f1"]["state"] == "finished", what="finished")
    stop = probetop(env, "stop", "f1")
    assert stop.returncode == 0, stop.stderr
    assert "events per second" in stop.stdout and "had already ended (exit 0)" in stop.stdout
    running = detach_cpu(env, "f2")
    refused = probetop(env, "rm", "f1", "f2", "nosuch")
    assert refused.returncode == 2
    assert "`probetop stop f2` first" in refused.stderr
    assert "no session named 'nosuch'" in refused.stderr
    assert "f1" not in sessions(env) and sessions(env)["f2"]["state"] == running["state"]
    assert mine.exists()  # the user's own file
    log = Path(env["XDG_STATE_HOME"]) / "probetop" / "f1.log"
    assert f"removed {log}" in refused.stdout and not log.exists()


def test_detach_refuses_a_command_without_probes(env: dict[str, str]) -> None:
    out = probetop(env, "ls", "--detach")
    assert out.returncode == 2 and "--detach runs probes" in out.stderr


def test_attached_session_reads_the_history_then_follows(env: dict[str, str]) -> None:
    info = detach_cpu(env, "a1")
    recording = Path(str(info["recording"]))
    wait_for(lambda: sample_lines(recording) >= 4, what="samples")
    before = sample_lines(recording)
    attached = AttachedSession.open(find("a1"))
    try:
        first = attached.poll()
        assert isinstance(first[0][1], Announce)
        samples = [r for _t, r in first if isinstance(r, Sample) and r.probe == "cpu"]
        assert len([r for _t, r in first if isinstance(r, Sample)]) >= before
        # From the session's start, not from attaching: the recording's first
        # cpu sample. (A bound of 1.5 s on its time, at --interval 0.5, read
        # 1.66-1.74 s at a load average of 35-100: the probe's start-up.)
        lines = [json.loads(raw) for raw in recording.read_bytes().splitlines()[:50]]
        t0 = next(ln["t"] for ln in lines if ln["type"] == "sample" and ln["probe"] == "cpu")
        assert samples[0].t_ns == int(float(t0) * 1e9), (samples[0].t_ns, t0)
        wait_for(lambda: any(isinstance(r, Sample) for _t, r in attached.poll()), what="live")
        assert attached.state == "running"
        attached.stop()
        attached.poll()
        assert attached.state == "finished" and attached.follower.footer is not None
    finally:
        attached.close()


def test_follower_holds_back_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    header = {"type": "header", "format": "probetop-session", "schema": 1, "probes": []}
    path.write_text(json.dumps(header) + "\n")
    follower = RecordingFollower(path)
    assert follower.poll() == []
    line = json.dumps({"type": "sample", "probe": "x", "t": 1.0, "values": {"v": 1}}) + "\n"
    with path.open("a") as f:
        f.write(line[:10])
        f.flush()
        assert follower.poll() == []  # not whole yet
        f.write(line[10:])
    got = follower.poll()
    assert len(got) == 1 and isinstance(got[0][1], Sample) and got[0][0] == 1.0
    assert follower.poll() == []  # never twice
    follower.close()


def test_control_socket_checks_the_peer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(tempfile.mkdtemp(prefix="pts-", dir="/tmp")) / "s.sock"
    stops: list[bool] = []
    server = ControlServer(path, status=lambda: {"name": "x"}, on_stop=lambda: stops.append(True))
    server.start()
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert request(path, "status")["name"] == "x"
        seen: list[int] = []
        real = control.peer_uid

        def other_user(conn):  # type: ignore[no-untyped-def]
            uid = real(conn)  # the real SO_PEERCRED answer: this test's user
            if threading.current_thread().name != "control":
                return uid  # the client's check of the server: the same user
            seen.append(uid)
            return uid + 1

        monkeypatch.setattr(control, "peer_uid", other_user)
        with pytest.raises(SessionError, match="refused"):
            request(path, "stop")
        assert seen == [os.getuid()] and stops == [] and server.refused == 1
    finally:
        server.close()
        shutil.rmtree(path.parent, ignore_errors=True)


# -- the dashboard in a real terminal ------------------------------------------


def _tmux(socket: str, *args: str) -> str:
    out = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=10)
    return out.stdout


def _screen(socket: str, target: str) -> str:
    return _tmux(socket, "capture-pane", "-p", "-t", target)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_two_views_attach_detach_and_stop(env: dict[str, str]) -> None:
    info = detach_cpu(env, "v1")
    recording = Path(str(info["recording"]))
    wait_for(lambda: sample_lines(recording) >= 3, what="samples")
    sock = f"pts-{os.getpid()}"
    command = " ".join(
        [f"{k}={env[k]}" for k in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR")]
        + [sys.executable, "-m", "probetop.tui.main", "attach", "v1"]
    )
    try:
        for view in ("one", "two", "three"):
            args = ["-x", "120", "-y", "40", "-s", view]
            _tmux(sock, "new-session", "-d", *args, f"env TERM=xterm-256color {command}")
        for view in ("one", "two", "three"):
            wait_for(lambda v=view: "attached v1 (running)" in _screen(sock, v), what=view)
            wait_for(lambda v=view: "events/s" in _screen(sock, v), what=f"{view} cpu pane")
        # Seek to the start: the history from before attaching is there.
        _tmux(sock, "send-keys", "-t", "one", "Home")
        wait_for(lambda: "playing 00:0" in _screen(sock, "one"), what="seek to start")
        _tmux(sock, "send-keys", "-t", "one", "End")
        wait_for(lambda: "live" in _screen(sock, "one").splitlines()[0], what="back to live")
        # d detaches view one; the session and view two go on.
        _tmux(sock, "send-keys", "-t", "one", "d")
        wait_for(lambda: "one" not in _tmux(sock, "ls"), what="view one closed")
        # A view killed with its terminal (SIGHUP) changes nothing either.
        _tmux(sock, "kill-session", "-t", "three")
        before = sample_lines(recording)
        wait_for(lambda: sample_lines(recording) > before, what="samples after the views left")
        assert sessions(env)["v1"]["state"] == "running"
        assert "live" in _screen(sock, "two").splitlines()[0]
        # q in view two asks; y stops the session.
        _tmux(sock, "send-keys", "-t", "two", "q")
        wait_for(lambda: "Stop session v1?" in _screen(sock, "two"), what="question")
        _tmux(sock, "send-keys", "-t", "two", "y")
        wait_for(lambda: sessions(env)["v1"]["state"] == "finished", what="stopped")
        assert load_session(recording).footer is not None
    finally:
        _tmux(sock, "kill-server")


def test_follower_tail_reads_only_the_newest_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    info = {"id": "x", "kind": "cpu", "metrics": []}
    header = {"type": "header", "format": "probetop-session", "schema": 1, "probes": [info]}
    lines = [json.dumps(header)]
    lines += [
        json.dumps({"type": "sample", "probe": "x", "t": float(i), "values": {}})
        for i in range(1000)
    ]
    path.write_text("\n".join(lines) + "\n" + '{"type":"sam')  # a torn last line
    follower = RecordingFollower(path)
    tail = follower.tail(2000)
    assert isinstance(tail[0][1], Announce) and tail[0][1].probe == "x"
    times = [t for t, r in tail if isinstance(r, Sample)]
    assert times[-1] == 999.0 and 0 < len(times) < 60
    assert times == [float(t) for t in range(int(times[0]), 1000)]  # whole lines, in order
    assert len([r for _t, r in follower.poll() if isinstance(r, Sample)]) == 1000  # not moved
    follower.close()
