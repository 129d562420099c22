"""What shows that the writeback of a target's writes gets somewhere, and
what a close it holds says.

Contract:
- ``sectors_written(path)``: a reading of the sectors written on ``path``'s
  block device (itself, or the one under its file system), or None.
- ``writeback_progress(path)`` -> ``WritebackProgress``: that reading, else
  the WRITE RPCs its NFS mount completed (/proc/self/mountstats), else none
  (tmpfs, FUSE: nothing the kernel counts per file system).
- ``close_held_message(path, progress, wait_s)``: what a run whose last
  close outlived its wait says (``workers.Engine.close_held``): "stopped
  answering" only where a counter showed no progress for ``wait_s``; where
  none exists, what is known (the close has not returned, and may still be
  progressing).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from probetop.probes.disk.mounts import filesystem_of
from probetop.probes.disk.nfsstats import NFS_TYPES, read_mount


def sectors_written(path: str) -> Callable[[], int] | None:
    """A reading of the sectors written on ``path``'s block device (itself, or
    the one under its file system), or None where there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    counters = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat"
    if not os.path.exists(counters):
        return None

    def read() -> int:
        try:
            with open(counters) as f:
                return int(f.read().split()[6])  # sectors written (Documentation/block/stat)
        except (OSError, ValueError, IndexError):
            return -1

    return read


@dataclass(frozen=True, slots=True)
class WritebackProgress:
    """What shows that the writeback of ``path`` gets somewhere: ``read()``
    changes while it does; ``what`` says what it counts; ``stalled`` what
    a close held ``wait_s`` without a change means. ``read`` is None where
    nothing shows it (``what`` then says why)."""

    read: Callable[[], object] | None
    what: str
    stalled: str


def writeback_progress(path: str) -> WritebackProgress:
    """See ``WritebackProgress``: the sectors written on ``path``'s block
    device, else the WRITE RPCs its NFS mount completed (mountstats), else
    nothing."""
    sectors = sectors_written(path)
    if sectors is not None:
        return WritebackProgress(sectors, "sectors written on its device",
                                 "the device stopped answering")  # fmt: skip
    mount = filesystem_of(path)
    if mount is not None and mount.fstype in NFS_TYPES:
        point = mount.point

        def writes() -> object:
            stats = read_mount(point)
            op = stats.ops.get("WRITE") if stats is not None else None
            return None if op is None else (op.ops, op.errors)

        return WritebackProgress(writes, "WRITEs its NFS mount completed",
                                 "the NFS server stopped answering")  # fmt: skip
    fstype = mount.fstype if mount is not None else "unknown"
    return WritebackProgress(None, f"nothing shows its progress ({fstype}: no block device, "
                             "not NFS)", "")  # fmt: skip


def close_held_message(path: str, progress: WritebackProgress, wait_s: float) -> str:
    """What a run whose last close outlived its wait says (``Engine.close_held``):
    "stopped answering" only where a counter showed no progress."""
    if progress.read is not None:
        return (
            f"{path}: {progress.stalled}: its close waits for the writeback of what was "
            f"written, and no progress ({progress.what}) for {wait_s:g} s (the kernel "
            "may hold this process until it completes or fails)"
        )
    return (
        f"{path}: its close has not returned in {wait_s:g} s: it waits for the writeback "
        f"of what was written, which may still be progressing: {progress.what} (the "
        "kernel may hold this process until it completes or fails)"
    )
