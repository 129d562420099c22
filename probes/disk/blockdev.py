"""Block-device identity and the rules that refuse to write to a device in use.

Pure reads of kernel state, no external commands:

- ``identify(path)``: what the target is (block device or regular file), its
  size and the identity the kernel shows (``/sys/class/block/X/{dev,size}``,
  ``serial``/``wwid``/``device/{serial,wwid,model}``, ``loop/backing_file``).
- ``write_refusals(path)``: every reason a write must be refused whatever the
  flags (mounted, holders, active swap, holds ``/``), from
  ``/proc/self/mountinfo``, ``/sys/class/block/X/holders``, ``/proc/swaps``
  and an exclusive open (``O_EXCL`` on a block device fails with EBUSY while
  the kernel has it claimed, which also catches mounts in other namespaces).
  A regular file is refused when it backs a loop device (listing that loop
  device's own reasons: mounted, swap, held ...) or is an active swap file.
- ``filesystem_of(path)``: the mount holding a path (type, mount point,
  read-only), for ``PSEUDO_FILESYSTEMS`` (/proc, /sys ...: not storage).
- ``read_only_device(path)``, ``lock_devices(path)``: a device's ``ro`` flag;
  the device numbers a lock on it covers (itself, its whole disk, its loop
  backing).
- ``data_signatures(path)``: partition tables and filesystem signatures found
  in the first 128 KiB; any hit means a write needs a typed confirmation.
- ``backing_device(path)``: the kernel's name for the disk whose per-disk
  counters describe this target.

See docs/disk-safety.md for the rules and why each exists.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from probetop.probes.core.base import TargetProbeError

SYS_CLASS_BLOCK = Path("/sys/class/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")
MOUNTINFO = Path("/proc/self/mountinfo")
SWAPS = Path("/proc/swaps")

# Enough to cover every signature below (btrfs superblock at 64 KiB, swap at
# page size - 10 for pages up to 64 KiB).
SIGNATURE_SCAN_BYTES = 128 * 1024


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


# --------------------------------------------------------------------------- sysfs


def _read_text(path: Path) -> str | None:
    """A sysfs attribute stripped of whitespace; None when absent, unreadable or empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None


def _read_int(path: Path) -> int | None:
    text = _read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _majmin(devno: int) -> str:
    return f"{os.major(devno)}:{os.minor(devno)}"


def _sysfs_dir(majmin: str) -> Path | None:
    """The resolved sysfs directory of a block device number, or None."""
    link = SYS_DEV_BLOCK / majmin
    try:
        return link.resolve(strict=True)
    except OSError:
        return None


def _is_partition(sysdir: Path) -> bool:
    return (sysdir / "partition").exists()


def _whole_disk_dir(sysdir: Path) -> Path:
    """The whole disk a partition belongs to (the partition's parent directory)."""
    return sysdir.parent if _is_partition(sysdir) else sysdir


def _partitions(sysdir: Path) -> list[Path]:
    """Partition directories of a whole disk (children that have a ``partition`` file)."""
    if _is_partition(sysdir):
        return []
    try:
        children = list(sysdir.iterdir())
    except OSError:
        return []
    return sorted(c for c in children if (c / "partition").exists())


def _dev_of(sysdir: Path) -> str | None:
    return _read_text(sysdir / "dev")


def _holders(sysdir: Path) -> list[str]:
    try:
        return sorted(p.name for p in (sysdir / "holders").iterdir())
    except OSError:
        return []


def _slaves(sysdir: Path) -> list[Path]:
    """The devices a stacked device (dm, md) is built on, resolved."""
    try:
        return [p.resolve() for p in (sysdir / "slaves").iterdir()]
    except OSError:
        return []


