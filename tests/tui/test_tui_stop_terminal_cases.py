"""Terminal cases of the hostile table (docs/reliability.md, "Hostile
terminals and processes", issue 29 item 7) not covered elsewhere: each in a
real terminal, an interactive bash in a private tmux server."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest
from test_tui_jobcontrol import (
    EXE,
    alternate,
    ended,
    footer,
    gone,
    job_pids,
    shell,
    state,
    type_line,
    wait,
)


def test_setsid_without_w_runs_headless(tmp_path: Path) -> None:
    """``setsid probetop ...`` (no ``-w``): setsid forks, returns at once, and
    the shell reads the keyboard again while probetop runs on the same
    terminal with none of its own. Before: a dashboard drew over the
    shell's prompt, shared every key with it, and (its run over) waited for
    a q that the shell took. Now: headless, said once, the report on the
    terminal, the recording whole."""
    rec = tmp_path / "r.jsonl"
    run = shlex.join([EXE, "cpu", "--threads", "1", "--time", "2", "--record", str(rec)])
    with shell() as tmux:
        type_line(tmux, f"setsid {run}; echo RC=$?")
        deadline = time.monotonic() + 90
        while not (rec.exists() and rec.read_bytes().rstrip().endswith(b"}")
                   and b'"footer"' in rec.read_bytes()[-4096:]):  # fmt: skip
            assert not alternate(tmux), "a dashboard on a terminal that is not its own"
            assert time.monotonic() < deadline, "the run never ended"
            time.sleep(0.1)
        wait(tmux, lambda s: "execution time" in s, "the headless report")
        text = tmux("capture-pane", "-p", "-S", "-500", "-t", "t")  # the note scrolled off
        assert "running headless" in text and "Traceback" not in text, text
        assert not alternate(tmux)
    assert footer(rec)["reason"] == "completed"


def test_setsid_w_keeps_the_dashboard(tmp_path: Path) -> None:
    """``setsid -w``: setsid stays in the terminal's session and waits, so
    the keys are the dashboard's: it draws, q ends it, exit 0."""
    rec = tmp_path / "r.jsonl"
    run = shlex.join([EXE, "cpu", "--threads", "1", "--time", "120", "--record", str(rec)])
    with shell() as tmux:
        type_line(tmux, f"setsid -w {run}; echo RC=$?")
        wait(tmux, lambda s: "events/s" in s and s.startswith("probetop"), "the dashboard", 90)
        tmux("send-keys", "-t", "t", "q")
        text = wait(tmux, ended, "the end")
        assert "RC=0" in text and "running headless" not in text, text
    assert footer(rec)["reason"] == "completed"


def test_headless_in_the_background_with_tostop(tmp_path: Path) -> None:
    """``stty tostop``, then a headless run with ``&``: stopped by SIGTTOU
    at its first write to the terminal (as any program; that is what
    tostop asks), ``fg`` lets it finish: the report, exit 0, the recording
    whole with no probe sample missing (it stopped before its probe started)."""
    rec = tmp_path / "r.jsonl"
    run = shlex.join(
        [EXE, "cpu", "--threads", "1", "--time", "2", "--headless", "--record", str(rec)]
    )
    with shell() as tmux:
        type_line(tmux, f"stty tostop; {run} &")
        deadline = time.monotonic() + 90
        while not [pid for pid in _pids_of(str(rec)) if state(pid) == "T"]:
            assert time.monotonic() < deadline, "never stopped by SIGTTOU"
            time.sleep(0.1)
        type_line(tmux, "jobs")  # bash says it at its next prompt
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        type_line(tmux, "fg; echo RC=$?")
        text = wait(tmux, ended, "the end", 90)
        assert "RC=0" in text and "events per second" in text and "Traceback" not in text, text
    assert footer(rec)["reason"] == "completed"


def _pids_of(word: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if word.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_the_window_killed_with_the_view_up_ends_the_run_whole(tmp_path: Path) -> None:
    """``tmux kill-pane`` (the terminal closes) while the dashboard is drawn
    and measuring: both processes end, the recording gets its footer."""
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} cpu --threads 1 --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s and s.startswith("probetop"), "the dashboard", 90)
        waiter, child = job_pids(tmux)
        tmux("kill-pane", "-t", "t")
        assert gone(waiter, child), (state(waiter), state(child))
    # the hangup's SIGHUP, or SIGTERM (the waiter's death signal) when the
    # waiter went first: either way the run ended whole.
    assert footer(rec)["reason"] in ("interrupted (SIGHUP)", "interrupted (SIGTERM)")


