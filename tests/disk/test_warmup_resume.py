"""Warm-up resume correctness: kill -9 a write pass, resume, check every sector."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import PROBETOP, kernel_io, loop_device, read_stamps, run_cli
from file_size import text_of
from probetop.probes.core.base import ProbeError
from probetop.probes.disk import WarmupProbe, WarmupSettings
from probetop.probes.disk.warmup.checkpoint import Checkpoint

fast_dir = disk_fixtures.fast_dir  # the fixture, under the name tests ask for


def _start_write(target: str, checkpoint: Path, bs: str, rate: int) -> subprocess.Popen[str]:
    # --rate-iops makes the pass last ~2 s on any machine, so it can be cut mid-way.
    return subprocess.Popen(
        [*PROBETOP, "warmup", target, "--write", f"--yes-destroy-data={target}", "--bs", bs,
         "--iodepth", "1", "--checkpoint", str(checkpoint), "--interval", "0.25",
         "--rate-iops", str(rate), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """kill -9 the run, as a crash would: its process group (the process
    started, and the run it forked: tui/sessions/waiter.py), then wait until
    none of them runs any more (a killed child may be an unreaped zombie)."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == proc.pid and fields[0] != "Z":  # pgrp, state
                alive.append(stat.parent.name)
        if not alive:
            return
        time.sleep(0.01)
    pytest.fail(f"processes of the killed run still alive: {alive}")


def _settled_io(dev: str, timeout_s: float = 30.0) -> tuple[int, int, int, int]:
    """``kernel_io(dev)`` once no request is in flight on it and its counts
    stood still for 0.2 s. A write in flight at the kill -9 lands after the
    process is gone (io_uring's ring is torn down by a kernel worker after
    the exit): read at once, it was counted as the resume's ("redone" 4 KiB
    over the bound, CI at load 13-16)."""
    name = os.path.basename(os.path.realpath(dev))
    deadline = time.monotonic() + timeout_s
    last = kernel_io(dev)
    while True:
        time.sleep(0.2)
        now = kernel_io(dev)
        idle = Path(f"/sys/block/{name}/inflight").read_text().split() == ["0", "0"]
        if idle and now == last:
            return now
        assert time.monotonic() < deadline, f"{dev} still busy after the kill: {now}"
        last = now


