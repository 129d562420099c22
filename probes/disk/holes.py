"""Where a target has never been written, as its filesystem knows it.

Contract: ``find_holes(path, start, end)`` returns a ``Holes`` (the hole
extents of [start, end) in the target's own byte offsets, and where they
were read) or None when nothing below the target can say:

- a regular file: its holes (``lseek`` SEEK_HOLE / SEEK_DATA; a hole or an
  unwritten, preallocated extent has no data: it reads as zeros);
- a loop device: the holes of its backing file, shifted by the loop's
  ``offset`` (sysfs ``loop/backing_file``, ``loop/offset``);
- anything else (a real disk, a cloud volume, device-mapper): None. There,
  only what a read returns tells (all-zero blocks, ``blockmap``).

A filesystem without SEEK_HOLE reports the whole file as data (the kernel's
generic fallback): no holes, which is never wrong for "never written".
Read-only: never opens anything for writing.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from probetop.probes.disk import sysfs


@dataclass(frozen=True)
class Holes:
    """Hole extents [start, end) in target offsets; ``source``: what was asked."""

    source: str
    extents: list[tuple[int, int]]

    @property
    def bytes(self) -> int:
        return sum(b - a for a, b in self.extents)


def find_holes(path: str, start: int, end: int) -> Holes | None:
    """See the module docstring. Never raises for a target it cannot map."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        extents = _file_holes(path, start, end, shift=0)
        return Holes(f"SEEK_HOLE on {path}", extents) if extents is not None else None
    if stat.S_ISBLK(st.st_mode):
        backing = _loop_backing(st.st_rdev)
        if backing is None:
            return None
        file, offset = backing
        extents = _file_holes(file, start, end, shift=offset)
        if extents is None:
            return None
        return Holes(f"SEEK_HOLE on {file}, the loop device's backing file", extents)
    return None


def _loop_backing(rdev: int) -> tuple[str, int] | None:
    """(backing file, offset) of a loop device, or None."""
    sysdir = sysfs.sysfs_dir(sysfs.majmin_of(rdev))
    if sysdir is None:
        return None
    file = sysfs.read_text(sysdir / "loop" / "backing_file")
    if not file or file.endswith("(deleted)") or not Path(file).is_file():
        return None
    return file, sysfs.read_int(sysdir / "loop" / "offset") or 0


def _file_holes(path: str, start: int, end: int, *, shift: int) -> list[tuple[int, int]] | None:
    """Holes of ``path`` within [start + shift, end + shift), given back in
    target offsets (minus ``shift``); past the file's end counts as a hole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        lo, hi = start + shift, end + shift
        out: list[tuple[int, int]] = []
        pos = lo
        while pos < hi:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data after pos: the rest is a hole
                    data = hi
                else:
                    return None
            data = min(data, hi)
            if data > pos:
                out.append((pos - shift, data - shift))
            if data >= hi:
                break
            try:
                hole = os.lseek(fd, data, os.SEEK_HOLE)
            except OSError:
                return None
            pos = max(hole, data + 1)
        return out
    finally:
        os.close(fd)
