"""Which mount and which disk hold a path (/proc/self/mountinfo, sysfs).

Contract: ``all_mounts()`` parses /proc/self/mountinfo (octal escapes undone);
``filesystem_of(path)`` is the mount holding a path (for ``core.mountinfo.PSEUDO_FILESYSTEMS``:
/proc, /sys ... are not storage); ``backing_device(path)`` is the kernel name of
the disk whose /proc/diskstats counters describe a path (None for tmpfs, NFS
...). Pure reads; a vanished path gives None, never an exception.
``existing_dir(path)`` is where to look for a path not made yet: the path
itself if it is a directory, else the directory that would hold it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from probetop.probes.core.mountinfo import unescape
from probetop.probes.disk import sysfs

MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of /proc/self/mountinfo."""

    majmin: str
    point: str
    fstype: str
    source: str
    read_only: bool


def existing_dir(path: str) -> str:
    """``path`` if it is a directory, else the directory that would hold it
    (a file about to be created lives on that directory's filesystem)."""
    if os.path.isdir(path):
        return path
    return os.path.dirname(os.path.abspath(path)) or "."


def all_mounts() -> Iterator[Mount]:
    """Every line of /proc/self/mountinfo, parsed."""
    try:
        text = MOUNTINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 7 or "-" not in fields:
            continue
        sep = fields.index("-")
        fstype = fields[sep + 1] if len(fields) > sep + 1 else ""
        source = fields[sep + 2] if len(fields) > sep + 2 else ""
        yield Mount(
            majmin=fields[2],
            point=unescape(fields[4]),
            fstype=fstype,
            source=unescape(source),
            read_only="ro" in fields[5].split(","),
        )


def mount_entries() -> Iterator[tuple[str, str, str]]:
    """(maj:min, mount point, source) for each line of /proc/self/mountinfo."""
    for m in all_mounts():
        yield m.majmin, m.point, m.source


def filesystem_of(path: str | os.PathLike[str]) -> Mount | None:
    """The mount holding ``path`` (the deepest mount point above it with its
    device number), or None when /proc/self/mountinfo does not show it."""
    p = os.fspath(path)
    try:
        devno = os.stat(p).st_dev
    except OSError:
        return None
    majmin = sysfs.majmin_of(devno)
    real = os.path.realpath(p)
    best: Mount | None = None
    for m in all_mounts():
        if m.majmin != majmin:
            continue
        inside = real == m.point or real.startswith(m.point.rstrip("/") + "/")
        if best is None or (inside and len(m.point) > len(best.point)):
            best = m
    return best


def source_majmin(source: str) -> str | None:
    """MAJ:MIN of a mount source such as /dev/vda1 (None if it is not a block device)."""
    if not source.startswith("/"):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    return sysfs.majmin_of(st.st_rdev) if stat.S_ISBLK(st.st_mode) else None


def fs_majmin(path: str) -> str | None:
    """MAJ:MIN of the block device holding the filesystem that holds ``path``.

    ``st_dev`` is the device for ext4/xfs; btrfs and others report an anonymous
    0:N number, so fall back to the source of the mount with that number.
    """
    try:
        devno = os.stat(path).st_dev
    except OSError:
        return None
    majmin = sysfs.majmin_of(devno)
    if sysfs.sysfs_dir(majmin) is not None:
        return majmin
    for mm, _point, source in mount_entries():
        if mm == majmin:
            src = source_majmin(source)
            if src is not None:
                return src
    return None


def backing_device(path: str | os.PathLike[str]) -> str | None:
    """Kernel name of the device whose /proc/diskstats counters describe ``path``.

    A block device: itself ("loop0", "vda1"). A regular file: the whole disk
    under /sys/block holding its filesystem ("vda" for a file on vda1); None for
    filesystems without a block device (tmpfs, NFS, overlay of those).
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError:
        return None
    if stat.S_ISBLK(st.st_mode):
        sysdir = sysfs.sysfs_dir(sysfs.majmin_of(st.st_rdev))
        return sysdir.name if sysdir else None
    majmin = fs_majmin(p)
    if majmin is None:
        return None
    sysdir = sysfs.sysfs_dir(majmin)
    return sysfs.whole_disk_dir(sysdir).name if sysdir else None
