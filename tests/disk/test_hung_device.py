"""A device that stops answering: the run still ends, says so, exits 2, and
gives the shell its prompt back.

A loop device over tests/disk/faultyfs.py in ``hang`` mode: I/O to one MiB
of it is held (never answered) until the test releases it. ``iops --time 1``
and ``warmup --time 1`` then have I/O in flight at the deadline that never
completes. What must hold (docs/iops.md "How a run ends"): the report comes
within ``inflight.HUNG_S`` (no completion for that long) after the deadline,
names the I/Os in flight and their byte range, the recording has its footer,
the exit status is 2 (130 when Ctrl-C ended the wait: at once, with the
partial report), and nothing is written outside the target. fio waits for
such I/O (300 s before it gives up on a job, FIO_REAP_TIMEOUT; a Ctrl-C
does not end it).

The kernel holds a process whose kernel AIO or synchronous read is in
flight until it completes (SIGKILL included). probetop's I/O runs in a
child of the process the shell started (tui/sessions/waiter.py): that
process exits with the status while the hang is still held, every engine,
and names the PID it leaves to the kernel; stdout reaches its end (a
``$(probetop ...)`` returns). Each test undoes what it built (the hang
released, the loop device detached, the FUSE file system unmounted) even
when it fails.

faultyfs's ``flushhang`` mode, mounted without a loop device, holds only
the close: writes are acknowledged at once and the FLUSH of a handle that
wrote is held, as a FUSE server whose close waits for its own writeback.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from disk_fixtures import PROBETOP, need_root
from probetop.probes.disk import ioengines
from probetop.probes.disk.inflight import HUNG_S
from probetop.probes.disk.workers import CLOSE_CAP_S
from probetop.probes.record import load_session
from probetop.tui.sessions.control import STOP_HELD_S
from probetop.tui.sessions.daemon import HELD_START_S
from probetop.tui.sessions.waiter import STOP_GRACE_S

MIB = 1 << 20
SIZE = 64 * MIB
HOLD = (20 * MIB, 21 * MIB)  # the bytes whose I/O the device never answers
REPORT_WITHIN_S = 2.0  # past HUNG_S: the report's own time on a loaded machine
EXIT_WITHIN_S = 2.0  # from the report to the exit status, the hang still held


@dataclass
class Lines:
    """A pipe's text, read by a thread as it comes."""

    stream: object
    text: list[str] = field(default_factory=list)
    ended: threading.Event = field(default_factory=threading.Event)  # the pipe's end came

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(OSError):  # a pty's master: EIO once the last writer left
            for line in self.stream:  # type: ignore[attr-defined]
                self.text.append(line)
        self.ended.set()

    def joined(self) -> str:
        return "".join(self.text)


@dataclass
class HangingDevice:
    dev: str
    backing: Path
    server: subprocess.Popen[str]
    said: Lines

    released: bool = False

    def held(self) -> bool:
        return any(line.startswith("held ") for line in self.said.text)

    def release(self) -> None:
        self.released = True
        if self.server.stdin is not None and not self.server.stdin.closed:
            with contextlib.suppress(OSError):
                self.server.stdin.write("release\n")
                self.server.stdin.close()


@contextlib.contextmanager
def faulty_mount(hold: tuple[int, int] = HOLD, mode: str = "hang") -> Iterator[HangingDevice]:
    """tests/disk/faultyfs.py mounted in MODE; ``dev`` is its file
    (MOUNT/disk.img). Released, unmounted and removed afterwards."""
    need_root()
    pytest.importorskip("fuse", reason="needs fusepy (pip install fusepy) and libfuse2")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    backing = Path(tempfile.mkstemp(prefix="probetop-hang-", suffix=".img", dir="/dev/shm")[1])
    backing.write_bytes(os.urandom(SIZE))
    mount = Path(tempfile.mkdtemp(prefix="probetop-hang-"))
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("faultyfs.py")), str(mount),
         str(backing), *map(str, hold), mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    image = mount / "disk.img"
    served = HangingDevice(str(image), backing, server, Lines(server.stdout))
    try:
        deadline = time.monotonic() + 20
        while not image.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not image.exists():
            pytest.skip(f"the FUSE server did not come up: {served.said.joined()[-300:]}")
        yield served
    finally:
        # Release first: a mount with I/O held cannot go.
        served.release()
        for _ in range(50):
            if subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        mount.rmdir()
        backing.unlink(missing_ok=True)


