"""Warm-up checkpoints: extent merging, atomic saves under kill -9, refusals."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from probetop.probes.disk.warmup.checkpoint import (
    BLOCK_DEVICE_DIR,
    MAGIC,
    MAX_BYTES,
    VERSION,
    Checkpoint,
    CheckpointError,
    CorruptCheckpoint,
    NotACheckpoint,
    default_path,
    identity_mismatch,
)

DISK_SIZE = 1 << 30
DISK = {
    "path": "/dev/sdb",
    "real_path": "/dev/sdb",
    "kind": "block",
    "size_bytes": DISK_SIZE,
    "dev": "8:16",
    "serial": "S3Z9NB0K123",
    "wwn": None,
    "model": "Samsung SSD",
    "logical_block_size": 512,
    "backing_file": None,
    "name": "sdb",
}
LOOP = {**DISK, "path": "/dev/loop3", "real_path": "/dev/loop3", "dev": "7:3", "serial": None,
        "model": None, "backing_file": "/dev/shm/a.img", "name": "loop3"}  # fmt: skip


def make(tmp_path: Path, size: int = 1000, start: int = 0, **kw: object) -> Checkpoint:
    ident = {**DISK, **kw}
    return Checkpoint(tmp_path / "c.json", ident, "read", 4096, size, start, size)


def runs_of(bitmap: list[bool], value: bool) -> list[tuple[int, int]]:
    out, i = [], 0
    while i < len(bitmap):
        if bitmap[i] == value:
            j = i
            while j < len(bitmap) and bitmap[j] == value:
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


# ------------------------------------------------------------------ extents


@pytest.mark.parametrize("seed", range(40))
def test_merge_matches_a_bitmap(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    size = rng.choice([1, 7, 64, 300])
    cp = make(tmp_path, size=size)
    bitmap = [False] * size
    for _ in range(rng.randint(0, 60)):
        a = rng.randint(0, size)
        b = min(size, a + rng.choice([0, 1, 2, 5, 17, size]))
        cp.mark_done(a, b)
        for i in range(a, b):
            bitmap[i] = True
        assert cp.done == runs_of(bitmap, True)
    assert cp.remaining() == runs_of(bitmap, False)
    assert cp.done_bytes == sum(bitmap)
    assert cp.complete == all(bitmap)
    ends = [e for _, e in cp.done]
    starts = [s for s, _ in cp.done]
    assert all(e < s for e, s in zip(ends, starts[1:], strict=False))  # merged: gaps between


def test_touching_extents_merge_and_range_offset(tmp_path: Path) -> None:
    cp = Checkpoint(tmp_path / "c.json", DISK, "read", 4, 100, 40, 100)
    cp.mark_done(50, 60)
    cp.mark_done(40, 50)
    cp.mark_done(70, 80)
    assert cp.done == [(40, 60), (70, 80)]
    assert cp.remaining() == [(60, 70), (80, 100)]
    cp.mark_done(55, 75)
    assert cp.done == [(40, 80)]
    cp.mark_done(90, 90)  # empty: ignored
    assert cp.done == [(40, 80)]
    with pytest.raises(ValueError, match="outside the range"):
        cp.mark_done(30, 45)
    with pytest.raises(ValueError, match="outside the range"):
        cp.mark_done(95, 101)


# ------------------------------------------------------------------ persistence


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    cp = make(tmp_path, size=1 << 20)
    cp.mark_done(0, 4096)
    cp.mark_done(8192, 65536)
    cp.save()
    assert stat.S_IMODE(os.stat(cp.path).st_mode) == 0o600
    raw = json.loads(cp.path.read_text())
    assert raw["version"] == VERSION and raw["done"] == [[0, 4096], [8192, 65536]]
    loaded = Checkpoint.load(cp.path)
    assert loaded.done == cp.done and loaded.identity == DISK
    assert (loaded.pass_name, loaded.bs, loaded.range_end) == ("read", 4096, 1 << 20)
    assert loaded.matches(DISK, "read", 4096, 0, 1 << 20) is None
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]  # no temp file left


def test_leftover_temp_file_does_not_hurt(tmp_path: Path) -> None:
    """A kill between writing the temp file and the rename leaves a temp file:
    the checkpoint is still the previous version and the next save works."""
    cp = make(tmp_path)
    cp.mark_done(0, 100)
    cp.save()
    (tmp_path / ".c.json.half.tmp").write_text('{"format": "probetop-warmup-check')
    assert Checkpoint.load(cp.path).done == [(0, 100)]
    cp.mark_done(100, 300)
    cp.save()
    assert Checkpoint.load(cp.path).done == [(0, 300)]
    cp.acquire_lock()  # the lock holder removes a killed writer's temp files
    cp.release_lock()
    # ... and creates nothing beside the checkpoint (its lock lives in the lock directory).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


SAVER = """
import sys
from probetop.probes.disk.warmup.checkpoint import Checkpoint
size = 1 << 40
cp = Checkpoint(sys.argv[1], {"kind": "file", "size_bytes": size}, "write", 1, size, 0, size)
pos = 0
while True:
    cp.mark_done(pos, pos + 1)  # every save adds one isolated extent: the file grows
    pos += 2
    cp.save()
    if pos == 2:  # after the first save: a first fsync took over 0.15 s at load 33
        print("ready", flush=True)
