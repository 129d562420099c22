"""A FUSE filesystem whose I/O stalls while a gate file exists: a hung disk.

``python stallfs.py MOUNTPOINT BACKING_DIR GATE``: serves the files of
BACKING_DIR at MOUNTPOINT (create, write, truncate, unlink, chmod...). While
the file GATE exists, every ``read`` and ``write`` (and ``fsync``/``flush``)
waits, as I/O to a hung NFS server or a dying disk does: the caller's thread
sits in the kernel. On the first stalled call it creates ``GATE + ".hit"``,
so a test knows a call really was stalled. Removing GATE lets the waiting calls go
on, and nothing they carried is lost. Mounted with ``direct_io`` so each
``write(2)`` reaches it (no page cache in between). Multi-threaded: reads,
stats and opens are answered while a write waits. Needs fusepy and libfuse2.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from typing import Any

from fuse import FUSE, FuseOSError, Operations  # type: ignore[import-not-found]


class StallFS(Operations):  # type: ignore[misc]
    def __init__(self, backing: str, gate: str) -> None:
        self.backing = backing
        self.gate = gate

    def _path(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def _stall(self) -> None:
        if os.path.exists(self.gate):
            with open(self.gate + ".hit", "a"):
                pass
            while os.path.exists(self.gate):
                time.sleep(0.01)

    def _os(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except OSError as exc:
            raise FuseOSError(exc.errno or errno.EIO) from None

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        st = self._os(os.lstat, self._path(path))
        keys = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_blocks",
                "st_atime", "st_mtime", "st_ctime", "st_ino")  # fmt: skip
        return {key: getattr(st, key) for key in keys}

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", "..", *self._os(os.listdir, self._path(path))]

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        return int(self._os(os.open, self._path(path), os.O_WRONLY | os.O_CREAT, mode))

    def open(self, path: str, flags: int) -> int:
        return int(self._os(os.open, self._path(path), flags & ~(os.O_CREAT | os.O_EXCL)))

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        self._stall()
        return bytes(self._os(os.pread, fh, size, offset))

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        self._stall()
        return int(self._os(os.pwrite, fh, data, offset))

    def truncate(self, path: str, length: int, fh: Any = None) -> None:
        self._os(os.truncate, self._path(path), length)

    def chmod(self, path: str, mode: int) -> None:
        self._os(os.chmod, self._path(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        self._os(os.chown, self._path(path), uid, gid)

    def unlink(self, path: str) -> None:
        self._os(os.unlink, self._path(path))

    def utimens(self, path: str, times: Any = None) -> None:
        self._os(os.utime, self._path(path), times)

    def flush(self, path: str, fh: int) -> int:
        self._stall()
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._stall()
        return 0

    def release(self, path: str, fh: int) -> int:
        self._os(os.close, fh)
        return 0

    def statfs(self, path: str) -> dict[str, Any]:
        st = os.statvfs(self.backing)
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")  # fmt: skip
        return {key: getattr(st, key) for key in keys}


def main() -> None:
    mountpoint, backing, gate = sys.argv[1:4]
    FUSE(StallFS(backing, gate), mountpoint, foreground=True, direct_io=True,
         nothreads=False)  # fmt: skip


if __name__ == "__main__":
    main()
