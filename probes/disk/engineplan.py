"""What an ``Engine`` runs, and what its plan implies for the target.

Contract: ``EnginePlan`` is the typed description of a run (target, block
size, jobs, depth, mix, work list, engine; each job's files and which of
them the next I/O goes to, fio's --nrfiles and --file_service_type).
``open_target`` opens one descriptor on a job's file with the plan's flags, refusing anything but a
regular file or a block device without blocking on it; ``cut_chunks`` cuts a
work list into block-aligned pieces the workers take in turn.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class EnginePlan:
    """What to run. ``extents`` are [start, end) byte ranges: for time-based
    runs (``wrap``) the first is the area I/O goes to; otherwise the work list."""

    path: str
    bs: int
    extents: list[tuple[int, int]]
    jobs: int = 1
    iodepth: int = 1
    readpct: int = 100  # share of reads in percent: 100 read, 0 write
    seq: bool = False
    wrap: bool = True
    direct: bool = True
    sync: bool = False
    stamp: bool = False
    verify: bool = False
    stop_on_error: bool = False
    chunk_bytes: int = 0  # 0: split the work evenly, a few chunks per job
    rate_iops: int = 0  # per job, as fio's --rate_iops; 0 = as fast as possible
    seed: int = 0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF
    exclusive: bool = False  # O_EXCL on the first descriptor (block device writes)
    ioengine: str = ""  # psync, libaio or io_uring; "": psync at iodepth 1, else libaio
    # Each job's files (fio's --directory, --nrfiles); (): every job on ``path``.
    files: tuple[tuple[str, ...], ...] = ()
    # Per job, the end of each of its files' I/O area (fio's split of --size,
    # whole blocks; an existing file's own size); (): the area's end (``extents[0]``).
    file_ends: tuple[tuple[int, ...], ...] = ()
    file_service: str = "roundrobin"  # fio's --file_service_type: roundrobin, sequential, random
    file_service_nr: int = 1  # I/Os before the next file (roundrobin, random)
    cpus_allowed: frozenset[int] = frozenset()  # fio's --cpus_allowed; empty: no pinning
    # A blockmap.BlockMap the loops fill (every I/O: data, zeros or failed;
    # reads counted in C_ZERO_BYTES when all zero); None: not looked at.
    blockmap: Any = None

    def job_files(self, job: int) -> tuple[str, ...]:
        """The files (or the device) job ``job`` does its I/O on."""
        return self.files[job] if self.files else (self.path,)

    def file_end(self, job: int, file: int) -> int:
        """Where the I/O area of job ``job``'s file ``file`` ends."""
        return self.file_ends[job][file] if self.file_ends else self.extents[0][1]

    @property
    def classify(self) -> bool:
        return self.blockmap is not None

    @property
    def engine(self) -> str:
        """The engine the loops run (fio's name)."""
        return self.ioengine or ("psync" if self.iodepth == 1 else "libaio")

    @property
    def writes(self) -> bool:
        return self.readpct < 100


def open_target(plan: EnginePlan, *, exclusive: bool, job: int = 0, file: int = 0) -> int:
    """One descriptor on job ``job``'s file ``file``. Opened non-blocking and checked,
    so a path swapped for a FIFO fails instead of hanging; O_EXCL when ``exclusive``."""
    flags = _open_flags(plan) | os.O_NONBLOCK | (os.O_EXCL if exclusive else 0)
    path = plan.job_files(job)[file]
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISBLK(st.st_mode)):
            raise OSError(errno.EINVAL, f"{path} is not a regular file or block device")
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fl & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_flags(plan: EnginePlan) -> int:
    flags = os.O_RDWR if plan.writes else os.O_RDONLY
    if plan.direct:
        flags |= os.O_DIRECT
    if plan.sync:
        flags |= os.O_SYNC
    return flags | getattr(os, "O_CLOEXEC", 0)


def cut_chunks(extents: Sequence[tuple[int, int]], size: int, bs: int) -> list[tuple[int, int]]:
    """``extents`` ([start, end) byte ranges) cut into pieces of at most ``size``
    bytes, in order; every cut falls on a multiple of ``bs`` from its extent's
    start (a piece is never less than one block unless its extent is)."""
    out = []
    for start, end in extents:
        pos = start
        while pos < end:
            stop = min(end, pos + size)
            # Keep chunk boundaries on block boundaries (relative to the extent).
            if stop < end:
                stop = start + ((stop - start) // bs) * bs or min(end, start + bs)
            out.append((pos, stop))
            pos = stop
    return out
