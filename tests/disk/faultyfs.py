"""A FUSE filesystem with one file whose sectors in a range fail (EIO) or hang.

For the disk tests' faults where the kernel has no device-mapper
(dm-error, dm-delay): ``python faultyfs.py MOUNTPOINT BACKING START END [MODE]``
serves ``MOUNTPOINT/disk.img``, the bytes of the regular file BACKING, and
answers every read or write touching [START, END) as MODE says:

- ``eio`` (the default): with EIO, as a disk with failing sectors does;
- ``hang``: not at all, until released: each such I/O is held (the caller's
  I/O stays in flight, as on a device that stopped answering) and then
  served normally. A line ``held OFFSET SIZE`` goes to stdout when an I/O
  is first held. A line ``release`` on stdin, or stdin's end (the test that
  started it is gone), releases every held I/O and ends the hang for good;
- ``hang:S``: the same, but each I/O is released after S seconds at most;
- ``flushhang``: every read and write served at once (the server acks a
  write as soon as it has it), but the FLUSH of a file handle that was
  written through (what its ``close()`` sends, and waits for) is held, as
  ``hang`` holds I/O: ``held flush`` on stdout the first time, released the
  same way. A close of a handle that only read returns at once; RELEASE
  (sent after the close, not waited for) is never held.

Mounted with ``direct_io`` so each I/O reaches it with its own offset and
size (no page cache, no readahead), multithreaded so I/O outside the range
goes on while one is held. Runs in the foreground until unmounted. Needs
fusepy and libfuse2.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
from typing import Any

from fuse import FUSE, FuseOSError, Operations  # type: ignore[import-not-found]

NAME = "/disk.img"


class FaultyFile(Operations):  # type: ignore[misc]
    def __init__(self, backing: str, bad_start: int, bad_end: int, mode: str = "eio") -> None:
        self.fd = os.open(backing, os.O_RDWR)
        self.bad = (bad_start, bad_end)
        self._hang = mode.startswith("hang")
        self._flush_hang = mode == "flushhang"
        self._next_fh = 0
        self._written: set[int] = set()  # file handles a write came through
        self._hang_s = float(mode.split(":", 1)[1]) if ":" in mode else None
        self._released = threading.Event()
        self._first = True
        self._held = threading.Lock()

    def unhold(self) -> None:
        self._released.set()

    def _check(self, offset: int, size: int) -> None:
        lo, hi = self.bad
        if offset < hi and offset + size > lo:
            if not self._hang:
                raise FuseOSError(errno.EIO)
            if self._released.is_set():
                return
            with self._held:
                say, self._first = self._first, False
            if say:
                print(f"held {offset} {size}", flush=True)
            self._released.wait(self._hang_s)

    def _hold(self, what: str) -> None:
        """Held until released (or ``hang:S``'s seconds); says so once."""
        if self._released.is_set():
            return
        with self._held:
            say, self._first = self._first, False
        if say:
            print(f"held {what}", flush=True)
        self._released.wait(self._hang_s)

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
        with self._held:
            self._next_fh += 1
            return self._next_fh

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        if not self._flush_hang:
            self._check(offset, size)
        return os.pread(self.fd, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
        if self._flush_hang:
            self._written.add(fh)
        else:
            self._check(offset, len(data))
        return os.pwrite(self.fd, data, offset)

    def flush(self, path: str, fh: Any) -> int:
        if self._flush_hang and fh in self._written:
            self._hold("flush")
        return 0

    def release(self, path: str, fh: Any) -> int:
        self._written.discard(fh)
        return 0

    def truncate(self, path: str, length: int, fh: Any = None) -> None:
        raise FuseOSError(errno.EPERM)

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        return 0


def _release_on_stdin(fs: FaultyFile) -> None:
    """``release`` on stdin, or its end, releases every held I/O."""
    for line in sys.stdin:
        if line.strip() == "release":
            break
    fs.unhold()


def main() -> None:
    mountpoint, backing, start, end = sys.argv[1:5]
    mode = sys.argv[5] if len(sys.argv) > 5 else "eio"
    fs = FaultyFile(backing, int(start), int(end), mode)
    if mode.startswith("hang") or mode == "flushhang":
        threading.Thread(target=_release_on_stdin, args=(fs,), daemon=True).start()
    FUSE(fs, mountpoint, foreground=True, direct_io=True, allow_other=False)


if __name__ == "__main__":
    main()
