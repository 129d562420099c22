"""Real disk targets for the IOPS and warm-up tests.

- ``loop_device(size)``: a context manager giving a loop device over a sparse
  file in /dev/shm (root only; skips otherwise), detached and removed on exit.
- ``loop_dev`` fixture: a 64 MiB one.
- ``kernel_io(name)``: (reads, sectors read, writes, sectors written) from
  /sys/block/NAME/stat, to check probe counts against the kernel's.
- ``run_cli(args)``: run probetop in a subprocess, return the CompletedProcess.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: loop devices")


@contextlib.contextmanager
def loop_device(size: int = 64 << 20, fill: bytes | None = None) -> Iterator[str]:
    """A loop device over a /dev/shm file of ``size`` bytes (optionally filled
    with one repeated byte); detached and removed afterwards."""
    need_root()
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
        proc = subprocess.run(
            ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
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


def run_cli(
    args: list[str], timeout: float = 120, **kw: object
) -> subprocess.CompletedProcess[str]:
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
