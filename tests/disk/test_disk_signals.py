"""Every disk run stops on request within 2 s: SIGINT, SIGTERM, SIGHUP, --time
and the dashboard's own stop, in every long step (laying a file out, the
warm-up's passes with extreme options, paced I/O), with the partial report
printed, the checkpoint valid and resumable, and the recording complete.

Real processes, real signals, real files: the layout runs on the machine's
disk (a big file whose layout takes far longer than 2 s; removed by the
stop), the warm-ups on sparse files (reading holes costs no disk space).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import PROBETOP, summary_of
from file_size import size_of, text_of
from probetop.probes.disk import IopsProbe, IopsSettings, WarmupProbe, WarmupSettings
from probetop.probes.disk.warmup.checkpoint import Checkpoint, CheckpointError
from probetop.probes.record import load_session
from pty_session import PtySession
from stopclock import StopClock, StopTime

STOP_WITHIN_S = 2.0
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
fast_dir = disk_fixtures.fast_dir


# ----------------------------------------------------------------- helpers


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A directory on the machine's real disk with room for a layout that takes
    well over 2 s (the stop removes it: nothing stays)."""
    for base in ("/var/tmp", "/tmp"):
        if not os.path.isdir(base):
            continue
        st = os.statvfs(base)
        fstype = _fstype(base)
        if fstype in ("tmpfs", "ramfs") or st.f_bavail * st.f_frsize < 12 << 30:
            continue
        path = Path(base) / f"probetop-signal-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
        return
    pytest.skip("no disk-backed directory with 12 GiB free for a long layout")


def _fstype(path: str) -> str:
    out = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return out.stdout.strip()


def big_size(directory: Path) -> str:
    """A --size whose layout lasts far longer than 2 s, leaving room to spare."""
    st = os.statvfs(directory)
    free_gib = st.f_bavail * st.f_frsize >> 30
    return f"{min(64, max(8, free_gib // 3))}G"


