"""What a recording (or any file probetop writes at a user's word) may be
written to, and opening it.

Contract:
- ``check_target(path)`` fails fast (RecordingError, exit 2) unless
  ``path`` is, or can be created as, a regular file on a storage filesystem
  that this process can write: devices (``/dev/full``, ``/dev/null``, a
  symlink to one), FIFOs (opening one for writing blocks until a reader
  comes), sockets, directories, kernel filesystems (``/proc``, ``/sys``,
  ``/dev``...), read-only filesystems, directories without permission, a
  full filesystem and a file another probetop holds are all refused with one
  plain message; so is a link or file another user planted in a shared
  (sticky, world-writable) directory such as /tmp (``core.planted``: the
  kernel's protected_symlinks and protected_regular rules, kept whatever
  its settings). It never truncates or leaves anything behind.
  ``check_recording_path`` also refuses a name ending in another
  compressor's suffix.
- ``open_target(path)`` opens the target (its real path, without following
  the last name: a link put there since the check is not followed)
  non-blocking and checks the open descriptor again (a FIFO or device, or
  another user's file in a shared directory, swapped in after the check is
  refused, never written); only then is it truncated and made mode 0600
  (recordings may reveal hosts and URLs).
- The words and the mount lookup the checks use (``file_kind``,
  ``filesystem_type``, ``PSEUDO_FILESYSTEMS``) are ``core.mountinfo``'s: the
  reader (``rawlines``) refuses the same kinds.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS, file_kind, filesystem_type
from probetop.probes.core.planted import foreign_file, planted
from probetop.probes.core.targetlock import TargetBusy, TargetLock
from probetop.probes.record.codec import RecordingError

MIN_FREE_BYTES = 64 * 1024
"""A target filesystem with less free space than this is refused up front."""

OPEN_FLAGS = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def check_target(path: str | os.PathLike[str], *, verb: str = "record to") -> str:
    """Raise RecordingError unless ``path`` can be recorded to (see the
    module docstring). Creates nothing that stays, truncates nothing.
    Returns the real path (through symlinks): the file to write.

    Every file probetop writes at a user's word (``--record``, ``export
    --out``, ``compare --plot``) passes this one check, with ``verb`` naming
    the act in the message: a device, FIFO, socket, kernel filesystem or a
    file another probetop holds is never written, let alone replaced."""
    p = Path(path)
    name = str(p)
    if not name:
        raise RecordingError(f"cannot {verb} an empty path")
    real = os.path.realpath(p)  # through symlinks, dangling ones included
    directory = os.path.dirname(real) or "."

    def refuse(why: str) -> RecordingError:
        return RecordingError(f"cannot {verb} {name}: {why}")

    planted_here = planted(p)  # another user's link or file in /tmp, say
    if planted_here is not None:
        raise refuse(planted_here)

    # A file another probetop is using (its recording, an IOPS or warm-up
    # target, a checkpoint) is never written over: the same lock as the disk
    # probes', keyed by the file's identity.
    try:
        TargetLock.for_target(real, "record").check()
    except TargetBusy as exc:
        raise refuse(str(exc)) from None

    try:
        st: os.stat_result | None = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        target = "" if real == os.path.abspath(p) else f" (a link to {real})"
        raise refuse(f"it is {file_kind(st.st_mode)}{target}, not a regular file")
    if st is None:
        try:
            dst = os.stat(directory)
        except FileNotFoundError:
            raise refuse(f"directory {directory} does not exist") from None
        except OSError as exc:
            raise refuse(f"directory {directory}: {exc.strerror}") from None
        if not stat.S_ISDIR(dst.st_mode):
            raise refuse(f"{directory} is not a directory")
    fstype = filesystem_type(directory)
    if fstype in PSEUDO_FILESYSTEMS:
        raise refuse(f"{directory} is on a {fstype} filesystem (a kernel interface, not storage)")
    _try_open(real, exists=st is not None, refuse=refuse)
    try:
        vfs = os.statvfs(directory)
    except OSError:
        return real
    free = (vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail) * vfs.f_frsize
    if vfs.f_blocks and free < MIN_FREE_BYTES:
        raise refuse(
            f"the filesystem of {directory} is full ({free // 1024} KiB free; "
            f"at least {MIN_FREE_BYTES // 1024} KiB are needed to start)"
        )
    return real


def open_error(path: str | os.PathLike[str], exc: OSError) -> str:
    """Why ``path`` could not be opened for writing, in words: a FIFO with no
    reader fails with ENXIO, which says nothing to a user."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return exc.strerror or str(exc)
    if not stat.S_ISREG(mode):
        return f"it is {file_kind(mode)}, not a regular file"
    return exc.strerror or str(exc)


def _try_open(real: str, *, exists: bool, refuse: Callable[[str], RecordingError]) -> None:
    """Open the target for writing the way ``start`` will, without changing
    it: an existing file is opened without truncation, a new one is created
    and removed again."""
    created = False
    try:
        if exists:
            fd = os.open(real, OPEN_FLAGS)
        else:
            try:
                fd = os.open(real, OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:  # appeared since the stat: check it as it is
                fd = os.open(real, OPEN_FLAGS)
    except OSError as exc:
        raise refuse(open_error(real, exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse(f"it is {file_kind(mode)}, not a regular file")
    finally:
        os.close(fd)
        if created:
            with contextlib.suppress(OSError):
                os.unlink(real)


def open_target(path: Path) -> int:
    """Open ``path`` for recording: refuse anything but a regular file (checked
    on the open descriptor), then make it private and empty."""
    # The real path, opened without following its last name: a link put
    # there since the check was swapped in (a link of the user's own on the
    # way was resolved, and is followed).
    real = os.path.realpath(path)
    try:
        fd = os.open(real, OPEN_FLAGS | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise RecordingError(f"cannot record to {path}: {open_error(path, exc)}") from None
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if not stat.S_ISREG(mode):
            raise RecordingError(
                f"cannot record to {path}: it is {file_kind(mode)}, not a regular file"
            )
        foreign = foreign_file(st, os.path.dirname(real))
        if foreign is not None:
            raise RecordingError(f"cannot record to {path}: {foreign}")
        os.fchmod(fd, 0o600)  # an existing file keeps its old mode otherwise
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise RecordingError(f"cannot record to {path}: {exc.strerror}") from None
    except RecordingError:
        os.close(fd)
        raise
    return fd


OTHER_COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2", ".lz4", ".zip", ".br")
"""Names that promise a compression probetop does not write."""


def check_recording_path(path: str | os.PathLike[str]) -> str:
    """``check_target`` for a recording, which also refuses a name promising
    another compression: ``--record s.jsonl.gz`` wrote plain JSON Lines under
    a gzip name (zcat and gunzip then fail on it)."""
    name = os.fspath(path)
    suffix = next((x for x in OTHER_COMPRESSED_SUFFIXES if name.lower().endswith(x)), None)
    if suffix is not None:
        raise RecordingError(
            f"cannot record to {name}: probetop writes plain JSON Lines, or zstandard when "
            f"the name ends in .zst, never {suffix}; name it .jsonl or .jsonl.zst"
        )
    return check_target(path)
