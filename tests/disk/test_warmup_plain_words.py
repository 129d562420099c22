"""Issue 26, what the first session left open: the warm-up says plainly what
happened and what to do, on real targets.

- Ctrl-C (SIGINT) of a read or a write pass: the verdict says "interrupted
  at X of Y" and the exact command that resumes the pass, and that command
  runs it to its end.
- A write to the device holding / is refused with which mount and what to
  do, never the open's bare errno ("operation not permitted").
- ``--write --read``: the fio line gives both of the method's commands, and
  fio itself runs them over the same bytes.
- A write pass never gets the notes meant for reads of never-written blocks.
- The read-rate check against the kernel's view of the disk under the
  target (a loop device over a file in the page cache: no zeros, yet far
  above what the disk read), in the headless notes and in the pane.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from disk_fixtures import PROBETOP, fast_dir, loop_device, need_root, run_cli

__all__ = ["fast_dir"]  # the fixture, imported for pytest

MIB = 1 << 20


def _random_file(path: Path, size: int) -> str:
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(os.urandom(MIB))
    return str(path)


def _interrupt_after_progress(args: list[str], checkpoint: str) -> subprocess.CompletedProcess:
    """Run ``probetop ARGS``, send SIGINT once its checkpoint shows progress
    (bytes done, not a sleep: the machine may be loaded), return the result."""
    from probetop.probes.disk.warmup.checkpoint import Checkpoint

    proc = subprocess.Popen(
        PROBETOP + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if Checkpoint.load(checkpoint).done_bytes > 0:
                    break
            except Exception:  # not written yet, or mid-rename
                pass
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _resume_command(text: str) -> list[str]:
    """The command after "resume with: " in the verdict line, as argv."""
    line = next(ln for ln in text.splitlines() if ln.startswith("  verdict: "))
    argv = shlex.split(line.split("resume with: ", 1)[1])
    assert argv[:2] == ["probetop", "warmup"], argv
    return argv[1:]


def test_ctrl_c_of_a_read_pass_says_interrupted_and_how_to_resume(fast_dir, tmp_path):
    target = _random_file(fast_dir / "data.img", 64 * MIB)
    ckpt = str(tmp_path / "read.json")
    args = ["warmup", target, "--bs", "64k", "--rate-iops", "100", "--checkpoint", ckpt]
    proc = _interrupt_after_progress(args, ckpt)
    assert proc.returncode == 130, proc.stderr
    assert "read pass, interrupted (SIGINT)" in proc.stdout
    verdict = next(ln for ln in proc.stdout.splitlines() if ln.startswith("  verdict: "))
    assert verdict.startswith("  verdict: not warmed: interrupted at "), verdict
    assert "of 67,108,864 bytes" in verdict and "of the read pass" in verdict
    assert "not decided" not in proc.stdout and "(unknown)" not in proc.stdout
    resume = _resume_command(proc.stdout)
    assert resume == [
        "warmup", target, "--bs", "64k", "--rate-iops", "100", "--checkpoint", ckpt, "--resume"
    ]  # fmt: skip
    # The printed command is the one that finishes the pass (a higher cap: the rest, faster).
    resume[resume.index("--rate-iops") + 1] = "100000"
    done = run_cli([*resume, "--json"])
    doc = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert doc["outcome"] == "completed" and doc["resumed_from"] > 0
    assert doc["verdict"] == "warmed" and doc["resume_command"] is None


def test_ctrl_c_of_a_write_pass_gives_the_confirmed_resume_command(tmp_path):
    """write then read on a fresh loop device, stopped during the write: the
    JSON's case is "interrupted", its resume command carries --write --read
    and the confirmation, and running it leaves the volume warmed."""
    with loop_device(64 * MIB) as dev:
        ckpt = str(tmp_path / "write.json")
        args = [
            "warmup", dev, "--write", "--read", f"--yes-destroy-data={dev}",
            "--bs", "64k", "--rate-iops", "100", "--checkpoint", ckpt, "--json",
        ]  # fmt: skip
        proc = _interrupt_after_progress(args, ckpt)
        assert proc.returncode == 130, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["verdict"] == "not warmed" and doc["case"] == "interrupted"
        assert "interrupted at" in doc["verdict_reason"]
        assert "of the write pass (then the read pass)" in doc["verdict_reason"]
        resume = shlex.split(doc["resume_command"])
        assert resume[:3] == ["probetop", "warmup", dev]
        for flag in ("--write", "--read", "--resume", f"--yes-destroy-data={dev}"):
            assert flag in resume, resume
        assert resume[resume.index("--checkpoint") + 1] == ckpt
        assert doc["verdict_reason"].endswith(doc["resume_command"])
        resume[resume.index("--rate-iops") + 1] = "100000"
        done = run_cli([*resume[1:], "--json"])
        end = json.loads(done.stdout)
        assert done.returncode == 0, done.stderr
        assert end["case"] == "written" and end["verdict"] == "warmed", end["verdict_reason"]


def _root_device() -> str:
    """/dev/NAME of the block device mounted on /, or skip."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            node = Path(f"/sys/dev/block/{fields[2]}")
            if node.exists():
                dev = f"/dev/{node.resolve().name}"
                if os.path.exists(dev):
                    return dev
    pytest.skip("/ is not on a block device this test can name")


