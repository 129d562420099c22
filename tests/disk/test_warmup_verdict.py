"""Issue 26: a warm-up pass knows what it read, and says plainly when it did not warm.

Real targets only: loop devices over new (sparse), partly written, fully
written and random-filled files in /dev/shm, a plain sparse file, and
device-mapper devices (linear: no hole map, so only what reads return can
tell; error: failing sectors). The truth the never-written fraction is held
to is the filesystem's own count of allocated blocks (``st_blocks``, what
``du`` prints) and SEEK_DATA.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from disk_fixtures import PROBETOP, fast_dir, loop_device, need_root, run_cli
from forkserver import RUN_PRELOAD, run_probetop

__all__ = ["fast_dir"]  # the fixture, imported for pytest

MIB = 1 << 20
SIZE = 64 * MIB
NOT_WARMED = 3  # probes/disk/report.NOT_WARMED_EXIT


def allocated_fraction(path: str) -> float:
    """What du says: allocated bytes / size."""
    st = os.stat(path)
    return min(1.0, st.st_blocks * 512 / st.st_size)


def data_bytes(path: str) -> int:
    """What SEEK_DATA says: bytes in data extents."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size, pos, total = os.fstat(fd).st_size, 0, 0
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            total += hole - data
            pos = hole
        return total
    finally:
        os.close(fd)


def backing_file(dev: str) -> str:
    name = Path(dev).name
    return Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()


# What a warm-up run imports, for the zygote (tests/forkserver.py) to import once.
WARMUP_PRELOAD = (*RUN_PRELOAD, "probetop.probes.disk.family", "probetop.tui.run.launch")


def warmup(target: str, tmp: Path, *extra: str, fork: bool = True) -> tuple[int, dict]:
    """``probetop warmup TARGET --json`` and its document. ``fork``: the run
    is forked from an interpreter that has imported the CLI and the disk
    family (a process of its own with this argv, stdio and exit status;
    ~0.4 CPU-s of start-up spared a run); a whole `python -m` otherwise."""
    argv = ["warmup", target, "--json", "--checkpoint", str(tmp / f"{uuid.uuid4().hex}.json")]
    if fork:
        proc = run_probetop([*argv, *extra], preload=WARMUP_PRELOAD)
    else:
        proc = run_cli([*argv, *extra], fresh=True)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def write_random(path: str, ranges: list[tuple[int, int]]) -> None:
    with open(path, "r+b") as f:
        for start, end in ranges:
            f.seek(start)
            f.write(os.urandom(end - start))


def test_fresh_loop_device_is_not_warmed_by_a_read(tmp_path):
    with loop_device(SIZE) as dev:
        truth = 1.0 - data_bytes(backing_file(dev)) / SIZE
        code, doc = warmup(dev, tmp_path, fork=False)  # one whole start in this file
        assert doc["outcome"] == "completed"
        assert doc["verdict"] == "not warmed" and doc["case"] == "fresh"
        assert abs(doc["never_written_fraction"] - truth) <= 0.01
        assert doc["never_written_source"] == "holes"
        assert "--write --read" in doc["verdict_reason"]
        assert doc["fix_command"].endswith(f"--yes-destroy-data={dev}")
        assert any("too good to be true" in n for n in doc["notes"])
        assert code == NOT_WARMED


def test_a_read_stopped_early_on_a_fresh_volume_offers_the_write_not_a_resume(tmp_path):
    """--time ends the read pass at a third of a fresh volume: the hole map
    already shows it fresh, so the verdict is the fresh one (exit 3, the
    write command), not "interrupted; resume with" a read that changes
    nothing. The same stop on a volume holding data stays "interrupted"."""
    with loop_device(SIZE) as dev:
        code, doc = warmup(dev, tmp_path, "--rate-iops", "20", "--bs", "1M", "--time", "1")
        assert doc["outcome"] != "completed" and 0 < doc["done_bytes"] < SIZE, doc["done_bytes"]
        assert doc["verdict"] == "not warmed" and doc["case"] == "fresh", doc["verdict_reason"]
        assert doc["fix_command"].endswith(f"--yes-destroy-data={dev}")
        assert doc["resume_command"] is None and "resume" not in doc["verdict_reason"]
        assert code == NOT_WARMED
    with loop_device(SIZE) as dev:
        write_random(backing_file(dev), [(0, SIZE)])
        code, doc = warmup(dev, tmp_path, "--rate-iops", "20", "--bs", "1M", "--time", "1")
        assert doc["case"] == "interrupted" and doc["resume_command"], doc["verdict_reason"]
        assert code == 0


