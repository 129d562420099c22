"""The compressed variant of the line file: ``.zst`` recordings.

Contract: a target whose name ends in ``.zst`` (``is_zstd_path``) is written
as zstandard (``ZstdLineFile``, format: probes/record/rawlines.py): every flush
is one whole block of whole lines, written in one go, and a frame (with a
content checksum) ends at least every ``ZSTD_FRAME_S`` or ``ZSTD_FRAME_RAW``
bytes; a kill -9 loses at most the last flush, and every whole block decodes
to whole lines. A write error truncates the file back to the end of the last
whole flush, as ``LineFile`` does to the last whole line. The zstandard
package is imported only when such a file is made (ImportError otherwise).
"""

from __future__ import annotations

import os
import time
from typing import Any

from probetop.probes.record.linefile import LineFile, PartialWrite, WriteFailed

ZSTD_LEVEL = 9
"""Compression level of ``.zst`` recordings (benchmarks/recording_zstd.py)."""
ZSTD_FRAME_S = 60.0
"""A ``.zst`` recording ends a frame (a unit ``zstdcat`` checks) at least this often."""
ZSTD_FRAME_RAW = 4 << 20
"""... and before its uncompressed content passes this many bytes."""


def is_zstd_path(path: str | os.PathLike[str]) -> bool:
    """A recording target written compressed: its name ends in ``.zst``."""
    return os.fspath(path).lower().endswith(".zst")


class ZstdLineFile(LineFile):
    """A ``LineFile`` written as zstandard (format: probes/record/rawlines.py).

    Each ``write_lines`` call is compressed and written in one go ending a
    block (``FLUSH_BLOCK``): it reaches the OS whole, and the reader decodes
    it without the rest of its frame. A frame ends every ``ZSTD_FRAME_S``
    or ``ZSTD_FRAME_RAW`` bytes, and at ``sync_and_close``. On a write error
    the file is truncated back to the end of the last whole write (``offset``),
    so no torn block is left; that frame stays unfinished, and the reader
    keeps its whole blocks with a warning, as it skips a torn last line.
    ``lines`` counts the lines of whole writes; ``raw_bytes`` their size."""

    def __init__(self, fd: int, level: int = ZSTD_LEVEL) -> None:
        super().__init__(fd)
        import zstandard  # only a .zst recording needs it

        self._zstd = zstandard
        self._cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
        self._obj: Any = None
        self._frame_raw = 0
        self._frame_start = 0.0
        self.raw_bytes = 0

    def _end_frame(self) -> bytes:
        obj, self._obj = self._obj, None
        self._frame_raw = 0
        return bytes(obj.flush(self._zstd.COMPRESSOBJ_FLUSH_FINISH)) if obj is not None else b""

    def write_lines(self, data: bytes) -> None:
        if not data:
            return
        out = []
        if self._frame_raw and self._frame_raw + len(data) > ZSTD_FRAME_RAW:
            out.append(self._end_frame())
        if self._obj is None:
            self._obj = self._cctx.compressobj()
            self._frame_start = time.monotonic()
        out.append(self._obj.compress(data))
        self._frame_raw += len(data)
        if (
            self._frame_raw >= ZSTD_FRAME_RAW
            or time.monotonic() - self._frame_start >= ZSTD_FRAME_S
        ):
            out.append(self._end_frame())
        else:
            out.append(self._obj.flush(self._zstd.COMPRESSOBJ_FLUSH_BLOCK))
        self._write_whole(b"".join(out))
        self.lines += data.count(b"\n")
        self.raw_bytes += len(data)

    def _write_whole(self, blob: bytes) -> None:
        """Write ``blob`` or truncate back to ``offset`` (see the class docstring)."""
        try:
            self._write_all(blob)
        except PartialWrite as partial:
            self._obj = None  # its state holds what was not written: never reuse it
            raise self._cut_back(partial, partial.done > 0) from partial.error
        self.offset += len(blob)

    def sync_and_close(self) -> None:
        try:
            if self._obj is not None:
                self._write_whole(self._end_frame())
        except WriteFailed as exc:
            os.close(self.fd)
            raise exc.error from None
        super().sync_and_close()