@pytest.mark.parametrize("command", ["warmup", "iops"])
def test_the_root_device_is_refused_in_plain_words(command, tmp_path):
    """No confirmation is given: whatever happens, nothing is written."""
    dev = _root_device()
    args = (
        ["warmup", dev, "--write", "--checkpoint", str(tmp_path / "c.json")]
        if command == "warmup"
        else ["iops", dev, "--rw", "write", "--time", "1"]
    )
    proc = run_cli(args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = proc.stderr
    assert "holds this system's root filesystem /" in err, err
    assert "mounted on /" in err and "Choose another device" in err, err
    assert "not permitted" not in err and "umount it first" not in err, err


def test_an_open_refused_to_root_does_not_tell_root_to_run_as_root(tmp_path):
    """Where a policy forbids even root to open the system's disk (this VM's
    device rules), the message says so instead of "run as root". A read of
    its first MiB only: where the open is allowed, nothing but that is read."""
    if os.geteuid() != 0:
        pytest.skip("needs root: it checks what root is told when even root may not open the disk")
    dev = _root_device()
    ckpt = str(tmp_path / "r.json")
    proc = run_cli(["warmup", dev, "--range", "0-1048576", "--checkpoint", ckpt, "--json"])
    if "not permitted" not in proc.stderr:
        pytest.skip(f"root may open {dev} here (exit {proc.returncode})")
    assert proc.returncode == 2
    assert "run as root" not in proc.stderr and "even for root" in proc.stderr, proc.stderr


def test_fio_line_of_write_then_read_is_both_commands_and_fio_runs_them(fast_dir, tmp_path):
    target = str(fast_dir / "fresh.img")
    with open(target, "wb") as f:
        f.truncate(16 * MIB)
    base = ["warmup", target, "--write", "--read", f"--yes-destroy-data={target}"]
    proc = run_cli([*base, "--checkpoint", str(tmp_path / "a.json")])
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "in fio:" in ln)
    assert line.startswith("  same passes in fio: fio "), line
    doc = json.loads(run_cli([*base, "--checkpoint", str(tmp_path / "b.json"), "--json"]).stdout)
    commands = doc["fio_command"].split(" && ")
    assert len(commands) == 2
    assert "--rw=write" in commands[0] and "--rw=read" in commands[1]
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    for command, rw in zip(commands, ("write", "read"), strict=True):
        argv = shlex.split(command)  # exactly as printed (--direct as probetop ran it)
        assert argv[0] == "fio"
        argv[0] = fio
        run = subprocess.run(
            [*argv, "--output-format=json"], capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        job = json.loads(run.stdout[run.stdout.index("{") :])["jobs"][0]
        assert job[rw]["io_bytes"] == 16 * MIB, job[rw]


def _loop_over_disk_file(tmp_path: Path, size: int, fill: bool) -> tuple[str, str]:
    """A loop device over a file on the disk under tmp_path (not tmpfs: the
    kernel's view needs a disk below); (device, image)."""
    need_root()
    from probetop.probes.disk.kernelview import device_below

    image = tmp_path / f"warm-{uuid.uuid4().hex[:8]}.img"
    if fill:
        _random_file(image, size)
        with open(image, "rb") as f:  # in the page cache: what the loop device reads from
            while f.read(MIB):
                pass
    else:
        with open(image, "wb") as f:
            f.truncate(size)
    if device_below(str(image)) is None:
        image.unlink()
        pytest.skip(f"{tmp_path} has no disk under it (tmpfs?): no kernel view to compare")
    proc = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True)
    if proc.returncode != 0:
        image.unlink()
        pytest.skip(f"losetup failed: {proc.stderr.strip()}")
    return proc.stdout.strip(), str(image)


