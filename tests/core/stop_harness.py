"""Run a real probetop, headless or in a real pty (the dashboard), send it a
real signal once it is measuring, and time how long it takes to exit.

Used by the stop tests (issue 11, class 1: "a run always stops on request,
within 2 seconds"). Nothing is mocked: the child is `python -m
probetop.tui.main` with the command line under test and ``--record``; the
caller asserts on the exit time, the exit code, the partial report and the
recording (read back with ``load_session``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forkserver import Forked, spawn_probetop
from probetop.probes.record.reader import Session, load_session
from pty_session import PtySession
from stopclock import StopClock, StopTime

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
STOP_WITHIN_S = 2.0  # the guarantee, on the product's own time (see stopclock.py)
READY_TIMEOUT_S = 60.0  # starting 1000s of threads on a loaded CI box can take a while


@dataclass
class Stopped:
    """How a run ended after the signal."""

    returncode: int
    timing: StopTime  # signal sent -> process exited
    stdout: str
    stderr: str
    session: Session

    @property
    def stop_s(self) -> float:
        """The product's own stop time (wall minus waiting for a CPU)."""
        return self.timing.own_s

    def describe(self) -> str:
        return (
            f"rc={self.returncode} stop: {self.timing}\n"
            f"stdout: {self.stdout[-800:]}\nstderr: {self.stderr[-800:]}"
        )


def wait_for_samples(
    path: Path,
    probe: str,
    count: int,
    proc: subprocess.Popen[bytes] | subprocess.Popen[str] | Forked,
) -> None:
    """Until the recording holds ``count`` samples of ``probe`` (it is
    measuring); ``probe`` is a probe id or its start ("http:" for any URL)."""
    needle = f'"probe":"{probe}'.encode()
    deadline = time.monotonic() + READY_TIMEOUT_S
    # Only what was appended since the last look is read (the whole file every
    # 50 ms was most of this loop's CPU on a long wait): whole lines counted,
    # a part line left for the next look; a file replaced or cut back (the
    # start-up's checks may create and remove it) is counted from the start.
    seen: tuple[int, int] | None = None
    pos = found = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"probetop exited by itself (rc={proc.returncode})")
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) != seen or st.st_size < pos:
                    seen, pos, found = (st.st_dev, st.st_ino), 0, 0
                f.seek(pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        whole = data[: data.rfind(b"\n") + 1]
        pos += len(whole)
        found += sum(1 for ln in whole.split(b"\n") if b'"type":"sample"' in ln and needle in ln)
        if found >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {probe} samples in {READY_TIMEOUT_S:.0f} s")


def stop_headless(
    args: list[str], record: Path, sig: int, *, probe: str, samples: int = 1
) -> Stopped:
    """Start ``probetop --record RECORD --headless ARGS``, wait until ``probe``
    has recorded ``samples`` samples, send ``sig``, wait for the exit.

    The run is forked from an interpreter that has imported the CLI, the cpu
    and mem families, numpy and numba (tests/forkserver.py): a process of its
    own, in a session of its own, with this argv and its own stdio, exit
    status and threads, and it is signalled and timed only once it is
    measuring, so the 0.3-0.6 CPU-s of imports a fresh `python -m` spends
    before are not what these tests look at. The dashboard's cases
    (``stop_dashboard``, through a pty) start the whole `python -m`."""
    proc, output = spawn_headless(["--record", str(record), "--headless", *args])
    try:
        rc, timing = _signal_and_time(proc, record, probe, samples, sig)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stdout, stderr = output()
    return Stopped(rc, timing, stdout, stderr, load_session(record))


def spawn_headless(args: list[str]) -> tuple[Forked, Callable[[], tuple[str, str]]]:
    """``probetop ARGS`` forked from the zygote in a session of its own, its
    stdout and stderr read by threads (a full pipe would block it); the
    second item, called once the run has ended, gives what it wrote."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = spawn_probetop(args, stdout=out_w, stderr=err_w, start_new_session=True)
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    out: dict[int, bytes] = {}

    def read(fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            out[fd] = stream.read()

    readers = [threading.Thread(target=read, args=(fd,), daemon=True) for fd in (out_r, err_r)]
    for reader in readers:
        reader.start()

    def output() -> tuple[str, str]:
        for reader in readers:
            reader.join(timeout=10)
        return tuple(out.get(fd, b"").decode(errors="replace") for fd in (out_r, err_r))  # type: ignore[return-value]

    return proc, output


def _signal_and_time(
    proc: subprocess.Popen[bytes] | Forked, record: Path, probe: str, samples: int, sig: int
) -> tuple[int, StopTime]:
    """Once ``record`` holds ``samples`` of ``probe``, send ``sig``; (exit
    code, the time from the signal to the exit)."""
    wait_for_samples(record, probe, samples, proc)
    clock = StopClock(proc.pid).start()
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"no exit within 30 s of {signal.Signals(sig).name}") from None
    return rc, clock.stop()


def stop_dashboard(
    args: list[str], record: Path, sig: int, *, probe: str, samples: int = 1
) -> Stopped:
    """The same through the dashboard, in a pty that is the child's
    controlling terminal (as sshd does)."""
    app = PtySession.start(["--record", str(record), *args], controlling=True)
    try:
        rc, timing = _signal_and_time(app.proc, record, probe, samples, sig)
    finally:
        app.close()
    return Stopped(rc, timing, app.text, "", load_session(record))


def log_stop(name: str, stopped: Stopped) -> None:
    """Append the measured stop time to $PROBETOP_STOP_LOG (docs' numbers)."""
    path = os.environ.get("PROBETOP_STOP_LOG")
    if path:
        with open(path, "a") as f:
            t = stopped.timing
            f.write(f"{name}\t{t.own_s:.3f}\t{stopped.returncode}\t{t.wall_s:.3f}\n")


def assert_recording_closed(stopped: Stopped, sig: int, probe: str) -> None:
    """The recording is whole: header, the probe's samples, and a footer that
    says which signal ended it and carries the probe's summary."""
    session = stopped.session
    assert session.warnings == [], session.warnings
    assert session.footer is not None, stopped.describe()
    assert session.footer["reason"] == f"interrupted ({signal.Signals(sig).name})"
    assert probe in session.footer["summaries"], session.footer
    assert session.samples(probe), "no samples of the probe in the recording"
