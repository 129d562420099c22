"""Append-only files of whole lines, the recorder's output.

Contract: ``LineFile.write_lines(data)`` (whole lines, each ending in a
newline) writes with ``os.write`` (no user-space buffer) and either writes
every line or leaves the file ending at the last whole line it wrote: after
a write error the file is truncated back there and ``WriteFailed`` is raised
(``torn`` if even the truncation failed). ``offset`` is the end of the last
whole line, ``lines`` the whole lines written. Blocking: the recorder calls
it in a worker thread. Subclasses (``zstdfile.ZstdLineFile``) reuse
``_write_all`` / ``_cut_back``.
"""

from __future__ import annotations

import contextlib
import os


class WriteFailed(Exception):
    """A write error; the file ends with a whole line (``torn`` if even the
    truncation back to it failed)."""

    def __init__(self, error: OSError, torn: bool) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error
        self.torn = torn


class PartialWrite(Exception):
    """``LineFile._write_all`` failed after ``done`` bytes."""

    def __init__(self, error: OSError, done: int) -> None:
        super().__init__(error)
        self.error = error
        self.done = done


class LineFile:
    """An append-only file of whole lines: ``write_lines`` either writes
    every line or leaves the file ending at the last whole line it wrote.

    Blocking; the recorder calls it in a worker thread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.offset = 0  # end of the last whole line
        self.lines = 0

    def write_lines(self, data: bytes) -> None:
        """Write ``data`` (whole lines, each ending in a newline)."""
        try:
            self._write_all(data)
        except PartialWrite as partial:
            whole = data.rfind(b"\n", 0, partial.done) + 1  # bytes of whole lines written
            self.lines += data.count(b"\n", 0, whole)
            self.offset += whole
            raise self._cut_back(partial, whole != partial.done) from partial.error
        self.offset += len(data)
        self.lines += data.count(b"\n")

    def _write_all(self, blob: bytes) -> None:
        """Write all of ``blob``; on an error, ``PartialWrite`` says how much went."""
        view = memoryview(blob)
        done = 0
        try:
            while done < len(blob):
                n = os.write(self.fd, view[done:])
                if n <= 0:  # a regular file never does this; do not spin
                    raise OSError(5, "write returned 0")
                done += n
        except OSError as exc:
            raise PartialWrite(exc, done) from exc

    def _cut_back(self, partial: PartialWrite, needed: bool) -> WriteFailed:
        """After a failed write, truncate the file back to ``offset`` if
        ``needed`` (a torn part was written); the error to raise."""
        torn = False
        if needed:
            try:
                os.ftruncate(self.fd, self.offset)
                os.lseek(self.fd, self.offset, os.SEEK_SET)
            except OSError:
                torn = True
        return WriteFailed(partial.error, torn)

    def sync_and_close(self) -> None:
        try:
            os.fsync(self.fd)
        finally:
            os.close(self.fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
