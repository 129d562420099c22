"""A process stopped as a whole (SIGSTOP: no handler can see it) leaves no
silent gap: the recording says "paused" with the length, and a machine that
is only loaded is never taken for a stop (probes/core/freezes.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

EXE = str(Path(sys.executable).parent / "probetop")


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def _stop_for(pid: int, seconds: float) -> float:
    """SIGSTOP ``pid`` until it is stopped, hold it ``seconds``, SIGCONT;
    how long it was really held (this test's own sleep may run late)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while _state(pid) != "T":
        assert time.monotonic() < deadline, "never stopped"
        time.sleep(0.01)
    stopped = time.monotonic()
    time.sleep(seconds)
    held = time.monotonic() - stopped
    os.kill(pid, signal.SIGCONT)
    return held


def test_a_sigstop_of_a_headless_run_is_recorded_as_a_pause(tmp_path: Path) -> None:
    rec = tmp_path / "r.jsonl"
    cmd = [
        EXE,
        "cpu",
        "--threads",
        "1",
        "--time",
        "60",
        "--report-interval",
        "1",
        "--record",
        str(rec),
    ]
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not rec.exists() or '"type":"sample"' not in rec.read_text():
            assert time.monotonic() < deadline and run.poll() is None, "no sample"
            time.sleep(0.05)
        held = _stop_for(run.pid, 2.5)
        time.sleep(1.0)  # the watch's next turn
        run.send_signal(signal.SIGINT)
        _out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    records = [json.loads(line) for line in rec.read_text().splitlines()]
    paused = [r for r in records if r["type"] == "status" and r["message"].startswith("paused")]
    assert len(paused) == 1, paused
    assert paused[0]["level"] == "warning" and paused[0]["probe"] == "cpu"
    said = float(paused[0]["message"].split("stopped for about ")[1].split(" s")[0])
    assert held - 0.6 <= said <= held + 0.6, (said, held)  # half a tick either way, and rounding
    assert "paused: this process was stopped for about" in err
    assert records[-1]["type"] == "footer" and records[-1]["reason"] == "interrupted (SIGINT)"


WATCH = textwrap.dedent(
    """
    import os, signal, sys, time
    from probetop.probes.core.freezes import FreezeWatch
    from probetop.probes.core.sample import now_ns

    def said(seconds, ended_ns):
        print(f"freeze {seconds:.2f}", flush=True)

    watch = FreezeWatch(said)
    watch.start()
    time.sleep(0.3)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "stop-myself":
            watch.excuse(now_ns())
            os.kill(os.getpid(), signal.SIGSTOP)
            time.sleep(1.2)
            print("resumed", flush=True)
        elif line.strip() == "quit":
            break
    time.sleep(0.2)
    watch.close()
    print("done", flush=True)
    """
)


def _idle() -> None:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def _watcher(idle: bool = False) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WATCH],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_idle if idle else None,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


BUSY_4S = "import time\nt = time.monotonic() + 4\nwhile time.monotonic() < t: pass"


def test_a_loaded_machine_is_not_taken_for_a_stop() -> None:
    """The watch as SCHED_IDLE beside two busy loops per CPU: it gets no
    turn while they run (4 s), a wait the kernel counts (run_delay)."""
    proc = _watcher(idle=True)
    busy = [
        subprocess.Popen([sys.executable, "-c", BUSY_4S])
        for _ in range(2 * len(os.sched_getaffinity(0)))
    ]
    for b in busy:
        b.wait(timeout=60)
    out, _ = proc.communicate("quit\n", timeout=60)
    assert out.splitlines() == ["done"], out


def test_a_stop_the_process_makes_itself_is_excused_once() -> None:
    """The dashboard's own Ctrl-Z without a waiter says its pause itself:
    the watch keeps quiet about that one, and only that one."""
    proc = _watcher()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("stop-myself\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30
    while _state(proc.pid) != "T":
        assert time.monotonic() < deadline, "never stopped itself"
        time.sleep(0.01)
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGCONT)
    assert proc.stdout.readline() == "resumed\n"  # nothing said before it
    held = _stop_for(proc.pid, 1.5)
    time.sleep(1.0)
    out, _ = proc.communicate("quit\n", timeout=60)
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("freeze ") and lines[1] == "done", lines
    assert held - 0.6 <= float(lines[0].split()[1]) <= held + 0.6


class _OneSample:
    """A probe that emits one sample and ends by itself."""

    kind = "test.one"
    metrics = ()
    id = "one"

    def prepare(self) -> None:
        pass

    def params(self) -> dict[str, object]:
        return {}

    def reference_command(self) -> None:
        return None

    async def run(self, emit: object) -> None:
        await asyncio.sleep(0.01)

    def summary(self) -> dict[str, object]:
        return {}


async def test_the_watch_lives_only_while_a_probe_runs() -> None:
    """A hub whose probes all ended, even without ``stop()``, leaves no thread
    (a worker process of the test suite had gathered four)."""
    from probetop.probes.core.hub import Hub

    hub = Hub()
    hub.add(_OneSample())  # type: ignore[arg-type]
    hub.start()
    assert hub.freezes is not None
    thread = hub.freezes._thread
    assert await hub.wait(timeout=30)
    await asyncio.sleep(0)  # the probe's task has run its last lines
    assert hub.freezes is None and thread is not None and not thread.is_alive()


class _Forever(_OneSample):
    id = "forever"

    async def run(self, emit: object) -> None:
        await asyncio.Event().wait()


def test_a_hub_left_with_its_loop_closed_leaves_no_thread() -> None:
    """Never stopped, its probe never ended: the loop closing ends the watch."""
    from probetop.probes.core.hub import Hub

    hub = Hub()
    loop = asyncio.new_event_loop()

    async def start() -> None:
        hub.add(_Forever())  # type: ignore[arg-type]
        hub.start()
        await asyncio.sleep(0.05)

    loop.run_until_complete(start())
    assert hub.freezes is not None and hub.freezes._thread is not None
    thread = hub.freezes._thread
    loop.close()  # the probe's task still pending, never cancelled
    thread.join(5)
    assert not thread.is_alive()
