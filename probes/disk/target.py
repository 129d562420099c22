"""A disk probe's target checked before anything starts (IOPS and warm-up).

Contract: ``resolve(path, ...)`` returns a ``Target``: identity, the byte
area to use and whether O_DIRECT is used. Every refusal is a ``ProbeError``
whose message says what to do: missing path, permission denied, directory,
character device, FIFO or socket, a file on a kernel pseudo filesystem
(/proc, /sys ...), a write on a read-only filesystem or device, O_DIRECT not
supported (falls back to buffered and says so in ``notes`` unless
``--direct`` was forced), area smaller than one block or beyond the end,
a link or file another user planted in a shared directory such as /tmp
(``core.planted``), direct I/O not aligned as the kernel requires there (``dioalign``: statx's
DIOALIGN, a device's logical block size, or what the kernel accepts: NFS
takes 1-byte O_DIRECT). Any other ``OSError`` while checking becomes a
``TargetProbeError`` naming the path (``targeterrors.target_errors``): never
a traceback.

The rest of a target's life is elsewhere: sizes as the options spell them
(``sizes``), room for a file to grow (``freespace``), a file target laid out
(``filelayout``), a target changed under a run (``targetwatch``).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from probetop.probes.core.base import TargetProbeError, UsageProbeError
from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS
from probetop.probes.core.planted import planted
from probetop.probes.disk.blockdev import DeviceIdentity, identify
from probetop.probes.disk.dioalign import dio_alignment
from probetop.probes.disk.mounts import existing_dir, filesystem_of
from probetop.probes.disk.refusals import read_only_device
from probetop.probes.disk.targeterrors import target_errors


@dataclass
class Target:
    """A checked target and the byte area [start, end) the probe uses."""

    path: str
    identity: DeviceIdentity | None  # None until a file to create exists
    kind: str  # "block" or "file"
    start: int
    end: int
    direct: bool
    create: bool = False  # a file that layout_file must create or extend
    notes: list[str] = field(default_factory=list)
    backing: str | None = None  # kernel disk name whose counters describe the target
    # A file laid out beyond the I/O area: fio's size of one of --nrfiles
    # files, of which I/O uses whole blocks only. None: ``end``.
    layout_end: int | None = None

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def file_end(self) -> int:
        """Where a created or extended file ends (``layout_end``, at least ``end``)."""
        return max(self.end, self.layout_end or 0)


# -------------------------------------------------------------------- checks


def _direct_supported(path: str, write: bool) -> bool:
    """Whether the filesystem (or device) accepts O_DIRECT opens."""
    flags = (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    return True


def _can_create(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(parent):
        raise TargetProbeError(f"{path}: directory {parent} does not exist. Create it first.")
    if _read_only_fs(parent):
        raise TargetProbeError(
            f"{path}: {parent} is on a read-only filesystem: probetop cannot create its test "
            "file there. Choose a writable directory."
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TargetProbeError(
            f"{path}: permission denied: cannot create a file in {parent}. "
            "Run as root or choose a writable directory."
        )


def _read_only_fs(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _refuse_pseudo(path: str) -> None:
    """Refuse a file on a kernel interface filesystem (/proc, /sys ...)."""
    mount = filesystem_of(path if os.path.exists(path) else existing_dir(path))
    if mount is not None and mount.fstype in PSEUDO_FILESYSTEMS:
        raise TargetProbeError(
            f"{path} is on a {mount.fstype} filesystem ({mount.point}): a kernel interface, "
            "not storage. Give a block device or a file on a real filesystem."
        )


def _logical_block_size(ident: DeviceIdentity | None, path: str) -> int:
    if ident is not None and ident.logical_block_size:
        return ident.logical_block_size
    from probetop.probes.disk.mounts import backing_device
    from probetop.probes.disk.sysfs import SYS_CLASS_BLOCK

    holder = backing_device(existing_dir(path))
    if holder:
        try:
            return int((SYS_CLASS_BLOCK / holder / "queue" / "logical_block_size").read_text())
        except (OSError, ValueError):
            pass
    return 512


def resolve(
    path: str,
    *,
    write: bool,
    bs: int,
    size: int | None = None,
    offset: int = 0,
    end: int | None = None,
    direct: bool | None = None,
    may_create: bool = False,
) -> Target:
    """Check ``path`` and work out the area and I/O mode. See the module docstring.

    ``direct``: True forces O_DIRECT (refuse if impossible), False forces
    buffered, None picks O_DIRECT when possible and says so otherwise.
    """
    with target_errors(path, "checking the target"):
        return _resolve(path, write, bs, size, offset, end, direct, may_create)


def _resolve(
    path: str,
    write: bool,
    bs: int,
    size: int | None,
    offset: int,
    end: int | None,
    direct: bool | None,
    may_create: bool,
) -> Target:
    from probetop.probes.disk.mounts import backing_device

    if bs <= 0:
        raise UsageProbeError("--bs must be at least 1 byte")
    # Another user's link at /tmp/probetop.img made a root run write (and
    # grow) the file it named; read or written, the target is not theirs to choose.
    planted_here = planted(path)
    if planted_here is not None:
        raise TargetProbeError(f"{path}: {planted_here}")
    create = False
    notes: list[str] = []
    ident: DeviceIdentity | None
    if not os.path.lexists(path) and may_create and size:
        _refuse_pseudo(path)
        _can_create(path)
        ident, kind, create, dev_size = None, "file", True, offset + size
    else:
        ident = identify(path)  # raises for missing, directory, char device, FIFO ...
        kind, dev_size = ident.kind, ident.size_bytes
        if kind == "file":
            _refuse_pseudo(path)
        grows = kind == "file" and bool(size) and offset + (size or 0) > dev_size
        if (write or (grows and may_create)) and kind == "file" and _read_only_fs(path):
            raise TargetProbeError(
                f"{path} is on a read-only filesystem: probetop cannot write it. "
                "Remount it read-write or choose another target."
            )
        if write and kind == "block" and read_only_device(path):
            raise TargetProbeError(
                f"{path} is a read-only device (blockdev --setro, a write-protected medium "
                "or a read-only loop device): a write run is impossible."
            )
        if (write or (grows and may_create)) and not os.access(path, os.W_OK):
            raise TargetProbeError(
                f"{path}: permission denied (no write access). Run as root or fix its mode."
            )
        if grows:
            if write or may_create:
                create = True  # extend the file to the requested size
                dev_size = offset + (size or 0)
            else:
                raise TargetProbeError(
                    f"{path} is {dev_size} bytes, smaller than --offset + --size "
                    f"({offset + (size or 0)}). Give a smaller --size."
                )
    area_end = end if end is not None else (offset + size if size else dev_size)
    if dev_size == 0:
        what = (
            "an empty file: give --size to lay it out, or another target"
            if kind == "file"
            else "a device of size 0 (no medium, or a loop device with nothing attached)"
        )
        raise TargetProbeError(f"{path} is {what}")
    if offset < 0 or offset >= dev_size:
        raise UsageProbeError(
            f"{path}: the start {offset} is at or beyond its end ({dev_size} bytes): "
            "give a smaller --offset (or --range START)"
        )
    if area_end > dev_size or offset >= area_end:
        raise UsageProbeError(
            f"{path}: the area {offset}-{area_end} does not fit in its {dev_size} bytes: "
            + ("give a smaller --range END" if end is not None else "give a smaller --size")
        )
    if area_end - offset < bs:
        raise TargetProbeError(
            f"{path}: the area to use ({area_end - offset} bytes) is smaller than the block "
            f"size ({bs} bytes). Give a smaller --bs or a bigger "
            + ("--range" if end is not None else "--size" if size is not None else "target")
            + "."
        )
    probe_path = path if not create or os.path.exists(path) else os.path.dirname(path) or "."
    lbs = _logical_block_size(ident, path)
    aligned = bs % lbs == 0 and offset % lbs == 0 and (area_end - offset) % lbs == 0
    if direct is False:
        use_direct = False
    else:
        supported = True
        if os.path.exists(probe_path) and stat.S_ISDIR(os.stat(probe_path).st_mode):
            # Not created yet: try O_DIRECT on a scratch file in the same directory.
            supported = _direct_supported_in_dir(probe_path)
        elif os.path.exists(probe_path):
            supported = _direct_supported(probe_path, write and not create)
        if supported:
            # What the kernel checks, not a 512-byte guess: statx's DIOALIGN,
            # a device's logical block size, or what an O_DIRECT read accepts
            # (NFS: 1 byte), so --bs 1 --direct runs where the kernel allows it.
            align = dio_alignment(
                probe_path, ident.logical_block_size if kind == "block" and ident else None
            )
            if align is None:
                supported = False
            else:
                lbs = align.offset
                aligned = (
                    bs % lbs == 0
                    and offset % lbs == 0
                    and (area_end - offset) % lbs == 0
                    and bs % align.memory == 0
                )
        if direct is True and not supported:
            raise TargetProbeError(
                f"{path}: this filesystem does not support O_DIRECT (the kernel refuses "
                "it here). Use --buffered, or a target on a filesystem that supports it."
            )
        if direct is True and not aligned:
            raise UsageProbeError(
                f"O_DIRECT on {path} needs --bs, --offset and the area's length in multiples "
                f"of {lbs} bytes, the alignment the kernel requires there (got bs={bs}, "
                f"offset={offset}, length={area_end - offset}). Use --buffered for unaligned I/O."
            )
        use_direct = supported and aligned
        if direct is None and not supported:
            notes.append(
                "O_DIRECT is not supported here: using buffered I/O, so the page "
                "cache is measured, not the device"
            )
        elif direct is None and not aligned:
            notes.append(
                f"bs/offset/length not a multiple of {lbs} bytes: buffered I/O (no O_DIRECT)"
            )
    return Target(
        path=path,
        identity=ident,
        kind=kind,
        start=offset,
        end=area_end,
        direct=use_direct,
        create=create,
        notes=notes,
        backing=backing_device(path if os.path.exists(path) else os.path.dirname(path) or "."),
    )


def _direct_supported_in_dir(directory: str) -> bool:
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".probetop-odirect-", dir=directory)
    os.close(fd)
    try:
        return _direct_supported(tmp, True)
    finally:
        os.unlink(tmp)
