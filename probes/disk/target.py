"""Targets and sizes for the disk probes (IOPS and warm-up).

Contract:
- ``parse_size("4k") == 4096``: fio's units (k/m/g/t are powers of 1024,
  optional trailing "b"/"ib"); a plain number is bytes.
- ``parse_range("1g-2g")`` gives (start, end) in bytes; ``"-"`` ends are open.
- ``resolve(path, ...)`` checks a target before anything starts and returns a
  ``Target``: identity, the byte area to use and whether O_DIRECT is used.
  Every refusal is a ``ProbeError`` whose message says what to do: missing
  path, permission denied, directory, character device, FIFO or socket, a
  file on a kernel pseudo filesystem (/proc, /sys ...), a write on a
  read-only filesystem or device, O_DIRECT not supported (tmpfs: falls back
  to buffered and says so in ``notes`` unless ``--direct`` was forced), area
  smaller than one block or beyond the end, unaligned direct I/O. Any other
  ``OSError`` while checking becomes a ``TargetProbeError`` naming the path
  (``target_errors``): never a traceback.
- ``check_room(path, need, what)``: a file that is about to grow (a layout,
  writes into its holes) must fit in its filesystem's free space and leave
  ``keep_free(total)`` free: 5 % of the filesystem, at most 1 GiB (ext4
  reserves 5 % for root for the same reason: a full filesystem breaks
  whatever else writes there; the 1 GiB cap keeps the margin sensible on
  big volumes). Refused with the numbers: needed, free, what would be left.
- ``Layout(target)`` creates or extends a regular file and fills it with data
  (as fio does before reading a new file), so reads hit real blocks. It runs
  in 1 MiB writes, looks at its stop flag before each, and flushes every
  16 MiB, so a stop is honoured within ~0.1 s; ``undo()`` removes a file it
  created or cuts an extended one back to its old size. ``layout_file`` and
  ``make_data_file`` (the demo's) run one to the end.
- ``TargetWatch(target).problem()``: the target changed under the run
  (removed, replaced, shrunk, a loop device detached); checked every tick.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from probetop.probes.core.base import ProbeError, TargetProbeError, UsageProbeError
from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS
from probetop.probes.core.options import parse_byte_size
from probetop.probes.disk.blockdev import DeviceIdentity, identify
from probetop.probes.disk.capacity import human
from probetop.probes.disk.mounts import filesystem_of
from probetop.probes.disk.refusals import read_only_device

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_size(text: str | int) -> int:
    """Bytes from fio-style text ("1", "4k", "1M", "2GiB"); ValueError if bad.
    The grammar is the CLI's size parser (``core.options.parse_byte_size``)."""
    if isinstance(text, int):
        return text
    return parse_byte_size(str(text))


def format_size(n: int) -> str:
    """The shortest fio-style spelling of a byte count ("4k", "1M", "512")."""
    for unit in ("P", "T", "G", "M", "k"):
        mult = _UNITS[unit.lower()]
        if n >= mult and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def parse_range(text: str) -> tuple[int | None, int | None]:
    """(start, end) from "START-END"; either side may be empty (open)."""
    start, sep, end = text.partition("-")
    usage = f"not a range: {text!r} (use START-END, sizes 0 or more, e.g. 0-10G or 1G-)"
    if not sep or "-" in end:  # "-5-10", "1-2-3": a second dash is no size's
        raise ValueError(usage)
    try:
        return (
            parse_size(start) if start.strip() else None,
            parse_size(end) if end.strip() else None,
        )
    except ValueError as exc:  # the size's own message, about the whole range
        raise ValueError(f"{usage}: {exc}") from None


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

    @property
    def size(self) -> int:
        return self.end - self.start


# -------------------------------------------------------------------- errors

_HINTS = {
    errno.EACCES: "permission denied: run as root or give your user access to it",
    errno.EPERM: "operation not permitted: run as root or give your user access to it",
    errno.EROFS: "read-only filesystem or device",
    errno.ENOSPC: "no space left on the filesystem",
    errno.EDQUOT: "disk quota exceeded",
    errno.EBUSY: "busy: mounted, used as swap or claimed by another driver",
    errno.ENXIO: "no such device (detached or removed?)",
    errno.ENODEV: "no such device (detached or removed?)",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "file name too long",
    errno.ETXTBSY: "busy: a running program's file or an active swap file",
    errno.EIO: "I/O error: the device reported a failure",
    errno.EINVAL: "invalid argument (O_DIRECT alignment, or the filesystem refuses the request)",
}


def describe_os_error(exc: OSError) -> str:
    """A one-line reason for an OSError ("read-only filesystem or device")."""
    if exc.errno in _HINTS:
        return _HINTS[exc.errno]
    return exc.strerror or str(exc)


@contextlib.contextmanager
def target_errors(path: str, doing: str = "") -> Iterator[None]:
    """Turn an OSError into a TargetProbeError naming ``path`` (exit 2, one line)."""
    try:
        yield
    except OSError as exc:
        what = f" ({doing})" if doing else ""
        raise TargetProbeError(f"{path}: {describe_os_error(exc)}{what}") from None


