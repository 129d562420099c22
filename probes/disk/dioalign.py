"""The alignment O_DIRECT needs on a target, as the kernel states or accepts it.

Contract: ``dio_alignment(path)`` is a ``DioAlign`` (file offset/length and
buffer address alignment in bytes, and where it came from) or None when the
kernel refuses O_DIRECT there. In order:
1. ``statx(STATX_DIOALIGN)`` (Linux 6.1+; ext4, xfs, f2fs, btrfs, block
   devices on 6.11+): the filesystem's own figure; 0 means no O_DIRECT.
2. A block device: its logical block size (what the block layer checks).
3. Otherwise (NFS, tmpfs, FUSE, kernels before 6.1): the smallest of 1, 512
   and 4096 bytes that an O_DIRECT read at that offset and length is accepted
   with, tried on the file itself (read-only) or on a scratch file in the
   directory a new file will be made in (removed at once). NFS accepts 1.
``path`` is the target, or for a file not yet created, its directory.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import stat
import struct
import tempfile
from dataclasses import dataclass

STATX_DIOALIGN = 0x2000
AT_FDCWD = -100
_STATX_SIZE = 256
_DIO_ALIGN_AT = 0x98  # struct statx: stx_dio_mem_align, stx_dio_offset_align (u32 each)
TRIED = (1, 512, 4096)
_PROBE_BYTES = 8192


@dataclass(frozen=True, slots=True)
class DioAlign:
    offset: int  # file offsets and lengths: multiples of this
    memory: int  # buffer addresses: multiples of this
    source: str  # "statx", "logical block size" or "probed"


def _statx(path: str) -> DioAlign | bool | None:
    """statx's answer: a DioAlign, None (the kernel says: no O_DIRECT here),
    or False when it does not say (older kernel or filesystem)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        statx = libc.statx
    except (OSError, AttributeError):
        return False
    buf = ctypes.create_string_buffer(_STATX_SIZE)
    if statx(AT_FDCWD, os.fsencode(path), 0, STATX_DIOALIGN, buf) != 0:
        return False
    mask = struct.unpack_from("I", buf, 0)[0]
    if not mask & STATX_DIOALIGN:
        return False
    memory, offset = struct.unpack_from("II", buf, _DIO_ALIGN_AT)
    if offset == 0:
        return None
    return DioAlign(offset=offset, memory=max(1, memory), source="statx")


def _probe_fd(fd: int) -> DioAlign | None:
    """Try O_DIRECT reads on ``fd`` (opened O_DIRECT, at least 8 KiB of data)."""
    page = mmap.mmap(-1, 4 * mmap.PAGESIZE)
    try:
        view = memoryview(page)
        for n in TRIED:
            try:
                os.preadv(fd, [view[:n]], n)
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    continue
                raise
            memory = n
            for m in TRIED:  # the buffer's address: the smallest accepted misalignment
                if m >= n:
                    break
                try:
                    os.preadv(fd, [view[m : m + n]], n)
                    memory = m
                    break
                except OSError as exc:
                    if exc.errno != errno.EINVAL:
                        raise
            view.release()
            return DioAlign(offset=n, memory=memory, source="probed")
        view.release()
        return None
    finally:
        page.close()


def _probe_file(path: str) -> DioAlign | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return None
        raise
    try:
        return _probe_fd(fd)
    finally:
        os.close(fd)


def _in_scratch_file(directory: str) -> DioAlign | None:
    """statx, else the probe, on a scratch file of 8 KiB in ``directory``."""
    fd, tmp = tempfile.mkstemp(prefix=".probetop-dioalign-", dir=directory)
    try:
        os.write(fd, b"\x5a" * _PROBE_BYTES)
        os.fsync(fd)  # written back: the O_DIRECT read goes to the storage
        os.close(fd)
        fd = -1
        said = _statx(tmp)
        if said is not False:
            return said  # type: ignore[return-value]
        return _probe_file(tmp)
    finally:
        if fd >= 0:
            os.close(fd)
        os.unlink(tmp)


def dio_alignment(path: str, logical_block_size: int | None = None) -> DioAlign | None:
    """See the module docstring (``logical_block_size``: a block device's)."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        return _in_scratch_file(path)
    said = _statx(path)
    if said is not False:
        return said  # type: ignore[return-value]
    if logical_block_size:
        return DioAlign(logical_block_size, logical_block_size, "logical block size")
    if stat.S_ISREG(st.st_mode) and st.st_size >= _PROBE_BYTES:
        return _probe_file(path)
    return _in_scratch_file(os.path.dirname(os.path.abspath(path)))