def _detach(dev: str, image: str) -> None:
    subprocess.run(["losetup", "-d", dev], check=False)
    Path(image).unlink(missing_ok=True)


def test_a_write_pass_gets_no_note_meant_for_reads(tmp_path):
    """A loop device's writes land in its backing file's page cache, so the
    disk below sees few of them: the note says a cache took them, never that
    blocks were "answered with zeros" (only reads can be)."""
    dev, image = _loop_over_disk_file(tmp_path, 128 * MIB, fill=False)
    try:
        proc = run_cli(
            ["warmup", dev, "--write", f"--yes-destroy-data={dev}", "--json",
             "--checkpoint", str(tmp_path / "w.json")]
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        notes = json.loads(proc.stdout)["notes"]
        for note in notes:
            assert "zeros" not in note and "never-written" not in note, note
            assert "reads may come" not in note, note
        rate = [n for n in notes if "but the disk under the target" in n]
        for note in rate:
            assert "wrote only" in note and "a cache took it" in note, note
    finally:
        _detach(dev, image)
    # The same words without a disk run: the wording is the direction's.
    from probetop.probes.disk.kernelview import buffered_note, rate_note

    note = rate_note("write", 512 * MIB, 1.0, "vda", 0)
    assert note is not None and "zeros" not in note and "cache took it" in note
    assert "reads may come" not in buffered_note("write")
    assert "writes are counted" not in buffered_note("read")


def test_a_read_far_above_the_kernels_view_is_called_out(tmp_path):
    """Data everywhere (no zeros, no holes), but the loop device's reads come
    from the page cache: the disk below reads next to nothing. Headless: the
    note names the cache, not zeros."""
    dev, image = _loop_over_disk_file(tmp_path, 96 * MIB, fill=True)
    try:
        proc = run_cli(["warmup", dev, "--json", "--checkpoint", str(tmp_path / "r.json")])
        doc = json.loads(proc.stdout)
        assert doc["zero_bytes"] == 0 and doc["verdict"] == "warmed", doc["verdict_reason"]
        rate = [n for n in doc["notes"] if "but the disk under the target" in n]
        assert rate, doc["notes"]
        assert "came from a cache" in rate[0] and "zeros" not in rate[0], rate[0]
    finally:
        _detach(dev, image)


async def test_the_pane_flags_a_read_rate_the_kernel_cannot_explain(tmp_path) -> None:
    """Issue 26 Want 2: the pane's fresh-volume check is zeros/holes *or* a read
    rate far above what the kernel saw the disk under the target read. Here
    nothing reads back zero, so only the kernel-rate check can say it; W then
    offers write then read as for a fresh volume."""
    from probetop.probes.disk import WarmupProbe, WarmupSettings
    from probetop.probes.disk.selftest import warm_up_kernels
    from probetop.tui.run.viewconfig import Display, LiveView
    from probetop.tui.ui.app import make_app
    from probetop.tui.ui.panes.disk import WarmupPane

    await asyncio.to_thread(warm_up_kernels)
    dev, image = _loop_over_disk_file(tmp_path, 96 * MIB, fill=True)
    try:
        settings = WarmupSettings(
            dev, bs=MIB, iodepth=4, rate_iops=48, interval_s=0.25,
            checkpoint=str(tmp_path / "p.json"),
        )  # fmt: skip
        app = make_app(
            LiveView(
                probes=[WarmupProbe(settings)],
                display=Display(interval_s=0.25, focus="warmup"),
            )
        )
        async with app.run_test(size=(120, 50)) as pilot:
            pane = None
            for _ in range(600):
                await pilot.pause(0.05)
                panes = list(app.query(WarmupPane))
                w = panes[0].interval if panes else None
                if w is not None and (w.read_bytes or 0) >= 70 * MIB:
                    pane = panes[0]
                    break
            assert pane is not None and pane.interval is not None, "no 70 MiB read in 30 s"
            w = pane.interval
            assert w.never_written_share == 0.0  # the zero check alone says nothing
            assert w.kernel_device and w.kernel_bytes is not None
            assert w.kernel_bytes < w.read_bytes // 2, (w.kernel_bytes, w.read_bytes)
            pane.render_frame()
            text = pane.fresh_block.text
            assert "TOO GOOD TO BE TRUE" in text and w.kernel_device in text, text
            assert f"probetop warmup {dev} --write --read" in text
            pane.focus()
            await pilot.press("W")
            await pilot.pause()
            assert getattr(app, "switch_request", None) == "write+read"
    finally:
        _detach(dev, image)


async def test_the_pane_offers_no_switch_when_the_write_pass_just_ran(tmp_path) -> None:
    """write then read over a loop device: its read pass comes from the page
    cache the write filled, far above the disk's reads; the pane says a
    cache answers and W does nothing (the run already writes)."""
    from probetop.probes.disk import WarmupProbe, WarmupSettings
    from probetop.probes.disk.selftest import warm_up_kernels
    from probetop.tui.run.viewconfig import Display, LiveView
    from probetop.tui.ui.app import make_app
    from probetop.tui.ui.panes.disk import WarmupPane

    await asyncio.to_thread(warm_up_kernels)
    dev, image = _loop_over_disk_file(tmp_path, 96 * MIB, fill=False)
    try:
        settings = WarmupSettings(
            dev, pass_name="write+read", bs=MIB, iodepth=4, rate_iops=96, interval_s=0.25,
            checkpoint=str(tmp_path / "q.json"), yes_destroy_data=dev, confirmed=True,
        )  # fmt: skip
        app = make_app(
            LiveView(
                probes=[WarmupProbe(settings)],
                display=Display(interval_s=0.25, focus="warmup"),
            )
        )
        async with app.run_test(size=(120, 50)) as pilot:
            pane = None
            for _ in range(900):
                await pilot.pause(0.05)
                panes = list(app.query(WarmupPane))
                w = panes[0].interval if panes else None
                if w is not None and w.pass_name == "read" and (w.read_bytes or 0) >= 70 * MIB:
                    pane = panes[0]
                    break
            assert pane is not None and pane.interval is not None, "no 70 MiB read in 45 s"
            if not pane.interval.implausible_read:
                pytest.skip("the disk under the loop device read the blocks back (no cache)")
            pane.render_frame()
            text = pane.fresh_block.text
            assert "TOO GOOD TO BE TRUE" in text and "a cache answers" in text, text
            assert "--write --read" not in text and "Press W" not in text, text
            pane.focus()
            await pilot.press("W")
            await pilot.pause()
            assert getattr(app, "switch_request", None) is None
    finally:
        _detach(dev, image)
