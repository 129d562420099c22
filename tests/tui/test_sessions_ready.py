"""When `--detach` says "started", and what a session that cannot start leaves.

Real processes (the command line in a subprocess, the double fork, the
session's own recorder), a private XDG_STATE_HOME / XDG_RUNTIME_DIR per test
(the ``env`` fixture of test_sessions.py). The session process itself says
"ready" once its header is written, or sends its error: the caller prints
exactly what `--headless` would have printed and exits with the same
status, and a session that never started is not listed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from probetop.probes.core.hub import Hub
from probetop.probes.record import Recorder, load_session, on_header
from probetop.probes.system import passive_probes
from probetop.tui.sessions import daemon
from probetop.tui.sessions.control import stop_session
from probetop.tui.sessions.daemon import Answer, parse_answer, read_answer
from probetop.tui.sessions.registry import find, process_start_ticks, write_info
from test_sessions import env, probetop, sessions

__all__ = ["env"]  # the fixture, used by name

# A session that runs until the test ends it: a cpu probe whose one worker
# takes 50 events a second (sysbench's --rate), not a core. The checks are the
# session's (sockets, states, recording); a detached session runs outside
# pytest's process tree, so tests/cputime.py never saw its CPU, taken from the
# test workers for the session's whole life.
QUIET_CPU = ("cpu", "--threads", "1", "--rate", "50")


def state_files(env: dict[str, str], name: str) -> list[str]:
    """The files of session ``name`` in the state and runtime directories."""
    found = []
    for key in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        where = Path(env[key]) / "probetop"
        if where.is_dir():
            found += sorted(p.name for p in where.iterdir() if p.name.startswith(f"{name}."))
    return found


def refused_like_headless(env: dict[str, str], name: str, *args: str) -> str:
    """`--detach` of ``args`` fails exactly as `--headless` does (same stderr,
    same status, nothing on stdout), and leaves no session nor file; its stderr."""
    headless = probetop(env, *args, "--headless")
    assert headless.returncode != 0, headless.stdout
    detached = probetop(env, *args, "--detach", "--name", name)
    assert (detached.returncode, detached.stderr) == (headless.returncode, headless.stderr)
    assert detached.stdout == ""
    assert name not in sessions(env)
    assert state_files(env, name) == []
    return detached.stderr


def test_a_probe_refused_at_start_is_reported_verbatim_and_not_listed(
    env: dict[str, str],
) -> None:
    err = refused_like_headless(env, "bad", "iops", "/nonexistent/dir/x")
    assert err.startswith("probetop: error: /nonexistent/dir/x") and "Traceback" not in err


def test_record_onto_a_file_the_run_uses_is_refused_and_not_listed(
    env: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data.img"
    data.write_bytes(os.urandom(1 << 20))
    before = data.read_bytes()
    err = refused_like_headless(
        env, "clash", "iops", str(data), "--time", "1", "--record", str(data)
    )
    assert "the iops probe uses it" in err and err.count("\n") == 1
    assert data.read_bytes() == before


def test_a_recording_another_session_holds_is_refused_and_not_listed(
    env: dict[str, str], tmp_path: Path
) -> None:
    shared = tmp_path / "shared.jsonl"
    first = probetop(env, *QUIET_CPU, "--time", "300", "--detach", "--name",
                     "holder", "--record", str(shared))  # fmt: skip
    assert first.returncode == 0, first.stderr
    second = probetop(env, *QUIET_CPU, "--time", "300", "--detach", "--name",
                      "second", "--record", str(shared))  # fmt: skip
    assert second.returncode == 2 and second.stdout == "", second.stdout
    errors = second.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"probetop: error: cannot record to {shared}")
    listed = sessions(env)
    assert "second" not in listed and state_files(env, "second") == []
    assert listed["holder"]["state"] == "running" and listed["holder"]["recording"] == str(shared)
    stopped = probetop(env, "stop", "holder")
    assert stopped.returncode == 0, stopped.stderr
    assert load_session(shared).footer is not None  # the holder's recording, whole


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.zst"])
def test_started_means_the_header_is_in_the_recording(
    env: dict[str, str], tmp_path: Path, suffix: str
) -> None:
    recording = tmp_path / f"r{suffix}"
    out = probetop(env, *QUIET_CPU, "--time", "300", "--detach", "--name", "h",
                   "--record", str(recording))  # fmt: skip
    assert out.returncode == 0, out.stderr
    # Read at once, before anything else: "started" was said after the write.
    header = load_session(recording).header
    assert header["type"] == "header" and "--detach" in header["command"]
    info = sessions(env)["h"]
    assert info["state"] == "running"  # marked before "ready" was said: never "starting" now
    assert f"session h started (PID {info['pid']})" in out.stdout
    assert f"recording  {recording}" in out.stdout
    assert probetop(env, "stop", "h").returncode == 0


def test_ls_says_starting_until_the_session_says_ready(env: dict[str, str], tmp_path: Path) -> None:
    """From its claim until its recorder wrote the header, a session is
    "starting" (it was "running" then, with nothing recorded yet); the same
    hook that says "ready" on the pipe makes it "running", before saying it.
    The session's process is a real one (``sleep``); its recorder is real."""
    holder = subprocess.Popen(["sleep", "60"])
    try:
        recording = tmp_path / "s.jsonl"
        made = daemon._info("st", ["probetop", "cpu"], recording, tmp_path / "s.sock",
                            tmp_path / "s.log", starting=True)  # fmt: skip
        info = dataclasses.replace(
            made, pid=holder.pid, start_ticks=process_start_ticks(holder.pid)
        )
        write_info(info)
        assert sessions(env)["st"]["state"] == "starting"
        assert "st    starting" in probetop(env, "ls").stdout
        assert find(None).name == "st"  # the only live session: `attach`/`stop` find it
        ready_r, ready_w = os.pipe()
        ready = daemon._Ready(ready_w, recording, lambda: daemon._mark_ready(info))
        unhook = on_header(ready.header_written)
        try:
            asyncio.run(_record(recording))
        finally:
            unhook()
        assert read_answer(ready_r, 5.0) == Answer("ready", pid=os.getpid())
        os.close(ready_r)
        assert sessions(env)["st"]["state"] == "running"
    finally:
        holder.kill()
        holder.wait()
    assert sessions(env)["st"]["state"] == "died"