"""


def test_kill_9_during_saves_leaves_a_valid_checkpoint(tmp_path: Path) -> None:
    target = tmp_path / "killed.json"
    for attempt in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(target)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            time.sleep(0.15 + 0.07 * attempt)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        loaded = Checkpoint.load(target)  # never torn
        n = len(loaded.done)
        assert n > 0 and loaded.done == [(2 * i, 2 * i + 1) for i in range(n)]
    assert not [p for p in tmp_path.iterdir() if p.name != "killed.json" and "tmp" not in p.name]


@pytest.mark.parametrize(
    ("content", "kind", "message", "advice"),
    [
        # A damaged probetop checkpoint: says how to start over.
        (b'{"format": "probetop-warmup-checkpoint", "vers', CorruptCheckpoint, "corrupt", "rm "),
        (b'{"format":"probetop-warmup-checkpoint","version":1,"ident', CorruptCheckpoint,
         "corrupt", "rm "),
        # Anything else is not ours: never to be overwritten, nor deleted on our advice.
        (b"\xff\xfe\x00binary", NotACheckpoint, "not a probetop warm-up checkpoint", "never"),
        (b'{"hello": "world"}', NotACheckpoint, "not a probetop warm-up checkpoint", "never"),
        (b"[1, 2, 3]", NotACheckpoint, "not a probetop warm-up checkpoint", "never"),
        (b"my notes\n", NotACheckpoint, "not a probetop warm-up checkpoint", "never"),
    ],
)  # fmt: skip
def test_corrupt_or_foreign_file_is_a_clear_error(
    tmp_path: Path, content: bytes, kind: type, message: str, advice: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(kind, match=message) as info:
        Checkpoint.load(path)
    assert advice in str(info.value) and str(path) in str(info.value)


def test_a_damaged_checkpoint_fails_its_checksum(tmp_path: Path) -> None:
    cp = make(tmp_path, size=1 << 20)
    cp.mark_done(0, 4096)
    cp.save()
    raw = cp.path.read_bytes()
    assert raw.startswith(MAGIC)  # the magic: how probetop knows its own files
    # One digit changed: still valid JSON, but the done extents are not what was saved.
    cp.path.write_bytes(raw.replace(b"[[0,4096]]", b"[[0,8192]]"))
    with pytest.raises(CorruptCheckpoint, match="sha256 does not match"):
        Checkpoint.load(cp.path)


@pytest.mark.parametrize("make_it", ["fifo", "dir", "big"])
def test_special_files_are_never_read_as_checkpoints(tmp_path: Path, make_it: str) -> None:
    path = tmp_path / "x"
    if make_it == "fifo":
        os.mkfifo(path)  # reading it would block forever
    elif make_it == "dir":
        path.mkdir()
    else:
        with open(path, "wb") as f:
            f.truncate(MAX_BYTES + 1)
    with pytest.raises(NotACheckpoint):
        Checkpoint.load(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"version": VERSION + 1}, "format version"),
        ({"done": [[0, 10], [5, 20]]}, "corrupt"),
        ({"done": [[0, 2000]]}, "corrupt"),
        ({"done": [[10, 5]]}, "corrupt"),
        ({"bs": "4k"}, "corrupt"),
        ({"identity": None}, "corrupt"),
    ],
)
def test_invalid_fields_are_refused(tmp_path: Path, edit: dict, message: str) -> None:
    cp = make(tmp_path)
    data = {**cp.to_json(), **edit}
    del data["sha256"]  # as older probetops wrote them: the fields are checked one by one
    cp.path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=message):
        Checkpoint.load(cp.path)


def test_missing_checkpoint_says_to_run_without_resume(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="without --resume"):
        Checkpoint.load(tmp_path / "none.json")


def test_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cp = Checkpoint(blocker / "c.json", DISK, "read", 4096, 100, 0, 100)
    with pytest.raises(CheckpointError, match="--checkpoint"):
        cp.save()


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tiny tmpfs")
def test_disk_full_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    point = tmp_path / f"full-{uuid.uuid4().hex[:8]}"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(point)], check=True)
    try:
        cp = Checkpoint(point / "c.json", DISK, "read", 1, 1 << 30, 0, 1 << 30)
        cp.mark_done(0, 10)
        cp.save()
        filler = point / "filler"
        with open(filler, "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * 4096)
        for i in range(2000):  # a checkpoint far larger than the space left
            cp.mark_done(20 + 2 * i, 21 + 2 * i)
        with pytest.raises(CheckpointError, match="previous one is intact"):
            cp.save()
        assert Checkpoint.load(cp.path).done == [(0, 10)]
        assert sorted(p.name for p in point.iterdir()) == ["c.json", "filler"]
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


HOLDER = """
import sys, time
from probetop.probes.disk.warmup.checkpoint import Checkpoint
cp = Checkpoint(sys.argv[1], {}, "read", 1, 10, 0, 10)
cp.acquire_lock()
print("locked", flush=True)
time.sleep(60)
"""


def test_a_second_warm_up_of_the_same_target_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        cp = make(tmp_path)
        with pytest.raises(CheckpointError, match=f"in use by probetop PID {holder.pid}"):
            cp.acquire_lock()
    finally:
        holder.send_signal(signal.SIGKILL)  # the kernel drops a killed process's lock
        holder.wait()
    cp.acquire_lock()
    cp.acquire_lock()  # idempotent
    other = make(tmp_path)
    with pytest.raises(CheckpointError, match=f"PID {os.getpid()} \\(this process\\)"):
        other.acquire_lock()
    cp.release_lock()
    other.acquire_lock()
    other.release_lock()


# ------------------------------------------------------------------ refusals


def test_mismatch_reasons(tmp_path: Path) -> None:
    cp = make(tmp_path, size=DISK_SIZE)
    args = ("read", 4096, 0, DISK_SIZE)
    assert cp.matches(DISK, *args) is None
    # The same serial under another name (renamed after a reboot): still the disk.
    renamed = {**DISK, "path": "/dev/sdc", "real_path": "/dev/sdc", "dev": "8:32", "name": "sdc"}
    assert cp.matches(renamed, *args) is None
    other_disk = {**DISK, "serial": "OTHER"}
    assert "serial was 'S3Z9NB0K123'" in (cp.matches(other_disk, *args) or "")
    assert "size_bytes" in (cp.matches({**DISK, "size_bytes": 1 << 31}, *args) or "")
    assert "serial" in (cp.matches({**DISK, "serial": None}, *args) or "")
    assert "for a read pass, not write" in (cp.matches(DISK, "write", 4096, *args[2:]) or "")
    assert "block size 4096, not 1048576" in (cp.matches(DISK, "read", 1 << 20, *args[2:]) or "")
    assert "covers bytes" in (cp.matches(DISK, "read", 4096, 4096, DISK_SIZE) or "")


def test_devices_without_serial_compare_path_dev_and_backing_file() -> None:
    assert identity_mismatch(LOOP, dict(LOOP)) is None
    assert "backing_file" in (identity_mismatch(LOOP, {**LOOP, "backing_file": "/x.img"}) or "")
    assert "real_path" in (identity_mismatch(LOOP, {**LOOP, "real_path": "/dev/loop4"}) or "")
    assert "dev" in (identity_mismatch(LOOP, {**LOOP, "dev": "7:4"}) or "")
    assert "kind" in (identity_mismatch(LOOP, {**LOOP, "kind": "file"}) or "")


# ------------------------------------------------------------------ default locations


def test_default_path_beside_a_file(tmp_path: Path) -> None:
    target = tmp_path / "vol.img"
    target.write_bytes(b"\0" * 4096)
    assert default_path(target) == tmp_path / "vol.img.probetop-warmup.json"


def test_default_path_for_block_devices() -> None:
    assert default_path(DISK) == BLOCK_DEVICE_DIR / "sdb-S3Z9NB0K123.json"
    assert default_path(LOOP) == BLOCK_DEVICE_DIR / f"loop3-{1 << 30}B.json"
    odd = {**DISK, "serial": "  A/B C  ", "name": "nvme0n1"}
    assert default_path(odd) == BLOCK_DEVICE_DIR / "nvme0n1-A_B_C.json"


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a loop device")
def test_default_path_of_a_real_loop_device() -> None:
    image = Path("/dev/shm") / f"probetop-cp-{uuid.uuid4().hex}.img"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    dev = subprocess.run(
        ["losetup", "-f", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        name = os.path.basename(dev)
        assert default_path(dev) == BLOCK_DEVICE_DIR / f"{name}-{8 << 20}B.json"
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink()
