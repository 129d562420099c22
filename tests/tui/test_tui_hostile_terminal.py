"""The hostile table for terminals and processes (docs/reliability.md):
resize storms, stdin closed, nohup, setsid, script, what `ps` and /proc show
of every process probetop starts, and the mode of every file it writes.
Job control (Ctrl-Z, fg, bg, SIGTTOU/SIGTTIN) is test_tui_jobcontrol.py;
a terminal that hangs up is test_tui_signals.py."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_tui_jobcontrol import (
    EXE,
    alternate,
    ended,
    fg_then_quit,
    footer,
    shell,
    type_line,
    wait,
    wait_alternate,
)

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def test_a_resize_storm_ends_in_the_last_size_with_the_recording_whole(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    with shell([EXE, "cpu", "--threads", "1", "--time", "120", "--record", str(rec)]) as tmux:
        # The probe measuring (a number, not the label of the first frame):
        # the storm must hit a dashboard whose recording is taking samples.
        wait(tmux, lambda s: re.search(r"events/s +\d", s) is not None, "the first events/s")
        tmux("set", "-t", "t", "window-size", "manual")
        for i in range(40):  # 40 sizes in about 1 s, some below the minimum
            tmux("resize-window", "-t", "t", "-x", str(50 + (i * 37) % 130), "-y", str(12 + i % 40))
            time.sleep(0.02)
        tmux("resize-window", "-t", "t", "-x", "90", "-y", "28")
        # A frame drawn for a size the storm had already left can be on the
        # screen for a moment (tmux resizes faster than any app redraws):
        # what must hold is the frame the storm ends in, status line on top
        # and footer at the bottom, within the wait.
        text = wait(tmux, settled, "the status line on top and the footer at the bottom")
        rows = text.splitlines()
        assert len(rows) <= 28, text
        assert all(len(row) <= 90 for row in rows)
        assert "Traceback" not in text
        tmux("send-keys", "-t", "t", "q")
        deadline = time.monotonic() + 30
        while tmux("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
    assert footer(rec)["reason"] == "completed"
    samples = [json.loads(line) for line in rec.read_bytes().splitlines()[1:-1]]
    cpu = [s["t"] for s in samples if s.get("type") == "sample" and s.get("probe") == "cpu"]
    assert len(cpu) >= 2, f"{len(cpu)} cpu samples"
    assert max(b - a for a, b in itertools.pairwise(cpu)) < 2.5  # no gap


def settled(text: str) -> bool:
    rows = text.splitlines()
    return bool(rows) and rows[0].startswith("probetop  |  live") and "^p" in rows[-1]


@pytest.mark.parametrize(
    "wrapper",
    ["stdin-closed", "nohup", "term-dumb"],
)
def test_without_a_terminal_on_stdin_it_runs_headless(tmp_path: Path, wrapper: str) -> None:
    """``< /dev/null`` or ``nohup`` (which reads /dev/null and writes
    nohup.out) in a terminal: no dashboard that could not read a key, the
    headless report instead, exit 0, the recording whole. So with
    ``TERM=dumb`` (a terminal that cannot draw one: Emacs's shell), said
    once: before, the dashboard drew there and waited for a q."""
    rec, out = tmp_path / "r.jsonl", tmp_path / "nohup.out"
    run = [EXE, "cpu", "--threads", "1", "--time", "2", "--record", str(rec)]
    line = {
        "stdin-closed": shlex.join(run) + " < /dev/null",
        "nohup": shlex.join(["nohup", *run]),
        "term-dumb": "TERM=dumb " + shlex.join(run) + " 2> err.txt",
    }[wrapper]
    with shell() as tmux:
        type_line(tmux, f"cd {shlex.quote(str(tmp_path))}; {line}; echo RC=$?")
        text = wait(tmux, ended, "the end")
        assert "RC=0" in text and not alternate(tmux) and "Traceback" not in text
    report = out.read_text() if wrapper == "nohup" else text
    assert "events per second" in report
    assert footer(rec)["reason"] == "completed"
    if wrapper == "term-dumb":
        said = (tmp_path / "err.txt").read_text()
        assert said.count("running headless: TERM=dumb") == 1, said


@pytest.mark.parametrize("wrapper", ["setsid", "script"])
def test_no_job_control_still_a_dashboard_that_quits_cleanly(tmp_path: Path, wrapper: str) -> None:
    """``setsid -w`` (no controlling terminal) and ``script -qec`` (a pty of
    its own, no shell with job control): the dashboard runs, Ctrl-Z says why
    it does not suspend, q ends it with the footer and exit 0."""
    rec = tmp_path / "r.jsonl"
    run = shlex.join([EXE, "cpu", "--threads", "1", "--time", "120", "--record", str(rec)])
    line = (
        f"setsid -w {run}" if wrapper == "setsid" else f"script -qec {shlex.quote(run)} /dev/null"
    )
    with shell() as tmux:
        type_line(tmux, f"{line}; echo RC=$?")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "not suspended" in s, "the notice")
        tmux("send-keys", "-t", "t", "q")
        text = wait(tmux, ended, "the end")
        assert "RC=0" in text and "Traceback" not in text
    assert footer(rec)["reason"] == "completed"


@pytest.mark.parametrize("stderr", ["file", "devnull"])
def test_stderr_redirected_the_view_is_still_on_the_terminal(tmp_path: Path, stderr: str) -> None:
    """``probetop cpu 2>err.log`` (or ``2>/dev/null``: hiding warnings) at a
    terminal. Before (hostile3): Textual drew the whole view into the file
    (45 KB of escape sequences in 4 s), the terminal stayed blank and the
    run waited for a q typed blind. Now the view is on the terminal, as vim
    or htop would be, Ctrl-Z and fg work, q ends it (exit 0, footer), and
    the file holds no escape sequence."""
    rec, err = tmp_path / "r.jsonl", tmp_path / "err.log"
    target = str(err) if stderr == "file" else "/dev/null"
    run = shlex.join([EXE, "cpu", "--threads", "1", "--rate", "50", "--time", "120",
                      "--record", str(rec)])  # fmt: skip
    with shell() as tmux:
        type_line(tmux, f"{run} 2>{shlex.quote(target)}")
        wait(tmux, lambda s: re.search(r"events/s +\d", s) is not None, "the view on the terminal")
        assert alternate(tmux)
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s and "$ " in s, "stopped as a job")
        wait_alternate(tmux, False)
        fg_then_quit(tmux, lambda s: "events/s" in s and "^p" in s.rstrip()[-12:])
    assert footer(rec)["reason"] == "completed"
    if stderr == "file":
        assert "\x1b" not in err.read_text(), err.read_text()[:200]


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for row in out.splitlines():
        child, parent = map(int, row.split())
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_what_ps_and_proc_show_of_the_processes_it_starts(tmp_path: Path) -> None:
    """The HTTP probe's worker gets its request (URL, headers, credentials)
    on a pipe: none of it in its command line; no process gets a secret in
    its environment (the environment is the user's own, inherited); the
    process the user started shows its command line redacted
    (probes/record/cmdline.py)."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "http.server",
            "0",
            "--bind",
            "127.0.0.1",
        ],  # -u: its port line now
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().split("port ")[1].split()[0]
        url = f"http://127.0.0.1:{port}/?sig=S5ecret"
        args = ["http", url, "-H", "Authorization: Bearer S2ecret", "-u", "user:S3ecret"]
        run = subprocess.Popen(
            [*PROBETOP, *args, "--count", "400", "--interval", "0.05", "--headless"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline, workers = time.monotonic() + 60, []
            while not workers and time.monotonic() < deadline:
                workers = [p for p in _descendants(run.pid) if "probetop.probes" in _cmdline(p)]
                time.sleep(0.1)
            assert workers, "no worker process seen"
            for pid in [run.pid, *workers]:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                assert b"ecret" not in environ
                assert stat.S_IMODE(os.stat(f"/proc/{pid}/environ").st_mode) == 0o400
            for pid in [run.pid, *workers]:  # the user's own: redacted in place at start-up
                assert "ecret" not in _cmdline(pid), _cmdline(pid)
        finally:
            run.terminate()
            run.wait(30)
    finally:
        server.terminate()
        server.wait(10)


def test_the_mode_of_every_file_it_writes(tmp_path: Path) -> None:
    """Under umask 022: recordings, exports, plots, a created IOPS target and
    a warm-up checkpoint are 0600 (they can hold what was measured and where);
    a node_exporter textfile 0644 (node_exporter, often another user, reads it)."""

    def run(*args: str) -> None:
        done = subprocess.run(
            [*PROBETOP, *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            preexec_fn=lambda: os.umask(0o022),
        )
        assert done.returncode == 0, done.stderr

    textfiles = tmp_path / "tf"
    textfiles.mkdir()
    run("cpu", "--threads", "1", "--time", "2", "--headless", "--record", "a.jsonl")
    run("cpu", "--threads", "1", "--time", "2", "--headless", "--record", "b.jsonl.zst",
        "--textfile", str(textfiles))  # fmt: skip
    run("export", "a.jsonl", "-O", "openmetrics", "--out", "a.om")
    run("compare", "a.jsonl", "b.jsonl.zst", "--plot", "c.svg")
    run("iops", "t.img", "--rw", "randread", "--size", "4M", "--time", "1", "--headless")
    run("warmup", "t.img", "--headless")
    private = ["a.jsonl", "b.jsonl.zst", "a.om", "c.svg", "t.img", "t.img.probetop-warmup.json"]
    modes = {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in private}
    assert modes == dict.fromkeys(private, 0o600), {k: oct(v) for k, v in modes.items()}
    assert stat.S_IMODE((textfiles / "probetop.prom").stat().st_mode) == 0o644
