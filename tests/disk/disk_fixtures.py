"""Real disk targets for the IOPS and warm-up tests.

- ``loop_device(size)``: a context manager giving a loop device over a sparse
  file in /dev/shm (root only; skips otherwise), detached and removed on exit.
  With ``own_name=True`` its name is one no other test is handed while
  this one lives or after it goes (see ``_own_loop_number``).
- ``loop_dev`` fixture: a 64 MiB one.
- ``kernel_io(name)``: (reads, sectors read, writes, sectors written) from
  /sys/block/NAME/stat, to check probe counts against the kernel's.
- ``run_cli(args)``: run probetop (forked from a zygote, or a whole
  `python -m` with ``fresh``), return the CompletedProcess.
- ``Layers`` / ``layers`` fixture: builds loop devices, mounts (ext4 over a
  loop, a small tmpfs, read-only mounts), swap (on a loop device or a swap
  file) and dm targets, and undoes all of it in reverse even when a test fails.
- ``as_nobody(args)``: the same CLI as user nobody (setpriv), with no usable
  home directory, as a service account would run it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from forkserver import RUN_PRELOAD, run_probetop
from probetop.probes.disk.counters import (
    Snapshot,
)
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.selftest import warm_up_kernels
from probetop.probes.disk.workers import Engine
from scheduling import promptly_scheduled  # noqa: F401 (the disk tests import it from here)

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: loop devices")


_LOOP_CTL_ADD, _LOOP_CTL_REMOVE = 0x4C80, 0x4C81


@contextlib.contextmanager
def _own_loop_number() -> Iterator[int]:
    """A loop device node made for the caller (LOOP_CTL_ADD) at a random
    number from 512 up, removed (LOOP_CTL_REMOVE) at the end. ``losetup
    --find`` hands out the lowest free number, so while tests run in
    parallel a detached /dev/loop0 is soon another test's loop0, and a probe
    watching it sees one device that never went away; this number is nobody
    else's, and once removed its /sys/block entry is gone at once."""
    import fcntl
    import random

    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        for _ in range(64):
            number = random.randrange(512, 1 << 16)
            try:
                fcntl.ioctl(ctl, _LOOP_CTL_ADD, number)
                break
            except FileExistsError:
                continue
        else:
            pytest.skip("no free loop device number from 512 up")
        try:
            yield number
        finally:
            for _ in range(50):  # the detach's release may still hold it
                try:
                    fcntl.ioctl(ctl, _LOOP_CTL_REMOVE, number)
                    break
                except OSError:
                    time.sleep(0.1)
    finally:
        os.close(ctl)


@contextlib.contextmanager
def loop_device(
    size: int = 64 << 20, fill: bytes | None = None, *, own_name: bool = False
) -> Iterator[str]:
    """A loop device over a /dev/shm file of ``size`` bytes (optionally filled
    with one repeated byte); detached and removed afterwards. ``own_name``:
    at a number of its own (``_own_loop_number``), which then goes too."""
    need_root()
    if own_name:
        with _own_loop_number() as number, _loop_device(size, fill, f"/dev/loop{number}") as dev:
            yield dev
        return
    with _loop_device(size, fill, None) as dev:
        yield dev


