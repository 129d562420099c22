"""Issue 11, class 1: a run always stops on request, within 2 seconds.

For cpu, icmp and the bare passive dashboard, started with extreme options
(1000s of threads, intervals at their floor, a flood at the most streams
allowed, a never-ending --max-prime event, a sweep, the GIL-holding Python
engine, a 60 s grace period), headless and in a real pty: send SIGINT,
SIGTERM or SIGHUP once the run is measuring, and assert it exits within 2 s
with its partial report and a whole recording (footer with the signal and
the probe's summary, read back with load_session).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from privilege import DATAGRAM, ICMP_MISSING, RAW, needs_icmp
from probetop.probes.core.machine import logical_cpus
from probetop.probes.cpu.settings import MAX_THREADS_PER_CPU, interval_floor_s
from probetop.probes.icmp.settings import sample_interval_floor_s
from probetop.probes.record import load_session
from stop_harness import (
    PROBETOP,
    STOP_WITHIN_S,
    assert_recording_closed,
    log_stop,
    spawn_headless,
    stop_dashboard,
    stop_headless,
    wait_for_samples,
)

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]

HUGE_THREADS = MAX_THREADS_PER_CPU * logical_cpus()  # the most allowed (SCHED_IDLE workers)
FLOOD_STREAMS = 2 * logical_cpus()  # the most flood streams allowed
PYTHON_THREADS = 2 * logical_cpus()  # the most python-engine threads allowed
FLOOR_500 = f"{interval_floor_s(500):g}"

CPU_CASES = {
    # the most native threads allowed (SCHED_IDLE: more than 2 per CPU)
    "huge-threads": ["cpu", "--threads", str(HUGE_THREADS), "--time", "60"],
    # many threads sampled at their interval floor
    "threads-at-floor": ["cpu", "--threads", "500", "--interval", FLOOR_500, "--time", "60"],
    # one event would take hours: stopping must not wait for it
    "huge-max-prime": [
        *("cpu", "--threads", "2", "--max-prime", "2147483647"),
        *("--interval", "0.2", "--time", "60"),
    ],
    # a sweep: stopped in its first step, the later steps never start
    "sweep": ["cpu", "--sweep", "--max-prime", "2000000", "--interval", "0.2", "--time", "60"],
    # the GIL-holding fallback engine at its most threads
    "python-engine": [
        *("cpu", "--engine", "python", "--threads", str(PYTHON_THREADS)),
        *("--max-prime", "2147483647", "--interval", "0.2", "--time", "60"),
    ],
}

ICMP_CASES = {
    "flood-streams-at-floor": [
        *("icmp", "--flood", "--streams", str(FLOOD_STREAMS)),
        *("--sample-interval", f"{sample_interval_floor_s(FLOOD_STREAMS):g}", "127.0.0.1"),
    ],
    "rate-10M": ["icmp", "--rate", "10000000", "127.0.0.1"],
    # 65536 in flight and a 60 s grace: the stop waits at most 0.5 s for replies
    "preload-grace-60": ["icmp", "--flood", "-l", "65536", "--grace", "60", "127.0.0.1"],
}


# The most threads allowed run as SCHED_IDLE workers: beside another test
# worker (two huge-threads cases at once, or any busy neighbour) they wait
# for CPU time that the stop clock cannot tell from the product's own (CI:
# 3.0 s "of its own" once in three clean runs, at load; 0.03-0.47 s alone).
# Measured alone, in the serial pass.
ALONE = {"huge-threads", "cpu-huge-threads"}


def cases(names: Iterable[str]) -> list[Any]:
    return [pytest.param(n, marks=pytest.mark.serial) if n in ALONE else n for n in names]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("case", cases(CPU_CASES))
def test_cpu_stops_within_2s_headless(tmp_path: Path, case: str, sig: int) -> None:
    record = tmp_path / "cpu.jsonl"
    stopped = stop_headless(CPU_CASES[case], record, sig, probe="cpu")
    log_stop(f"cpu {case} headless {signal.Signals(sig).name}", stopped)
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert stopped.returncode == 128 + sig, stopped.describe()  # interrupted, no probe error
    assert "Traceback" not in stopped.stderr
    # the partial report: sysbench's blocks and how much of the run they cover
    name = signal.Signals(sig).name
    assert f"INTERRUPTED ({name}): this report covers the" in stopped.stdout
    assert "events per second:" in stopped.stdout
    assert_recording_closed(stopped, sig, "cpu")
    summary = stopped.session.footer["summaries"]["cpu"]  # type: ignore[index]
    assert summary["stopped_by"] == "stop" and summary["worker_errors"] == []


@needs_icmp
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("case", list(ICMP_CASES))
def test_icmp_stops_within_2s_headless(tmp_path: Path, case: str, sig: int) -> None:
    record = tmp_path / "icmp.jsonl"
    stopped = stop_headless(ICMP_CASES[case], record, sig, probe="icmp:127.0.0.1")
    log_stop(f"icmp {case} headless {signal.Signals(sig).name}", stopped)
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert stopped.returncode == 0, stopped.describe()  # replies came back: ping's 0
    assert "Traceback" not in stopped.stderr
    assert "127.0.0.1 ping statistics ---" in stopped.stdout  # ping's block
    assert " packets transmitted, " in stopped.stdout
    assert_recording_closed(stopped, sig, "icmp:127.0.0.1")
    summary = stopped.session.footer["summaries"]["icmp:127.0.0.1"]  # type: ignore[index]
    assert summary["stopped_by"] == "stopped" and summary["sent"] > 0
    assert summary["lost"] <= summary["sent"] - summary["received"]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_passive_stops_within_2s_headless(tmp_path: Path, sig: int) -> None:
    record = tmp_path / "passive.jsonl"
    stopped = stop_headless(["--interval", "0.05"], record, sig, probe="system.cpu", samples=5)
    log_stop(f"passive headless {signal.Signals(sig).name}", stopped)
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    assert stopped.returncode == 0, stopped.describe()
    assert "probetop: ran" in stopped.stdout and f"({signal.Signals(sig).name})" in stopped.stdout
    assert_recording_closed(stopped, sig, "system.cpu")


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_second_signal_does_not_lose_the_report(tmp_path: Path, second: int) -> None:
    """Ctrl-C pressed twice: the second signal came after the run had
    stopped, while its report was being made, and raised there (SIGINT:
    exit 130, no report) or killed the process (SIGTERM: asyncio had left
    SIG_DFL behind). Gaps from 2 to 64 ms land in both the shutdown and the
    report; each must end as one signal does: exit 0 and the whole report."""
    record = tmp_path / "twice.jsonl"
    for gap_s in (0.002, 0.004, 0.008, 0.016, 0.032, 0.064):
        record.unlink(missing_ok=True)
        proc, output = spawn_headless(
            ["--record", str(record), "--headless", "--interval", "0.05"]
        )  # forked from the zygote (stop_harness.stop_headless says why)
        try:
            wait_for_samples(record, "system.cpu", 3, proc)
            proc.send_signal(signal.SIGINT)
            time.sleep(gap_s)
            if proc.poll() is None:
                proc.send_signal(second)
            proc.wait(timeout=STOP_WITHIN_S + 5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out, err = output()
        said = f"gap {gap_s * 1000:g} ms: rc {proc.returncode}, stderr {err[-300:]!r}"
        assert proc.returncode == 0, said
        assert "probetop: ran" in out and ("(SIGINT)" in out or "(SIGTERM)" in out), said
        assert "Traceback" not in err, said


def test_a_flood_of_signals_ends_as_one_signal_does(tmp_path: Path) -> None:
    """``kill`` in a tight loop until the run is gone, three runs: each ends
    as one SIGTERM does (exit 0, the report, the footer). Python printed
    "Exception ignored when trying to write to the signal wakeup fd" and a
    traceback for each signal that found asyncio's wake-up socket full (2 of
    6 cpu runs), and the handler could nest until RecursionError."""
    for attempt in range(3):
        record = tmp_path / f"flood{attempt}.jsonl"
        proc, output = spawn_headless(
            ["--record", str(record), "--headless", "--sample-interval", "0.05"]
        )
        sent = 0
        try:
            wait_for_samples(record, "system.cpu", 3, proc)
            deadline = time.monotonic() + STOP_WITHIN_S + 20
            while proc.poll() is None and time.monotonic() < deadline:
                for _ in range(500):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(proc.pid, signal.SIGTERM)
                        sent += 1
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out, err = output()
        said = f"run {attempt}: rc {proc.returncode} after {sent} SIGTERM, stderr {err[-400:]!r}"
        assert proc.returncode == 0 and sent > 1, said
        assert "probetop: ran" in out and "(SIGTERM)" in out, said
        assert "Traceback" not in err and "wakeup" not in err, said
        assert load_session(record).footer is not None, said


SPARED = """
import asyncio, os, signal, time
from probetop.probes.core import stopsignals
stopsignals.install()
stopsignals.interrupt_from_now()
from probetop.probes.system import passive_probes
from probetop.tui.run.runner import run_headless
asyncio.run(run_headless(list(passive_probes(0.05)), duration_s=0.3))
print([signal.getsignal(s) is stopsignals._handler for s in stopsignals.SIGNALS])
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.2)
print("spared")
try:
    os.kill(os.getpid(), signal.SIGINT)  # within SPARE_S: one action with the first
    time.sleep(0.2)
    print("spared")
