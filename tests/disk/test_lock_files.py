"""The lock directory does not fill up, and one run per target still holds.

``probes/core/targetlock.py`` keeps one lock file per key. Before, files of
shared keys (a partition's whole disk) stayed after every run, and so did
every file of a run killed with SIGKILL: /run/lock/probetop held 365 files
on the machine this was written on. Now a release removes its files (a
shared one when no one else holds it) and each process's first lock removes
the files nobody holds. Checked here with real runs of the CLI, a real
second process, and processes racing for one key while files are removed
under them. Every path is prefixed "warmup-".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import PROBETOP, Layers, need_root, run_cli
from privilege import NOBODY, as_nobody
from probetop.probes.core.targetlock import TargetLock, lock_dir, target_keys
from probetop.probes.disk.refusals import lock_devices
from probetop.probes.disk.warmup.checkpoint import Checkpoint

layers = disk_fixtures.layers


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory of our own on tmpfs (else /tmp), removed after."""
    import shutil
    import tempfile

    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="warmup-locks-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def lock_files(target: str, block: bool = False) -> list[Path]:
    """The lock files a run on ``target`` takes (whether or not they exist)."""
    keys = target_keys(target, lock_devices if block else None)
    return [lock_dir() / f"{key.name}.lock" for key in keys]


def checkpoint_lock(path: Path) -> Path:
    (key,) = TargetLock.for_path(str(path), "warmup", str(path)).keys
    return lock_dir() / f"{key.name}.lock"


def warmup(target: str, ckpt: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["warmup", target, "--bs", "64k", "--checkpoint", str(ckpt), *extra], 120)