def test_a_fresh_volume_holding_a_filesystem_gets_no_destructive_command(tmp_path):
    """mkfs leaves a volume mostly never written: still "fresh", but the
    verdict must not hand the user a command that destroys the filesystem."""
    with loop_device(SIZE) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        code, doc = warmup(dev, tmp_path)
        assert doc["verdict"] == "not warmed" and doc["case"] == "fresh"
        assert doc["fix_command"] is None
        assert "holds data" in doc["verdict_reason"] and "ext4" in doc["verdict_reason"]
        assert "--yes-destroy-data" not in doc["verdict_reason"]
        assert code == NOT_WARMED


def test_fresh_loop_device_written_then_read_is_warmed(tmp_path):
    with loop_device(SIZE) as dev:
        code, doc = warmup(dev, tmp_path, "--write", "--read", f"--yes-destroy-data={dev}")
        assert code == 0, doc
        assert doc["verdict"] == "warmed" and doc["case"] == "written"
        assert doc["never_written_bytes"] == 0
        # Every block allocated, as du says, and the read found data everywhere.
        assert allocated_fraction(backing_file(dev)) > 0.99
        assert doc["zero_bytes"] == 0


def test_sparse_file_counts_its_holes(fast_dir, tmp_path):
    target = str(fast_dir / "sparse.img")
    with open(target, "wb") as f:
        f.truncate(SIZE)
    write_random(target, [(5 * MIB, 13 * MIB), (40 * MIB, 41 * MIB), (60 * MIB, 62 * MIB)])
    truth = 1.0 - allocated_fraction(target)
    assert abs(truth - (1.0 - data_bytes(target) / SIZE)) < 0.01
    code, doc = warmup(target, tmp_path)
    assert abs(doc["never_written_fraction"] - truth) <= 0.01, (doc, truth)
    assert doc["verdict"] == "not warmed" and doc["case"] == "fresh"
    assert code == NOT_WARMED


def test_half_written_file_is_mixed(fast_dir, tmp_path):
    target = str(fast_dir / "half.img")
    with open(target, "wb") as f:
        f.truncate(SIZE)
    write_random(target, [(0, 40 * MIB)])
    truth = 1.0 - allocated_fraction(target)
    code, doc = warmup(target, tmp_path)
    assert abs(doc["never_written_fraction"] - truth) <= 0.01
    assert doc["verdict"] == "not warmed" and doc["case"] == "mixed"
    assert code == NOT_WARMED