except KeyboardInterrupt:
    print("raised")
time.sleep(stopsignals.SPARE_S)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1.0)
    print("not raised")
except KeyboardInterrupt:
    print("raised")
"""


def test_after_a_run_the_stop_handlers_are_back_and_one_signal_is_spared() -> None:
    """The same, deterministically: once ``run_headless`` returned, SIGINT,
    SIGTERM and SIGHUP are the console script's handler again (asyncio had
    left Python's default and SIG_DFL), the next signal is only recorded
    (the report comes next), so is any other within ``SPARE_S`` (a flood),
    and one after that raises as before."""
    out = subprocess.run([*PROBETOP[:1], "-c", SPARED], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    said = out.stdout.splitlines()
    assert said == ["[True, True, True]", "spared", "spared", "raised"], out.stderr


NOT_IN_LIBRARIES = """
import os, signal, sys, threading, time
from probetop.probes.core import stopsignals
stopsignals.install()
stopsignals.interrupt_from_now()
seen = []
sys.unraisablehook = lambda info: seen.append(type(info.exc_value).__name__)

class Finalized:
    def __del__(self):
        time.sleep(0.3)  # the signal lands here

threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
obj = Finalized()
del obj
print("unraisable:", seen)
try:
    stopsignals.check()
    print("lost")
