"""What a disk target is: block device or regular file, its size and identity.

Contract: ``identify(path)`` returns a ``DeviceIdentity`` (kind, size, the
identity the kernel shows: ``/sys/class/block/X/{dev,size}``,
``serial``/``wwid``/``device/{serial,wwid,model}``, ``loop/backing_file``) or
raises TargetProbeError with what to do for anything probetop cannot measure
(missing, directory, character device, FIFO, no read access). Pure reads of
kernel state, no external commands.

Its neighbours: ``sysfs`` (the sysfs tree), ``mounts`` (which mount and disk
hold a path), ``refusals`` (why a write must be refused), ``signatures``
(partition tables and filesystems in the first bytes). docs/disk-safety.md.
"""

from __future__ import annotations

# grp and pwd at import, not when a refusal is worded: a process that has
# dropped its privileges may no longer read the interpreter's extension modules.
import grp
import os
import pwd
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk import mounts, sysfs


@dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """What a target is. ``dev`` is the block device's ``MAJ:MIN`` (None for a
    regular file); ``serial``/``wwn``/``model`` are None when the kernel does not
    show them (loop devices, most VMs); ``backing_file`` is set for loop devices.
    For a regular file ``logical_block_size`` is that of the disk holding it when
    known."""

    path: str
    real_path: str
    kind: str  # "block" or "file"
    size_bytes: int
    dev: str | None
    serial: str | None
    wwn: str | None
    model: str | None
    logical_block_size: int | None
    backing_file: str | None = None
    name: str | None = None  # kernel name under /sys/class/block ("loop0", "vda1")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def vpd_unit_serial(page: bytes) -> str | None:
    """The serial number in a SCSI VPD page 0x80 (Unit Serial Number): a 4-byte
    header whose bytes 2-3 give the length, then ASCII padded with spaces."""
    if len(page) < 4 or page[1] != 0x80:
        return None
    length = int.from_bytes(page[2:4], "big")
    text = page[4 : 4 + length].decode("ascii", errors="replace").strip(" \0")
    return text or None


def _vpd_serial(path: Path) -> str | None:
    """SCSI/SATA disks show their serial only in the binary VPD page 0x80."""
    try:
        return vpd_unit_serial(path.read_bytes())
    except OSError:
        return None


def _stat_target(path: str | os.PathLike[str]) -> os.stat_result:
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise TargetProbeError(
            f"{p}: no such file or device. Give an existing block device or regular file "
            "(a file target is created at --size for write jobs)."
        ) from None
    except PermissionError:
        raise TargetProbeError(_no_search_access(p)) from None
    except OSError as exc:
        raise TargetProbeError(f"{p}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise TargetProbeError(
            f"{p} is a directory. Give a block device (/dev/...) or a regular file inside it."
        )
    if stat.S_ISCHR(st.st_mode):
        raise TargetProbeError(
            f"{p} is a character device, not a block device: probetop measures block "
            "devices and regular files (for NVMe use /dev/nvmeXnY, not /dev/nvmeX)."
        )
    if not (stat.S_ISBLK(st.st_mode) or stat.S_ISREG(st.st_mode)):
        kind = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "neither a block device nor a regular file"
        )
        raise TargetProbeError(f"{p} is {kind}: probetop measures block devices and regular files.")
    return st


def _no_read_access(p: str, st: os.stat_result) -> str:
    """Permission denied, with who may read ``p`` and how this user can: a
    group to join where the group may read it, else its owner or an ACL
    (a 0600 root:root device is not opened by joining 'disk')."""
    owner, group = _user_name(st.st_uid), _group_name(st.st_gid)
    mode = stat.S_IMODE(st.st_mode)
    kind = "block device" if stat.S_ISBLK(st.st_mode) else "file"
    facts = (
        f"{p}: permission denied (no read access to this {kind}: {owner}:{group}, mode {mode:04o})."
    )
    if mode & stat.S_IRGRP and st.st_gid != 0:
        how = (
            f"Run as root (sudo), or join group '{group}': sudo usermod -aG {group} $USER, "
            "then log in again."
        )
    else:
        sudo = "sudo" if st.st_uid == 0 else f"sudo -u {owner}"
        how = (
            f"Run as {owner} ({sudo}) or give your user read access: sudo setfacl -m u:$USER:r {p}"
        )
    return f"{facts} {how}"


def _no_search_access(p: str) -> str:
    """Permission denied by stat: the first directory on the way this user
    may not enter, whose it is, and what to do."""
    for parent in reversed(Path(os.path.abspath(p)).parents):
        if not os.access(parent, os.X_OK):
            try:
                st = os.stat(parent)
            except OSError:
                break
            owner, group = _user_name(st.st_uid), _group_name(st.st_gid)
            return (
                f"{p}: permission denied (your user may not enter {parent}: {owner}:{group}, "
                f"mode {stat.S_IMODE(st.st_mode):04o}). Run as {owner} or choose a target "
                "outside it."
            )
    return f"{p}: permission denied. Run as root or give your user access to it."


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def identify(path: str | os.PathLike[str], *, check_read: bool = True) -> DeviceIdentity:
    """Identify a target; raise TargetProbeError for anything probetop cannot measure.

    Readability is checked with ``os.access`` so that "permission denied" is
    reported here rather than by the first I/O; ``check_read=False`` skips
    it for callers that only read the kernel's state about the target (stat,
    sysfs), as the write refusals do.
    """
    p = os.fspath(path)
    st = _stat_target(p)
    real = os.path.realpath(p)
    if check_read and not os.access(p, os.R_OK):
        raise TargetProbeError(_no_read_access(p, st))
    if stat.S_ISREG(st.st_mode):
        holder = mounts.backing_device(p)
        lbs = (
            sysfs.read_int(sysfs.SYS_CLASS_BLOCK / holder / "queue" / "logical_block_size")
            if holder
            else None
        )
        return DeviceIdentity(
            path=p,
            real_path=real,
            kind="file",
            size_bytes=st.st_size,
            dev=None,
            serial=None,
            wwn=None,
            model=None,
            logical_block_size=lbs,
        )
    majmin = sysfs.majmin_of(st.st_rdev)
    sysdir = sysfs.sysfs_dir(majmin)
    if sysdir is None:
        raise TargetProbeError(
            f"{p}: block device {majmin} is not known to the kernel "
            f"(no {sysfs.SYS_DEV_BLOCK}/{majmin})."
        )
    disk = sysfs.whole_disk_dir(sysdir)
    sectors = sysfs.read_int(sysdir / "size")
    # Serial/WWN/model live on the whole disk; a partition inherits its disk's.
    where = [disk, disk / "device"]
    return DeviceIdentity(
        path=p,
        real_path=real,
        kind="block",
        size_bytes=(sectors or 0) * 512,  # sysfs "size" is always in 512-byte units
        dev=majmin,
        serial=sysfs.first_attr(where, ("serial",)) or _vpd_serial(disk / "device" / "vpd_pg80"),
        wwn=sysfs.first_attr(where, ("wwid", "wwn")),
        model=sysfs.first_attr([disk / "device"], ("model",)),
        logical_block_size=sysfs.read_int(disk / "queue" / "logical_block_size"),
        backing_file=sysfs.read_text(disk / "loop" / "backing_file"),
        name=sysdir.name,
    )
