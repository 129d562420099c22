"""The rules that refuse to write to a device or file in use, whatever the flags.

Contract: ``write_refusals(path)`` lists every reason (mounted, holders, active
swap, holds ``/``, backs or is backed by a loop device in use, claimed by the
kernel: an ``O_EXCL`` open fails with EBUSY, which also catches mounts in
other namespaces); [] means allowed. A regular file is refused when it backs
a loop device (with that loop device's own reasons) or is an active swap
file. ``read_only_device`` and ``lock_devices`` give a device's ``ro`` flag and
the device numbers a lock on it covers. Pure reads of kernel state, no
external commands. See docs/disk-safety.md for the rules and why each exists.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk import mounts, sysfs
from probetop.probes.disk.blockdev import DeviceIdentity, identify

SWAPS = Path("/proc/swaps")


def _family(sysdir: Path) -> dict[str, str]:
    """MAJ:MIN -> kernel name for the device and, for a whole disk, its partitions:
    everything a write to this device would overwrite."""
    members = {}
    for d in [sysdir, *sysfs.partitions(sysdir)]:
        mm = sysfs.dev_of(d)
        if mm:
            members[mm] = d.name
    return members


def _root_devices() -> dict[str, str]:
    """MAJ:MIN -> name of every block device under the root filesystem: the device
    mounted on /, its whole disk, and recursively the slaves of dm/md devices."""
    start: set[str] = set()
    for mm, point, source in mounts.mount_entries():
        if point == "/":
            start.add(mm)
            src = mounts.source_majmin(source)
            if src:
                start.add(src)
    result: dict[str, str] = {}
    todo = [d for d in (sysfs.sysfs_dir(mm) for mm in start) if d is not None]
    while todo:
        d = todo.pop()
        devno = sysfs.dev_of(d)
        if devno is None or devno in result:
            continue
        result[devno] = d.name
        if sysfs.is_partition(d):
            todo.append(d.parent)
        todo.extend(sysfs.slaves(d))
    return result


def _swap_paths() -> list[str]:
    """The path of every active swap area in /proc/swaps (device or file)."""
    try:
        lines = SWAPS.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    return [mounts.unescape(fields[0]) for fields in map(str.split, lines) if fields]


def _swap_devices() -> list[str]:
    """MAJ:MIN of every block device in /proc/swaps (swap files are not devices)."""
    return [mm for mm in map(mounts.source_majmin, _swap_paths()) if mm]


def _loops_backed_by(family: dict[str, str]) -> list[str]:
    """Loop devices whose backing file is one of these block devices (losetup over
    a disk makes no holder link, so it is found through loop/backing_file)."""
    found = []
    for backing in sorted(sysfs.SYS_CLASS_BLOCK.glob("loop*/loop/backing_file")):
        mm = mounts.source_majmin(sysfs.read_text(backing) or "")
        if mm in family:
            found.append(backing.parent.parent.name)
    return found


_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64_SIZE = 232  # struct loop_info64: lo_device at 0, lo_inode at 8 (u64)


def _loop_backing_inode(name: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of a loop device's backing file: from the kernel
    (LOOP_GET_STATUS64, exact even after a rename or unlink) when /dev/NAME
    can be opened, else by stat()ing ``loop/backing_file`` (None if gone)."""
    import fcntl

    node = f"/dev/{name}"
    try:
        fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            st = os.fstat(fd)
            mm = sysfs.dev_of(sysfs.SYS_CLASS_BLOCK / name)
            if stat.S_ISBLK(st.st_mode) and sysfs.majmin_of(st.st_rdev) == mm:
                info = fcntl.ioctl(fd, _LOOP_GET_STATUS64, bytes(_LOOP_INFO64_SIZE))
                return int.from_bytes(info[0:8], "little"), int.from_bytes(info[8:16], "little")
        except OSError:
            pass
        finally:
            os.close(fd)
    text = sysfs.read_text(sysfs.SYS_CLASS_BLOCK / name / "loop" / "backing_file")
    if not text:
        return None
    if text.endswith(" (deleted)"):
        return None
    try:
        st = os.stat(text)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def loops_over_file(path: str | os.PathLike[str]) -> list[str]:
    """Loop devices (kernel names) whose backing file is the regular file ``path``."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(st.st_mode):
        return []
    found = []
    for backing in sorted(sysfs.SYS_CLASS_BLOCK.glob("loop*/loop/backing_file")):
        name = backing.parent.parent.name
        if _loop_backing_inode(name) == (st.st_dev, st.st_ino):
            found.append(name)
    return found


def _swap_files() -> list[tuple[int, int]]:
    """(st_dev, st_ino) of every regular file in /proc/swaps (swap files)."""
    found = []
    for path in _swap_paths():
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((st.st_dev, st.st_ino))
    return found


def _file_refusals(ident: DeviceIdentity) -> list[str]:
    """Why a regular file must not be written: it backs a loop device (the
    loop's own refusals are listed: mounted, held, swap ...) or it is an
    active swap file."""
    label = ident.path
    reasons: list[str] = []
    try:
        st = os.stat(ident.path)
    except OSError as exc:
        return [f"{label}: {exc.strerror}"]
    if (st.st_dev, st.st_ino) in _swap_files():
        reasons.append(f"{label}: it is an active swap file (swapoff {label} first)")
    for name in loops_over_file(ident.path):
        below = [f"{label}: loop device {r}" for r in _loop_refusals(name)]
        reasons += below or [
            f"{label}: it is the backing file of loop device {name} "
            f"(detach it with losetup -d /dev/{name} first)"
        ]
    return reasons


def refusal_message(reasons: list[str]) -> str:
    """One message for ``write_refusals``' reasons: each says what holds the
    target and what to do; no flag overrides them."""
    return "refusing to write (no flag overrides this): " + "; ".join(reasons)


def _loop_refusals(name: str) -> list[str]:
    """The refusals of loop device ``name`` as a write target (empty when idle)."""
    node = f"/dev/{name}"
    try:
        if sysfs.majmin_of(os.stat(node).st_rdev) != sysfs.dev_of(sysfs.SYS_CLASS_BLOCK / name):
            node = ""
    except OSError:
        node = ""
    if not node:  # no device node we can name: judge by sysfs alone
        sysdir = sysfs.SYS_CLASS_BLOCK / name
        held = sysfs.holders(sysdir.resolve()) if sysdir.exists() else []
        return [f"/dev/{name}: held by {', '.join(held)}"] if held else []
    try:
        return _write_refusals(node, via_loop=None)
    except TargetProbeError:
        return []


def read_only_device(path: str | os.PathLike[str]) -> bool:
    """True for a block device the kernel marks read-only (``ro`` in sysfs:
    ``blockdev --setro``, a write-protected medium, a read-only loop device)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISBLK(st.st_mode):
        return False
    sysdir = sysfs.sysfs_dir(sysfs.majmin_of(st.st_rdev))
    return sysdir is not None and sysfs.read_int(sysdir / "ro") == 1


def lock_devices(path: str | os.PathLike[str]) -> tuple[str, str | None, str | None]:
    """For a block device: (its MAJ:MIN, its whole disk's MAJ:MIN when it is a
    partition, its loop backing file or device). Raises TargetProbeError.
    stat and sysfs only, as the refusals: the lock is taken before any open."""
    ident = identify(path, check_read=False)
    if ident.kind != "block" or ident.dev is None:
        raise TargetProbeError(f"{ident.path} is not a block device")
    sysdir = sysfs.sysfs_dir(ident.dev)
    disk = (
        sysfs.dev_of(sysdir.parent) if sysdir is not None and sysfs.is_partition(sysdir) else None
    )
    return ident.dev, disk, ident.backing_file


def _exclusively_claimed(path: str) -> bool:
    """True if the kernel refuses an exclusive open (EBUSY): mounted, held or swap,
    including in mount namespaces we cannot see. False if it could be opened or
    we lack permission to try."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno == errno.EBUSY
    os.close(fd)
    return False


def write_refusals(path: str | os.PathLike[str]) -> list[str]:
    """Every reason to refuse writing to ``path`` whatever the flags; [] = allowed.

    A regular file is refused when it backs a loop device (with that loop
    device's own reasons: mounted, held, swap ...) or is an active swap file.
    Raises TargetProbeError like ``identify`` for a bad target; a target the
    user may not read is still checked (its refusals come from stat and sysfs).
    """
    return _write_refusals(path, via_loop=None)


def _write_refusals(path: str | os.PathLike[str], via_loop: str | None) -> list[str]:
    """write_refusals; ``via_loop`` is the loop device being checked through this
    one (its own link to this device is not a reason)."""
    # stat and sysfs only: a user who may not open the system's disk is told
    # it holds /, not "run as root" (which would only meet this refusal).
    ident = identify(path, check_read=False)
    if ident.kind == "file":
        return _file_refusals(ident)
    if ident.dev is None:
        return []
    sysdir = sysfs.sysfs_dir(ident.dev)
    if sysdir is None:  # identify() found it a moment ago; it has just gone
        return [f"{ident.path}: the device disappeared while being checked"]
    family = _family(sysdir)
    label = ident.path
    reasons: list[str] = []

    # The running system's own disk first: "umount it first" is no advice
    # there (the system cannot unmount its root); another device is.
    roots = _root_devices()
    root_hits = sorted({family[mm] for mm in family if mm in roots})
    holds_root = bool(root_hits) or ident.dev in roots
    if holds_root:
        reasons.append(
            f"{label}: it holds this system's root filesystem / (via "
            f"{', '.join(root_hits or [sysdir.name])}): writing it would destroy the running "
            "system. Choose another device: `lsblk -o NAME,SIZE,TYPE,FSTYPE,MOUNTPOINTS` "
            "lists them, and a fresh volume shows no FSTYPE and no mount point"
        )

    for mm, point, source in mounts.mount_entries():
        hit: str | None = family.get(mm) or family.get(mounts.source_majmin(source) or "")
        if hit:
            what = "it is" if hit == sysdir.name else f"its partition {hit} is"
            advice = "" if holds_root else " (umount it first)"
            reasons.append(f"{label}: {what} mounted on {point}{advice}")

    for name in family.values():
        for holder in sysfs.holders(sysdir if name == sysdir.name else sysdir / name):
            what = "it" if name == sysdir.name else f"its partition {name}"
            reasons.append(
                f"{label}: {what} is held by {sysfs.holder_label(holder)} "
                "(LVM, RAID, device-mapper or similar is using it; remove that first)"
            )

    for mm in _swap_devices():
        if mm in family:
            name = family[mm]
            what = "it is" if name == sysdir.name else f"its partition {name} is"
            reasons.append(f"{label}: {what} active swap (swapoff it first)")

    for loop_name in _loops_backed_by(family):
        if loop_name == via_loop:
            continue
        reasons.append(
            f"{label}: it is the backing device of loop device {loop_name} "
            f"(detach it with losetup -d /dev/{loop_name} first)"
        )

    backing = ident.backing_file or ""
    if backing.startswith("/") and mounts.source_majmin(backing):
        # A loop device over another block device writes that device: its rules apply.
        below = _write_refusals(backing, via_loop=sysdir.name)
        reasons += [f"{label}: backing device {r}" for r in below]

    if not reasons and _exclusively_claimed(ident.path):
        reasons.append(
            f"{label}: the kernel reports it busy (exclusive open failed with EBUSY): it is "
            "mounted in another mount namespace or claimed by another driver"
        )
    return reasons
