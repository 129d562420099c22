"""Job control as in vim or less (tui/sessions/jobcontrol.py, tui/ui/quietdriver.py),
in a real terminal: an interactive bash in a private tmux server, so Ctrl-Z,
``fg``, ``bg`` and a closing terminal are the shell's and the kernel's own.

What was seen before (issue 29): SIGTSTP then SIGCONT gave a traceback
(EBADF from a closed wake-up pipe) and exit 0; through the shell the
dashboard stayed stopped with its recording; ended while suspended, it
never wrote its footer."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from probetop.tui.sessions.waiter import DEDUP_S
from test_tui_keybar_repaint import EXE
from tui_fixtures import DEMO_FILE

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or shutil.which("bash") is None, reason="needs tmux and bash"
)

Tmux = Callable[..., str]
# The run each case suspends, resumes and ends: a cpu probe whose one worker
# takes 50 events a second (sysbench's --rate), not one that keeps a core
# busy. What is checked here is the terminal, the signals, the job and the
# recording, which a sleeping worker keeps growing as a busy one does; the
# dashboard runs in tmux, outside pytest's process tree, so its CPU was not
# seen per test: 10 full-speed runs took the file from ~14 to ~20 CPU-s
# (measured as a cgroup's cpuacct.usage) and their cores from the workers.
CPU = "cpu --threads 1 --rate 50"
_servers = itertools.count()


@contextmanager
def shell(command: list[str] | None = None, width: int = 100, height: int = 30) -> Iterator[Tmux]:
    """An interactive bash (job control on) in a private tmux server, or
    ``command`` as the window's own process (no shell: no job control)."""
    server = f"probetop-jc-{os.getpid()}-{next(_servers)}"  # one per test: no race with the last

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True).stdout

    run = command or ["env", "PS1=$ ", "bash", "--norc", "--noprofile", "-i"]
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height))
    tmux("respawn-pane", "-k", "-t", "t", shlex.join(["env", "-u", "COLUMNS", "-u", "LINES", *run]))
    try:
        yield tmux
    finally:
        tty = tmux("display", "-p", "-t", "t", "#{pane_tty}").strip()
        left = _pids_on(tty) if tty else []
        tmux("kill-server")
        for pid in left:  # a process left behind: a bug the assertions missed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _pids_on(tty: str) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "-t", tty], capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def screen(tmux: Tmux) -> str:
    return tmux("capture-pane", "-p", "-t", "t")