def _kill_after_first_progress(proc: subprocess.Popen[str], checkpoint: Path) -> tuple[int, float]:
    """Wait until the checkpoint records some done bytes, then kill -9.
    Returns (done bytes in the checkpoint at the kill, seconds since the pass started)."""
    started = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if text := text_of(checkpoint):
            started = started or time.monotonic()
            try:
                done = json.loads(text)["done_bytes"]
            except (ValueError, KeyError):
                done = 0
            if done > 0:
                _kill_group(proc)
                final = json.loads(checkpoint.read_text())["done_bytes"]
                return final, time.monotonic() - started
        if proc.poll() is not None:
            pytest.fail(f"the write pass ended before it could be killed: {proc.stderr.read()}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("no progress in the checkpoint within 60 s")


def test_killed_write_pass_resumes_and_every_sector_is_written_once():
    size = 16 << 20
    with loop_device(size, fill=b"\xff") as dev:
        checkpoint = Path(f"/dev/shm/probetop-test-{os.getpid()}.ckpt.json")
        checkpoint.unlink(missing_ok=True)
        try:
            before = kernel_io(dev)
            proc = _start_write(dev, checkpoint, "4k", 2000)
            done_at_kill, seconds = _kill_after_first_progress(proc, checkpoint)
            first = _settled_io(dev)
            written_first = (first[3] - before[3]) * 512
            assert 0 < done_at_kill < size, "kill it mid-pass: make the device bigger"
            assert done_at_kill <= written_first

            resumed = run_cli(
                ["warmup", dev, "--write", f"--yes-destroy-data={dev}", "--bs", "4k",
                 "--iodepth", "1", "--checkpoint", str(checkpoint), "--resume", "--json"]
            )  # fmt: skip
            assert resumed.returncode == 0, resumed.stderr
            doc = json.loads(resumed.stdout)
            assert doc["complete"] is True and doc["resumed_from"] == done_at_kill
            assert doc["bytes"] == size - done_at_kill
            total_written = (kernel_io(dev)[3] - before[3]) * 512

            # Every sector carries its own offset: written, and in the right place.
            stamps = read_stamps(dev, 0, size)
            assert stamps == list(range(0, size, 512))
            # Written once, except the work done after the last checkpoint save
            # before the kill, which the resume redid: at most ~one interval's worth.
            redone = total_written - size
            assert 0 <= redone <= written_first - done_at_kill
            rate = written_first / seconds
            assert redone <= rate * 0.5 + 4096, (redone, rate)
        finally:
            checkpoint.unlink(missing_ok=True)


def test_file_target_resume_and_verify(fast_dir):
    tmp_path = fast_dir
    target = tmp_path / "vol.img"
    size = 8 << 20
    with open(target, "wb") as f:
        f.truncate(size)
    checkpoint = tmp_path / "ck.json"
    proc = _start_write(str(target), checkpoint, "4k", 1000)
    done_at_kill, _ = _kill_after_first_progress(proc, checkpoint)
    assert 0 < done_at_kill < size
    resumed = run_cli(
        ["warmup", str(target), "--write", f"--yes-destroy-data={target}", "--bs", "4k",
         "--iodepth", "1", "--checkpoint", str(checkpoint), "--resume", "--json"]
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["complete"] is True
    verify = run_cli(
        ["warmup", str(target), "--verify", "--bs", "1M", "--checkpoint", str(tmp_path / "v.json"),
         "--json"]
    )  # fmt: skip
    doc = json.loads(verify.stdout)
    assert verify.returncode == 0, verify.stderr
    assert doc["verify"] == {"bad_sectors": 0, "first_bad_offset": None, "ok": True}


def test_checkpoint_of_another_target_is_refused(tmp_path):
    a, b = tmp_path / "a.img", tmp_path / "b.img"
    for path in (a, b):
        path.write_bytes(b"\0" * (4 << 20))
    checkpoint = tmp_path / "a.json"
    first = WarmupProbe(WarmupSettings(str(a), checkpoint=str(checkpoint), iodepth=4))
    first.prepare()
    asyncio.run(first.run(lambda r: None))
    assert first.summary()["complete"] is True
    saved = checkpoint.read_text()
    with pytest.raises(ProbeError, match="another target"):
        WarmupProbe(WarmupSettings(str(b), checkpoint=str(checkpoint), resume=True)).prepare()
    with pytest.raises(ProbeError, match="block size"):
        WarmupProbe(
            WarmupSettings(str(a), checkpoint=str(checkpoint), resume=True, bs=65536)
        ).prepare()
    with pytest.raises(ProbeError, match="read pass, not write"):
        WarmupProbe(
            WarmupSettings(
                str(a), checkpoint=str(checkpoint), resume=True, pass_name="write", confirmed=True
            )
        ).prepare()
    assert checkpoint.read_text() == saved  # refusals leave it untouched
    # Through the CLI: exit 2 and the reason on stderr.
    proc = run_cli(["warmup", str(b), "--checkpoint", str(checkpoint), "--resume"])
    assert proc.returncode == 2 and "another target" in proc.stderr


def test_ctrl_c_saves_exactly_what_completed_and_resume_redoes_nothing(fast_dir):
    target = fast_dir / "vol.img"
    size = 8 << 20
    with open(target, "wb") as f:
        f.truncate(size)
    checkpoint = fast_dir / "ck.json"
    proc = _start_write(str(target), checkpoint, "4k", 1000)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not checkpoint.exists():  # the pass has started
        time.sleep(0.01)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _err = proc.communicate(timeout=60)
    first = json.loads(out)
    saved = Checkpoint.load(checkpoint)
    # A graceful stop records every completed I/O: nothing to redo.
    assert 0 < saved.done_bytes == first["done_bytes"] == first["bytes"]
    assert saved.done == [(0, saved.done_bytes)]
    resumed = run_cli(
        ["warmup", str(target), "--write", f"--yes-destroy-data={target}", "--bs", "4k",
         "--iodepth", "1", "--checkpoint", str(checkpoint), "--resume", "--json"]
    )  # fmt: skip
    doc = json.loads(resumed.stdout)
    assert doc["complete"] is True and doc["bytes"] == size - saved.done_bytes
    assert read_stamps(str(target), 0, size) == list(range(0, size, 512))