@contextlib.contextmanager
def hanging_device(hold: tuple[int, int] = HOLD, mode: str = "hang") -> Iterator[HangingDevice]:
    """A loop device over ``faulty_mount``'s file; detached afterwards."""
    with faulty_mount(hold, mode) as served:
        proc = subprocess.run(
            ["losetup", "--find", "--show", served.dev],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            pytest.skip(f"losetup over a FUSE file failed: {proc.stderr.strip()}")
        device = HangingDevice(proc.stdout.strip(), served.backing, served.server, served.said)
        try:
            yield device
        finally:
            # Release first: a loop device with I/O held cannot go.
            device.release()
            subprocess.run(["losetup", "-d", device.dev], capture_output=True)


@dataclass
class Run:
    proc: subprocess.Popen[str]
    out: Lines
    err: Lines

    def report(self, timeout: float = 120.0) -> tuple[dict, float]:
        """The JSON report once it is whole, and when it was (monotonic)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(self.out.joined()), time.monotonic()
            assert self.proc.poll() is None or self.out.text, self.err.joined()[-800:]
            time.sleep(0.02)
        raise AssertionError(f"no report in {timeout} s: {self.err.joined()[-800:]}")

    def exits_while_held(
        self, device: HangingDevice, since: float, engine: str, held: str | None = None
    ) -> int:
        """The exit status, which must come within ``EXIT_WITHIN_S`` of
        ``since`` with the hang still held; the pipes reach their end and
        stderr names the process left to the kernel (io_uring's ends: the
        kernel does not hold it)."""
        try:
            code = self.proc.wait(timeout=max(0.1, since + EXIT_WITHIN_S - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"still running {EXIT_WITHIN_S} s after its report: {self.err.joined()[-800:]}"
            ) from None
        assert not device.released
        assert self.out.ended.wait(5) and self.err.ended.wait(5), "a pipe stayed open"
        left = re.search(r"process (\d+) is left to the kernel", self.err.joined())
        if engine == "io_uring" and left is None:
            return code
        assert left, self.err.joined()[-800:]
        assert (held or "blocked in the kernel on " + device.dev) in self.err.joined()
        held = Path(f"/proc/{left.group(1)}")
        assert held.exists(), "the child was not held: this test shows nothing"
        return code


@contextlib.contextmanager
def probetop(*args: str) -> Iterator[Run]:
    proc = subprocess.Popen(
        [*PROBETOP, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield Run(proc, Lines(proc.stdout), Lines(proc.stderr))
    finally:
        if proc.poll() is None:
            proc.kill()  # ends once the kernel lets go of its I/O (the hang released)


def wait_for(what: str, predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def engines() -> list[str]:
    names = ["psync", "libaio"]
    if ioengines.resolve("io_uring", 8)[0] == "io_uring":
        names.append("io_uring")
    return names


def held_range_in_flight(in_flight: list[dict]) -> bool:
    return any(io["offset"] < HOLD[1] and io["offset"] + io["length"] > HOLD[0] for io in in_flight)


def check_recording(rec: Path, reason: str) -> dict:
    session = load_session(rec)
    assert session.footer is not None, session.warnings
    assert session.footer["reason"] == reason
    (summary,) = session.footer["summaries"].values()
    return summary


@pytest.mark.parametrize("engine", engines())
def test_iops_ends_after_the_deadline_when_io_never_completes(tmp_path: Path, engine: str):
    rec = tmp_path / "rec.jsonl"
    depth = "1" if engine == "psync" else "8"
    with hanging_device() as device:
        args = ["iops", device.dev, "--time", "1", "--rw", "randread", "--ioengine", engine,
                "--iodepth", depth, "--json", "--record", str(rec)]  # fmt: skip
        with probetop(*args) as run:
            doc, at = run.report()
            assert device.held(), device.said.joined()
            summary = doc["probetop"]
            (error,) = summary["errors"]
            assert "the device stopped answering" in error, error
            in_flight = summary["in_flight"]
            assert f"{len(in_flight)} I/O" in error and "in bytes" in error
            assert 1 <= len(in_flight) <= int(depth)
            assert held_range_in_flight(in_flight), in_flight
            # ended HUNG_S after the last completion, itself after the deadline
            runtime = doc["jobs"][0]["read"]["runtime"]
            assert runtime <= (1 + HUNG_S + REPORT_WITHIN_S) * 1000, runtime
            rows = summary["intervals"]
            assert sum(r["read_io_bytes"] for r in rows) == summary["read"]["io_bytes"]
            assert run.exits_while_held(device, at, engine) == 2, run.err.joined()[-800:]
            assert check_recording(rec, "completed")["errors"] == [error]  # before the release


@pytest.mark.parametrize(
    ("engine", "sig"),
    [(e, signal.SIGINT) for e in engines()] + [("psync", signal.SIGTERM)],
)
def test_a_stop_while_a_device_does_not_answer_ends_at_once(
    tmp_path: Path, engine: str, sig: signal.Signals
):
    """SIGINT (or SIGTERM) while the run waits for I/O that never completes:
    the partial report within a stop's time, exit 128+N with the hang still
    held, the footer says interrupted."""
    rec = tmp_path / "rec.jsonl"
    depth = "1" if engine == "psync" else "8"
    with hanging_device() as device:
        args = ["iops", device.dev, "--time", "1", "--rw", "randread", "--ioengine", engine,
                "--iodepth", depth, "--json", "--record", str(rec)]  # fmt: skip
        with probetop(*args) as run:
            wait_for("the hang", device.held)
            time.sleep(2.5)  # past the deadline: the run waits for the device
            assert not run.out.text, run.out.joined()
            sent = time.monotonic()
            run.proc.send_signal(sig)
            doc, at = run.report()
            assert at - sent <= REPORT_WITHIN_S, at - sent
            assert "the device stopped answering" in doc["probetop"]["errors"][0]
            assert held_range_in_flight(doc["probetop"]["in_flight"])
            assert run.exits_while_held(device, at, engine) == 128 + sig, run.err.joined()[-800:]
            check_recording(rec, f"interrupted ({sig.name})")


def test_warmup_write_ends_after_the_deadline_and_writes_only_its_range(tmp_path: Path):
    with hanging_device() as device:
        before = device.backing.read_bytes()
        args = ["warmup", device.dev, "--write", f"--yes-destroy-data={device.dev}", "--range",
                "16M-48M", "--bs", "1M", "--iodepth", "1", "--time", "1", "--json",
                "--checkpoint", str(tmp_path / "c.json")]  # fmt: skip
        with probetop(*args) as run:
            doc, at = run.report()
            assert device.held()
            said = " ".join(doc.get("notes", [])) + str(doc.get("error"))
            held = "1 I/O (writes) in bytes 20,971,520-22,020,096"  # the 1 MiB write at 20 MiB
            assert f"the device stopped answering: {held}" in said, said
            (row,) = [p for p in doc["passes"] if p["outcome"] != "not started"]
            assert row["seconds"] <= 1 + HUNG_S + REPORT_WITHIN_S, row
            assert sum(r["bytes"] for r in doc["intervals"]) == row["bytes"] >= 4 * MIB
            assert run.exits_while_held(device, at, "psync") == 2, run.err.joined()[-800:]
            device.release()
        after = device.backing.read_bytes()
    assert after[: 16 * MIB] == before[: 16 * MIB]
    assert after[48 * MIB :] == before[48 * MIB :]
    assert after[16 * MIB : 20 * MIB] != before[16 * MIB : 20 * MIB]  # written


def test_ctrl_c_at_a_terminal_while_a_device_does_not_answer(tmp_path: Path):
    """Ctrl-C typed at the terminal (the tty sends SIGINT to the whole
    foreground process group: the process the shell started and the run):
    one stop, the partial report, exit 130 with the hang still held."""
    rec = tmp_path / "rec.jsonl"
    with hanging_device() as device:
        master, slave = os.openpty()

        def own_terminal() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty is this session's terminal

        args = ["iops", device.dev, "--time", "1", "--rw", "randread", "--ioengine", "libaio",
                "--iodepth", "8", "--headless", "--record", str(rec)]  # fmt: skip
        proc = subprocess.Popen(
            [*PROBETOP, *args], stdin=slave, stdout=slave, stderr=slave,
            preexec_fn=own_terminal,
        )  # fmt: skip
        os.close(slave)
        screen = Lines(os.fdopen(master, "r", errors="replace"))
        try:
            wait_for("the hang", device.held)
            time.sleep(2.5)  # past the deadline: the run waits for the device
            sent = time.monotonic()
            os.write(master, b"\x03")
            try:
                code = proc.wait(timeout=REPORT_WITHIN_S + EXIT_WITHIN_S)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"no exit after ^C: {screen.joined()[-800:]}") from None
            took = time.monotonic() - sent
            assert not device.released
            time.sleep(0.3)  # the last bytes through the pty
            text = screen.joined()
            assert code == 130, text[-800:]
            assert took <= REPORT_WITHIN_S + EXIT_WITHIN_S, took
            assert "the device stopped answering" in text, text
            assert "Traceback" not in text, text[-2000:]
            assert "is left to the kernel" in text, text[-800:]
            check_recording(rec, "interrupted (SIGINT)")
        finally:
            if proc.poll() is None:
                proc.kill()


def child_of(pid: int) -> int:
    """The run: the only child of the process the shell started."""
    (child,) = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(child)


def test_a_run_killed_while_the_kernel_holds_it_gives_the_shell_back_as_killed(tmp_path: Path):
    """kill -9 of the run (not of the process the shell started) while an
    I/O of it is held: the run's main thread is gone, no last words came,
    and ``waitpid`` would wait for the device. The process the shell started
    notices within a poll and dies of SIGKILL itself, as a plain process
    would ("Killed", WIFSIGNALED), naming the PID it leaves to the kernel,
    and its stdout and stderr (pipes here, as in ``$(...)``) reach their end.
    A new run on the target is refused naming that PID, the real holder of
    the lock, and saying the kernel holds it."""
    with hanging_device() as device:
        args = ["iops", device.dev, "--time", "30", "--rw", "randread", "--json"]
        with probetop(*args) as run:
            wait_for("the hang", device.held)
            child = child_of(run.proc.pid)
            os.kill(child, signal.SIGKILL)
            try:
                code = run.proc.wait(timeout=EXIT_WITHIN_S)
            except subprocess.TimeoutExpired:
                raise AssertionError("still waiting for a run the kernel holds") from None
            assert code == -signal.SIGKILL, (code, run.err.joined()[-800:])
            assert not device.released
            assert Path(f"/proc/{child}").exists(), "the run was not held: this test shows nothing"
            # The held run keeps its fds open, but they are not the caller's
            # pipes (the waiter copies them): those reach their end, so a
            # `$(probetop ...)` returns (it waited for the device).
            assert run.out.ended.wait(5) and run.err.ended.wait(5), "a pipe stayed open"
            said = run.err.joined()
            assert f"process {child} is left to the kernel" in said, said[-800:]
            assert "killed by SIGKILL without its report" in said, said[-800:]
            again = subprocess.run(
                [*PROBETOP, *args[:2], "--time", "1", "--json"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert again.returncode != 0, again.stdout[-400:]
            assert f"in use by probetop PID {child} " in again.stderr, again.stderr
            assert "the kernel holds until its I/O completes" in again.stderr, again.stderr


def test_a_close_that_waits_for_writeback_does_not_keep_the_shell(tmp_path: Path):
    """Buffered writes end at once in the page cache; the last close() of the
    device then waits for their writeback, which the device never answers.
    That close was made by the run's main thread, which never reached its
    report or its exit: the shell waited for good. Now the close runs
    beside it, bounded: the report says the device stopped answering, exit
    2, and stderr names the close left to the kernel."""
    with hanging_device() as device:
        args = ["iops", device.dev, "--time", "1", "--rw", "write", "--bs", "64k", "--buffered",
                "--json", f"--yes-destroy-data={device.dev}"]  # fmt: skip
        with probetop(*args) as run:
            doc, at = run.report(timeout=60)
            assert device.held(), device.said.joined()
            assert doc["jobs"][0]["write"]["io_bytes"] > 0
            (error,) = doc["probetop"]["errors"]
            assert "the device stopped answering: its close waits for the writeback" in error
            code = run.exits_while_held(device, at, "psync", held=f"close() of {device.dev}")
            assert code == 2, run.err.joined()[-800:]


def test_a_warmup_close_that_waits_for_writeback_is_the_same_error(tmp_path: Path):
    """The warm-up's buffered write pass ends in the page cache; the last
    close() of the device then waits for writeback the device never takes.
    ``iops`` calls that "the device stopped answering" (exit 2); the warm-up
    called the pass completed and exited 0. Same rule now (one code path,
    ``inflight.held_end``): the error, exit 2, the close left to the kernel,
    and nothing written outside the range."""
    with hanging_device() as device:
        before = device.backing.read_bytes()
        args = ["warmup", device.dev, "--write", f"--yes-destroy-data={device.dev}", "--range",
                "16M-48M", "--bs", "1M", "--buffered", "--json",
                "--checkpoint", str(tmp_path / "c.json")]  # fmt: skip
        with probetop(*args) as run:
            doc, at = run.report(timeout=60)
            assert device.held(), device.said.joined()
            said = " ".join(doc.get("notes", [])) + str(doc.get("error"))
            assert "the device stopped answering: its close waits for the writeback" in said, said
            code = run.exits_while_held(device, at, "psync", held=f"close() of {device.dev}")
            assert code == 2, run.err.joined()[-800:]
            device.release()
        after = device.backing.read_bytes()
    assert after[: 16 * MIB] == before[: 16 * MIB]
    assert after[48 * MIB :] == before[48 * MIB :]


def test_a_fuse_close_held_past_the_cap_is_said_as_not_returned(tmp_path: Path):
    """A file on FUSE (issues 26, 29): the server acks every write at once,
    but holds the FLUSH that the written handle's close() sends. Nothing
    counts a FUSE file system's writeback (no block device, not NFS), so
    the run waits ``CLOSE_CAP_S`` (30 s: no test hook shortens it; the test
    only sleeps meanwhile, so it runs in the parallel pass, not the serial
    one) and then says what is known: the close has not returned and may
    still be progressing, not "stopped answering"; exit 2, the close left to
    the kernel, and nothing written outside the range."""
    with faulty_mount(mode="flushhang") as served:
        target = served.dev
        before = served.backing.read_bytes()
        args = ["iops", target, "--time", "1", "--rw", "randwrite", "--offset", "16M",
                "--size", "16M", "--json", f"--yes-destroy-data={target}"]  # fmt: skip
        started = time.monotonic()
        with probetop(*args) as run:
            doc, at = run.report(timeout=CLOSE_CAP_S + 60)
            assert served.held(), served.said.joined()  # "held flush"
            assert doc["jobs"][0]["write"]["io_bytes"] > 0
            (error,) = doc["probetop"]["errors"]
            assert f"{target}: its close has not returned in {CLOSE_CAP_S:g} s" in error, error
            assert "may still be progressing" in error and "(fuse" in error, error
            assert "stopped answering" not in error, error
            assert at - started >= CLOSE_CAP_S, at - started
            code = run.exits_while_held(served, at, "psync", held=f"close() of {target}")
            assert code == 2, run.err.joined()[-800:]
            served.release()
        after = served.backing.read_bytes()
        assert sorted(p.name for p in Path(target).parent.iterdir()) == ["disk.img"]
    assert len(after) == len(before)
    assert after[: 16 * MIB] == before[: 16 * MIB]
    assert after[32 * MIB :] == before[32 * MIB :]
    assert after[16 * MIB : 32 * MIB] != before[16 * MIB : 32 * MIB]  # written


def test_a_stop_while_the_main_thread_is_held_gives_the_shell_back(tmp_path: Path):
    """The run's own main thread blocked in the kernel (here at start-up: the
    read of the target's first bytes that looks for a filesystem, held by
    the device): it can act on no signal. SIGINT still gives the shell back
    within ``STOP_GRACE_S`` of the main thread held, with 130, saying why
    there is no report."""
    with hanging_device(hold=(0, MIB)) as device:
        args = ["iops", device.dev, "--time", "5", "--rw", "randwrite", "--json",
                f"--yes-destroy-data={device.dev}"]  # fmt: skip
        with probetop(*args) as run:
            wait_for("the hang", device.held)
            sent = time.monotonic()
            run.proc.send_signal(signal.SIGINT)
            try:
                code = run.proc.wait(timeout=STOP_GRACE_S + EXIT_WITHIN_S)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"no exit after SIGINT: {run.err.joined()[-800:]}") from None
            assert time.monotonic() - sent <= STOP_GRACE_S + EXIT_WITHIN_S
            assert code == 130, run.err.joined()[-800:]
            assert not device.released
            # The waiter writes its line just before it exits, but the thread
            # reading the pipe may not have read it yet when wait() returns
            # (stderr read empty at load 9-23): read it once the pipe has ended.
            assert run.out.ended.wait(5) and run.err.ended.wait(5), "a pipe stayed open"
            said = run.err.joined()
            assert "could not act on SIGINT" in said and "is left to the kernel" in said, said


def test_a_detached_session_held_before_its_probes_start_gives_the_shell_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """``--detach`` whose session's main thread the device holds at start-up
    (the read that looks for a filesystem): the command used to wait 60 s
    for "ready", ``stop`` 30 s. Now each returns once that thread has been
    held for its grace, naming it; ``ls`` lists the session as held (it
    said "starting"), naming the thread, its wait and the device."""
    base = Path(tempfile.mkdtemp(prefix="pth-", dir="/tmp"))  # a socket's path: 107 bytes
    state, runtime = base / "st", base / "run"
    for d in (state, runtime):
        d.mkdir(mode=0o700)
    env = dict(os.environ, XDG_STATE_HOME=str(state), XDG_RUNTIME_DIR=str(runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))

    def cli(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
        began = time.monotonic()
        done = subprocess.run([*PROBETOP, *args], capture_output=True, text=True, env=env,
                              timeout=120)  # fmt: skip
        return done, time.monotonic() - began

    with hanging_device(hold=(0, MIB)) as device:
        confirm = f"--yes-destroy-data={device.dev}"
        detach, took = cli("iops", device.dev, "--time", "30", "--rw", "randwrite", confirm,
                           "--detach", "--name", "held")  # fmt: skip
        assert device.held(), device.said.joined()
        assert detach.returncode == 1, detach.stderr
        assert "session held is held by the kernel before its probes started" in detach.stderr
        assert took <= HELD_START_S + 10, took  # was READY_TIMEOUT_S (60 s)
        listed, _ = cli("ls", "--json")
        (row,) = json.loads(listed.stdout)["sessions"]
        # Held, not "starting": by what, and on which file.
        assert row["name"] == "held" and row["state"] == "held", row
        assert row["held"].startswith(f"thread {row['pid']} in "), row
        assert f" on {device.dev}" in row["held"], row
        text, _ = cli("ls")
        assert f"held: held by the kernel (thread {row['pid']} in " in text.stdout, text.stdout
        stop, took = cli("stop", "held")
        assert stop.returncode == 2, stop.stderr
        assert "cannot act on the stop: its main thread is blocked in the kernel" in stop.stderr
        assert f"PID {row['pid']} is left to the kernel" in stop.stderr
        assert took <= STOP_HELD_S + 10, took  # was --wait (30 s)
        device.release()
        # Once the device answers, the session acts on the stop it was sent.
        wait_for("the session's end", lambda: not Path(f"/proc/{row['pid']}").exists(), 60)
    shutil.rmtree(base, ignore_errors=True)


def test_a_detached_session_held_after_its_report_is_listed_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A detached ``iops`` whose device stops answering mid-run reports at its
    end (exit 2, written into its metadata) and its process stays, kept by
    the kernel, with the target's lock: ``ls`` said "finished (2)" as for a
    session that is gone. Now "held (2)", naming the threads and their wait;
    once the device answers the process ends and it is "finished (2)"."""
    base = Path(tempfile.mkdtemp(prefix="pth-", dir="/tmp"))  # a socket's path: 107 bytes
    state, runtime = base / "st", base / "run"
    for d in (state, runtime):
        d.mkdir(mode=0o700)
    env = dict(os.environ, XDG_STATE_HOME=str(state), XDG_RUNTIME_DIR=str(runtime))

    def ls() -> dict:
        done = subprocess.run([*PROBETOP, "ls", "--json"], capture_output=True, text=True,
                              env=env, timeout=60)  # fmt: skip
        (row,) = json.loads(done.stdout)["sessions"]
        return row

    try:
        with hanging_device() as device:
            detach = subprocess.run(
                [*PROBETOP, "iops", device.dev, "--time", "1", "--rw", "randread",
                 "--ioengine", "libaio", "--iodepth", "8", "--detach", "--name", "late"],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            assert detach.returncode == 0, detach.stderr
            wait_for("the session's report", lambda: ls()["exit_code"] is not None, 60)
            assert device.held(), device.said.joined()
            row = ls()
            assert row["exit_code"] == 2 and row["state"] == "held", row
            assert "thread " in row["held"] and " in " in row["held"], row
            assert Path(f"/proc/{row['pid']}").exists()
            device.release()
            wait_for("the session's end", lambda: not Path(f"/proc/{row['pid']}").exists(), 60)
            assert ls()["state"] == "finished"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_command_substitution_returns_when_a_killed_run_is_held(tmp_path: Path):
    """The shell's own ``out=$(probetop iops ...)``: the run is killed (kill
    -9 of its PID) while the kernel holds it. The shell's command
    substitution returns once the waiter has reported (it waited for the
    device: the held run kept the pipe's write end), with 137."""
    with hanging_device() as device:
        script = tmp_path / "sub.sh"
        script.write_text(
            f"out=$({' '.join(PROBETOP)} iops {device.dev} --time 30 --rw randread --json)\n"
            'echo "status=$? bytes=${#out}"\n'
        )
        proc = subprocess.Popen(
            ["bash", str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            wait_for("the hang", device.held)
            waiter = proc.pid  # bash, or its subshell, then the waiter: the first probetop
            while b"probetop" not in Path(f"/proc/{waiter}/cmdline").read_bytes():
                kids = Path(f"/proc/{waiter}/task/{waiter}/children").read_text()
                (waiter,) = map(int, kids.split())
            child = child_of(waiter)
            os.kill(child, signal.SIGKILL)
            try:
                out, err = proc.communicate(timeout=EXIT_WITHIN_S + 3)
            except subprocess.TimeoutExpired:
                raise AssertionError("$(...) still waits for the run the kernel holds") from None
            assert not device.released
            assert Path(f"/proc/{child}").exists(), "the run was not held: this test shows nothing"
            assert "status=137 " in out, (out, err[-800:])
            assert f"process {child} is left to the kernel" in err, err[-800:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)


def test_a_slow_device_is_not_called_held():
    """psync on a device that answers every I/O after 0.1 s: the worker is
    in an uninterruptible wait nearly always, yet it is not held (it goes
    from I/O to I/O). What ``ls`` asks (``kernelholds.held_now``) must say
    so, where "in D at two looks" alone called it held."""
    from probetop.probes.core import kernelholds

    with hanging_device(hold=(0, SIZE), mode="hang:0.1") as device:
        args = ["iops", device.dev, "--time", "20", "--rw", "randread", "--json"]
        with probetop(*args) as run:
            wait_for("the first slow I/O", device.held)
            child = child_of(run.proc.pid)
            in_d = 0
            for _ in range(10):
                state = kernelholds.process_state(child)
                in_d += bool(state.stuck)
                assert kernelholds.held_now(child, 0.3) is None, state
            assert in_d >= 3, "the worker was seldom in D: this test shows nothing"
            run.proc.send_signal(signal.SIGINT)
            run.report()