def start_holder(target: str, ckpt: Path) -> subprocess.Popen[str]:
    """A warm-up paced to last: it holds ``target``'s locks until stopped."""
    proc = subprocess.Popen(
        [*PROBETOP, "warmup", target, "--bs", "4k", "--iodepth", "1", "--rate-iops", "50",
         "--checkpoint", str(ckpt)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if Checkpoint.load(ckpt).done_bytes > 0:
                return proc
        except Exception:
            pass
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the holder never made progress")


def test_runs_on_many_targets_leave_no_lock_file(scratch: Path) -> None:
    targets = []
    for i in range(6):
        target = scratch / f"warmup-lock-{i}.img"
        target.write_bytes(b"\1" * (1 << 20))
        targets.append(target)
    for i, target in enumerate(targets):
        ckpt = scratch / f"warmup-lock-{i}.json"
        proc = warmup(str(target), ckpt) if i % 2 else run_cli(
            ["iops", str(target), "--time", "0.3", "--buffered"], 120
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        left = [p for p in [*lock_files(str(target)), checkpoint_lock(ckpt)] if p.exists()]
        assert left == [], left


def test_a_partition_run_leaves_no_lock_file_of_its_disk(layers: Layers, scratch: Path) -> None:
    """The whole disk is taken shared by a run on a partition: its file
    stayed behind before (only exclusive holders removed theirs)."""
    need_root()
    from test_blockdev import _partition_of, _write_mbr_one_partition

    image = layers.image(16 << 20)
    _write_mbr_one_partition(image, 2048, (16 << 20) // 512 - 2048)
    dev = layers.loop(image, partscan=True)
    part = _partition_of(layers, dev)
    files = lock_files(part, block=True)
    assert len(files) >= 3, files  # the partition, its disk (shared), the backing file
    proc = warmup(part, scratch / "warmup-part.json")
    assert proc.returncode in (0, 3), proc.stderr  # 3: a fresh (all zero) range
    assert [p for p in files if p.exists()] == []


def test_files_of_a_killed_run_are_removed_by_the_next_run(scratch: Path) -> None:
    a, b = scratch / "warmup-killed.img", scratch / "warmup-next.img"
    for path in (a, b):
        path.write_bytes(b"\1" * (8 << 20))
    ckpt = scratch / "warmup-killed.json"
    files = [*lock_files(str(a)), checkpoint_lock(ckpt)]
    holder = start_holder(str(a), ckpt)
    try:
        assert all(p.exists() for p in files), files
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    assert all(p.exists() for p in files), "SIGKILL runs no release: the files stay"
    # Any later run (here on another target) removes what nobody holds.
    proc = warmup(str(b), scratch / "warmup-next.json")
    assert proc.returncode == 0, proc.stderr
    assert [p for p in files if p.exists()] == []
    # And the killed run's target is free again.
    again = run_cli(["warmup", str(a), "--bs", "4k", "--iodepth", "1", "--checkpoint", str(ckpt),
                     "--resume"], 120)  # fmt: skip
    assert again.returncode == 0, again.stderr


def test_two_runs_on_one_target_still_exclude_each_other(scratch: Path) -> None:
    target = scratch / "warmup-one.img"
    target.write_bytes(b"\1" * (8 << 20))
    holder = start_holder(str(target), scratch / "warmup-one.json")
    try:
        for args in (
            ["iops", str(target), "--time", "1", "--buffered"],
            ["warmup", str(target), "--checkpoint", str(scratch / "warmup-two.json")],
        ):
            second = run_cli(args, 60)
            assert second.returncode == 2, second.stdout + second.stderr
            assert f"is in use by probetop PID {holder.pid}" in second.stderr, second.stderr
    finally:
        holder.send_signal(signal.SIGINT)
        holder.communicate(timeout=30)
    assert holder.returncode in (0, 130), holder.returncode
    assert [p for p in lock_files(str(target)) if p.exists()] == []
    after = run_cli(["iops", str(target), "--time", "0.3", "--buffered"], 60)
    assert after.returncode == 0, after.stderr


# Processes race for one key in a private lock directory: each takes it,
# proves it is alone inside (a marker file created O_EXCL), and lets go, so
# the lock file is removed and created again all the time; short-lived
# processes meanwhile remove whatever file nobody holds (their first lock).
_RACER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from probetop.probes.core import targetlock
    from probetop.probes.core.targetlock import LockKey, TargetBusy, TargetLock
    directory, key, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    targetlock.SHARED_DIR = directory
    inside = directory.parent / f"warmup-inside-{key}"  # one per key: holders of one key
    held = busy = 0
    deadline = time.monotonic() + 30
    for _ in range(rounds):
        if time.monotonic() > deadline:
            break
        lock = TargetLock([LockKey(key, False, "the key")], "race")
        try:
            lock.acquire()
        except TargetBusy:
            busy += 1
            continue
        try:
            fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            print("OVERLAP", flush=True)
            lock.release()
            continue
        os.close(fd)
        os.unlink(inside)
        lock.release()
        held += 1
    print(f"held {held} busy {busy}")
    """
)


def test_racing_takers_and_removers_never_overlap(tmp_path: Path) -> None:
    directory = tmp_path / f"warmup-race-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    def racer(key: str, rounds: int) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", _RACER, str(directory), key, str(rounds)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip

    takers = [racer("blk-warmup-race", 300) for _ in range(4)]
    removers = []
    for i in range(8):  # each one's first lock sweeps the directory
        removers.append(racer(f"blk-warmup-other-{i}", 1))
        time.sleep(0.05)
    outs = []
    for proc in takers + removers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outs.append(out)
    assert not any("OVERLAP" in out for out in outs), outs
    held = sum(int(out.split()[1]) for out in outs[: len(takers)])
    assert held >= 100, outs  # they did take it, over and over
    assert sorted(os.listdir(directory)) == [], "every lock file is gone after its release"


# Another user where lock files live: the owner of a sticky directory may
# remove any file in it, and the owner of the directory above a private one
# may move it away. Either took a held lock file from under its holder, and
# the next run on the target went ahead beside it (two destroying runs on
# one device). The other user is a real one, ``nobody``.
@pytest.fixture
def open_scratch(scratch: Path) -> Path:
    """``scratch``, sticky and world-writable as /run/lock and /tmp are."""
    need_root()
    os.chmod(scratch, 0o1777)
    return scratch


def test_a_shared_lock_directory_another_user_made_lets_no_second_run_in(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from probetop.probes.core import targetlock

    shared = open_scratch / "probetop"  # as /run/lock/probetop, made first by another user
    made = as_nobody("mkdir", "-m", "1777", str(shared))
    assert made.returncode == 0 and shared.stat().st_uid == NOBODY, made.stderr
    monkeypatch.setattr(targetlock, "SHARED_DIR", shared)
    target = open_scratch / "warmup-shared.img"
    target.write_bytes(b"\0" * 4096)
    first = TargetLock.for_target(str(target), "iops")
    first.acquire()
    try:
        assert lock_dir() == shared  # still shared: other users' runs see this one
        assert list(shared.glob("*.lock"))
        as_nobody("sh", "-c", f"rm -f '{shared}'/*.lock")  # what its owner may do
        second = TargetLock.for_target(str(target), "iops")
        with pytest.raises(targetlock.TargetBusy):
            second.acquire()
            second.release()
    finally:
        first.release()


def test_a_private_lock_directory_in_another_users_directory_is_passed_over(
    open_scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from probetop.probes.core import targetlock
    from probetop.probes.core.base import TargetProbeError

    monkeypatch.setattr(targetlock, "SHARED_DIR", open_scratch / "absent" / "probetop")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(open_scratch))
    planted = open_scratch / f"probetop-{os.geteuid()}"  # made before our first run
    assert as_nobody("mkdir", "-m", "755", str(planted)).returncode == 0
    target = open_scratch / "warmup-private.img"
    target.write_bytes(b"\0" * 4096)
    first = TargetLock.for_target(str(target), "iops")
    # Before, ours was made in it: its owner moved it away (``mv``) while a
    # run held a lock there, and the next run took the same target.
    with pytest.raises(TargetProbeError, match="no usable lock directory"):
        first.acquire()
    assert not (planted / "locks").exists()