def test_fully_written_file_is_warmed_even_with_zeros(fast_dir, tmp_path):
    """Written with zeros: allocated (du), so warmed; the zeros are reported,
    not counted as never written, because the filesystem knows better."""
    target = str(fast_dir / "zeros.img")
    with open(target, "wb") as f:
        for _ in range(SIZE // MIB):
            f.write(bytes(MIB))
        f.flush()
        os.fsync(f.fileno())
    assert allocated_fraction(target) > 0.99
    code, doc = warmup(target, tmp_path)
    assert code == 0, doc
    assert doc["verdict"] == "warmed" and doc["case"] == "restored"
    assert doc["never_written_bytes"] == 0
    assert doc["zero_bytes"] == SIZE
    assert "all zeros" in doc["verdict_reason"] and "nearly everywhere" not in doc["verdict_reason"]


def test_snapshot_like_loop_device_keeps_the_read_pass(tmp_path):
    """Data everywhere (a volume restored from a snapshot): the read pass is
    the right job, and says which case it saw."""
    with loop_device(SIZE) as dev:
        write_random(backing_file(dev), [(0, SIZE)])
        code, doc = warmup(dev, tmp_path)
        assert code == 0, doc
        assert doc["verdict"] == "warmed" and doc["case"] == "restored"
        assert doc["never_written_fraction"] <= 0.01
        assert doc["fix_command"] is None
        proc = subprocess.run(
            [*PROBETOP, "warmup", dev, "--headless", "--checkpoint", str(tmp_path / "t.json")],
            capture_output=True,
            text=True,
        )
        assert "verdict: warmed (restored)" in proc.stdout


@pytest.fixture
def dm(tmp_path):
    """Create device-mapper devices from tables; removed afterwards."""
    need_root()
    names: list[str] = []

    def make(table: str) -> str:
        name = f"warmup-test-{uuid.uuid4().hex[:8]}"
        proc = subprocess.run(
            ["dmsetup", "create", name], input=table, capture_output=True, text=True
        )
        if proc.returncode != 0:
            pytest.skip(f"dmsetup create failed: {proc.stderr.strip()}")
        names.append(name)
        return f"/dev/mapper/{name}"

    yield make
    for name in reversed(names):
        subprocess.run(["dmsetup", "remove", "--retry", name], capture_output=True)


def test_without_a_hole_map_zeros_decide(dm, tmp_path):
    """dm-linear hides the file: only what the reads return tells."""
    with loop_device(SIZE) as dev:
        write_random(backing_file(dev), [(0, 24 * MIB)])
        truth = 1.0 - data_bytes(backing_file(dev)) / SIZE
        target = dm(f"0 {SIZE // 512} linear {dev} 0\n")
        code, doc = warmup(target, tmp_path)
        assert doc["never_written_source"] == "zeros"
        assert abs(doc["never_written_fraction"] - truth) <= 0.01
        assert doc["case"] == "mixed" and code == NOT_WARMED


def test_failing_sectors_are_listed_and_the_pass_goes_on(dm, tmp_path):
    with loop_device(SIZE, fill=b"\x5a") as dev:
        bad_start, bad_len = 20 * MIB // 512, 8  # 4 KiB of failing sectors
        rest = SIZE // 512 - bad_start - bad_len
        target = dm(
            f"0 {bad_start} linear {dev} 0\n"
            f"{bad_start} {bad_len} error\n"
            f"{bad_start + bad_len} {rest} linear {dev} {bad_start + bad_len}\n"
        )
        code, doc = warmup(target, tmp_path)
        assert doc["outcome"] == "completed", doc
        assert doc["done_bytes"] == SIZE
        assert code == 1
        assert doc["verdict"] == "not warmed"
        ranges = doc["bad_ranges"]
        assert len(ranges) == 1
        start, end = ranges[0]
        assert start <= bad_start * 512 and end >= (bad_start + bad_len) * 512
        assert end - start <= MIB  # one block (the pass's --bs) around the bad sectors
        proc = run_cli(["warmup", target, "--headless", "--checkpoint", str(tmp_path / "h.json")])
        assert "bad ranges: 1" in proc.stdout and proc.returncode == 1


def test_write_pass_stays_inside_its_target(dm, tmp_path):
    """A write pass on a dm device in the middle of a loop device writes
    nothing before or after it, even with failing sectors inside."""
    with loop_device(SIZE, fill=b"\xff") as dev:
        first, length = 16 * MIB // 512, 32 * MIB // 512
        target = dm(
            f"0 {length // 2} linear {dev} {first}\n"
            f"{length // 2} 8 error\n"
            f"{length // 2 + 8} {length // 2 - 8} linear {dev} {first + length // 2 + 8}\n"
        )
        code, doc = warmup(target, tmp_path, "--write", f"--yes-destroy-data={target}")
        assert doc["outcome"] == "completed" and code == 1, doc
        with open(backing_file(dev), "rb") as f:
            data = f.read()
        assert data[: first * 512] == b"\xff" * (first * 512)
        after = (first + length) * 512
        assert data[after:] == b"\xff" * (SIZE - after)
        assert b"\xff" * 4096 not in data[first * 512 : first * 512 + 4 * MIB]


def test_target_shrinking_mid_pass_stops_cleanly(tmp_path):
    with loop_device(SIZE, fill=b"\x11") as dev:
        ckpt = tmp_path / "shrink.json"
        proc = subprocess.Popen(
            [*PROBETOP, "warmup", dev, "--json", "--bs", "64k", "--iodepth", "1",
             "--rate-iops", "100", "--checkpoint", str(ckpt)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not ckpt.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            os.truncate(backing_file(dev), 8 * MIB)
            subprocess.run(["losetup", "-c", dev], check=True)
            t0 = time.monotonic()
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 2, (out, err)
        assert "Traceback" not in err
        assert "shrank" in (out + err) or "short I/O" in (out + err)
        assert took < 5
        assert json.loads(out)["verdict"] == "not warmed"


def test_data_hiding_between_the_zero_check_samples_is_still_data(fast_dir, tmp_path):
    """The zero check samples each 4 KiB page's first and last word and
    checks whole blocks now and then: a target whose data sits between the
    samples is found out and checked whole, never counted as never written."""
    target = str(fast_dir / "tricky.img")
    page = bytearray(4096)
    page[100:200] = os.urandom(100)
    with open(target, "wb") as f:
        f.write(bytes(page) * (SIZE // 4096))
    code, doc = warmup(target, tmp_path)
    assert doc["zero_bytes"] == 0 and doc["never_written_bytes"] == 0
    assert doc["verdict"] == "warmed" and code == 0


def test_switching_a_fresh_read_to_write_then_read(fast_dir, tmp_path):
    """The dashboard's switch (W): the same plan as write then read, behind
    the typed confirmation; once confirmed, the unfinished read pass's
    checkpoint is superseded instead of refusing the run."""
    from probetop.probes.disk import WarmupSettings
    from probetop.tui.cli.plan import CommonOptions, RunPlan
    from probetop.tui.commands import load

    target = str(fast_dir / "fresh.img")
    with open(target, "wb") as f:
        f.truncate(SIZE)
    ckpt = str(tmp_path / "c.json")
    read = ["warmup", target, "--checkpoint", ckpt, "--json", "--bs", "64k", "--iodepth", "1"]
    proc = run_cli([*read, "--rate-iops", "50", "--time", "1"])
    assert json.loads(proc.stdout)["outcome"] == "stopped"
    settings = WarmupSettings(target, checkpoint=ckpt, bs=64 << 10, iodepth=1)
    switched = load("warmup").switched(RunPlan("warmup", CommonOptions(), settings))
    assert switched is not None and switched.settings.pass_name == "write+read"
    assert not switched.settings.confirmed
    # Unconfirmed (a read again): still refused; confirmed write: goes on.
    assert "unfinished" in run_cli(read).stderr
    proc = run_cli(
        ["warmup", target, "--write", "--read", f"--yes-destroy-data={target}",
         "--checkpoint", ckpt, "--json"]
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["verdict"] == "warmed", (proc.stderr, doc)


@pytest.fixture
def faulty_file(fast_dir, tmp_path):
    """A file with 4 KiB of failing sectors at 20 MiB (EIO), served by
    tests/disk/faultyfs.py over FUSE from a backing file of random data in
    /dev/shm: dm-error's job where the kernel has no device-mapper. Yields
    (path, backing file, failing range)."""
    need_root()
    pytest.importorskip("fuse", reason="needs fusepy (pip install fusepy) and libfuse2")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    backing = fast_dir / "back.img"
    backing.write_bytes(os.urandom(SIZE))
    mount = tmp_path / "faulty"
    mount.mkdir()
    bad = (20 * MIB, 20 * MIB + 4096)
    server = Path(__file__).with_name("faultyfs.py")
    proc = subprocess.Popen(
        [sys.executable, str(server), str(mount), str(backing), *map(str, bad)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    target = mount / "disk.img"
    try:
        deadline = time.monotonic() + 20
        while not target.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not target.exists():
            proc.kill()
            pytest.skip(f"the FUSE server did not come up: {proc.communicate()[0][-300:]}")
        yield str(target), str(backing), bad
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_failing_sectors_over_fuse_are_listed_and_the_pass_goes_on(faulty_file, tmp_path):
    target, _backing, (lo, hi) = faulty_file
    code, doc = warmup(target, tmp_path)
    assert doc["outcome"] == "completed" and doc["done_bytes"] == SIZE, doc
    assert code == 1 and doc["verdict"] == "not warmed"
    assert doc["bad_ranges"] == [[20 * MIB, 21 * MIB]]  # the one --bs block holding them
    assert lo >= doc["bad_ranges"][0][0] and hi <= doc["bad_ranges"][0][1]
    proc = run_cli(["warmup", target, "--headless", "--checkpoint", str(tmp_path / "t.json")])
    assert "bad ranges: 1 (1,048,576 bytes failed): 20,971,520-22,020,096" in proc.stdout
    assert proc.returncode == 1


def test_write_pass_over_failing_sectors_stays_inside_its_range(faulty_file, tmp_path):
    target, backing, _bad = faulty_file
    before = Path(backing).read_bytes()
    code, doc = warmup(
        target, tmp_path, "--write", f"--yes-destroy-data={target}", "--range", "16M-48M"
    )
    assert doc["outcome"] == "completed" and code == 1, doc
    assert doc["bad_ranges"] == [[20 * MIB, 21 * MIB]]
    after = Path(backing).read_bytes()
    assert after[: 16 * MIB] == before[: 16 * MIB]
    assert after[48 * MIB :] == before[48 * MIB :]
    assert after[20 * MIB : 21 * MIB] == before[20 * MIB : 21 * MIB]  # the failed block
    assert after[16 * MIB : 20 * MIB] != before[16 * MIB : 20 * MIB]  # written


@pytest.mark.parametrize("bs", [1, 3, 7, 9, 4097])
def test_zero_count_is_exact_at_any_block_size(fast_dir, tmp_path, bs):
    """A slot's block starts at ``slot * bs``, not on a word boundary when bs
    is not a multiple of 8, and may be shorter than a word: every byte of it
    counts. Data with no zero byte: nothing zero; zeros: everything; zeros
    with one data byte, the last of a block (past its last whole word): all
    but that block."""
    size = 64 << 10
    odd = 40_000 // bs * bs + bs - 1
    data = bytes(b or 1 for b in os.urandom(size))
    lone = bytearray(size)
    lone[odd] = 0x5A
    for name, content, zero in [
        ("data", data, 0),
        ("zeros", bytes(size), size),
        ("lone", bytes(lone), size - bs),
    ]:
        target = fast_dir / f"{name}.img"
        target.write_bytes(content)
        _, doc = warmup(str(target), tmp_path, "--bs", str(bs))
        assert doc["outcome"] == "completed", doc
        assert doc["zero_bytes"] == zero, (name, doc["zero_bytes"])
