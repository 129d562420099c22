"""What shows a close held by writeback is progressing (probes/disk/writeback.py).

Real targets: a file on tmpfs (no block device: nothing counts its
writeback), and a loop device over a file (its sectors-written counter
moves as its writeback reaches it). A close held 30 s on tmpfs, NFS or
FUSE used to be called "the device stopped answering", which no counter
there could tell; now the message says what is known.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from disk_fixtures import need_root
from probetop.probes.disk.writeback import close_held_message, writeback_progress


def test_on_tmpfs_a_long_close_is_not_called_a_device_that_stopped_answering():
    fd, path = tempfile.mkstemp(prefix="hung-", dir="/dev/shm")
    os.close(fd)
    try:
        progress = writeback_progress(path)
        assert progress.read is None
        assert "tmpfs" in progress.what, progress.what
        said = close_held_message(path, progress, 30)
        assert "stopped answering" not in said, said
        assert "its close has not returned in 30 s" in said
        assert "may still be progressing" in said, said
    finally:
        os.unlink(path)


def test_on_a_loop_device_its_sectors_written_show_the_writeback():
    need_root()
    fd, backing = tempfile.mkstemp(prefix="hung-", suffix=".img", dir="/dev/shm")
    os.ftruncate(fd, 16 << 20)
    os.close(fd)
    proc = subprocess.run(["losetup", "--find", "--show", backing], capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(backing)
        pytest.skip(f"losetup failed: {proc.stderr.strip()}")
    dev = proc.stdout.strip()
    try:
        progress = writeback_progress(dev)
        assert progress.read is not None, progress.what
        before = progress.read()
        out = os.open(dev, os.O_WRONLY)
        try:
            os.write(out, b"\x5a" * (1 << 20))  # through the page cache
            os.fsync(out)  # its writeback: the device's counter moves
        finally:
            os.close(out)
        assert progress.read() != before
        said = close_held_message(dev, progress, 5)
        assert said.startswith(f"{dev}: the device stopped answering: its close waits"), said
        assert "no progress (sectors written on its device) for 5 s" in said
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
        Path(backing).unlink(missing_ok=True)
