"""Detached sessions as a hostile user meets them (issue 11's classes, again).

Real processes, real sockets, real users (``nobody`` through setpriv), a
real small tmpfs; a private XDG_STATE_HOME / XDG_RUNTIME_DIR per test (the
``env`` fixture of test_sessions.py). Each case asserts what the user sees:
an exit status, one ``probetop: error:`` line, no traceback.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import run_probetop
from privilege import as_nobody
from probetop.probes.record import RecordingError, load_session
from probetop.tui.sessions.attach import AttachedSession
from probetop.tui.sessions.control import request
from probetop.tui.sessions.registry import SessionError, SessionInfo, process_start_ticks
from test_sessions import env, probetop, sessions, wait_for

__all__ = ["env"]  # the fixture, used by name

SECRETS = ("zqPASSqz", "zqTOKENqz", "zqBEARERqz")

# A session that runs until the test ends it: a cpu probe whose one worker
# takes 50 events a second (sysbench's --rate), not a core. The checks are the
# session's (sockets, states, recording); a detached session runs outside
# pytest's process tree, so tests/cputime.py never saw its CPU, taken from the
# test workers for the session's whole life.
QUIET_CPU = ("cpu", "--threads", "1", "--rate", "50")


def forked(
    env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``probetop(env, *args)`` forked from an interpreter that has imported the
    CLI (tests/forkserver.py): for tables of refusals, each of which starts
    one whole process too."""
    return run_probetop(args, env=env, timeout=timeout)