except KeyboardInterrupt:
    print("pending")
stopsignals._pending.clear()
from llvmlite.binding import ffi
lock = ffi.lib._lock
lock.register(lambda: time.sleep(0.3), lambda: None)  # Python code inside llvmlite's __enter__
threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
try:
    ffi.lib.LLVMPY_GetVersionInfo()
    print("llvmlite call done")
except KeyboardInterrupt:
    print("raised inside llvmlite")
free = []
t = threading.Thread(target=lambda: free.append(lock._lock.acquire(timeout=0.5)))
t.start(); t.join()
print("lock free:", free[0])
try:
    stopsignals.check()
    print("lost")
except KeyboardInterrupt:
    print("pending")
"""


def test_a_start_up_signal_is_never_raised_inside_a_finalizer_or_llvmlite() -> None:
    """During start-up a stop signal raises KeyboardInterrupt in the main
    thread, but not where that breaks something: inside a ``__del__``
    Python swallowed it (the stop was only pending), and inside llvmlite's
    lock (numba's callbacks run in its ``__enter__``) it left the lock held,
    so numba's compile in the start-up thread could never take it again
    (and a later finalizer printed "Exception ignored in: ObjectRef.__del__",
    seen once in CI). There the signal stays pending for ``check()``."""
    out = subprocess.run([*PROBETOP[:1], "-c", NOT_IN_LIBRARIES], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.stdout.splitlines() == [
        "unraisable: []",
        "pending",
        "llvmlite call done",
        "lock free: True",
        "pending",
    ], out.stderr


DASHBOARD_CASES = {
    "cpu-huge-threads": (["cpu", "--threads", str(HUGE_THREADS), "--time", "60"], "cpu"),
    "passive-at-floor": (["--interval", "0.05"], "system.cpu"),
    "icmp-flood": (
        ["icmp", "--flood", "--streams", str(FLOOD_STREAMS), "127.0.0.1"],
        "icmp:127.0.0.1",
    ),
}


# (exit status, None for 128 + the signal; a line of the report printed after the view)
DASHBOARD_REPORTS = {
    "cpu-huge-threads": (None, "INTERRUPTED (SIG"),
    "passive-at-floor": (0, "probetop: ran "),
    "icmp-flood": (0, " packets transmitted, "),
}


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("case", cases(DASHBOARD_CASES))
def test_dashboard_stops_within_2s(tmp_path: Path, case: str, sig: int) -> None:
    args, probe = DASHBOARD_CASES[case]
    if probe.startswith("icmp") and not (DATAGRAM or RAW):
        pytest.skip(ICMP_MISSING)
    record = tmp_path / "dash.jsonl"
    stopped = stop_dashboard(args, record, sig, probe=probe)
    log_stop(f"dashboard {case} {signal.Signals(sig).name}", stopped)
    assert stopped.stop_s < STOP_WITHIN_S, stopped.describe()
    # The partial report after the view, and the headless run's status: cpu
    # 128 + the signal, icmp ping's (replies came back: 0), passive 0.
    status, said = DASHBOARD_REPORTS[case]
    assert stopped.returncode == (128 + sig if status is None else status), stopped.describe()
    view_left = stopped.stdout.rfind("\x1b[?1049l")
    assert said in stopped.stdout[view_left:], stopped.describe()
    assert "Traceback" not in stopped.stdout
    assert "\x1b[?1049l" in stopped.stdout  # left the alternate screen
    assert_recording_closed(stopped, sig, probe)


def test_removing_the_run_handlers_never_leaves_a_signal_at_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a run its handlers go and the ones from before come back. asyncio's
    ``remove_signal_handler`` sets SIG_DFL (SIGINT: KeyboardInterrupt) first;
    a second Ctrl-C/kill in that moment killed the process before its report
    (seen once in CI: rc -15 with a 2 ms gap). Every disposition the removal
    sets is recorded: none may be a default, and the old handlers are back."""
    import asyncio

    from probetop.probes.core import stopsignals
    from probetop.tui.run.livesession import add_stop_signal_handlers, remove_stop_signal_handlers

    before = {sig: signal.getsignal(sig) for sig in stopsignals.SIGNALS}
    set_to: list[tuple[int, object]] = []
    real_signal = signal.signal

    def recording(sig: int, handler: object) -> object:
        set_to.append((sig, handler))
        return real_signal(sig, handler)  # type: ignore[arg-type]

    async def run() -> None:
        handled = add_stop_signal_handlers(lambda name: None)
        assert {sig for sig, _ in handled} >= {signal.SIGINT, signal.SIGTERM}
        monkeypatch.setattr(signal, "signal", recording)
        remove_stop_signal_handlers(handled)

    for sig in stopsignals.SIGNALS:
        real_signal(sig, lambda signum, frame: None)
    previous = {sig: signal.getsignal(sig) for sig in stopsignals.SIGNALS}
    try:
        asyncio.run(run())
        monkeypatch.setattr(signal, "signal", real_signal)
        defaults = {signal.SIG_DFL, signal.default_int_handler}
        assert [(s, h) for s, h in set_to if h in defaults] == []
        assert {sig: signal.getsignal(sig) for sig in stopsignals.SIGNALS} == previous
    finally:
        for sig, handler in before.items():
            real_signal(sig, handler)  # type: ignore[arg-type]
