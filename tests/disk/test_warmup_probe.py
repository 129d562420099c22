"""The warm-up end to end: JSON fields, totals against fio and the kernel, bad input."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import PROBETOP, kernel_io, loop_device, need_root, run_cli
from probetop.probes.disk.warmup.checkpoint import Checkpoint

fast_dir = disk_fixtures.fast_dir  # the fixture, under the name tests ask for

FIELDS = {
    "target", "pass", "bytes", "total_bytes", "seconds", "bw_bytes", "iops", "complete",
    "resumed_from", "plateau", "intervals", "fio_command",
}  # fmt: skip


def test_read_pass_json_fields_and_intervals_add_up(fast_dir):
    target = fast_dir / "vol.img"
    target.write_bytes(b"\1" * (8 << 20))
    proc = run_cli(
        ["warmup", str(target), "--bs", "64k", "--iodepth", "4", "--range", "1M-7M",
         "--checkpoint", str(fast_dir / "c.json"), "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= FIELDS
    assert doc["pass"] == "read" and doc["complete"] is True and doc["resumed_from"] is None
    assert doc["total_bytes"] == doc["bytes"] == 6 << 20
    assert doc["total_ios"] == (6 << 20) // 65536
    assert doc["bw_bytes"] == pytest.approx(doc["bytes"] / doc["seconds"], rel=0.01)
    assert set(doc["plateau"]) == {"criterion", "reached_at_s", "reached_at_bytes", "left_at_s"}
    assert doc["intervals"][-1]["done_bytes"] == 6 << 20
    assert "--offset=1048576" in doc["fio_command"] and "--size=6291456" in doc["fio_command"]
    assert Checkpoint.load(fast_dir / "c.json").done == [(1 << 20, 7 << 20)]


def test_totals_match_fio_and_the_kernel_on_the_same_pass():
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    size = 64 << 20
    with loop_device(size, fill=b"\x5a") as dev:
        k0 = kernel_io(dev)
        ours = run_cli(["warmup", dev, "--bs", "128k", "--jobs", "2", "--checkpoint",
                        f"/dev/shm/probetop-test-{Path(dev).name}.json", "--json"])  # fmt: skip
        Path(f"/dev/shm/probetop-test-{Path(dev).name}.json").unlink(missing_ok=True)
        k1 = kernel_io(dev)
        proc = subprocess.run(
            [fio, "--name=x", f"--filename={dev}", "--rw=read", "--bs=128k", "--iodepth=32",
             "--ioengine=libaio", "--direct=1", "--numjobs=2", f"--size={size // 2}",
             f"--offset_increment={size // 2}", "--group_reporting", "--output-format=json"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        k2 = kernel_io(dev)
    assert ours.returncode == 0, ours.stderr
    doc = json.loads(ours.stdout)
    fio_read = json.loads(proc.stdout)["jobs"][0]["read"]
    assert doc["bytes"] == fio_read["io_bytes"] == size
    assert doc["total_ios"] == fio_read["total_ios"]
    # The kernel saw every sector read once by each tool (plus, at most, a few
    # sectors udev's blkid reads when it probes a new loop device).
    for sectors in (k1[1] - k0[1], k2[1] - k1[1]):
        assert size // 512 <= sectors <= size // 512 + 2048
    assert sum(r["bw_bytes"] for r in doc["intervals"]) > 0


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/nonexistent/vol", "no such file"),
        ("/tmp", "is a directory"),
        ("/dev/zero", "character device"),
    ],
)
def test_bad_targets_exit_2(target, message):
    proc = run_cli(["warmup", target, "--json"])
    assert proc.returncode == 2
    assert message in proc.stderr.lower()


def test_target_smaller_than_the_block_size(tmp_path):
    small = tmp_path / "small.img"
    small.write_bytes(b"x" * 4096)
    proc = run_cli(["warmup", str(small), "--bs", "1M"])
    assert proc.returncode == 2 and "smaller than the block size" in proc.stderr


@contextlib.contextmanager
def _mount(fstype: str, where: Path, options: str = "") -> Iterator[Path]:
    need_root()
    args = ["mount", "-t", fstype, *(["-o", options] if options else []), fstype, str(where)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount {fstype}: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_no_o_direct_falls_back_to_buffered_and_says_so(tmp_path):
    where = tmp_path / "ramfs"
    where.mkdir()
    with _mount("ramfs", where):
        target = where / "vol.img"
        target.write_bytes(b"\0" * (1 << 20))
        proc = run_cli(["warmup", str(target), "--checkpoint", str(tmp_path / "c"), "--json"])
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["complete"] is True
        assert any("O_DIRECT is not supported" in n for n in doc["notes"])
        assert "--direct=0" in doc["fio_command"]
        forced = run_cli(["iops", str(target), "--direct", "--time", "1"])
        assert forced.returncode == 2 and "does not support O_DIRECT" in forced.stderr


def test_a_write_pass_that_cannot_fit_is_refused_before_it_starts(tmp_path):
    where = tmp_path / "small-fs"
    where.mkdir()
    checkpoint = tmp_path / "c.json"
    with _mount("tmpfs", where, "size=2m"):
        target = where / "sparse.img"
        with open(target, "wb") as f:
            f.truncate(8 << 20)  # sparse: the writes need blocks the filesystem lacks
        proc = run_cli(
            ["warmup", str(target), "--write", f"--yes-destroy-data={target}", "--bs", "64k",
             "--iodepth", "4", "--checkpoint", str(checkpoint), "--json"]
        )  # fmt: skip
        assert proc.returncode == 2
        # The numbers: needed, free, what would be left, the margin kept.
        assert "needs 8.0 MiB" in proc.stderr and "2.0 MiB free" in proc.stderr
        assert "would not fit" in proc.stderr and "keeps at least" in proc.stderr
        assert "Traceback" not in proc.stderr and not checkpoint.exists()
        assert os.stat(target).st_blocks == 0  # nothing was written


def test_disk_full_while_writing_a_file_exits_2_and_keeps_the_checkpoint(tmp_path):
    """The filesystem fills while the pass runs (another writer): the pass stops
    with "disk full", the checkpoint keeps what was done, --resume is advised."""
    where = tmp_path / "small-fs"
    where.mkdir()
    checkpoint = tmp_path / "c.json"
    with _mount("tmpfs", where, "size=4m"):
        target = where / "sparse.img"
        with open(target, "wb") as f:
            f.truncate(2 << 20)  # fits when it starts: 2 MiB of 4
        proc = subprocess.Popen(
            [*PROBETOP, "warmup", str(target), "--write", f"--yes-destroy-data={target}",
             "--bs", "4k", "--iodepth", "1", "--rate-iops", "200", "--checkpoint",
             str(checkpoint), "--interval", "0.2", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if checkpoint.exists() and Checkpoint.load(checkpoint).done_bytes > 0:
                    break
                time.sleep(0.05)
            # Another writer fills the filesystem under the pass.
            with open(where / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
                while True:
                    f.write(b"\0" * 65536)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, err
        assert "disk full" in err and "--resume" in err and "Traceback" not in err
        saved = Checkpoint.load(checkpoint)
        assert 0 < saved.done_bytes < 2 << 20
        # The pass's row: failed, with the reason, and the bytes it did do.
        (row,) = json.loads(out)["passes"]
        assert row["outcome"] == "failed" and "disk full" in row["reason"], row
        assert row["done_bytes"] == saved.done_bytes and row["bytes"] > 0


def test_randwrite_pattern_reports_the_plateau(fast_dir):
    target = fast_dir / "ssd.img"
    target.write_bytes(b"\0" * (8 << 20))
    proc = run_cli(
        ["warmup", str(target), "--pattern", "randwrite", f"--yes-destroy-data={target}",
         "--time", "3", "--interval", "0.25", "--steadystate", "iops:1000%", "--ss-dur", "0.5",
         "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["pass"] == "randwrite" and doc["bytes"] > 0
    plateau = doc["plateau"]
    # A 1000 % band is always met once the window is full: reached after 2 samples.
    assert plateau["criterion"] == "iops:1000%"
    assert plateau["reached_at_s"] == pytest.approx(0.5, abs=0.2)
    assert plateau["reached_at_bytes"] > 0
    assert (
        "--rw=randwrite" in doc["fio_command"] and "--steadystate=iops:1000%" in doc["fio_command"]
    )
    assert 2.5 <= doc["seconds"] <= 4.0
