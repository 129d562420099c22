"""The process the shell started (the waiter of a split run,
tui/sessions/waiter.py) ends as a plain process would, and passes a signal
on only when the run did not get it itself.

Real runs: ``iops`` over a file in a temporary directory (no root), under
``strace -e trace=kill`` to count what the waiter passes on.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from disk_fixtures import PROBETOP

STOP_WITHIN_S = 10.0  # generous: the product stops within 2 s; this only bounds a hang


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def probetop_child(pid: int) -> int:
    """The child of ``pid`` that runs probetop, else 0: strace forks a
    short-lived child of its own first (its --seccomp-bpf check; strace's own
    command line, which names probetop too), not the waiter: taking the first
    child took it about one run in three ('no child within 60 s')."""
    for child in children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv[0].endswith(b"strace") and any(b"probetop" in a for a in argv):
            return child
    return 0


def wait_for(what: str, predicate, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


@contextmanager
def traced_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, int, Path]]:
    """``iops`` under strace: (strace's process, the waiter, the run, strace's
    output)."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    trace = tmp_path / "kills.trace"
    args = ["iops", str(tmp_path / "target"), "--size", "8M", "--time", "60", "--json"]
    proc = subprocess.Popen(
        # --seccomp-bpf: stopped at kill() only, not at each of start-up's
        # thousands of system calls (minutes on a loaded machine)
        ["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=kill", "-o", str(trace),
         *PROBETOP, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        waiter = wait_for("the waiter", lambda: probetop_child(proc.pid))
        try:
            run = wait_for("the run", lambda: (children(waiter) or [0])[0])
        except AssertionError:
            info = subprocess.run(["ps", "-eLww", "-o", "pid,tid,ppid,stat,wchan:24,args"],
                                  capture_output=True, text=True).stdout  # fmt: skip
            mine = [line for line in info.splitlines() if "probetop" in line or "strace" in line]
            if proc.poll() is not None:
                mine += [f"ended {proc.returncode}:", *proc.communicate()]
            said = f"strace {proc.pid}, waiter {waiter}:\n" + "\n".join(mine)
            raise AssertionError(said) from None
        # Running: the run's I/O threads are up (its handlers are installed by then).
        wait_for("the I/O threads", lambda: len(os.listdir(f"/proc/{run}/task")) > 3)
        time.sleep(1.0)
        yield proc, waiter, run, trace
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def passed_on(trace: Path, run: int, sig: signal.Signals) -> int:
    """The waiter's kill() calls of ``sig`` to ``run`` in strace's trace: a
    call that another event interrupted is split by strace into
    ``kill(PID, SIG <unfinished ...>`` and ``<... kill resumed>) = 0``
    (CI run 66), counted once by its first half."""
    return len(re.findall(rf"kill\({run}, {sig.name}(?:\)| <unfinished)", trace.read_text()))


# Alone (``make test``'s serial pass): strace's kill() trace of the
# process group must see no one else's signals; ~2 s per test.
@pytest.mark.serial
def test_a_signal_to_the_whole_process_group_is_handled_once(tmp_path: Path):
    """``timeout`` (the command, then its process group) and ``kill -- -PGID``:
    the run gets the signal itself; the waiter gets it too and used to pass
    its copy on, a second stop. Sent here to the run, then to the waiter, as
    ``timeout`` does (the process group would include strace)."""
    with traced_run(tmp_path) as (proc, waiter, run, trace):
        os.kill(run, signal.SIGTERM)
        os.kill(waiter, signal.SIGTERM)
        out, err = proc.communicate(timeout=STOP_WITHIN_S)
        assert proc.returncode == 143, (err[-800:], out[-800:], trace.read_text()[-800:])
        assert json.loads(out)["probetop"]["interrupted"] == "interrupted (SIGTERM)"
        assert passed_on(trace, run, signal.SIGTERM) == 0, trace.read_text()[-800:]


# Alone (``make test``'s serial pass): strace's kill() trace of the
# process group must see no one else's signals; ~2 s per test.
@pytest.mark.serial
def test_a_signal_to_the_waiter_alone_is_passed_on_once(tmp_path: Path):
    with traced_run(tmp_path) as (proc, waiter, run, trace):
        os.kill(waiter, signal.SIGTERM)
        out, err = proc.communicate(timeout=STOP_WITHIN_S)
        assert proc.returncode == 143, err[-800:]
        assert json.loads(out)["probetop"]["interrupted"] == "interrupted (SIGTERM)"
        assert passed_on(trace, run, signal.SIGTERM) == 1, trace.read_text()[-800:]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_run_that_dies_of_a_signal_ends_the_shells_process_the_same_way(
    tmp_path: Path, sig: signal.Signals
):
    """The run killed (kill -9, the OOM killer) or crashed: the process the
    shell started dies of the same signal, as a plain process would (the
    shell says "Killed"; ``$?`` 137 with WIFSIGNALED), not exit 137."""
    args = ["iops", str(tmp_path / "target"), "--size", "8M", "--time", "60", "--json"]
    proc = subprocess.Popen(
        [*PROBETOP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        run = wait_for("the run", lambda: (children(proc.pid) or [0])[0])
        wait_for("the I/O threads", lambda: len(os.listdir(f"/proc/{run}/task")) > 3)
        os.kill(run, sig)
        _out, err = proc.communicate(timeout=STOP_WITHIN_S)
        assert proc.returncode == -sig, (proc.returncode, err[-800:])
        assert not list(tmp_path.glob("core*")), "the waiter left a core file"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@contextmanager
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A child standing in for the run: a SIGINT passed on to it ends it."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_group_signal_noted_by_the_run_before_the_waiters_copy_is_handled_once(
    monkeypatch: pytest.MonkeyPatch,
):
    """The race, made deterministic: a signal sent to the whole group reaches
    the run, which notes it, and the waiter's loop does its accounting
    before the waiter's own copy is read (it was queued between the loop's
    select and its accounting). The accounting used to
    take the run's receipt for a kill of the run's own PID, so the copy that
    came next was passed on: two stops for one action (~1 in 10^4 runs).
    The same steps, in that order, on the waiter's own functions: nothing
    is passed on. A receipt no copy explains within ``DEDUP_S`` is still the
    run's own: a signal sent to the waiter alone after it is passed on."""
    from probetop.probes.core import stopsignals
    from probetop.tui.sessions import waiter

    monkeypatch.setattr(stopsignals, "_receipts", None)  # this test's own counters
    stopsignals.share_receipts()
    sigint = signal.SIGINT
    with sleeper() as run:
        ending = waiter._Ending()
        waiter._account(ending, waiter.FORWARDED)  # a quiet loop: nothing noted
        stopsignals.note(sigint)  # the run's copy of the group's SIGINT
        waiter._account(ending, waiter.FORWARDED)  # the loop, before the waiter's copy
        waiter._on_signal(run.pid, ending, sigint, 0, os.getpid() + 1)
        time.sleep(0.3)
        assert run.poll() is None, "the waiter's copy was passed on: a second stop"
    with sleeper() as run:
        ending = waiter._Ending(noted={sigint: stopsignals.receipts(sigint)})
        stopsignals.note(sigint)  # a kill of the run's own PID: no copy at the waiter
        waiter._account(ending, waiter.FORWARDED)
        time.sleep(waiter.DEDUP_S + 0.05)
        waiter._account(ending, waiter.FORWARDED)  # explained by no copy: the run's own
        waiter._on_signal(run.pid, ending, sigint, 0, os.getpid() + 1)
        assert run.wait(timeout=10) == -sigint, "a stop sent to the waiter alone was dropped"
