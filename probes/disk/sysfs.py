"""Reading the kernel's block-device tree in sysfs (/sys/class/block, /sys/dev/block).

Contract: pure reads, never raising for a missing or unreadable attribute
(None or an empty list instead: devices come and go while we look). A
device is named by its ``MAJ:MIN`` string or its resolved sysfs directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SYS_CLASS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")


def read_text(path: Path) -> str | None:
    """A sysfs attribute stripped of whitespace; None when absent, unreadable or empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def majmin_of(devno: int) -> str:
    return f"{os.major(devno)}:{os.minor(devno)}"


def sysfs_dir(majmin: str) -> Path | None:
    """The resolved sysfs directory of a block device number, or None."""
    link = SYS_DEV_BLOCK / majmin
    try:
        return link.resolve(strict=True)
    except OSError:
        return None


def is_partition(sysdir: Path) -> bool:
    return (sysdir / "partition").exists()


def whole_disk_dir(sysdir: Path) -> Path:
    """The whole disk a partition belongs to (the partition's parent directory)."""
    return sysdir.parent if is_partition(sysdir) else sysdir


def partitions(sysdir: Path) -> list[Path]:
    """Partition directories of a whole disk (children that have a ``partition`` file)."""
    if is_partition(sysdir):
        return []
    try:
        children = list(sysdir.iterdir())
    except OSError:
        return []
    return sorted(c for c in children if (c / "partition").exists())


def dev_of(sysdir: Path) -> str | None:
    return read_text(sysdir / "dev")


def holders(sysdir: Path) -> list[str]:
    try:
        return sorted(p.name for p in (sysdir / "holders").iterdir())
    except OSError:
        return []


def slaves(sysdir: Path) -> list[Path]:
    """The devices a stacked device (dm, md) is built on, resolved."""
    try:
        return [p.resolve() for p in (sysdir / "slaves").iterdir()]
    except OSError:
        return []


def holder_label(name: str) -> str:
    """ "dm-0 (vg-lv)" for device-mapper holders, the bare name otherwise."""
    dm_name = read_text(SYS_CLASS_BLOCK / name / "dm" / "name")
    md_level = read_text(SYS_CLASS_BLOCK / name / "md" / "level")
    if dm_name:
        return f"{name} (device-mapper {dm_name})"
    if md_level:
        return f"{name} (md {md_level})"
    return name


def first_attr(dirs: Iterable[Path], names: Iterable[str]) -> str | None:
    for d in dirs:
        for n in names:
            value = read_text(d / n)
            if value:
                return value
    return None
