"""Nothing destroyed by accident, one run per target, every bad input a message.

Against real targets: loop devices over files in /dev/shm, a mounted ext4
loop, swap on a loop device and a swap file, a 16 MiB tmpfs, read-only
mounts and devices, a FIFO, and another user (nobody, through setpriv).
Every case runs the real CLI in a subprocess and checks: the exit code, a
one-line message (``probetop: error: ...``) or the report's error line,
never a traceback, never a hang (each run has a time limit).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import PROBETOP, Layers, as_nobody, loop_device, need_root, run_cli, summary_of
from file_size import text_of
from probetop.probes.disk.warmup.checkpoint import Checkpoint

layers = disk_fixtures.layers
fast_dir = disk_fixtures.fast_dir


def expect_refusal(proc: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> str:
    """Exit ``code``, one ``probetop: error:`` line (or the report's error), no
    traceback; every needle in the message. Returns the message."""
    everything = proc.stdout + proc.stderr
    assert "Traceback" not in everything, everything
    assert proc.returncode == code, everything
    err_lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if err_lines:
        assert len(err_lines) == 1 and err_lines[0].startswith("probetop: error: "), err_lines
        message = err_lines[0]
    else:
        message = next(line for line in proc.stdout.splitlines() if "error" in line)
    for needle in needles:
        assert needle in message, (needle, message)
    return message


# ----------------------------------------------------------------- class 2: in-use targets


def test_writes_to_the_file_behind_a_mounted_loop_device_are_refused(
    layers: Layers, tmp_path: Path
) -> None:
    image, dev, point = layers.ext4_mount()
    (point / "precious").write_text("data")
    # Frozen, the filesystem's own writes (its superblock, the journal, lazy
    # inode-table init) wait, so any byte of the image that changes is the
    # probe's: the first MiB compared unfrozen changed now and then.
    subprocess.run(["fsfreeze", "--freeze", str(point)], check=True)
    layers.stack.callback(subprocess.run, ["fsfreeze", "--unfreeze", str(point)], check=False)
    # A freeze that outlives this process (killed, a timeout: no teardown)
    # hangs every later pytest on the machine for good, in D state, unlinking
    # its old tmp dirs: a detached watchdog of its own session thaws it later.
    watchdog = subprocess.Popen(
        ["sh", "-c", 'sleep 300 && exec fsfreeze --unfreeze "$0"', str(point)],
        start_new_session=True,
    )
    layers.stack.callback(watchdog.wait)
    layers.stack.callback(os.killpg, watchdog.pid, signal.SIGKILL)
    before = image.read_bytes()
    name = os.path.basename(dev)
    for args in (
        ["iops", str(image), "--rw", "write", "--time", "1"],
        ["iops", str(image), "--rw", "randrw", "--time", "1"],
        ["warmup", str(image), "--write", f"--yes-destroy-data={image}",
         "--checkpoint", str(tmp_path / "c.json")],
        ["iops", str(image), "--size", "64M", "--time", "1"],  # a read that would extend it
    ):  # fmt: skip
        message = expect_refusal(run_cli(args, timeout=60), "refusing to", name, "mounted on")
        assert str(point) in message
    assert image.read_bytes() == before  # not one byte changed
    subprocess.run(["fsfreeze", "--unfreeze", str(point)], check=True)
    assert (point / "precious").read_text() == "data"
    assert subprocess.run(["e2fsck", "-fn", dev], capture_output=True).returncode == 0


def test_writes_to_the_file_behind_an_active_swap_loop_are_refused(layers: Layers) -> None:
    need_root()
    image = layers.image(16 << 20)
    dev = layers.loop(image)
    layers.swapon(dev)
    expect_refusal(
        run_cli(["iops", str(image), "--rw", "randwrite", "--time", "1"], timeout=60),
        "refusing to write",
        os.path.basename(dev),
        "active swap",
    )


def test_writes_to_the_file_behind_an_idle_loop_device_are_refused(layers: Layers) -> None:
    need_root()
    image = layers.image(16 << 20)
    dev = layers.loop(image)
    expect_refusal(
        run_cli(["iops", str(image), "--rw", "write", "--time", "1"], timeout=60),
        f"backing file of loop device {os.path.basename(dev)}",
        f"losetup -d {dev}",
    )
    # Reading it is harmless and allowed.
    read = run_cli(["iops", str(image), "--time", "0.5", "--json"], timeout=60)
    assert read.returncode == 0, read.stderr


def test_writes_to_an_active_swap_file_are_refused(layers: Layers) -> None:
    _image, _dev, point = layers.ext4_mount(64 << 20)
    swap = layers.swapfile(point)
    expect_refusal(
        run_cli(["iops", str(swap), "--rw", "write", "--time", "1"], timeout=60),
        "active swap file",
    )


def test_a_read_only_loop_device_and_filesystem_refuse_writes(layers: Layers) -> None:
    need_root()
    image = layers.image(16 << 20)
    ro_dev = layers.loop(image, read_only=True)
    expect_refusal(
        run_cli(["iops", ro_dev, "--rw", "write", f"--yes-destroy-data={ro_dev}", "--time", "1"]),
        "read-only device",
    )
    point = layers.tmpfs("4m")
    (point / "f.img").write_bytes(b"\0" * (1 << 20))
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    for args in (
        ["iops", str(point / "f.img"), "--rw", "write", "--time", "1"],
        ["iops", str(point / "new.img"), "--size", "1M", "--time", "1"],
    ):
        expect_refusal(run_cli(args), "read-only filesystem")


def test_a_detached_loop_device_is_a_device_of_size_0(layers: Layers, tmp_path: Path) -> None:
    need_root()
    # Not `losetup -f`: between asking for a free device and opening it, another
    # test worker (or anyone on the machine) may attach it. A node of our own for
    # a loop minor far above the ones in use is a loop device nobody attaches.
    with unbound_loop_node(tmp_path) as node:
        expect_refusal(run_cli(["iops", str(node), "--time", "1"]), "size 0")


@contextlib.contextmanager
def unbound_loop_node(directory: Path) -> Iterator[Path]:
    """A block device node for a loop device of our own, added unbound (size 0)
    through /dev/loop-control and removed afterwards."""
    used = {int(p.name[4:]) for p in Path("/sys/block").glob("loop[0-9]*")}
    minor = next(m for m in range(3000 + os.getpid() % 1000, 1 << 19) if m not in used)
    try:
        control = os.open("/dev/loop-control", os.O_RDWR)
    except OSError as exc:
        pytest.skip(f"no /dev/loop-control: {exc}")
    node = directory / f"loop{minor}"
    try:
        try:
            fcntl.ioctl(control, 0x4C80, minor)  # LOOP_CTL_ADD
            os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(7, minor))
        except OSError as exc:
            pytest.skip(f"cannot add loop device {minor}: {exc}")
        yield node
    finally:
        node.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            fcntl.ioctl(control, 0x4C81, minor)  # LOOP_CTL_REMOVE
        os.close(control)


# ----------------------------------------------------------------- one run per target


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    """Whatever a test asserted, every probetop it started is gone after it."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _start(args: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*PROBETOP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _STARTED.append(proc)
    return proc


def _wait(predicate: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not predicate():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert predicate()


def _sampled(recording: Path) -> Callable[[], bool]:
    """The run is measuring: its recording holds a sample."""
    return lambda: '"type":"sample"' in text_of(recording)


def _progress(path: Path) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return Checkpoint.load(path).done_bytes > 0
        except Exception:
            return False

    return check


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_two_warmups_of_one_device_never_both_run(tmp_path: Path) -> None:
    with loop_device(64 << 20) as dev:
        first = _start(["warmup", dev, "--bs", "4k", "--iodepth", "1", "--rate-iops", "50",
                        "--checkpoint", str(tmp_path / "a.json")])  # fmt: skip
        try:
            _wait(_progress(tmp_path / "a.json"), first)
            for args, _what in (
                (["warmup", dev, "--checkpoint", str(tmp_path / "b.json")], "a second warm-up"),
                (["iops", dev, "--time", "1"], "an IOPS read"),
                (["warmup", dev, "--write", f"--yes-destroy-data={dev}",
                  "--checkpoint", str(tmp_path / "c.json")], "a write pass"),
            ):  # fmt: skip
                expect_refusal(
                    run_cli(args, timeout=60),
                    f"{dev} is in use by probetop PID {first.pid} (warmup {dev})",
                )
            # Through another name of the same device: still the same lock.
            alias = tmp_path / "alias"
            alias.symlink_to(dev)
            expect_refusal(
                run_cli(["iops", str(alias), "--time", "1"], timeout=60),
                f"in use by probetop PID {first.pid}",
            )
        finally:
            _stop(first)
        # Once it ended, the device is free again.
        again = run_cli(["iops", dev, "--time", "0.5", "--json"], timeout=60)
        assert again.returncode == 0, again.stderr


def test_a_second_write_to_a_device_being_written_is_named_by_pid(tmp_path: Path) -> None:
    """The first write pass holds the device with O_EXCL; the second run must
    still hear who holds it, not just "the kernel reports it busy"."""
    with loop_device(64 << 20) as dev:
        first = _start(["warmup", dev, "--write", f"--yes-destroy-data={dev}", "--bs", "4k",
                        "--iodepth", "1", "--rate-iops", "50",
                        "--checkpoint", str(tmp_path / "a.json")])  # fmt: skip
        try:
            _wait(_progress(tmp_path / "a.json"), first)
            for args in (
                ["iops", dev, "--rw", "randwrite", f"--yes-destroy-data={dev}", "--time", "1"],
                ["warmup", dev, "--write", f"--yes-destroy-data={dev}",
                 "--checkpoint", str(tmp_path / "b.json")],
            ):  # fmt: skip
                expect_refusal(run_cli(args, timeout=60), f"in use by probetop PID {first.pid}")
        finally:
            _stop(first)


def test_a_loop_device_and_its_backing_file_are_one_target(layers: Layers, tmp_path: Path) -> None:
    need_root()
    image = layers.image(64 << 20)
    dev = layers.loop(image)
    first = _start(["warmup", dev, "--bs", "4k", "--iodepth", "1", "--rate-iops", "50",
                    "--checkpoint", str(tmp_path / "a.json")])  # fmt: skip
    try:
        _wait(_progress(tmp_path / "a.json"), first)
        expect_refusal(
            run_cli(["iops", str(image), "--time", "1"], timeout=60),
            f"in use by probetop PID {first.pid}",
        )
    finally:
        _stop(first)


def test_the_lock_is_shared_with_other_users(fast_dir: Path) -> None:
    """A root run holds a file; nobody's run of the same file is refused by PID."""
    need_root()
    fast_dir.chmod(0o755)
    target = fast_dir / "shared.img"
    target.write_bytes(b"\0" * (8 << 20))
    target.chmod(0o666)
    ckpt = fast_dir / "c.json"
    first = _start(["warmup", str(target), "--bs", "4k", "--iodepth", "1", "--rate-iops", "50",
                    "--checkpoint", str(ckpt)])  # fmt: skip
    try:
        _wait(_progress(ckpt), first)
        expect_refusal(
            as_nobody(["iops", str(target), "--buffered", "--time", "1"]),
            f"in use by probetop PID {first.pid}",
        )
    finally:
        _stop(first)


def test_two_warmups_sharing_a_checkpoint_file_are_refused(fast_dir: Path) -> None:
    a, b, ckpt = fast_dir / "a.img", fast_dir / "b.img", fast_dir / "shared.json"
    for path in (a, b):
        path.write_bytes(b"\0" * (8 << 20))
    first = _start(["warmup", str(a), "--bs", "4k", "--iodepth", "1", "--rate-iops", "50",
                    "--checkpoint", str(ckpt)])  # fmt: skip
    try:
        _wait(_progress(ckpt), first)
        expect_refusal(
            run_cli(["warmup", str(b), "--checkpoint", str(ckpt)], timeout=60),
            f"checkpoint {ckpt} is in use by probetop PID {first.pid}",
        )
    finally:
        _stop(first)


# ----------------------------------------------------------------- checkpoints


def test_a_checkpoint_never_overwrites_a_foreign_file(fast_dir: Path) -> None:
    target = fast_dir / "vol.img"
    target.write_bytes(b"\0" * (1 << 20))
    notes = fast_dir / "notes.txt"
    notes.write_text("my notes\n")
    expect_refusal(
        run_cli(["warmup", str(target), "--checkpoint", str(notes)]),
        "not a probetop warm-up checkpoint",
        "never overwrites it",
    )
    assert notes.read_text() == "my notes\n"
    for special in ("/dev/null", str(fast_dir), "/proc/self/status"):
        expect_refusal(run_cli(["warmup", str(target), "--checkpoint", special]))
    fifo = fast_dir / "fifo"
    os.mkfifo(fifo)
    expect_refusal(run_cli(["warmup", str(target), "--checkpoint", str(fifo)], timeout=30))
    # An empty file holds nothing to lose: it may become the checkpoint.
    empty = fast_dir / "empty.json"
    empty.touch()
    ok = run_cli(["warmup", str(target), "--checkpoint", str(empty), "--json"])
    assert ok.returncode == 0, ok.stderr
    assert Checkpoint.load(empty).complete


def test_a_corrupt_checkpoint_is_refused_with_the_way_to_restart(fast_dir: Path) -> None:
    target, ckpt = fast_dir / "vol.img", fast_dir / "c.json"
    target.write_bytes(b"\0" * (4 << 20))
    first = run_cli(["warmup", str(target), "--bs", "64k", "--checkpoint", str(ckpt), "--time",
                     "0.5", "--rate-iops", "10"])  # fmt: skip
    assert first.returncode == 0, first.stderr
    good = ckpt.read_bytes()
    for damage, _label in (
        (good[: len(good) // 2], "truncated"),
        (good.replace(b'"done":[[0,', b'"done":[[1,'), "edited"),
    ):
        ckpt.write_bytes(damage)
        for resume in ([], ["--resume"]):
            expect_refusal(
                run_cli(["warmup", str(target), "--bs", "64k", "--checkpoint", str(ckpt),
                         *resume]),
                "corrupt",
                f"rm {ckpt}",
            )  # fmt: skip
            assert ckpt.read_bytes() == damage  # never silently replaced


# ----------------------------------------------------------------- class 1: free space


def test_a_layout_that_would_fill_the_filesystem_is_refused_with_the_numbers(
    layers: Layers,
) -> None:
    point = layers.tmpfs("16m")
    for size, verdict in (("1P", "would not fit"), ("16M", "would leave only 0 B free"),
                          ("15800k", "would leave only")):  # fmt: skip
        message = expect_refusal(
            run_cli(["iops", str(point / "f.img"), "--size", size, "--rw", "write", "--time", "1"]),
            "needs",
            "16.0 MiB free of 16.0 MiB",
            verdict,
            "keeps at least 819.2 KiB free",
        )
        assert not (point / "f.img").exists(), message
    ok = run_cli(["iops", str(point / "f.img"), "--size", "8M", "--rw", "write", "--time", "0.5"])
    assert ok.returncode == 0, ok.stderr


def test_a_layout_that_hits_a_full_filesystem_is_undone(layers: Layers) -> None:
    """Another writer fills the filesystem between the check and the layout."""
    point = layers.tmpfs("16m")
    proc = _start(["iops", str(point / "f.img"), "--size", "12M", "--rw", "write", "--time", "2"])
    with open(point / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        while True:  # races the layout for the same 16 MiB
            f.write(b"\0" * 65536)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err
    if proc.returncode == 2:  # lost the race: refused, or the layout hit ENOSPC and was undone
        assert "no space" in out + err or "would not fit" in out + err, out + err
        assert not (point / "f.img").exists()
    else:  # won it: laid out before the filler got there
        assert proc.returncode == 0, out + err


def test_a_filesystem_that_fills_mid_run_stops_at_the_first_error_as_fio(
    layers: Layers, tmp_path: Path
) -> None:
    """fio stops a job at its first error (err=28) and its runtime ends there.
    The file's blocks are punched out and another writer takes the space, so
    the next write into a hole fails with ENOSPC. Before, the loop went on
    failing until the interval's end: ~1,000 errors at --rate-iops 1000, and
    that dead time counted as runtime."""
    need_root()
    point = layers.tmpfs("16m")
    target = point / "f.img"
    rec = tmp_path / "iops.jsonl"
    proc = _start(["iops", str(target), "--size", "8M", "--rw", "randwrite", "--bs", "4k",
                   "--rate-iops", "1000", "--interval", "1", "--time", "30", "--json",
                   "--record", str(rec)])  # fmt: skip
    _wait(_sampled(rec), proc)
    subprocess.run(["fallocate", "--punch-hole", "--offset", "0", "--length", "8M", str(target)],
                   check=True)  # fmt: skip
    with open(point / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        for _ in range(1000):  # 16 MiB at most: the filesystem's size
            f.write(b"\0" * 65536)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err
    assert proc.returncode == 2, out + err
    doc = summary_of(out)
    assert "the filesystem is full (ENOSPC)" in doc["error"], doc["error"]
    write = doc["write"]
    assert write["errors"] == 1, write
    assert write["total_ios"] == write["clat_ns"]["N"]  # completed I/Os only
    # The runtime ends at the failed write, well before the 30 s, and the last
    # interval is cut there (its end is not on the 1 s grid).
    assert write["runtime"] < 25_000
    assert doc["intervals"][-1]["errors"] == 1


# ----------------------------------------------------------------- targets changing mid-run


def test_a_file_that_shrinks_during_the_run_stops_it(fast_dir: Path) -> None:
    for command in (["iops"], ["warmup", "--checkpoint", str(fast_dir / "c.json")]):
        target = fast_dir / "shrinks.img"
        target.write_bytes(b"\0" * (64 << 20))
        (fast_dir / "c.json").unlink(missing_ok=True)
        rec = fast_dir / f"{command[0]}.jsonl"
        proc = _start([command[0], str(target), *command[1:], "--bs", "4k", "--iodepth", "1",
                       "--rate-iops", "100", "--interval", "0.2", "--json",
                       "--record", str(rec)])  # fmt: skip
        _wait(_sampled(rec), proc)  # measuring (a fixed 2 s can still be start-up under load)
        os.truncate(target, 1 << 20)
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in out + err
        assert proc.returncode == 2, out + err
        doc = summary_of(out)
        assert "shrank" in doc["error"] or "short I/O" in doc["error"], doc["error"]


def test_a_loop_device_that_shrinks_during_the_run_stops_it(layers: Layers, tmp_path: Path) -> None:
    need_root()
    image = layers.image(64 << 20)
    dev = layers.loop(image)
    rec = tmp_path / "iops.jsonl"
    proc = _start(["iops", dev, "--rate-iops", "100", "--interval", "0.2", "--time", "20",
                   "--json", "--record", str(rec)])  # fmt: skip
    _wait(_sampled(rec), proc)  # measuring (a fixed 2 s can still be start-up under load)
    os.truncate(image, 1 << 20)
    subprocess.run(["losetup", "-c", dev], check=True)  # the kernel sees the new size
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err
    assert proc.returncode == 2, out + err
    assert "shrank to 1,048,576 bytes" in summary_of(out)["error"]


# ----------------------------------------------------------------- class 4: bad input


# A file probetop must never create: /dev is devtmpfs, the kernel's device
# nodes, not storage (refused like /proc; the recorder refused it already).
DEVTMPFS_NEW_FILE = f"/dev/probetop-hostile-{os.getpid()}"


def _hostile_table(tmp: Path) -> list[tuple[str, list[str], list[str]]]:
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    (tmp / "zero-link").symlink_to("/dev/zero")
    (tmp / "loop-a").symlink_to(tmp / "loop-b")
    (tmp / "loop-b").symlink_to(tmp / "loop-a")
    (tmp / "empty").touch()
    img = tmp / "img"
    img.write_bytes(b"\0" * (4 << 20))
    i = str(img)
    return [
        ("FIFO target", ["iops", str(fifo)], ["FIFO"]),
        ("FIFO warm-up", ["warmup", str(fifo)], ["FIFO"]),
        ("/dev/zero", ["iops", "/dev/zero"], ["character device"]),
        ("/dev/full write", ["iops", "/dev/full", "--rw", "write"], ["character device"]),
        ("/dev/null", ["warmup", "/dev/null"], ["character device"]),
        ("symlink to /dev/zero", ["iops", str(tmp / "zero-link")], ["character device"]),
        ("symlink loop", ["iops", str(tmp / "loop-a")], ["symbolic links"]),
        ("a file under /proc", ["iops", "/proc/self/status"], ["proc filesystem"]),
        ("a new file under /proc", ["iops", "/proc/sys/vm/probetop", "--size", "4k"], ["proc"]),
        ("a new file in /dev (devtmpfs)", ["iops", DEVTMPFS_NEW_FILE, "--size", "4k"],
         ["devtmpfs filesystem"]),
        ("a file under /sys write", ["iops", "/sys/kernel/mm/transparent_hugepage/enabled",
                                      "--rw", "write", "--size", "4k"], ["sysfs"]),
        ("a directory", ["iops", str(tmp)], ["is a directory"]),
        ("missing directory", ["iops", str(tmp / "no" / "x"), "--size", "1M"], ["does not exist"]),
        ("name too long", ["iops", str(tmp / ("a" * 300)), "--size", "1M"], ["too long"]),
        ("empty file", ["iops", str(tmp / "empty")], ["empty file"]),
        ("--range beyond a read target", ["warmup", i, "--range", "0-1G"], ["does not fit"]),
        ("--offset beyond the end", ["iops", i, "--offset", "8M"], ["beyond its end"]),
        ("--offset 100P", ["iops", i, "--offset", "100P"], ["beyond its end"]),
        ("--size 100000P", ["iops", i, "--size", "100000P"], ["out of range"]),
        ("--bs 0", ["iops", i, "--bs", "0"], ["at least 1 byte"]),
        ("warmup --bs 0", ["warmup", i, "--bs", "0"], ["at least 1 byte"]),
        ("warmup --range END beyond", ["warmup", i, "--range", "0-999999999999"],
         ["smaller --range END"]),
        ("--bs 100P", ["iops", i, "--bs", "100P"], ["larger than 64.0 MiB"]),
        ("--bs unaligned, O_DIRECT", ["iops", i, "--bs", "1000", "--direct"], ["needs --bs"]),
        ("--range reversed", ["warmup", i, "--range", "3M-1M"], ["START must be below END"]),
        ("--jobs x --iodepth x --bs memory", ["iops", i, "--jobs", "256", "--iodepth", "1024",
                                              "--bs", "1M"], ["MemAvailable"]),
        ("kernel AIO limit", ["iops", i, "--jobs", "256", "--iodepth", "1024"],
         ["fs.aio-max-nr"]),
        ("--jobs 5000", ["iops", i, "--jobs", "5000"], ["--jobs must be"]),
        ("--interval 0.0001", ["iops", i, "--interval", "0.0001"], ["shortest sampling interval"]),
        ("--interval 0.07", ["iops", i, "--interval", "0.07"], ["shortest they keep is 0.1"]),
        ("--interval 1e300", ["iops", i, "--interval", "1e300"], ["longest sampling interval"]),
        ("--time 1e300", ["warmup", i, "--time", "1e300"], ["--time must be within"]),
        ("--ramp 1e300", ["iops", i, "--ramp", "1e300"], ["out of range"]),
        ("--checkpoint in a missing directory", ["warmup", i, "--checkpoint",
                                                 str(tmp / "no" / "c.json")], ["does not exist"]),
        ("--checkpoint is the target", ["warmup", i, "--checkpoint", i],
         ["not a probetop warm-up checkpoint"]),
    ]  # fmt: skip


def test_hostile_inputs_get_a_message_and_exit_2(tmp_path: Path) -> None:
    table = _hostile_table(tmp_path)
    try:
        _run_hostile_table(table)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(DEVTMPFS_NEW_FILE)  # created only by a probetop that failed this
    assert (tmp_path / "img").stat().st_size == 4 << 20  # nothing was written


def _run_hostile_table(table: list[tuple[str, list[str], list[str]]]) -> None:
    """The first case as a whole `python -m probetop.tui.main`; the others
    forked from an interpreter that has imported the CLI and the disk family
    (run_cli; tests/forkserver.py: each is still a process with its own argv,
    stdio and exit status), which spares 0.3-0.6 CPU-s of start-up per case."""
    for i, (label, args, needles) in enumerate(table):
        t0 = time.monotonic()
        argv = [*args, "--time", "1"] if "--time" not in args else args
        proc = run_cli(argv, timeout=60, fresh=i == 0)
        assert time.monotonic() - t0 < 30, label
        try:
            expect_refusal(proc, *needles)
        except AssertionError as exc:
            raise AssertionError(f"{label}: {exc}") from None


def test_a_block_device_without_permission_is_one_line(fast_dir: Path) -> None:
    with loop_device(8 << 20) as dev:
        for args in (["iops", dev], ["warmup", dev], ["iops", dev, "--rw", "write"]):
            expect_refusal(as_nobody([*args, "--time", "1"]), "permission denied")


def test_an_unprivileged_user_without_a_home_runs_iops(fast_dir: Path) -> None:
    """numba's cache goes to a private per-user directory (no traceback from it)."""
    need_root()
    fast_dir.chmod(0o755)
    target = fast_dir / "u.img"
    target.write_bytes(b"\0" * (4 << 20))
    target.chmod(0o644)
    # A user with no cache compiles the I/O loops first: 35-40 s of CPU
    # (73 s at load 4, over 120 s at load 7 beside the parallel tests).
    proc = as_nobody(["iops", str(target), "--buffered", "--time", "1", "--json"], timeout=270)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert summary_of(proc.stdout)["read"]["total_ios"] > 0
    cache = Path("/tmp") / f"probetop-{disk_fixtures.NOBODY}" / "numba"
    assert cache.is_dir() and cache.stat().st_uid == disk_fixtures.NOBODY
    assert cache.stat().st_mode & 0o077 == 0


def test_a_planted_cache_directory_is_never_used(fast_dir: Path) -> None:
    """Someone else created nobody's cache directory (world-writable, not
    nobody's): it is not trusted (numba's index files are pickles); the run
    compiles in memory and says so."""
    need_root()
    fast_dir.chmod(0o755)
    target = fast_dir / "u.img"
    target.write_bytes(b"\0" * (4 << 20))
    target.chmod(0o644)
    private = Path("/tmp") / f"probetop-{disk_fixtures.NOBODY}"
    aside = private.with_name(private.name + f".aside-{os.getpid()}")
    if private.exists():
        private.rename(aside)
    try:
        private.mkdir(mode=0o777)
        private.chmod(0o777)  # planted by root, writable by all
        # compiled in memory, as above: minutes on a loaded machine
        proc = as_nobody(["iops", str(target), "--buffered", "--time", "1", "--json"], timeout=270)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        notes = summary_of(proc.stdout)["notes"]
        assert any("numba's on-disk cache is off" in n for n in notes), notes
        assert list(private.iterdir()) == []  # nothing written into it
    finally:
        shutil.rmtree(private, ignore_errors=True)
        if aside.exists():
            aside.rename(private)