# -------------------------------------------------------------------- free space

KEEP_FREE_SHARE = 0.05
KEEP_FREE_MAX = 1 << 30


def keep_free(total: int) -> int:
    """Bytes a filesystem of ``total`` bytes keeps free: 5 %, at most 1 GiB."""
    return min(int(total * KEEP_FREE_SHARE), KEEP_FREE_MAX)


@dataclass(frozen=True, slots=True)
class Room:
    """Free space of the filesystem holding a path."""

    free: int  # bytes an unprivileged writer may still use (f_bavail)
    total: int
    point: str  # its mount point, for the message

    @property
    def keep(self) -> int:
        return keep_free(self.total)


def _existing_dir(path: str) -> str:
    """``path`` if it is a directory, else the directory that would hold it."""
    if os.path.isdir(path):
        return path
    return os.path.dirname(os.path.abspath(path)) or "."


def room_for(path: str) -> Room | None:
    """Free space where ``path`` lives; None when the filesystem does not say
    (it reports no size: ramfs, some FUSE filesystems)."""
    where = path if os.path.exists(path) else _existing_dir(path)
    st = os.statvfs(where)
    if st.f_blocks == 0:
        return None
    mount = filesystem_of(where)
    return Room(
        free=st.f_bavail * st.f_frsize,
        total=st.f_blocks * st.f_frsize,
        point=mount.point if mount else _existing_dir(where),
    )