def _tree(pid: int) -> list[int]:
    """``pid``'s descendants, from /proc."""
    parents: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(proc.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@pytest.mark.parametrize("mode", ["dashboard", "load"])
def test_no_secret_in_ps_of_what_a_terminal_run_starts(mode: str, tmp_path: Path) -> None:
    """HTTP runs given secrets on their command line, at a terminal: the
    dashboard of a repeated run (the waiter, the dashboard, the HTTP
    worker) and a load run (wrk's output at the terminal; its generator
    process) show none of them in /proc/PID/cmdline (what ps shows every
    user) nor in /proc/PID/environ (0400, the user's own environment)."""
    import stat
    import subprocess
    import sys

    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp_path, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = server.stdout.readline().split("port ")[1].split()[0]
        url = f"http://user:P1Zq7w@127.0.0.1:{port}/?sig=S5Zq7w"
        args = [EXE, "http", url, "-H", "Authorization: Bearer S2Zq7w", "-u", "u:S3Zq7w"]
        if mode == "load":
            args += ["--rate", "20", "--time", "120"]
            shown, helper, count = "Running 2m test", b"generator", 2
        else:
            args += ["--count", "5000", "--watch"]  # repeated mode: a dashboard with --watch
            shown, helper, count = "probetop", b"worker", 3
        with shell() as tmux:
            type_line(tmux, shlex.join(args))
            wait(tmux, lambda s: shown in s.splitlines()[0] if mode == "dashboard" else shown in s,
                 "the run", 90)  # fmt: skip
            shell_pid = int(tmux("display", "-p", "-t", "t", "#{pane_pid}").strip())
            deadline, seen = time.monotonic() + 60, []
            while time.monotonic() < deadline:
                seen = [p for p in _tree(shell_pid) if state(p) not in ("gone", "Z")]
                cmdlines = {p: Path(f"/proc/{p}/cmdline").read_bytes() for p in seen}
                if any(helper in c for c in cmdlines.values()) and len(seen) >= count:
                    break
                time.sleep(0.2)
            assert len(seen) >= count, f"{count} processes expected: {cmdlines}"
            for pid in seen:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                assert b"Zq7w" not in cmdline, cmdline
                assert b"Zq7w" not in environ, [v for v in environ.split(b"\0") if b"Zq7w" in v]
                assert stat.S_IMODE(Path(f"/proc/{pid}/environ").stat().st_mode) == 0o400
            tmux("send-keys", "-t", "t", "q" if mode == "dashboard" else "C-c")
            assert gone(*seen), [state(pid) for pid in seen]  # else the line below is its input
            type_line(tmux, "echo RC=$?")
            wait(tmux, ended, "the end")
    finally:
        server.terminate()
        server.wait(10)


def test_the_mode_of_a_target_lock_file(tmp_path: Path) -> None:
    """The one file probetop writes that other users may write too: a
    target's lock file (probes/core/targetlock.py), 0666 in the sticky
    shared directory /run/lock/probetop (1777), so every user's run takes
    the same lock; it holds "PID COMMAND TARGET", no option of the run."""
    import os
    import stat
    import subprocess

    from probetop.probes.core.targetlock import SHARED_DIR, lock_dir

    if lock_dir() != SHARED_DIR:
        pytest.skip(f"no shared lock directory here ({lock_dir()})")
    img = tmp_path / "t.img"
    img.write_bytes(b"\0" * (4 << 20))
    before = set(SHARED_DIR.iterdir())
    run = subprocess.Popen(
        [EXE, "iops", str(img), "--rw", "randread", "--time", "30", "--headless"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    try:
        deadline, new = time.monotonic() + 90, []
        while not new and time.monotonic() < deadline:
            # Its own lock: the PID a word of the first field ("HOLDER,STARTED"
            # in a split run). A substring match took another test's lock (PID
            # 12345 for 1234), which its run then removed: FileNotFoundError.
            new = [p for p in set(SHARED_DIR.iterdir()) - before if _holds(p, run.pid)]
            time.sleep(0.1)
        assert new, "no lock file seen"
        assert stat.S_IMODE(SHARED_DIR.stat().st_mode) == 0o1777
        for path in new:
            assert stat.S_IMODE(path.stat().st_mode) == 0o666, path
            assert "iops" in _text(path) and "--rw" not in _text(path), _text(path)
    finally:
        run.terminate()
        run.wait(60)


def _holds(path: Path, pid: int) -> bool:
    """``path`` is a lock file of run ``pid`` ("PID[,PID] COMMAND TARGET")."""
    words = _text(path).split()
    return bool(words) and str(pid) in words[0].split(",")


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
