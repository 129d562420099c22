"""File targets created or extended and filled with data before a run.

Contract: ``Layout(target)`` creates or extends a regular file (to
``target.file_end``) and fills it
with data (as fio does before reading a new file), so reads hit real
blocks. It runs in 1 MiB writes, looks at its stop flag before each, and
flushes every 16 MiB, so a stop is honoured within ~0.1 s; ``undo()``
removes a file it created or cuts an extended one back to its old size.
``layout_file`` and ``make_data_file`` (the demo's) run one to the end.
Raises OSError (ENOSPC ...).
"""

from __future__ import annotations

import errno
import os
import stat
import threading

from probetop.probes.core.planted import foreign_file
from probetop.probes.disk.blockdev import identify
from probetop.probes.disk.target import Target
from probetop.probes.disk.targeterrors import describe_os_error

LAYOUT_BLOCK = 1 << 20
LAYOUT_FLUSH_EVERY = 16 << 20  # bounded writeback: no long fsync at the end


class Layout:
    """Create or extend a file target to ``target.file_end`` bytes; see the module
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
        path = self.target.path
        try:
            fd = os.open(path, base | os.O_CREAT | os.O_EXCL, 0o600)
            self.created = True
        except FileExistsError:
            # Missing when the target was checked (no identity), there now:
            # made in between, maybe by another user in a shared directory.
            # A link made in that window is not followed (core.planted's
            # check saw no link to judge); a file is judged once open.
            fresh = self.target.identity is None
            try:
                fd = os.open(path, base | (os.O_NOFOLLOW if fresh else 0))
            except OSError as exc:
                if exc.errno != errno.ELOOP or not fresh:
                    raise
                raise OSError(
                    errno.ELOOP,
                    f"{path} became a symbolic link after it was checked: not followed",
                ) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, f"{path} is not a regular file any more")
        foreign = foreign_file(st, os.path.dirname(os.path.abspath(path)) or "/")
        if foreign is not None:
            os.close(fd)
            raise OSError(errno.EPERM, f"{path}: {foreign}")
        self._inode = (st.st_dev, st.st_ino)
        if not self.created:
            self.original_size = st.st_size
        return fd

    def _run(self, stop: threading.Event | None) -> bool:
        fd = self._open()
        try:
            have = os.fstat(fd).st_size
            end = self.target.file_end
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