@pytest.mark.parametrize("after_s", [0.0, 0.03, 0.08])
def test_stop_while_starting_stops_it_and_says_so(env: dict[str, str], after_s: float) -> None:
    """`stop` the moment the name is claimed: the socket is not served yet
    and the metadata may still name the `--detach` command. It sent SIGTERM
    there, then waited for an exit status that a session stopped before its
    start never writes (it removes its metadata): "did not stop within", exit
    2, and the starter exited 1 saying nothing. Now `stop` retries the socket
    and says what happened; the starter says the session was stopped."""
    name = f"early{int(after_s * 1000)}"
    starter = subprocess.Popen(
        [*sys_python(), *QUIET_CPU, "--time", "300", "--detach", "--name", name],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        meta = Path(env["XDG_STATE_HOME"]) / "probetop" / f"{name}.session.json"
        deadline = time.monotonic() + 30
        while not meta.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(after_s)
        done = stop_session(find(name), 20.0)
        out, err = starter.communicate(timeout=30)
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.communicate()
    if done is None:  # stopped before its probes started: not listed, the starter says so
        assert starter.returncode == 143, (starter.returncode, out, err)
        assert err == f"probetop: session {name} stopped (SIGTERM) before its probes started\n"
        assert name not in sessions(env)
    else:  # it was ready first: stopped as a running session
        assert starter.returncode == 0, (starter.returncode, out, err)
        assert (done.state, done.exit_code) == ("finished", 143)  # as before its probes started


def sys_python() -> list[str]:
    return [sys.executable, "-m", "probetop.tui.main"]


def test_follow_waits_for_a_starting_session_s_recording(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`follow` (the remote views' transport; `attach` does the same) of a
    session still starting, whose recording does not exist yet: it exited
    2, "no such file". It waits until the session is ready, then follows."""
    holder = subprocess.Popen(["sleep", "60"])
    recording = tmp_path / "w.jsonl"
    made = daemon._info("w", ["probetop", "cpu"], recording, tmp_path / "w.sock",
                        tmp_path / "w.log", starting=True)  # fmt: skip
    info = dataclasses.replace(made, pid=holder.pid, start_ticks=process_start_ticks(holder.pid))
    write_info(info)
    follow = subprocess.Popen([*sys_python(), "follow", "w"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)  # fmt: skip
    try:
        time.sleep(1.0)
        assert follow.poll() is None, follow.communicate()  # waiting, not refused
        data = (Path(__file__).parents[1] / "data" / "tui_session.jsonl").read_bytes()
        recording.write_bytes(data)  # a whole recording, footer included: follow ends
        write_info(dataclasses.replace(info, starting=False))
        out, err = follow.communicate(timeout=30)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.communicate()
        holder.kill()
        holder.wait()
    assert follow.returncode == 0, err
    assert out == data


async def _record(path: Path) -> None:
    hub = Hub()
    for probe in passive_probes(1.0):
        hub.add(probe)
    recorder = Recorder(path, hub, ["probetop"])
    await recorder.start()
    await recorder.close()


def test_a_fresh_header_at_record_does_not_answer_for_a_failing_session(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A file at --record holding a whole header line, written just now (what
    the old readiness check took for the session's): the session's own
    failure is what the caller reports."""
    old = tmp_path / "old.jsonl"
    text = '{"type":"header","format":"probetop-session","schema":1,"probes":[]}\n'
    old.write_text(text)
    err = refused_like_headless(env, "fake", "iops", "/nonexistent/dir/x", "--record", str(old))
    assert "/nonexistent/dir/x" in err
    assert old.read_text() == text


@pytest.mark.parametrize(
    ("data", "answer"),
    [
        (b"", None),
        (b"ready 42", None),  # not whole yet
        (b"ready 42\n", Answer("ready", pid=42)),
        (b"failed 2 6\nerror", None),  # 5 of 6 bytes
        (b"failed 2 6\nerror\n", Answer("failed", code=2, text=b"error\n")),
        (b"failed 2 0\n", Answer("failed", code=2)),
        (b"ready\n", Answer("none")),
        (b"a header line\n", Answer("none")),
        (b"failed x 1\n1", Answer("none")),
    ],
)
def test_the_ready_message(data: bytes, answer: Answer | None) -> None:
    assert parse_answer(data) == answer
