"""Targets and sizes for the disk probes (IOPS and warm-up).

Contract:
- ``parse_size("4k") == 4096``: fio's units (k/m/g/t are powers of 1024,
  optional trailing "b"/"ib"); a plain number is bytes.
- ``parse_range("1g-2g")`` gives (start, end) in bytes; ``"-"`` ends are open.
- ``resolve(path, ...)`` checks a target before anything starts and returns a
  ``Target``: identity, the byte area to use and whether O_DIRECT is used.
  Every refusal is a ``ProbeError`` whose message says what to do: missing
  path, permission denied, directory, character device, O_DIRECT not
  supported (tmpfs: falls back to buffered and says so in ``notes`` unless
  ``--direct`` was forced), area smaller than one block, unaligned direct I/O.
- ``layout_file`` creates or extends a regular file and fills it with data
  (as fio does before reading a new file), so reads hit real blocks;
  ``make_data_file`` does it for a new file of a given size (the demo's).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from probetop.probes.core.base import TargetProbeError, UsageProbeError
from probetop.probes.core.options import parse_byte_size
from probetop.probes.disk.blockdev import DeviceIdentity, identify

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
    if not sep:
        raise ValueError(f"not a range: {text!r} (use START-END, e.g. 0-10G or 1G-)")
    return (parse_size(start) if start.strip() else None, parse_size(end) if end.strip() else None)


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


def _direct_supported(path: str, write: bool) -> bool:
    """Whether the filesystem (or device) accepts O_DIRECT opens."""
    flags = (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT
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
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TargetProbeError(
            f"{path}: permission denied: cannot create a file in {parent}. "
            "Run as root or choose a writable directory."
        )


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
    from probetop.probes.disk.blockdev import backing_device

    if bs <= 0:
        raise UsageProbeError("--bs must be at least 1 byte")
    create = False
    notes: list[str] = []
    ident: DeviceIdentity | None
    if not os.path.lexists(path) and may_create and size:
        _can_create(path)
        ident, kind, create, dev_size = None, "file", True, offset + size
    else:
        ident = identify(path)  # raises for missing, directory, char device, ...
        kind, dev_size = ident.kind, ident.size_bytes
        if write and not os.access(path, os.W_OK):
            raise TargetProbeError(
                f"{path}: permission denied (no write access). Run as root or fix its mode."
            )
        if kind == "file" and size and offset + size > dev_size:
            if write or may_create:
                create = True  # extend the file to the requested size
                dev_size = offset + size
            else:
                raise TargetProbeError(
                    f"{path} is {dev_size} bytes, smaller than --offset + --size "
                    f"({offset + size}). Give a smaller --size."
                )
    area_end = end if end is not None else (offset + size if size else dev_size)
    if offset < 0 or area_end > dev_size or offset >= area_end:
        raise UsageProbeError(
            f"{path}: the area {offset}-{area_end} does not fit in its {dev_size} bytes"
        )
    if area_end - offset < bs:
        raise TargetProbeError(
            f"{path}: the area to use ({area_end - offset} bytes) is smaller than the block "
            f"size ({bs} bytes). Give a smaller --bs or a bigger target/--size."
        )
    lbs = (ident.logical_block_size if ident else None) or 512
    aligned = bs % lbs == 0 and offset % lbs == 0
    probe_path = path if not create or os.path.exists(path) else os.path.dirname(path) or "."
    if direct is False:
        use_direct = False
    else:
        supported = True
        if os.path.exists(probe_path) and stat.S_ISDIR(os.stat(probe_path).st_mode):
            # Not created yet: try O_DIRECT on a scratch file in the same directory.
            supported = _direct_supported_in_dir(probe_path)
        elif os.path.exists(probe_path):
            supported = _direct_supported(probe_path, write)
        if direct is True and not supported:
            raise TargetProbeError(
                f"{path}: this filesystem does not support O_DIRECT (tmpfs does not). "
                "Use --buffered, or a target on a real disk."
            )
        if direct is True and not aligned:
            raise UsageProbeError(
                f"O_DIRECT needs --bs and --offset in multiples of {lbs} bytes "
                f"(got bs={bs}, offset={offset}). Use --buffered for smaller I/O."
            )
        use_direct = supported and aligned
        if direct is None and not supported:
            notes.append(
                "O_DIRECT is not supported here (tmpfs?): using buffered I/O, so the page "
                "cache is measured, not the device"
            )
        elif direct is None and not aligned:
            notes.append(f"bs/offset not a multiple of {lbs} bytes: buffered I/O (no O_DIRECT)")
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


def layout_file(target: Target, fill: bool = True) -> None:
    """Create or extend a file target to ``target.end`` bytes; with ``fill``,
    write data over the new part (1 MiB blocks) so reads hit allocated blocks.
    Raises OSError (e.g. ENOSPC) for the caller to report."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target.path, flags, 0o600)
    try:
        have = os.fstat(fd).st_size
        if have >= target.end:
            return
        if not fill:
            os.ftruncate(fd, target.end)
            return
        block = os.urandom(1 << 20)
        pos = have
        while pos < target.end:
            n = min(len(block), target.end - pos)
            written = os.pwrite(fd, block[:n], pos)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            pos += written
        os.fsync(fd)
    finally:
        os.close(fd)
    target.identity = identify(target.path)


def make_data_file(path: str, size: int) -> None:
    """Create (or extend) the regular file ``path`` to ``size`` bytes of data,
    for a read target (the demo's warm-up file). Raises OSError."""
    layout_file(Target(path, None, "file", 0, size, False, create=True), fill=True)