def _holder_label(name: str) -> str:
    """ "dm-0 (vg-lv)" for device-mapper holders, the bare name otherwise."""
    dm_name = _read_text(SYS_CLASS_BLOCK / name / "dm" / "name")
    md_level = _read_text(SYS_CLASS_BLOCK / name / "md" / "level")
    if dm_name:
        return f"{name} (device-mapper {dm_name})"
    if md_level:
        return f"{name} (md {md_level})"
    return name


def _first_attr(dirs: Iterable[Path], names: Iterable[str]) -> str | None:
    for d in dirs:
        for n in names:
            value = _read_text(d / n)
            if value:
                return value
    return None


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


# --------------------------------------------------------------------------- identify


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
        raise TargetProbeError(
            f"{p}: permission denied. Run as root or give your user access to it."
        ) from None
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


def identify(path: str | os.PathLike[str]) -> DeviceIdentity:
    """Identify a target; raise TargetProbeError for anything probetop cannot measure.

    Readability is checked with ``os.access`` so that "permission denied" is
    reported here rather than by the first I/O.
    """
    p = os.fspath(path)
    st = _stat_target(p)
    real = os.path.realpath(p)
    if not os.access(p, os.R_OK):
        raise TargetProbeError(
            f"{p}: permission denied (no read access). Run as root or give your user access "
            "(e.g. add it to the 'disk' group for block devices)."
        )
    if stat.S_ISREG(st.st_mode):
        holder = backing_device(p)
        lbs = (
            _read_int(SYS_CLASS_BLOCK / holder / "queue" / "logical_block_size") if holder else None
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
    majmin = _majmin(st.st_rdev)
    sysdir = _sysfs_dir(majmin)
    if sysdir is None:
        raise TargetProbeError(
            f"{p}: block device {majmin} is not known to the kernel (no {SYS_DEV_BLOCK}/{majmin})."
        )
    disk = _whole_disk_dir(sysdir)
    sectors = _read_int(sysdir / "size")
    # Serial/WWN/model live on the whole disk; a partition inherits its disk's.
    where = [disk, disk / "device"]
    return DeviceIdentity(
        path=p,
        real_path=real,
        kind="block",
        size_bytes=(sectors or 0) * 512,  # sysfs "size" is always in 512-byte units
        dev=majmin,
        serial=_first_attr(where, ("serial",)) or _vpd_serial(disk / "device" / "vpd_pg80"),
        wwn=_first_attr(where, ("wwid", "wwn")),
        model=_first_attr([disk / "device"], ("model",)),
        logical_block_size=_read_int(disk / "queue" / "logical_block_size"),
        backing_file=_read_text(disk / "loop" / "backing_file"),
        name=sysdir.name,
    )


# --------------------------------------------------------------------------- backing device


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of /proc/self/mountinfo."""

    majmin: str
    point: str
    fstype: str
    source: str
    read_only: bool


def _mounts() -> Iterator[Mount]:
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
            point=_unescape(fields[4]),
            fstype=fstype,
            source=_unescape(source),
            read_only="ro" in fields[5].split(","),
        )


def _mount_entries() -> Iterator[tuple[str, str, str]]:
    """(maj:min, mount point, source) for each line of /proc/self/mountinfo."""
    for m in _mounts():
        yield m.majmin, m.point, m.source


# Kernel interfaces that look like files: reading them measures nothing and
# writing them changes the running kernel (/proc/sys, /sys/power/state ...).
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc", "sysfs", "debugfs", "tracefs", "securityfs", "cgroup", "cgroup2",
        "configfs", "efivarfs", "bpf", "pstore", "fusectl", "binfmt_misc", "mqueue",
        "autofs", "rpc_pipefs", "nsfs", "selinuxfs", "devpts", "hugetlbfs",
    }
)  # fmt: skip


def filesystem_of(path: str | os.PathLike[str]) -> Mount | None:
    """The mount holding ``path`` (the deepest mount point above it with its
    device number), or None when /proc/self/mountinfo does not show it."""
    p = os.fspath(path)
    try:
        devno = os.stat(p).st_dev
    except OSError:
        return None
    majmin = _majmin(devno)
    real = os.path.realpath(p)
    best: Mount | None = None
    for m in _mounts():
        if m.majmin != majmin:
            continue
        inside = real == m.point or real.startswith(m.point.rstrip("/") + "/")
        if best is None or (inside and len(m.point) > len(best.point)):
            best = m
    return best


def _unescape(field: str) -> str:
    """Undo the octal escapes (\\040 for space ...) of /proc/self/mountinfo and /proc/swaps."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 3 < len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _source_majmin(source: str) -> str | None:
    """MAJ:MIN of a mount source such as /dev/vda1 (None if it is not a block device)."""
    if not source.startswith("/"):
        return None
    try:
        st = os.stat(source)
    except OSError:
        return None
    return _majmin(st.st_rdev) if stat.S_ISBLK(st.st_mode) else None


def _fs_majmin(path: str) -> str | None:
    """MAJ:MIN of the block device holding the filesystem that holds ``path``.

    ``st_dev`` is the device for ext4/xfs; btrfs and others report an anonymous
    0:N number, so fall back to the source of the mount with that number.
    """
    try:
        devno = os.stat(path).st_dev
    except OSError:
        return None
    majmin = _majmin(devno)
    if _sysfs_dir(majmin) is not None:
        return majmin
    for mm, _point, source in _mount_entries():
        if mm == majmin:
            src = _source_majmin(source)
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
        sysdir = _sysfs_dir(_majmin(st.st_rdev))
        return sysdir.name if sysdir else None
    majmin = _fs_majmin(p)
    if majmin is None:
        return None
    sysdir = _sysfs_dir(majmin)
    return _whole_disk_dir(sysdir).name if sysdir else None


# --------------------------------------------------------------------------- refusals


def _family(sysdir: Path) -> dict[str, str]:
    """MAJ:MIN -> kernel name for the device and, for a whole disk, its partitions:
    everything a write to this device would overwrite."""
    members = {}
    for d in [sysdir, *_partitions(sysdir)]:
        mm = _dev_of(d)
        if mm:
            members[mm] = d.name
    return members


def _root_devices() -> dict[str, str]:
    """MAJ:MIN -> name of every block device under the root filesystem: the device
    mounted on /, its whole disk, and recursively the slaves of dm/md devices."""
    start: set[str] = set()
    for mm, point, source in _mount_entries():
        if point == "/":
            start.add(mm)
            src = _source_majmin(source)
            if src:
                start.add(src)
    result: dict[str, str] = {}
    todo = [d for d in (_sysfs_dir(mm) for mm in start) if d is not None]
    while todo:
        d = todo.pop()
        devno = _dev_of(d)
        if devno is None or devno in result:
            continue
        result[devno] = d.name
        if _is_partition(d):
            todo.append(d.parent)
        todo.extend(_slaves(d))
    return result


def _swap_devices() -> list[str]:
    """MAJ:MIN of every block device in /proc/swaps (swap files are not devices)."""
    try:
        lines = SWAPS.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if fields:
            mm = _source_majmin(_unescape(fields[0]))
            if mm:
                found.append(mm)
    return found


def _loops_backed_by(family: dict[str, str]) -> list[str]:
    """Loop devices whose backing file is one of these block devices (losetup over
    a disk makes no holder link, so it is found through loop/backing_file)."""
    found = []
    for backing in sorted(SYS_CLASS_BLOCK.glob("loop*/loop/backing_file")):
        mm = _source_majmin(_read_text(backing) or "")
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
            mm = _dev_of(SYS_CLASS_BLOCK / name)
            if stat.S_ISBLK(st.st_mode) and _majmin(st.st_rdev) == mm:
                info = fcntl.ioctl(fd, _LOOP_GET_STATUS64, bytes(_LOOP_INFO64_SIZE))
                return int.from_bytes(info[0:8], "little"), int.from_bytes(info[8:16], "little")
        except OSError:
            pass
        finally:
            os.close(fd)
    text = _read_text(SYS_CLASS_BLOCK / name / "loop" / "backing_file")
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
    for backing in sorted(SYS_CLASS_BLOCK.glob("loop*/loop/backing_file")):
        name = backing.parent.parent.name
        if _loop_backing_inode(name) == (st.st_dev, st.st_ino):
            found.append(name)
    return found


def _swap_files() -> list[tuple[int, int]]:
    """(st_dev, st_ino) of every regular file in /proc/swaps (swap files)."""
    try:
        lines = SWAPS.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        try:
            st = os.stat(_unescape(fields[0]))
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


def _loop_refusals(name: str) -> list[str]:
    """The refusals of loop device ``name`` as a write target (empty when idle)."""
    node = f"/dev/{name}"
    try:
        if _majmin(os.stat(node).st_rdev) != _dev_of(SYS_CLASS_BLOCK / name):
            node = ""
    except OSError:
        node = ""
    if not node:  # no device node we can name: judge by sysfs alone
        sysdir = SYS_CLASS_BLOCK / name
        held = _holders(sysdir.resolve()) if sysdir.exists() else []
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
    sysdir = _sysfs_dir(_majmin(st.st_rdev))
    return sysdir is not None and _read_int(sysdir / "ro") == 1


def lock_devices(path: str | os.PathLike[str]) -> tuple[str, str | None, str | None]:
    """For a block device: (its MAJ:MIN, its whole disk's MAJ:MIN when it is a
    partition, its loop backing file or device). Raises TargetProbeError."""
    ident = identify(path)
    if ident.kind != "block" or ident.dev is None:
        raise TargetProbeError(f"{ident.path} is not a block device")
    sysdir = _sysfs_dir(ident.dev)
    disk = _dev_of(sysdir.parent) if sysdir is not None and _is_partition(sysdir) else None
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
    Raises TargetProbeError like ``identify`` for a bad target.
    """
    return _write_refusals(path, via_loop=None)


def _write_refusals(path: str | os.PathLike[str], via_loop: str | None) -> list[str]:
    """write_refusals; ``via_loop`` is the loop device being checked through this
    one (its own link to this device is not a reason)."""
    ident = identify(path)
    if ident.kind == "file":
        return _file_refusals(ident)
    if ident.dev is None:
        return []
    sysdir = _sysfs_dir(ident.dev)
    if sysdir is None:  # identify() found it a moment ago; it has just gone
        return [f"{ident.path}: the device disappeared while being checked"]
    family = _family(sysdir)
    label = ident.path
    reasons: list[str] = []

    for mm, point, source in _mount_entries():
        hit: str | None = family.get(mm) or family.get(_source_majmin(source) or "")
        if hit:
            what = "it is" if hit == sysdir.name else f"its partition {hit} is"
            reasons.append(f"{label}: {what} mounted on {point} (umount it first)")

    for name in family.values():
        for holder in _holders(sysdir if name == sysdir.name else sysdir / name):
            what = "it" if name == sysdir.name else f"its partition {name}"
            reasons.append(
                f"{label}: {what} is held by {_holder_label(holder)} "
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
    if backing.startswith("/") and _source_majmin(backing):
        # A loop device over another block device writes that device: its rules apply.
        below = _write_refusals(backing, via_loop=sysdir.name)
        reasons += [f"{label}: backing device {r}" for r in below]

    roots = _root_devices()
    root_hits = sorted({family[mm] for mm in family if mm in roots})
    if root_hits or ident.dev in roots:
        reasons.append(
            f"{label}: it holds the root filesystem / (via {', '.join(root_hits or [sysdir.name])})"
        )

    if not reasons and _exclusively_claimed(ident.path):
        reasons.append(
            f"{label}: the kernel reports it busy (exclusive open failed with EBUSY): it is "
            "mounted in another mount namespace or claimed by another driver"
        )
    return reasons


# --------------------------------------------------------------------------- signatures


def _at(buf: bytes, offset: int, magic: bytes) -> bool:
    return buf[offset : offset + len(magic)] == magic


def _ext_flavour(buf: bytes) -> str:
    """ext2, ext3 or ext4 from the superblock feature flags (like blkid does)."""
    sb = 1024
    compat = int.from_bytes(buf[sb + 0x5C : sb + 0x60], "little")
    incompat = int.from_bytes(buf[sb + 0x60 : sb + 0x64], "little")
    ext4_incompat = 0x0040 | 0x0080 | 0x0200  # extents, 64bit, flex_bg
    if incompat & ext4_incompat:
        return "ext4"
    if compat & 0x0004:  # has_journal
        return "ext3"
    return "ext2"


def signatures_in(buf: bytes) -> list[str]:
    """Signatures found in the first bytes of a device or image (pure; see data_signatures)."""
    found: list[str] = []
    fat = _at(buf, 54, b"FAT12   ") or _at(buf, 54, b"FAT16   ") or _at(buf, 82, b"FAT32   ")
    ntfs = _at(buf, 3, b"NTFS    ")
    boot_sig = _at(buf, 510, b"\x55\xaa")
    if ntfs:
        found.append("ntfs filesystem ('NTFS' at byte 3)")
    elif fat:
        found.append("vfat filesystem ('FATnn' at byte 54/82)")
    elif boot_sig:
        found.append("dos (MBR) partition table (0x55AA at byte 510)")
    for lbs in (512, 4096):
        if _at(buf, lbs, b"EFI PART"):
            found.append(f"gpt partition table ('EFI PART' at byte {lbs})")
    if _at(buf, 1080, b"\x53\xef"):
        found.append(f"{_ext_flavour(buf)} filesystem (magic 0xEF53 at byte 1080)")
    if _at(buf, 0, b"XFSB"):
        found.append("xfs filesystem ('XFSB' at byte 0)")
    if _at(buf, 65600, b"_BHRfS_M"):
        found.append("btrfs filesystem ('_BHRfS_M' at byte 65600)")
    if _at(buf, 0, b"LUKS\xba\xbe"):
        found.append("LUKS encrypted volume ('LUKS\\xba\\xbe' at byte 0)")
    if _at(buf, 512, b"LABELONE") and _at(buf, 536, b"LVM2 001"):
        found.append("LVM2 physical volume ('LABELONE' at byte 512)")
    if _at(buf, 4096, b"\xfc\x4e\x2b\xa9"):
        found.append("Linux RAID (md v1.2) member (magic 0xa92b4efc at byte 4096)")
    if _at(buf, 32769, b"CD001"):
        found.append("iso9660 filesystem ('CD001' at byte 32769)")
    for page in (4096, 8192, 16384, 65536):
        for magic in (b"SWAPSPACE2", b"SWAP-SPACE"):
            if _at(buf, page - 10, magic):
                found.append(f"swap area ('{magic.decode()}' at byte {page - 10})")
    return found


def data_signatures(path: str | os.PathLike[str]) -> list[str]:
    """Partition tables and filesystem signatures at the start of ``path``.

    A non-empty list means the target holds data someone may want: a write needs
    a typed confirmation naming the device. Raises TargetProbeError for a bad
    target or a read error.
    """
    ident = identify(path)
    try:
        fd = os.open(ident.path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise TargetProbeError(
            f"{ident.path}: cannot open to check for data: {exc.strerror}"
        ) from None
    try:
        chunks, offset = [], 0
        while offset < SIGNATURE_SCAN_BYTES:
            chunk = os.pread(fd, SIGNATURE_SCAN_BYTES - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    except OSError as exc:
        raise TargetProbeError(f"{ident.path}: read error while checking for data: {exc}") from None
    finally:
        os.close(fd)
    return signatures_in(b"".join(chunks))