@contextlib.contextmanager
def _loop_device(size: int, fill: bytes | None, at: str | None) -> Iterator[str]:
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm for the loop device's backing file")
    image = Path(f"/dev/shm/probetop-test-{uuid.uuid4().hex[:12]}.img")
    with open(image, "wb") as f:
        if fill is None:
            f.truncate(size)
        else:
            block = fill * (1 << 20)
            for _ in range(size >> 20):
                f.write(block)
    try:
        where = ["--find"] if at is None else [at]
        proc = subprocess.run(
            ["losetup", *where, "--show", str(image)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            pytest.skip(f"losetup failed: {proc.stderr.strip()}")
        dev = proc.stdout.strip()
        try:
            yield dev
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    finally:
        image.unlink(missing_ok=True)


@pytest.fixture
def loop_dev() -> Iterator[str]:
    with loop_device() as dev:
        yield dev


def kernel_io(dev: str) -> tuple[int, int, int, int]:
    """(reads completed, sectors read, writes completed, sectors written)."""
    name = os.path.basename(os.path.realpath(dev))
    fields = Path(f"/sys/block/{name}/stat").read_text().split()
    return int(fields[0]), int(fields[2]), int(fields[4]), int(fields[6])


def run_until_ios(plan: EnginePlan, reads: int, timeout_s: float = 60.0) -> Snapshot:
    """Run ``plan`` until it has completed at least ``reads`` reads, then stop
    it; the final snapshot. A count, not a duration: on a loaded machine a
    fixed 0.5 s gave 242 I/Os where the test needed 1000 to mean something."""
    warm_up_kernels()
    engine = Engine(plan)
    engine.start()
    deadline = time.monotonic() + timeout_s
    try:
        while engine.snapshot(time.monotonic_ns()).dirs[0].ios < reads:
            assert not engine.finished.is_set(), f"the engine ended early: {engine.last_error()}"
            assert time.monotonic() < deadline, (
                f"{engine.snapshot(time.monotonic_ns()).dirs[0].ios} reads in {timeout_s} s"
            )
            time.sleep(0.02)
    finally:
        engine.stop()
        engine.join()
    return engine.snapshot(engine.finished_ns or time.monotonic_ns())


# What an iops or warm-up run imports, for the zygote (tests/forkserver.py) to
# import once.
DISK_PRELOAD = (*RUN_PRELOAD, "probetop.probes.disk.family", "probetop.tui.run.launch")


def run_cli(
    args: list[str], timeout: float = 120, *, fresh: bool = False, **kw: object
) -> subprocess.CompletedProcess[str]:
    """``probetop ARGS``, output captured as text: forked from an interpreter
    that has imported the CLI, the disk family, numpy and numba
    (tests/forkserver.py: a process of its own with this argv, stdio,
    environment, threads and exit status; the 0.4-0.7 CPU-s of start-up
    spared), or with ``fresh`` (or subprocess.run's keywords) the whole
    `python -m probetop.tui.main` (test_disk_reliability's hostile table and
    test_warmup_verdict start their first case so)."""
    if not fresh and not kw:
        return run_probetop(args, timeout=timeout, preload=DISK_PRELOAD)
    return subprocess.run(
        PROBETOP + args,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,  # type: ignore[arg-type]
    )


def read_stamps(path: str, start: int, end: int) -> list[int]:
    """The 8-byte little-endian stamp at the head of every 512-byte sector."""
    out = []
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    for pos in range(0, len(data), 512):
        out.append(int.from_bytes(data[pos : pos + 8], "little"))
    return out


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory on tmpfs (/dev/shm) when there is one: file-target
    tests then run at memory speed instead of the CI disk's."""
    import shutil
    import tempfile

    if not Path("/dev/shm").is_dir() or not os.access("/dev/shm", os.W_OK):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="probetop-test-", dir="/dev/shm"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# ----------------------------------------------------------------- layered targets

IMAGE_BYTES = 32 * 1024 * 1024


def _tool(name: str) -> str:
    # sbin too: Debian installs mkfs.* and losetup there, off a user's PATH
    path = shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if path is None:
        pytest.skip(f"{name} is not installed (util-linux / e2fsprogs / dmsetup)")
    return path


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def _mkfs_ext4(target: str | Path) -> None:
    _run(_tool("mkfs.ext4"), "-q", "-F", str(target))


class Layers:
    """Builds loop devices, mounts, swap and dm targets; undoes all of it in reverse."""

    def __init__(self, stack: contextlib.ExitStack, workdir: Path) -> None:
        self.stack = stack
        self.workdir = workdir

    def image(self, size: int = IMAGE_BYTES) -> Path:
        path = Path("/dev/shm") / f"probetop-blockdev-{uuid.uuid4().hex}.img"
        with open(path, "wb") as f:
            f.truncate(size)
        self.stack.callback(path.unlink, missing_ok=True)
        return path

    def loop(self, image: Path, partscan: bool = False, read_only: bool = False) -> str:
        args = ["losetup", "-f", "--show", *(["-P"] if partscan else [])]
        args += [*(["-r"] if read_only else []), str(image)]
        dev = _run(*args)
        self.stack.callback(subprocess.run, ["losetup", "-d", dev], check=False)
        return dev

    def mount(self, dev: str, options: str | None = None) -> Path:
        point = self.workdir / f"mnt-{uuid.uuid4().hex[:8]}"
        point.mkdir()
        _run("mount", *(["-o", options] if options else []), dev, str(point))
        self.stack.callback(subprocess.run, ["umount", "-l", str(point)], check=False)
        return point

    def tmpfs(self, size: str = "16m", options: str = "") -> Path:
        """A small tmpfs of its own: filling it fills nothing else."""
        need_root()
        point = self.workdir / f"tmpfs-{uuid.uuid4().hex[:8]}"
        point.mkdir()
        opts = f"size={size}" + (f",{options}" if options else "")
        _run("mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point))
        self.stack.callback(subprocess.run, ["umount", "-l", str(point)], check=False)
        return point

    def ext4_mount(self, size: int = IMAGE_BYTES) -> tuple[Path, str, Path]:
        """(backing image, loop device, mount point) of a mounted ext4 loop."""
        need_root()
        image = self.image(size)
        dev = self.loop(image)
        _mkfs_ext4(dev)
        return image, dev, self.mount(dev)

    def swapon(self, dev: str) -> None:
        _run(_tool("mkswap"), dev)
        _run(_tool("swapon"), dev)
        self.stack.callback(subprocess.run, ["swapoff", dev], check=False)

    def swapfile(self, directory: Path, size: int = 8 << 20) -> Path:
        """An active swap file (no holes: written, not truncated) in ``directory``."""
        path = directory / "swapfile"
        with open(path, "wb") as f:
            f.write(b"\0" * size)
        path.chmod(0o600)
        _run(_tool("mkswap"), str(path))
        proc = subprocess.run(["swapon", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"swapon of a file failed here: {proc.stderr.strip()}")
        self.stack.callback(subprocess.run, ["swapoff", str(path)], check=False)
        return path

    def dm_linear(self, dev: str, sectors: int) -> str:
        name = f"probetop-test-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            [_tool("dmsetup"), "create", name],
            input=f"0 {sectors} linear {dev} 0\n",
            check=True,
            capture_output=True,
            text=True,
        )
        self.stack.callback(subprocess.run, ["dmsetup", "remove", "--retry", name], check=False)
        return name


@pytest.fixture
def layers(tmp_path: Path) -> Iterator[Layers]:
    with contextlib.ExitStack() as stack:
        yield Layers(stack, tmp_path)


# ----------------------------------------------------------------- another user

NOBODY = 65534


def nobody_env(**extra: str) -> dict[str, str]:
    """What a service account has: no home, no XDG directories."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def as_nobody(
    args: list[str], timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """probetop as user nobody (setpriv drops every privilege)."""
    need_root()
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed (util-linux)")
    proc = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *PROBETOP, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
        env=env if env is not None else nobody_env(),
    )
    if (
        "No module named" in proc.stderr
        or "error while loading shared libraries" in proc.stderr
        or (proc.returncode == 126 and "Permission denied" in proc.stderr)
    ):
        # 126: setpriv could not execute the interpreter (a venv whose python
        # links into a private home, such as pyenv's under /root, mode 0700).
        pytest.skip("this Python or its venv is not readable by nobody")
    return proc


def summary_of(stdout: str) -> dict:
    """probetop's own summary of a --json report: under "probetop" in iops's
    (the document fio writes), the document itself for the warm-up."""
    import json

    doc = json.loads(stdout)
    return doc.get("probetop", doc)
