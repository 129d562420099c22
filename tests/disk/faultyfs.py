"""A FUSE filesystem with one file whose sectors in a range fail (EIO).

For the warm-up's fault tests where the kernel has no device-mapper
(dm-error): ``python faultyfs.py MOUNTPOINT BACKING BAD_START BAD_END``
serves ``MOUNTPOINT/disk.img``, the bytes of the regular file BACKING, and
answers every read or write touching [BAD_START, BAD_END) with EIO, as a
disk with failing sectors does. Mounted with ``direct_io`` so each I/O
reaches it with its own offset and size (no page cache, no readahead).
Runs in the foreground until unmounted. Needs fusepy and libfuse2.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import Any

from fuse import FUSE, FuseOSError, Operations  # type: ignore[import-not-found]

NAME = "/disk.img"


class FaultyFile(Operations):  # type: ignore[misc]
    def __init__(self, backing: str, bad_start: int, bad_end: int) -> None:
        self.fd = os.open(backing, os.O_RDWR)
        self.bad = (bad_start, bad_end)

    def _check(self, offset: int, size: int) -> None:
        lo, hi = self.bad
        if offset < hi and offset + size > lo:
            raise FuseOSError(errno.EIO)

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path != NAME:
            raise FuseOSError(errno.ENOENT)
        size = os.fstat(self.fd).st_size
        return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": size,
                "st_blocks": (size + 511) // 512}  # fmt: skip

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", "..", NAME[1:]]

    def open(self, path: str, flags: int) -> int:
        if path != NAME:
            raise FuseOSError(errno.ENOENT)
        return 0

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        self._check(offset, size)
        return os.pread(self.fd, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
        self._check(offset, len(data))
        return os.pwrite(self.fd, data, offset)

    def truncate(self, path: str, length: int, fh: Any = None) -> None:
        raise FuseOSError(errno.EPERM)

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        return 0


def main() -> None:
    mountpoint, backing, start, end = sys.argv[1:5]
    FUSE(FaultyFile(backing, int(start), int(end)), mountpoint, foreground=True,
         direct_io=True, allow_other=False)  # fmt: skip


if __name__ == "__main__":
    main()