def allocation_needed(path: str, start: int, end: int) -> int:
    """At most how many bytes writing [start, end) of ``path`` allocates: the
    part beyond its end plus its holes (sparse regions) inside the range."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return end
    if not stat.S_ISREG(st.st_mode):
        return 0
    beyond = max(0, end - max(st.st_size, start))
    inside = max(0, min(end, st.st_size) - start)
    holes = max(0, st.st_size - st.st_blocks * 512)
    return beyond + min(holes, inside)


def check_room(path: str, need: int, what: str) -> None:
    """Refuse (TargetProbeError) ``need`` more bytes where ``path`` lives when
    they would not fit or would leave less than ``keep_free`` free."""
    if need <= 0:
        return
    with target_errors(path, "checking free space"):
        room = room_for(path)
    if room is None:
        raise TargetProbeError(
            f"{path}: its filesystem does not report its size (ramfs?), so probetop cannot "
            f"check that {human(need)} fit; create the file yourself first (e.g. with fio "
            "or dd) or use another filesystem"
        )
    left = room.free - need
    if left >= room.keep:
        return
    verdict = (
        f"would not fit (short by {human(-left)})"
        if left < 0
        else f"would leave only {human(left)} free"
    )
    raise TargetProbeError(
        f"{what} {path} needs {human(need)}; its filesystem ({room.point}) has "
        f"{human(room.free)} free of {human(room.total)}: it {verdict}. probetop keeps at "
        f"least {human(room.keep)} free there (5 % of the filesystem, at most 1 GiB). "
        "Give a smaller --size (or --range), or a target on a bigger filesystem."
    )


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
    mount = filesystem_of(path if os.path.exists(path) else _existing_dir(path))
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

    holder = backing_device(_existing_dir(path))
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
            "give a smaller --size (or --range END)"
        )
    if area_end - offset < bs:
        raise TargetProbeError(
            f"{path}: the area to use ({area_end - offset} bytes) is smaller than the block "
            f"size ({bs} bytes). Give a smaller --bs or a bigger target/--size."
        )
    lbs = _logical_block_size(ident, path)
    aligned = bs % lbs == 0 and offset % lbs == 0 and (area_end - offset) % lbs == 0
    probe_path = path if not create or os.path.exists(path) else os.path.dirname(path) or "."
    if direct is False:
        use_direct = False
    else:
        supported = True
        if os.path.exists(probe_path) and stat.S_ISDIR(os.stat(probe_path).st_mode):
            # Not created yet: try O_DIRECT on a scratch file in the same directory.
            supported = _direct_supported_in_dir(probe_path)
        elif os.path.exists(probe_path):
            supported = _direct_supported(probe_path, write and not create)
        if direct is True and not supported:
            raise TargetProbeError(
                f"{path}: this filesystem does not support O_DIRECT (tmpfs does not). "
                "Use --buffered, or a target on a real disk."
            )
        if direct is True and not aligned:
            raise UsageProbeError(
                f"O_DIRECT needs --bs, --offset and the area's length in multiples of the "
                f"{lbs}-byte logical sector (got bs={bs}, offset={offset}, "
                f"length={area_end - offset}). Use --buffered for unaligned I/O."
            )
        use_direct = supported and aligned
        if direct is None and not supported:
            notes.append(
                "O_DIRECT is not supported here (tmpfs?): using buffered I/O, so the page "
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


# -------------------------------------------------------------------- layout

LAYOUT_BLOCK = 1 << 20
LAYOUT_FLUSH_EVERY = 16 << 20  # bounded writeback: no long fsync at the end


class Layout:
    """Create or extend a file target to ``target.end`` bytes; see the module
    docstring. ``done``/``total``: bytes written so far / to write."""

    def __init__(self, target: Target, fill: bool = True) -> None:
        self.target = target
        self.fill = fill
        self.done = 0
        self.total = 0
        self.created = False
        self.original_size: int | None = None
        self._inode: tuple[int, int] | None = None
        self.state = "pending"  # running, complete, stopped, failed, undone

    def run(self, stop: threading.Event | None = None) -> bool:
        """Lay the file out; True when complete, False when ``stop`` was set
        (what was written stays until ``undo()``). Raises OSError (ENOSPC ...)."""
        self.state = "running"
        try:
            complete = self._run(stop)
        except BaseException:
            self.state = "failed"
            raise
        self.state = "complete" if complete else "stopped"
        if complete:
            self.target.identity = identify(self.target.path)
        return complete

    def _open(self) -> int:
        base = os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO never hangs us
        try:
            fd = os.open(self.target.path, base | os.O_CREAT | os.O_EXCL, 0o600)
            self.created = True
        except FileExistsError:
            fd = os.open(self.target.path, base)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, f"{self.target.path} is not a regular file any more")
        self._inode = (st.st_dev, st.st_ino)
        if not self.created:
            self.original_size = st.st_size
        return fd

    def _run(self, stop: threading.Event | None) -> bool:
        fd = self._open()
        try:
            have = os.fstat(fd).st_size
            end = self.target.end
            self.total = max(0, end - have)
            if have >= end:
                return True
            if not self.fill:
                os.ftruncate(fd, end)
                self.done = self.total
                return True
            block = memoryview(os.urandom(LAYOUT_BLOCK))
            pos, unflushed = have, 0
            while pos < end:
                if stop is not None and stop.is_set():
                    return False
                n = min(LAYOUT_BLOCK, end - pos)
                written = os.pwrite(fd, block[:n], pos)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                pos += written
                unflushed += written
                self.done = pos - have
                if unflushed >= LAYOUT_FLUSH_EVERY:
                    os.fdatasync(fd)
                    unflushed = 0
            os.fsync(fd)
            return True
        finally:
            os.close(fd)

    def undo(self) -> str | None:
        """Remove a file this layout created, or cut an extended one back to
        its old size; what was done (for the report), or None."""
        if self.state in ("pending", "complete", "undone"):
            return None
        path = self.target.path
        try:
            st = os.stat(path)
        except OSError:
            self.state = "undone"
            return None
        if (st.st_dev, st.st_ino) != self._inode:
            return None  # not our file any more: leave it alone
        try:
            if self.created:
                os.unlink(path)
                what = f"the partial file {path} was removed"
            elif self.original_size is not None and st.st_size > self.original_size:
                os.truncate(path, self.original_size)
                what = f"{path} was cut back to its {self.original_size:,} bytes"
            else:
                what = None
        except OSError as exc:
            return f"could not undo the partial layout of {path}: {describe_os_error(exc)}"
        self.state = "undone"
        return what


def layout_file(target: Target, fill: bool = True) -> None:
    """Create or extend a file target to ``target.end`` bytes, to the end (see
    ``Layout``); undone if it fails. Raises OSError (e.g. ENOSPC)."""
    layout = Layout(target, fill)
    try:
        layout.run()
    except BaseException:
        layout.undo()
        raise


def make_data_file(path: str, size: int) -> None:
    """Create (or extend) the regular file ``path`` to ``size`` bytes of data,
    for a read target (the demo's warm-up file). Raises OSError."""
    layout_file(Target(path, None, "file", 0, size, False, create=True), fill=True)


# -------------------------------------------------------------------- watch


class TargetWatch:
    """Notices a target that changed under a run: removed, replaced by another
    file or device, shrunk below the area in use, a loop device detached.
    ``problem()`` (cheap: one stat, for a device one sysfs read) says what,
    or None; the probes look once per tick and stop with that message."""

    def __init__(self, target: Target) -> None:
        self.path = target.path
        self.end = target.end
        st = os.stat(target.path)
        self._kind = target.kind
        self._id = (st.st_rdev,) if stat.S_ISBLK(st.st_mode) else (st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return f"{self.path} disappeared during the run ({describe_os_error(exc)})"
        block = stat.S_ISBLK(st.st_mode)
        now = (st.st_rdev,) if block else (st.st_dev, st.st_ino)
        if now != self._id or block != (self._kind == "block"):
            return f"{self.path} was replaced by another file or device during the run"
        if block:
            try:
                size = identify(self.path).size_bytes
            except ProbeError as exc:
                return f"{self.path} became unusable during the run ({exc})"
        else:
            size = st.st_size
        if size < self.end:
            return (
                f"{self.path} shrank to {size:,} bytes during the run (the area in use ends "
                f"at {self.end:,}): stopped"
            )
        return None