def one_error(out: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, no traceback, exactly one error line holding ``words``."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, out.stderr
    for word in words:
        assert word in errors[0], errors[0]


@pytest.fixture
def http_server() -> Iterator[str]:
    """A loopback HTTP server answering 200 to everything."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# -- class 5: secrets --------------------------------------------------------


def test_metadata_ls_and_log_never_show_credentials(env: dict[str, str], http_server: str) -> None:
    url = f"http://user:{SECRETS[0]}@{http_server}/x?token={SECRETS[1]}&page=2"
    started = probetop(
        env, "http", url, "-H", f"Authorization: Bearer {SECRETS[2]}",
        "--count", "1000", "--interval", "0.2", "--detach", "--name", "sec",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    listed = probetop(env, "ls")
    as_json = probetop(env, "ls", "--json")
    stopped = probetop(env, "stop", "sec")
    assert stopped.returncode == 0, stopped.stderr
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    files = {p.name: p.read_text(errors="replace") for p in state.iterdir() if p.is_file()}
    shown = {"ls": listed.stdout, "ls --json": as_json.stdout, "stop": stopped.stdout, **files}
    for where, text in shown.items():
        for secret in SECRETS:
            assert secret not in text, (where, secret)
    # what is not a secret is still there
    command = json.loads(as_json.stdout)["sessions"][0]["command"]
    assert any("page=2" in arg and http_server in arg for arg in command), command
    assert "page=2" in listed.stdout and "--count 1000" in listed.stdout


# -- class 4: damaged metadata -----------------------------------------------

DAMAGED = [
    "",
    "[1,2]",
    "{",
    '{"name":"bad"}',
    '{"name":"bad","command":"x","started_at":5,"pid":"x","start_ticks":null,'
    '"recording":null,"socket":3,"log":null}',
    '{"name":"bad","command":[1,2],"started_at":null,"pid":-1,"start_ticks":null,'
    '"recording":"","socket":"","log":"","extra":[]}',
    '{"name":"other","command":["p"],"started_at":"2026-01-01T00:00:00+00:00","pid":1,'
    '"start_ticks":1,"recording":"/r","socket":"/s","log":"/etc/shadow"}',
    '{"name":"bad","command":["p"],"started_at":"x","pid":true,"start_ticks":1,'
    '"recording":"/r","socket":"/s","log":"/l"}',
    '{"name":"bad","command":["p"],"started_at":"x","pid":1e400,"start_ticks":1,'
    '"recording":"/r","socket":"/s","log":"/l","surprise":1}',
    "[" * 100_000,
    "\xff\xfe",
]


@pytest.mark.parametrize("body", DAMAGED, ids=range(len(DAMAGED)))
def test_damaged_metadata_is_named_never_a_traceback(env: dict[str, str], body: str) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    meta = state / "bad.session.json"
    # Never a real PID: these files name pid -1, 1 or none (the env fixture's
    # cleanup kills only a live session read through the registry's checks).
    meta.write_bytes(body.encode("latin-1") if body == "\xff\xfe" else body.encode())
    listed = probetop(env, "ls")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert f"{meta}: damaged session metadata" in listed.stderr
    as_json = forked(env, "ls", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == {"sessions": []}
    for argv in (["stop", "bad"], ["attach", "bad"]):
        one_error(forked(env, *argv), "bad", "damaged")
    # the name stays taken: a new session never writes over the damaged one's files
    one_error(forked(env, "cpu", "--time", "1", "--detach", "--name", "bad"), "damaged")
    assert meta.exists()
    meta.unlink()


# -- class 2: one name, one session; private directories ---------------------


def test_one_name_one_session_when_started_together(env: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "probetop.tui.main", "cpu", "--threads", "1",
            "--time", "20", "--detach", "--name", "same"]  # fmt: skip
    pipe, null = subprocess.PIPE, subprocess.DEVNULL
    runs = [
        subprocess.Popen(argv, env=env, stdout=pipe, stderr=pipe, stdin=null, text=True)
        for _ in range(6)
    ]
    outs = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in runs]
    started = [code for code, _err in outs if code == 0]
    assert len(started) == 1, outs
    for code, err in outs:
        if code:
            assert code == 2 and "Traceback" not in err and "'same'" in err, err
    assert sessions(env)["same"]["state"] == "running"
    assert probetop(env, "stop", "same").returncode == 0


def _setpriv_nobody() -> list[str]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def test_state_dir_must_be_private(env: dict[str, str]) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    state.mkdir(mode=0o700, parents=True)
    os.chmod(state, 0o777)
    one_error(probetop(env, "ls"), str(state), "not private", "0777")
    one_error(probetop(env, "cpu", "--time", "1", "--detach"), "not private")
    os.chmod(state, 0o700)
    # a symlinked state directory is fine when the directory is private and ours
    real = Path(tempfile.mkdtemp(prefix="pts-real-", dir="/tmp"))
    try:
        linked = dict(env, XDG_STATE_HOME=str(real / "link"))
        (real / "target").mkdir(mode=0o700)
        (real / "link").mkdir(mode=0o700)
        (real / "link" / "probetop").symlink_to(real / "target")
        assert probetop(linked, "ls").returncode == 0
        if os.geteuid() == 0:  # ... and refused when it is another user's
            os.chown(real / "target", 65534, 65534)
            one_error(probetop(linked, "ls"), "owner uid 65534")
    finally:
        shutil.rmtree(real, ignore_errors=True)


SESSION_COMMANDS = (
    ("ls",),
    ("ls", "--json"),
    ("stop", "x"),
    ("stop",),
    ("attach", "x"),
    ("follow", "x"),
    ("cpu", "--time", "1", "--detach"),
)


@pytest.mark.parametrize("which", ["state", "runtime"])
@pytest.mark.parametrize("unsafe", ["0777", "0770", "0722", "nobody"])
def test_every_session_command_refuses_an_unsafe_directory(
    env: dict[str, str], which: str, unsafe: str
) -> None:
    """docs/sessions.md: a state or runtime directory that is group- or
    world-writable, or another user's, is refused by every session command
    (exit 2, naming it, its owner and mode). `ls` and `stop` once read an
    unsafe runtime directory's sockets without a word."""
    base = env["XDG_STATE_HOME"] if which == "state" else env["XDG_RUNTIME_DIR"]
    where = Path(base) / "probetop"
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    if unsafe == "nobody":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the directory to another user")
        os.chown(where, 65534, 65534)
        says = "owner uid 65534"
    else:
        os.chmod(where, int(unsafe, 8))
        says = f"mode {unsafe}"
    for args in SESSION_COMMANDS:
        out = (probetop if args == SESSION_COMMANDS[0] else forked)(env, *args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        one_error(out, str(where), "not private", says)
        assert out.stdout == "", (args, out.stdout)
    assert not list(Path(env["XDG_STATE_HOME"]).rglob("*.session.json"))


def test_client_refuses_a_socket_served_by_another_user(tmp_path: Path) -> None:
    prefix = _setpriv_nobody()
    where = Path(tempfile.mkdtemp(prefix="pts-", dir="/tmp"))
    os.chmod(where, 0o777)
    sock = where / "s.sock"
    server = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)\n"
        "print('up', flush=True)\n"
        "c,_=s.accept(); c.sendall(b'{\"ok\": true}\\n'); c.recv(100)\n"
    )
    proc = subprocess.Popen([*prefix, "/usr/bin/python3", "-c", server, str(sock)],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        with pytest.raises(SessionError, match="served by uid 65534"):
            request(sock, "stop")
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(where, ignore_errors=True)


def test_a_link_planted_at_the_log_is_never_followed(env: dict[str, str]) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    state.mkdir(mode=0o700, parents=True)
    victim = Path(env["XDG_RUNTIME_DIR"]) / "victim.txt"
    victim.write_text("precious\n")
    (state / "lnk.log").symlink_to(victim)
    out = probetop(env, "cpu", "--time", "1", "--detach", "--name", "lnk")
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert victim.read_text() == "precious\n"
    assert "precious" not in out.stderr  # nor read through it to print "the log"
    assert not (state / "lnk.session.json").exists()  # the name is free again


def test_a_session_failing_at_start_is_never_called_started(env: dict[str, str]) -> None:
    """A file at --record changed just now, holding lines, is not the
    session's header: the session's own failure is what the caller reports."""
    old = Path(env["XDG_RUNTIME_DIR"]) / "old.txt"
    old.write_text("a line\nanother\n")  # modified within the last second
    out = probetop(env, "iops", "/nonexistent/dir/x", "--detach", "--name", "bad",
                   "--record", str(old))  # fmt: skip
    assert out.returncode != 0, out.stdout
    assert "started" not in out.stdout, out.stdout
    assert "/nonexistent/dir" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert old.read_text() == "a line\nanother\n"


# -- class 3: a recording that could not be completed -----------------------


@pytest.mark.root
def test_stop_exits_74_when_the_session_lost_its_recording(env: dict[str, str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = Path(tempfile.mkdtemp(prefix="pts-full-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount)], check=True)
    try:
        started = probetop(env, "demo", "--detach", "--name", "full",
                           "--record", str(mount / "full.jsonl.zst"))  # fmt: skip
        assert started.returncode == 0, started.stderr
        log = Path(env["XDG_STATE_HOME"]) / "probetop" / "full.log"
        # fill what is left (bounded: the tmpfs is 160 KiB)
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=4k"],
                       capture_output=True, check=False)  # fmt: skip
        wait_for(lambda: "No space left" in log.read_text(), 120, "the disk to fill")
        stopped = probetop(env, "stop", "full")
        assert stopped.returncode == 74, (stopped.returncode, stopped.stderr)
        assert "recording is incomplete" in stopped.stdout + stopped.stderr
        assert sessions(env)["full"]["exit_code"] == 74
        report = probetop(env, "report", str(mount / "full.jsonl.zst"))
        assert report.returncode == 0 and "no footer" in report.stderr, report.stderr
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


@pytest.mark.root
def test_a_session_that_fills_its_own_state_dir_still_ends_finished_74(
    env: dict[str, str],
) -> None:
    """Metadata, log and recording on one full disk: the exit status is
    written into space the session held from its start (it was "died" and
    `stop` exited 1: the status write failed, and that failure killed it)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = Path(tempfile.mkdtemp(prefix="pts-full-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=700", "tmpfs", str(mount)],
                   check=True)  # fmt: skip
    env = dict(env, XDG_STATE_HOME=str(mount))
    try:
        started = probetop(env, *QUIET_CPU, "--interval", "0.1", "--time", "300",
                           "--detach", "--name", "full")  # fmt: skip
        assert started.returncode == 0, started.stderr
        recording = mount / "probetop" / "full.jsonl"
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=4k"],
                       capture_output=True, check=False)  # fmt: skip
        sizes = [-1]

        def stopped_growing() -> bool:  # ten intervals without a line: the disk is full
            sizes.append(recording.stat().st_size)
            time.sleep(1.0)
            return recording.stat().st_size == sizes[-1]

        wait_for(stopped_growing, 60, "the recording to meet the full disk")
        stopped = probetop(env, "stop", "full")
        assert stopped.returncode == 74, (stopped.returncode, stopped.stdout, stopped.stderr)
        assert "Traceback" not in stopped.stderr
        listed = sessions(env)["full"]
        assert (listed["state"], listed["exit_code"]) == ("finished", 74)
        assert [p.name for p in (mount / "probetop").iterdir() if p.name.startswith(".")] == []
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


@pytest.mark.root
def test_detach_onto_a_full_state_dir_is_refused_in_one_line(env: dict[str, str]) -> None:
    """No room for the metadata: exit 2 and one line naming the file (it
    was a traceback), nothing started, nothing left behind."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = Path(tempfile.mkdtemp(prefix="pts-full-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=700", "tmpfs", str(mount)],
                   check=True)  # fmt: skip
    try:
        (mount / "probetop").mkdir(mode=0o700)
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=4k"],
                       capture_output=True, check=False)  # fmt: skip
        out = probetop(dict(env, XDG_STATE_HOME=str(mount)), "cpu", "--time", "2", "--detach",
                       "--name", "nf")  # fmt: skip
        one_error(out, f"cannot write {mount}/probetop/nf.session.json", "No space left")
        assert list((mount / "probetop").iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_report_that_cannot_be_written_exits_74_without_a_traceback(
    env: dict[str, str], buffered: bool
) -> None:
    """stdout on a full disk (/dev/full): one error line, exit 74 (it was a
    traceback and exit 1, and a detached session's log there was the same).
    Both ways Python may write stdout: block-buffered, as for any user (the
    write fails only at the final flush, which once passed as exit 0), and
    unbuffered (PYTHONUNBUFFERED, set in some CI shells)."""
    env = {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "probetop.tui.main", "cpu", "--threads", "1", "--time", "1",
             "--headless"],
            env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert out.returncode == 74, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "probetop: error: cannot write the output: No space left on device"
    ]


def test_a_recording_deleted_under_a_session_is_written_back(env: dict[str, str]) -> None:
    """`rm` of a running session's recording: the session wrote on into the
    unlinked file and `stop` said "finished", exit 0, naming a file that no
    longer existed. Now the whole recording, footer included, is back at its
    path when the session ends, and its log says so."""
    started = probetop(env, *QUIET_CPU, "--interval", "0.2", "--time", "300",
                       "--detach", "--name", "gone")  # fmt: skip
    assert started.returncode == 0, started.stderr
    state = Path(env["XDG_STATE_HOME"]) / "probetop"
    recording = state / "gone.jsonl"
    wait_for(lambda: recording.read_bytes().count(b'"type":"sample"') >= 2, 30, "samples")
    recording.unlink()
    stopped = probetop(env, "stop", "gone")
    assert stopped.returncode == 0, stopped.stderr
    assert "was deleted while it ran: written back" in stopped.stdout
    session = load_session(recording)
    assert session.footer is not None and session.warnings == []
    assert sum(1 for _ in session.samples()) >= 2


def test_a_recording_replaced_under_a_session_is_left_and_stop_says_74(
    env: dict[str, str],
) -> None:
    started = probetop(env, *QUIET_CPU, "--interval", "0.2", "--time", "300",
                       "--detach", "--name", "swapped")  # fmt: skip
    assert started.returncode == 0, started.stderr
    recording = Path(env["XDG_STATE_HOME"]) / "probetop" / "swapped.jsonl"
    wait_for(lambda: recording.read_bytes().count(b'"type":"sample"') >= 1, 30, "a sample")
    recording.unlink()
    recording.write_text("someone else's file\n")
    stopped = probetop(env, "stop", "swapped")
    assert stopped.returncode == 74, (stopped.returncode, stopped.stderr)
    assert "could not be written back: another file has taken its place" in stopped.stdout
    assert recording.read_text() == "someone else's file\n"
    assert sessions(env)["swapped"]["exit_code"] == 74


def test_an_attached_view_says_a_damaged_recording_once(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    header = Path(__file__).parents[1] / "data" / "demo_session.jsonl"
    rec.write_bytes(header.read_bytes().split(b"\n", 1)[0] + b"\n{not json}\n" + b"x" * 100)
    info = SessionInfo("r", ["probetop"], "2026-01-01T00:00:00+00:00", 1, 1,
                       str(rec), str(tmp_path / "s"), str(tmp_path / "l"))  # fmt: skip
    view = AttachedSession.open(info)
    try:
        with pytest.raises(RecordingError, match="line 2"):
            view.poll()
        for _ in range(3):  # no new error per frame, nothing more read
            assert view.poll() == [] and view.caught_up
        assert view.failed is not None and "line 2" in view.failed
    finally:
        view.close()


# -- class 4: junk values of the session commands ---------------------------

JUNK = [
    (["stop", "x", "--wait", "nan"], "--wait"),
    (["stop", "x", "--wait", "inf"], "--wait"),
    (["stop", "x", "--wait", "0"], "--wait"),
    (["stop", "x", "--wait", "-1"], "--wait"),
    (["stop", "x", "--wait", "1e309"], "--wait"),
    (["attach", "a/b"], "session name"),
    (["stop", "../x"], "session name"),
    (["attach", "x" * 65], "session name"),
    (["cpu", "--time", "1", "--detach", "--name", "../x"], "session name"),
    (["cpu", "--time", "1", "--detach", "--name", ""], "session name"),
    (["ls", "--name", "x"], "--name would be ignored"),
    (["ls", "--record", "/tmp/never.jsonl"], "--record would be ignored"),
    (["stop", "x", "--metrics", "9100"], "--metrics would be ignored"),
    (["attach", "x", "--time", "5"], "--time would be ignored"),
    (["compare", "--detach", "a", "b"], "--detach"),
]


@pytest.mark.parametrize(("argv", "says"), JUNK, ids=[" ".join(a)[:40] for a, _s in JUNK])
def test_junk_session_values_get_one_line(env: dict[str, str], argv: list[str], says: str) -> None:
    one_error((probetop if argv == JUNK[0][0] else forked)(env, *argv, timeout=60), says)
    assert not Path("/tmp/never.jsonl").exists()


def test_ls_on_a_session_that_was_killed_mid_frame(env: dict[str, str]) -> None:
    """kill -9 during a .zst frame: ls says died, the recording reads back with
    a warning, stop refuses with a message; its name is free again, the
    session kept under a name of its own (its --record file where it was)."""
    rec = Path(env["XDG_RUNTIME_DIR"]) / "k.jsonl.zst"
    started = probetop(env, *QUIET_CPU, "--interval", "0.2", "--time", "300",
                       "--detach", "--name", "k9", "--record", str(rec))  # fmt: skip
    assert started.returncode == 0, started.stderr
    pid = int(str(sessions(env)["k9"]["pid"]))
    time.sleep(2)
    os.kill(pid, 9)
    wait_for(lambda: sessions(env)["k9"]["state"] == "died", 10, "died")
    for argv in (["report", str(rec)], ["export", "-O", "csv", str(rec)]):
        out = probetop(env, *argv)
        assert out.returncode == 0 and "no footer" in out.stderr, out.stderr
    one_error(probetop(env, "stop", "k9"), "not running (died")
    again = probetop(env, "cpu", "--threads", "1", "--time", "1", "--detach", "--name", "k9")
    assert again.returncode == 0 and "kept as k9-" in again.stderr, again.stderr
    kept = [s for name, s in sessions(env).items() if name.startswith("k9-")]
    assert len(kept) == 1 and kept[0]["state"] == "died", kept
    assert kept[0]["recording"] == str(rec) and rec.exists()


def _flood(pid: int, sig: int, limit_s: float = 20.0) -> int:
    """``kill -SIG PID`` as fast as this process can, until PID is gone (or
    ``limit_s``); the number sent."""
    sent, deadline = 0, time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            for _ in range(1000):
                os.kill(pid, sig)
                sent += 1
        except ProcessLookupError:
            break
    return sent


def test_a_flood_of_kill_still_ends_finished_with_its_status(env: dict[str, str]) -> None:
    """SIGTERM sent in a tight loop until the session is gone (`kill` pressed
    over and over, a `stop` that timed out and sent its own SIGTERM): each
    session writes its report, its footer and its exit status, 143. Before,
    6 of 8 ended "died" (a signal raised in the status write, or the handler
    nested until RecursionError), and the CI test that stops a session after
    `ls` saw one of them."""
    names = [f"fl{i}" for i in range(4)]
    for name in names:
        rec = Path(env["XDG_RUNTIME_DIR"]) / f"{name}.jsonl"
        started = probetop(env, *QUIET_CPU, "--interval", "0.2", "--time", "300",
                           "--detach", "--name", name, "--record", str(rec))  # fmt: skip
        assert started.returncode == 0, started.stderr
        pid = int(str(sessions(env)[name]["pid"]))
        wait_for(lambda rec=rec: rec.read_bytes().count(b'"type":"sample"') >= 2, 30, "samples")
        assert _flood(pid, signal.SIGTERM) > 0
    listed = sessions(env)
    for name in names:
        log = (Path(env["XDG_STATE_HOME"]) / "probetop" / f"{name}.log").read_text()
        assert listed[name]["state"] == "finished" and listed[name]["exit_code"] == 143, (
            listed[name],
            log[-600:],
        )
        assert "INTERRUPTED (SIGTERM)" in log and "Traceback" not in log, log[-600:]
        assert load_session(Path(env["XDG_RUNTIME_DIR"]) / f"{name}.jsonl").footer is not None


# -- class 1: a detached session under load stops when asked ------------------


def test_stop_ends_a_loaded_session_promptly(env: dict[str, str], http_server: str) -> None:
    """http load at 5000/s with 500 connections, detached: `stop` returns with
    the report within 2 s plus its own start-up (the stop command's Python
    and imports, measured alone below)."""
    started = probetop(env, "http", f"http://{http_server}/", "--rate", "5000",
                       "--connections", "500", "--time", "0",  # until stopped (absent: 10 s)
                       "--detach", "--name", "load")  # fmt: skip
    assert started.returncode == 0, started.stderr
    time.sleep(2)
    t0 = time.monotonic()
    assert probetop(env, "ls").returncode == 0
    startup = time.monotonic() - t0
    t0 = time.monotonic()
    stopped = probetop(env, "stop", "load")
    took = time.monotonic() - t0
    assert stopped.returncode == 0, stopped.stderr
    assert "in flight" in stopped.stdout and "Traceback" not in stopped.stderr
    assert took - startup < 2.0, (took, startup)
    assert sessions(env)["load"]["state"] == "finished"


def test_relative_xdg_dirs_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG spec: a relative XDG_STATE_HOME / XDG_RUNTIME_DIR is invalid.
    Taken as is it named a new directory per working directory: a session
    started in one was not listed, attached or stopped from another."""
    from probetop.tui.sessions.registry import runtime_dir, state_dir

    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    (work / "rel").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", "rel")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "rel")
    monkeypatch.chdir(work)
    expected = home / ".local" / "state" / "probetop"
    assert state_dir() == expected
    assert runtime_dir() == expected
    assert list((work / "rel").iterdir()) == []  # nothing made under the working directory


def test_a_session_killed_but_not_yet_reaped_is_died_not_running() -> None:
    """kill -9 leaves a zombie until the parent reaps it; its /proc entry and
    start time are still there, but it runs nothing: ``ls`` says died, and
    ``stop`` does not wait 30 s for a process that will never answer."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        ticks = process_start_ticks(child.pid)
        assert ticks is not None
        info = SessionInfo(
            name="zombie",
            command=["sleep", "60"],
            started_at="2026-01-01T00:00:00+00:00",
            pid=child.pid,
            start_ticks=ticks,
            recording="/nonexistent/r.jsonl",
            socket="/nonexistent/s",
            log="/nonexistent/l",
        )
        assert info.state == "running"
        os.kill(child.pid, 9)  # our own child; not waited for, so a zombie
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(f"/proc/{child.pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.02)
        else:
            pytest.fail("the killed child never became a zombie")
        assert info.state == "died"
    finally:
        child.kill()
        child.wait(10)


def test_a_session_directory_through_a_link_another_user_planted_is_refused(
    env: dict[str, str],
) -> None:
    """``XDG_STATE_HOME`` in a shared directory (sticky, world-writable, as
    /tmp), where another user (``nobody``) made ``probetop`` a link to a
    private directory of ours: it passed as private (ours, 0700), and
    sessions were listed, written and removed there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user (nobody)")
    shared = Path(env["XDG_STATE_HOME"]).parent / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    os.chmod(shared.parent, 0o755)
    ours = Path(env["XDG_STATE_HOME"]).parent / "ours"
    ours.mkdir(mode=0o700)
    planted = ours / "x.session.json"
    planted.write_text("{}")
    made = as_nobody("ln", "-s", str(ours), str(shared / "probetop"))
    assert made.returncode == 0, made.stderr
    there = dict(env, XDG_STATE_HOME=str(shared))
    for args in (("ls",), ("rm", "x"), ("stop", "x")):
        out = forked(there, *args)
        one_error(out, "is a link that another user (uid 65534) made in")
    assert planted.exists()