def wait_until(predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail("the run never reached the step to interrupt")


def file_bigger_than(path: Path, size: int) -> Callable[[], bool]:
    return lambda: size_of(path) > size


def checkpoint_has_progress(path: Path) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return Checkpoint.load(path).done_bytes > 0
        except CheckpointError:
            return False

    return check


def interrupt(
    args: list[str], sig: int, ready: Callable[[], bool]
) -> tuple[int, str, str, StopTime]:
    """Start probetop headless, wait for ``ready``, send ``sig``; (exit code,
    stdout, stderr, the time from the signal to the process's exit)."""
    proc = subprocess.Popen(
        [*PROBETOP, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        try:
            wait_until(lambda: ready() or proc.poll() is not None)
        except BaseException:
            proc.kill()
            raise
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ended before the signal ({proc.returncode}): {out[-500:]} {err[-500:]}")
        clock = StopClock(proc.pid).start()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err, clock.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def assert_recording(path: Path, reason: str) -> None:
    session = load_session(path)
    assert session.footer is not None, session.warnings
    assert session.footer["reason"] == reason
    assert session.warnings == []


# ----------------------------------------------------------------- layout (headless)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_long_layout_stops_on_a_signal_and_is_undone(disk_dir: Path, sig: int) -> None:
    target, rec = disk_dir / "big.img", disk_dir / "rec.jsonl"
    rc, out, err, latency = interrupt(
        ["iops", str(target), "--size", big_size(disk_dir), "--rw", "write", "--time", "30",
         "--record", str(rec)],
        sig,
        file_bigger_than(target, 64 << 20),
    )  # fmt: skip
    name = signal.Signals(sig).name
    assert latency.own_s <= STOP_WITHIN_S, (str(latency), out, err)
    assert rc == 128 + sig and "Traceback" not in err, err  # the signal's own status
    # The partial report: what happened, how far the layout got, what was undone.
    assert f"interrupted ({name})" in out
    assert "layout undone" in out and "was removed" in out and "nothing was measured" in out
    assert not target.exists()
    assert_recording(rec, f"interrupted ({name})")


def test_time_bounds_the_layout_too(disk_dir: Path) -> None:
    target = disk_dir / "big.img"
    proc = subprocess.Popen(
        [*PROBETOP, "iops", str(target), "--size", big_size(disk_dir), "--rw", "write",
         "--time", "1", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    clock = StopClock(proc.pid).start()
    out, err = proc.communicate(timeout=60)
    elapsed = clock.stop()
    assert proc.returncode == 2, err
    doc = summary_of(out)
    assert "--time 1 s ran out while laying out" in doc["error"]
    assert doc["layout"]["state"] == "undone" and doc["layout"]["bytes"] > 0
    assert not target.exists()
    # --time 1 + the stop: the JIT never ran, the process was up for ~1.5 s.
    assert elapsed.own_s <= 1 + STOP_WITHIN_S + 1.5, str(elapsed)


# ----------------------------------------------------------------- measuring (headless)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_iops_with_extreme_options_stops_on_a_signal(fast_dir: Path, sig: int) -> None:
    target, rec = fast_dir / "t.img", fast_dir / "rec.jsonl"
    with open(target, "wb") as f:
        f.truncate(64 << 30)  # sparse: reads of holes, no disk space, every job busy
    rc, out, err, latency = interrupt(
        ["iops", str(target), "--jobs", "64", "--iodepth", "256", "--bs", "4k", "--buffered",
         "--interval", "0.1", "--record", str(rec)],
        sig,
        lambda: text_of(rec).count('"type":"sample"') >= 3,
    )  # fmt: skip
    name = signal.Signals(sig).name
    assert latency.own_s <= STOP_WITHIN_S, (str(latency), out, err)
    assert rc == 128 + sig, err
    assert f"interrupted ({name})" in out and "read: IOPS=" in out
    assert_recording(rec, f"interrupted ({name})")


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_warmup_with_extreme_options_stops_and_resumes(fast_dir: Path, sig: int) -> None:
    target, rec, ckpt = fast_dir / "vol.img", fast_dir / "rec.jsonl", fast_dir / "c.json"
    with open(target, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB, sparse
    # 64 x 512 AIO events: half of the default fs.aio-max-nr (65536). 64 x 1024
    # took all of it, and was refused (rightly) whenever any other process on
    # the machine held an AIO context.
    rc, out, err, latency = interrupt(
        ["warmup", str(target), "--jobs", "64", "--iodepth", "512", "--bs", "4k",
         "--interval", "0.1", "--checkpoint", str(ckpt), "--record", str(rec)],
        sig,
        checkpoint_has_progress(ckpt),
    )  # fmt: skip
    name = signal.Signals(sig).name
    assert latency.own_s <= STOP_WITHIN_S, (str(latency), out, err)
    assert rc == 128 + sig, err
    assert f"read pass, interrupted ({name})" in out and "complete: no" in out
    assert_recording(rec, f"interrupted ({name})")
    saved = Checkpoint.load(ckpt)  # valid, and holds what the report says
    assert 0 < saved.done_bytes < 1 << 40
    assert f"done: {saved.done_bytes:,} of" in out
    resumed = subprocess.run(
        [*PROBETOP, "warmup", str(target), "--bs", "4k", "--checkpoint", str(ckpt), "--resume",
         "--time", "1", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # A sparse file is a fresh volume: the resumed read, stopped by --time,
    # says so (the write command, exit 3) rather than offer another resume.
    assert resumed.returncode == 3, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert doc["resumed_from"] == saved.done_bytes and doc["case"] == "fresh"


@pytest.mark.parametrize("command", ["iops", "warmup"])
def test_a_stop_during_the_first_compilation_does_not_wait_for_it(
    fast_dir: Path, tmp_path: Path, command: str
) -> None:
    """An empty numba cache: the JIT takes seconds and cannot be interrupted;
    the run stops without waiting for it (its daemon thread is left behind)."""
    target, rec = fast_dir / "t.img", fast_dir / "rec.jsonl"
    target.write_bytes(b"\0" * (4 << 20))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "empty-cache"))
    proc = subprocess.Popen(
        [*PROBETOP, command, str(target), "--record", str(rec),
         *(["--checkpoint", str(fast_dir / "c.json")] if command == "warmup" else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        wait_until(lambda: "compiling the native" in text_of(rec))
        time.sleep(0.3)  # well inside the compilation (seconds)
        assert proc.poll() is None
        clock = StopClock(proc.pid).start()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        latency = clock.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert latency.own_s <= STOP_WITHIN_S, (str(latency), err)
    assert proc.returncode == 130 and "Traceback" not in err and "Fatal" not in err, err
    assert "interrupted (SIGINT)" in out
    assert_recording(rec, "interrupted (SIGINT)")


def test_a_paced_pass_stops_without_waiting_for_its_next_slot(fast_dir: Path) -> None:
    """--rate-iops 1: the loop sleeps a second between I/Os, in 100 ms slices."""
    target, ckpt = fast_dir / "vol.img", fast_dir / "c.json"
    target.write_bytes(b"\0" * (1 << 20))
    rc, _out, err, latency = interrupt(
        ["warmup", str(target), "--bs", "4k", "--iodepth", "1", "--rate-iops", "1",
         "--interval", "0.5", "--checkpoint", str(ckpt)],
        signal.SIGINT,
        checkpoint_has_progress(ckpt),
    )  # fmt: skip
    assert latency.own_s <= STOP_WITHIN_S and rc == 130, (str(latency), err)
    assert Checkpoint.load(ckpt).done_bytes >= 4096


# ----------------------------------------------------------------- the probes themselves


def _probetop_threads_left(within_s: float = 5.0) -> list[str]:
    """probetop's threads still alive ``within_s`` after a stop. Not at once:
    a thread that has handed over its result (a step) or been told to close
    (the checkpoint saver) returns when it next gets a CPU, and at a load
    average of 33 one was still alive right after the cancel. A thread left
    behind for good is still seen."""
    deadline = time.monotonic() + within_s
    for thread in threading.enumerate():
        if thread.name.startswith("probetop-"):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [
        t.name for t in threading.enumerate() if t.name.startswith("probetop-") and t.is_alive()
    ]


async def _cancel_after(probe: IopsProbe | WarmupProbe, ready: Callable[[], bool]) -> StopTime:
    probe.prepare()
    task = asyncio.ensure_future(probe.run(lambda record: None))
    deadline = time.monotonic() + 60
    while not ready() and time.monotonic() < deadline and not task.done():
        await asyncio.sleep(0.02)
    assert not task.done(), task.exception() if task.done() else None
    clock = StopClock(os.getpid()).start()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return clock.stop()


async def test_cancelling_a_layout_leaves_no_thread_and_no_file(disk_dir: Path) -> None:
    target = disk_dir / "big.img"
    probe = IopsProbe(
        IopsSettings(str(target), rw="write", size=int(big_size(disk_dir)[:-1]) << 30)
    )
    latency = await _cancel_after(probe, file_bigger_than(target, 64 << 20))
    assert latency.own_s <= STOP_WITHIN_S, str(latency)
    await asyncio.sleep(0)  # the step thread has ended or been left as a daemon
    assert not _probetop_threads_left()
    assert not target.exists()
    layout = probe.summary()["layout"]
    assert layout["state"] == "undone" and layout["bytes"] > 64 << 20


async def test_cancelling_a_warmup_saves_a_valid_checkpoint(fast_dir: Path) -> None:
    target, ckpt = fast_dir / "vol.img", fast_dir / "c.json"
    with open(target, "wb") as f:
        f.truncate(1 << 40)
    probe = WarmupProbe(
        WarmupSettings(str(target), bs=4096, jobs=8, iodepth=64, checkpoint=str(ckpt))
    )
    latency = await _cancel_after(probe, checkpoint_has_progress(ckpt))
    assert latency.own_s <= STOP_WITHIN_S, str(latency)
    assert not _probetop_threads_left()
    assert Checkpoint.load(ckpt).done_bytes == probe.summary()["done_bytes"] > 0


# ----------------------------------------------------------------- the dashboard


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_dashboard_stops_a_layout_on_a_signal(disk_dir: Path, sig: int) -> None:
    target, rec = disk_dir / "big.img", disk_dir / "rec.jsonl"
    app = PtySession.start(
        ["iops", str(target), "--size", big_size(disk_dir), "--rw", "write", "--record", str(rec)]
    )
    try:
        wait_until(lambda: file_bigger_than(target, 64 << 20)() or app.proc.poll() is not None)
        assert app.proc.poll() is None, bytes(app.output)[-800:]
        clock = StopClock(app.proc.pid).start()
        app.proc.send_signal(sig)
        app.proc.wait(timeout=30)
        latency = clock.stop()
    finally:
        app.close()
    assert latency.own_s <= STOP_WITHIN_S, str(latency)
    assert not target.exists()
    assert b"Traceback" not in app.output
    assert_recording(rec, f"interrupted ({signal.Signals(sig).name})")


def test_the_dashboard_stops_a_warmup_and_keeps_its_checkpoint(fast_dir: Path) -> None:
    target, rec, ckpt = fast_dir / "vol.img", fast_dir / "rec.jsonl", fast_dir / "c.json"
    with open(target, "wb") as f:
        f.truncate(1 << 40)
    app = PtySession.start(
        ["warmup", str(target), "--jobs", "16", "--iodepth", "256", "--bs", "4k",
         "--checkpoint", str(ckpt), "--record", str(rec)]
    )  # fmt: skip
    try:
        wait_until(lambda: checkpoint_has_progress(ckpt)() or app.proc.poll() is not None)
        assert app.proc.poll() is None, bytes(app.output)[-800:]
        clock = StopClock(app.proc.pid).start()
        app.proc.send_signal(signal.SIGTERM)
        app.proc.wait(timeout=30)
        latency = clock.stop()
    finally:
        app.close()
    assert latency.own_s <= STOP_WITHIN_S, str(latency)
    assert Checkpoint.load(ckpt).done_bytes > 0
    assert_recording(rec, "interrupted (SIGTERM)")


def test_a_signal_before_any_io_still_writes_the_one_job(disk_dir: Path) -> None:
    """SIGTERM during the layout with --json: jobs[0] is there with zeros (as
    fio writes a job that did no I/O), probetop's key says it was
    interrupted, and the exit status is the signal's."""
    target = disk_dir / "big.img"
    rc, out, err, _latency = interrupt(
        ["iops", str(target), "--size", big_size(disk_dir), "--time", "30", "--json"],
        signal.SIGTERM,
        file_bigger_than(target, 32 << 20),
    )
    assert rc == 143 and "Traceback" not in err, err
    doc = json.loads(out)
    job = doc["jobs"][0]
    assert job["jobname"] == "probetop" and job["read"]["total_ios"] == 0
    assert job["read"]["clat_ns"]["N"] == 0 and job["job_runtime"] == 0
    assert doc["probetop"]["interrupted"] == "interrupted (SIGTERM)"
    assert any("before any I/O was measured" in n for n in doc["probetop"]["notes"])