def wait(tmux: Tmux, check: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = screen(tmux)
        if check(text):
            return text
        assert time.monotonic() < deadline, f"never {what}:\n{text}"
        time.sleep(0.1)


def ended(text: str) -> bool:
    """The shell printed the exit status (``echo RC=$?``; not the typed line)."""
    return re.search(r"RC=\d", text) is not None


def alternate(tmux: Tmux) -> bool:
    """The dashboard's view is up (it draws on the alternate screen)."""
    return tmux("display", "-p", "-t", "t", "#{alternate_on}").strip() == "1"


def wait_alternate(tmux: Tmux, on: bool, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while alternate(tmux) != on:
        assert time.monotonic() < deadline, f"view never {'back' if on else 'suspended'}"
        time.sleep(0.1)


def type_line(tmux: Tmux, line: str) -> None:
    tmux("send-keys", "-t", "t", "-l", line)
    tmux("send-keys", "-t", "t", "Enter")


# bash says a job's end ("[1]+  Exit 143") once: at its next prompt, or in
# the output of the next `jobs`. A wait loop of `jobs %1 >/dev/null` took
# that line to /dev/null whenever the job ended during the loop, and a test
# looking for it failed under load with a right product. `wait %1` gives the
# status itself: 147-150 while bash still sees the job stopped (it has not
# yet seen the continue that the kill sent), 127 when the prompt already
# said its end (then that line is on screen). Bounded: 30 s.
WAIT_JOB_END = (
    "for i in $(seq 300); do wait %1 2>/dev/null; rc=$?; "
    "case $rc in 14[7-9]|150) sleep .1;; *) break;; esac; done; echo JOBRC=$rc"
)


def wait_job_end(tmux: Tmux, timeout: float = 60.0) -> str:
    """Type ``WAIT_JOB_END`` and return the screen once its status is shown."""
    type_line(tmux, WAIT_JOB_END)
    return wait(tmux, lambda s: re.search(r"JOBRC=\d+", s) is not None, "the job's end", timeout)


def fg_then_quit(
    tmux: Tmux,
    view: Callable[[str], bool],
    timeout: float = 30.0,
    on_view: Callable[[str], None] | None = None,
    typed: bool = False,
) -> str:
    """Type ``fg`` (unless the caller has: ``typed``), wait for the view
    back (the alternate screen, then ``view`` true of the screen; each
    within ``timeout``; ``on_view`` gets that screen), press q, and check
    the shell's ``echo RC=$?``: 0, and no traceback on the screen. Returns
    that last screen."""
    if not typed:
        type_line(tmux, "fg")
    wait_alternate(tmux, True, timeout=timeout)
    shown = wait(tmux, view, "the view back", timeout)
    if on_view is not None:
        on_view(shown)
    tmux("send-keys", "-t", "t", "q")
    wait_alternate(tmux, False)
    type_line(tmux, "echo RC=$?")
    text = wait(tmux, ended, "the exit status")
    assert "RC=0" in text and "Traceback" not in text, text
    return text


def job_ended_as(text: str, said: str, status: str) -> bool:
    """Whether bash's line for the job's end matches ``said`` (``Done``,
    ``Exit 143``) or the status ``wait`` gave matches ``status`` (a regex)."""
    if re.search(rf"\[1\]\S* +{said}", text):
        return True
    got = re.findall(r"JOBRC=(\d+)", text)
    return bool(got) and got[-1] != "127" and re.fullmatch(status, got[-1]) is not None


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def grows(path: Path, timeout: float = 30.0) -> bool:
    before, deadline = lines(path), time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lines(path) >= before + 2:
            return True
        time.sleep(0.2)
    return False


def footer(path: Path) -> dict[str, object]:
    last = json.loads(path.read_bytes().splitlines()[-1])
    assert last["type"] == "footer", last
    return last  # type: ignore[no-any-return]


def job_pids(tmux: Tmux) -> tuple[int, int]:
    """(waiter, dashboard): the process the shell knows and its child."""
    tty = tmux("display", "-p", "-t", "t", "#{pane_tty}").strip()
    out = subprocess.run(
        # -ww: ps cuts args at 80 columns when piped, and a clone's path can be
        # longer than that (the word probetop was cut off).
        ["ps", "-ww", "-o", "pid=,ppid=,args=", "-t", tty],
        capture_output=True,
        text=True,
    ).stdout
    rows = [line.split(None, 2) for line in out.splitlines() if "probetop" in line]
    pids = {int(pid) for pid, _ppid, _args in rows}
    waiter = next(int(pid) for pid, ppid, _args in rows if int(ppid) not in pids)
    child = next(int(pid) for pid, ppid, _args in rows if int(ppid) == waiter)
    return waiter, child


def wait_split(tmux: Tmux, timeout: float = 60.0) -> tuple[int, int]:
    """Once the job has split into waiter and dashboard (the view may not be
    up yet): ``job_pids``."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(StopIteration):
            return job_pids(tmux)
        assert time.monotonic() < deadline, "never split"
        time.sleep(0.02)


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def gone(*pids: int, timeout: float = 40.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(state(pid) in ("gone", "Z") for pid in pids):
            return True
        time.sleep(0.1)
    return False


def test_ctrl_z_fg_and_bg_as_in_vim_while_the_probes_record_on(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s and "$ " in s, "stopped as a job")
        wait_alternate(tmux, False)  # the shell's screen back
        type_line(tmux, "stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e echo -e isig | sort")
        wait(tmux, lambda s: "echo\nicanon\nisig" in s, "the terminal's modes restored")
        assert grows(rec), "the recording stopped while the view was suspended"
        type_line(tmux, "bg")  # no tty access from the background: stopped again
        waiter, child = job_pids(tmux)
        deadline = time.monotonic() + 10
        while state(waiter) != "T" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert state(waiter) == "T" and state(child) in ("S", "R")
        type_line(tmux, "jobs -l")
        wait(tmux, lambda s: f"{waiter} Stopped" in s, "jobs")
        assert not alternate(tmux)
        assert grows(rec)
        tmux("set", "-t", "t", "window-size", "manual")
        tmux("resize-window", "-t", "t", "-x", "90", "-y", "26")  # while suspended

        def at_the_new_size(text: str) -> None:
            rows = text.splitlines()
            assert rows[0].startswith("probetop") and all(len(row) <= 90 for row in rows)

        fg_then_quit(
            tmux, lambda s: "events/s" in s and "^p" in s.rstrip()[-12:], on_view=at_the_new_size
        )
    assert footer(rec)["reason"] == "completed"


def test_a_tstp_to_the_whole_job_is_one_suspend(tmp_path: Path) -> None:
    """``kill -TSTP -PGID`` (what a terminal does with Ctrl-Z when the view is
    not in raw mode): the dashboard gets its own, and the waiter's copy,
    passed on, made it suspend twice (two requests to stop the job) unless
    the two came close enough to be taken as one. Counted under strace: the
    waiter passes no SIGTSTP on; the dashboard asks it to stop once."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    trace = tmp_path / "kills.trace"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        waiter, child = job_pids(tmux)
        tracer = subprocess.Popen(
            ["strace", "-f", "-qq", "-ttt", "-e", "trace=kill", "-o", str(trace),
             "-p", str(child), "-p", str(waiter)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            time.sleep(1.0)  # attached to every thread
            sent = time.time()  # strace -ttt's clock
            os.killpg(os.getpgid(waiter), signal.SIGTSTP)
            wait(tmux, lambda s: "Stopped" in s and "$ " in s, "stopped as a job")
            time.sleep(1.0)  # a second request would come now
            type_line(tmux, "fg")
            wait_alternate(tmux, True)
        finally:
            tracer.terminate()
            tracer.wait(10)
        tmux("send-keys", "-t", "t", "q")
        wait_alternate(tmux, False)
        type_line(tmux, "echo RC=$?")
        assert "RC=0" in wait(tmux, ended, "the exit status")
    calls = trace.read_text()
    # strace pads the PID column ("9411  kill(...)" below 10000, one space above)
    # and splits a call another traced process interrupts: "kill(29985, SIGTSTP
    # <unfinished ...>" then "<... kill resumed>) = 0" (load 9-23: the one ask
    # was there, split, and "SIGTSTP\)" matched none). Match up to the signal.
    call = r"(?m)^{pid}\s+(\d+\.\d+) kill\({to}, SIGTSTP[) ]"
    # The waiter passes no copy the run noted itself within DEDUP_S of it; the
    # run may note it later under load (docs/reliability.md, process group):
    # then a copy is allowed, but never sooner than DEDUP_S after the signal.
    copies = re.findall(call.format(pid=waiter, to=child), calls)
    assert all(float(at) - sent >= DEDUP_S for at in copies), (sent, calls[-800:])
    # whatever came, the job was asked to stop once: one suspend
    asks = re.findall(call.format(pid=rf"(?!{waiter}\s)\d+", to=waiter), calls)
    assert len(asks) == 1, calls[-800:]


def test_tstp_and_cont_from_outside_then_a_stop_signal_while_suspended(tmp_path: Path) -> None:
    """kill -TSTP on the dashboard process suspends as Ctrl-Z does; a SIGCONT
    while the shell owns the terminal does not draw over it; SIGTERM while
    suspended ends the run with its footer and the job ends (not left stopped)."""
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        waiter, child = job_pids(tmux)
        os.kill(child, signal.SIGTSTP)
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        wait_alternate(tmux, False)
        os.kill(child, signal.SIGCONT)
        time.sleep(1.5)
        assert not alternate(tmux) and state(waiter) == "T"
        assert grows(rec)
        os.kill(child, signal.SIGTERM)
        assert gone(waiter, child), (state(waiter), state(child))
        type_line(tmux, "jobs; echo END")
        text = wait(tmux, lambda s: "END" in s.split("jobs; echo END")[-1], "jobs")
        assert "Traceback" not in text
    assert footer(rec)["reason"] == "interrupted (SIGTERM)"


@pytest.mark.parametrize("sig", ["SIGTTOU", "SIGTTIN"])
def test_a_stray_ttou_or_ttin_in_the_foreground_is_a_ctrl_z(sig: str, tmp_path: Path) -> None:
    """``kill -TTOU``/``-TTIN`` on the dashboard process while its view is
    up (the kernel sends them only to a background group that touches the
    terminal, so in the foreground they come from a kill). Before, their
    default action stopped the dashboard process alone: the waiter ran on,
    the shell never said "Stopped", the terminal stayed in application
    mode, keys did nothing and the recording stopped growing. Now: as
    Ctrl-Z (the shell says "Stopped", the probes record on, ``fg`` brings
    the view back, q ends it whole)."""
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        waiter, child = job_pids(tmux)
        os.kill(child, getattr(signal, sig))
        wait(tmux, lambda s: "Stopped" in s and "$ " in s, "stopped as a job")
        wait_alternate(tmux, False)
        assert state(waiter) == "T" and state(child) in ("S", "R"), (state(waiter), state(child))
        assert grows(rec), "the recording stopped"
        fg_then_quit(tmux, lambda s: "events/s" in s and s.startswith("probetop"))
    assert footer(rec)["reason"] == "completed"


@pytest.mark.parametrize("target", ["waiter", "dashboard"])
def test_tstp_and_cont_from_outside_then_fg_as_ctrl_z_then_fg(target: str, tmp_path: Path) -> None:
    """kill -TSTP then kill -CONT on either process, then ``fg``: the view
    comes back redrawn with its terminal modes, as after Ctrl-Z and fg. (A
    CONT to the waiter made bash count the job running: its ``fg`` sends no
    SIGCONT, and the dashboard stayed suspended on a cooked terminal.)"""
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        assert grows(rec)  # past the start-up (a TSTP in it is a separate case)
        waiter, child = job_pids(tmux)
        pid = waiter if target == "waiter" else child
        os.kill(pid, signal.SIGTSTP)
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        wait_alternate(tmux, False)
        os.kill(pid, signal.SIGCONT)
        time.sleep(1.5)
        assert not alternate(tmux)  # the shell owns the terminal: nothing drawn over it
        tmux("send-keys", "-t", "t", "Enter")
        type_line(tmux, "fg")
        wait_alternate(tmux, True)
        wait(tmux, lambda s: "events/s" in s and "^p" in s.rstrip()[-12:], "redrawn")
        mode = subprocess.run(
            ["stty", "-a", "-F", tmux("display", "-p", "-t", "t", "#{pane_tty}").strip()],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert "-echo" in mode and "-icanon" in mode  # the dashboard's modes, not the shell's
        _quit_pressing_q(tmux)
    assert footer(rec)["reason"] == "completed"


def _quit_pressing_q(tmux: Tmux) -> None:
    """q ends the resumed view. A freeze was seen here (issue 29's notes):
    after a TSTP and CONT sent to the dashboard process itself, then
    ``fg``, redrawn once, then no new sample drawn and q not acted on for
    over 10 s, where a second q quit at once (about 1 in 12 runs under
    load). The job signals' work has since moved out of the signal handler
    onto the event loop (test below), a cause that fits but was not proven:
    the freeze did not come back in 50 runs here before or after that
    change. So the test still presses q again after 10 s and warns with the
    screen, and the warning stays visible in every run where it happens."""
    tmux("send-keys", "-t", "t", "q")
    try:
        wait_alternate(tmux, False, timeout=10.0)
        return
    except AssertionError:
        screen = tmux("capture-pane", "-p", "-t", "t")
    warnings.warn(f"q after fg not acted on in 10 s; screen:\n{screen}", stacklevel=2)
    tmux("send-keys", "-t", "t", "q")
    wait_alternate(tmux, False)


def test_started_in_the_background_it_waits_for_fg(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec} &")
        assert grows(rec), screen(tmux)
        type_line(tmux, "jobs")
        wait(tmux, lambda s: "Stopped" in s, "stopped as a background job")
        assert not alternate(tmux)
        type_line(tmux, "fg")
        wait_alternate(tmux, True)
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "q")
        wait_alternate(tmux, False)
    assert footer(rec)["reason"] == "completed"


def test_the_terminal_closing_while_suspended_ends_the_run_whole(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"{EXE} {CPU} --time 120 --record {rec}")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        waiter, child = job_pids(tmux)
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        tmux("kill-window", "-t", "t")
        assert gone(waiter, child), (state(waiter), state(child))
    # tmux's SIGHUP, or a SIGTERM (tmux's, or the waiter's death signal)
    # when the waiter went first: either way the run ended whole.
    assert footer(rec)["reason"] in ("interrupted (SIGHUP)", "interrupted (SIGTERM)")


def test_a_replay_suspends_and_resumes() -> None:
    with shell() as tmux:
        type_line(tmux, f"{EXE} replay {DEMO_FILE}")
        wait(tmux, lambda s: "replay" in s and "system.cpu" in s, "the replay")
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
        fg_then_quit(tmux, lambda s: "replay" in s and "system.cpu" in s)


def test_no_suspend_where_no_shell_could_resume_it() -> None:
    """The dashboard as a tmux pane's own command: its process group is
    orphaned (the kernel ignores its SIGTSTP); a suspend would leave a blank
    terminal that nothing brings back, so Ctrl-Z says why and does nothing."""
    with shell([EXE, *CPU.split(), "--time", "60"]) as tmux:
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "C-z")
        text = wait(tmux, lambda s: "not suspended" in s, "the notice")
        assert alternate(tmux) and "events/s" in text


async def test_a_process_that_must_stop_itself_records_the_pause() -> None:
    """Without a waiter (the split could not be made) a suspend stops the
    whole process and its probes: each running probe's recording says so,
    "paused" then "resumed after N s", rather than a silent gap."""
    from probetop.probes.core.sample import Status
    from tui_fixtures import live_app, wait_for

    app = live_app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert await wait_for(pilot, lambda: app.hub is not None and len(app.hub.running()) == 3)
        assert app.hub is not None
        sub = app.hub.subscribe(lossless=True)
        app._on_job_stop(True)
        app._on_view_resumed()
        statuses = [r for r in sub.drain() if isinstance(r, Status)]
        assert sorted(s.probe for s in statuses if s.message.startswith("paused")) == sorted(
            app.hub.running()
        )
        assert len([s for s in statuses if s.message.startswith("resumed after")]) == 3


def test_an_attached_view_suspends_and_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    base = Path(tempfile.mkdtemp(prefix="ptj-", dir="/tmp"))  # short: socket paths
    (base / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "st"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "run"))
    start = [EXE, *CPU.split(), "--time", "120", "--detach", "--name", "jc"]
    started = subprocess.run(start, capture_output=True, text=True, timeout=90)
    assert started.returncode == 0, started.stderr
    rec = base / "st" / "probetop" / "jc.jsonl"
    try:
        with shell() as tmux:
            type_line(tmux, f"{EXE} attach jc")
            wait(tmux, lambda s: "attached jc" in s and "events/s" in s, "the view")
            tmux("send-keys", "-t", "t", "C-z")
            wait(tmux, lambda s: "Stopped" in s, "stopped as a job")
            assert not alternate(tmux) and grows(rec)
            type_line(tmux, "fg")
            wait_alternate(tmux, True)
            wait(tmux, lambda s: "attached jc" in s and "events/s" in s, "redrawn")
            tmux("send-keys", "-t", "t", "d")  # leave the session running
            wait_alternate(tmux, False)
            type_line(tmux, "echo RC=$?")
            assert "RC=0" in wait(tmux, ended, "the exit status")
        stopped = subprocess.run([EXE, "stop", "jc"], capture_output=True, timeout=60)
        assert stopped.returncode == 0 and footer(rec)["reason"] == "interrupted (SIGTERM)"
    finally:
        subprocess.run([EXE, "stop", "jc"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


async def test_job_signals_are_handled_on_the_event_loop_in_order() -> None:
    """A SIGTSTP or SIGCONT is handled on the event loop, in the order they
    came, never inside the Python signal handler: that handler can run
    between any two bytecodes of the main thread, in the middle of Textual's
    message queues or of this driver's own resume, where the second SIGCONT
    of an ``fg`` (the shell's, then the waiter's) landed and started the
    view a second time."""
    import asyncio

    from probetop.tui.ui.quietdriver import QuietLinuxDriver
    from textual.app import App

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    driver = QuietLinuxDriver(App())
    handled: list[str] = []
    try:
        driver._on_sigtstp = lambda: handled.append("TSTP")  # type: ignore[method-assign]
        driver._on_sigcont = lambda: handled.append("CONT")  # type: ignore[method-assign]
        for sig in (signal.SIGTSTP, signal.SIGCONT, signal.SIGCONT):
            handler = signal.getsignal(sig)
            assert callable(handler)
            handler(sig, None)  # as Python runs it: in the main thread, anywhere
        assert handled == [], "a job signal was handled inside its signal handler"
        await asyncio.sleep(0)
        assert handled == ["TSTP", "CONT", "CONT"]
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        for fd in (driver._wake_r, driver._wake_w):
            os.close(fd)


def test_ctrl_z_under_a_starter_in_the_job_stops_it_too(tmp_path: Path) -> None:
    """``make demo`` or ``sh -c 'probetop ...; ...'``: the shell waits for make
    or sh, which share the dashboard's process group. Ctrl-Z was refused
    ("no shell with job control started this dashboard"), the parent being
    no shell; now the starter stops too, the shell says "Stopped", ``fg``
    brings the view back, the probes record on, and q ends it all."""
    rec = tmp_path / "r.jsonl"
    with shell() as tmux:
        type_line(tmux, f"sh -c '{EXE} {CPU} --time 120 --record {rec}; echo SH=$?'")
        wait(tmux, lambda s: "events/s" in s, "the dashboard")
        tmux("send-keys", "-t", "t", "C-z")
        wait(tmux, lambda s: "Stopped" in s and "sh -c" in s, "stopped as a job")
        wait_alternate(tmux, False)
        assert grows(rec), "the recording stopped while the view was suspended"
        type_line(tmux, "fg")
        wait_alternate(tmux, True)
        wait(tmux, lambda s: "events/s" in s, "redrawn")
        tmux("send-keys", "-t", "t", "q")
        text = wait(tmux, lambda s: re.search(r"^SH=\d", s, re.M) is not None, "sh's end")
        assert "SH=0" in text and "Traceback" not in text
    assert footer(rec)["reason"] == "completed"
