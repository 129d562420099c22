"""Zstandard-compressed recordings: a bounded streaming decoder, and lines read back.

Contract:
- A ``.zst`` recording is a sequence of standard zstandard frames (RFC 8878;
  ``zstdcat`` reads it). The writer ends a *block* at every flush (so every
  flush is decodable on its own terms, and a block holds whole lines) and a
  *frame* every ``ZSTD_FRAME_S`` seconds or ``ZSTD_FRAME_RAW`` bytes, with a
  content checksum. ``is_zstd(head)`` tells one from plain JSON Lines by its
  first four bytes (``28 B5 2F FD``), whatever the file is called.
- ``ZstdStream`` decodes fed bytes one whole block at a time, walking the
  block headers itself: a block holds at most 128 KiB, so ``decode(limit)``
  never makes more than ``limit`` + 128 KiB of output at once, whatever the
  input (a small "zst bomb" costs no memory; the reader caps the total).
  Bytes that cannot be a frame (bad magic, reserved block type, a block that
  does not decode, a checksum mismatch) raise ``ZstdCorrupt`` naming the
  byte offset of the block (or frame header) where decoding failed.
  ``cut_frame`` is the offset of a frame that the input ended inside (a
  kill -9 mid-run): its whole blocks were decoded.
- ``FrameLines`` is the reader's view of a ``.zst`` file: ``readline(limit)``
  as on a binary file; ``truncated_at`` holds ``cut_frame`` at the end.
"""

from __future__ import annotations

from typing import IO, Any

MAGIC = b"\x28\xb5\x2f\xfd"
"""The first four bytes of every zstandard frame."""
MAX_BLOCK = 128 * 1024
"""The most one block decompresses to (RFC 8878 Block_Maximum_Size)."""
_READ = 1 << 16


class ZstdCorrupt(Exception):
    """Bytes that cannot be zstandard data; ``offset`` is the file offset of
    the frame header or block where decoding failed."""

    def __init__(self, offset: int, why: str) -> None:
        super().__init__(f"corrupted zstd data at byte {offset}: {why}")
        self.offset = offset


def is_zstd(head: bytes) -> bool:
    """True if a file starting with ``head`` is a zstandard stream."""
    return bytes(head[:4]) == MAGIC


def _skippable(magic: bytes) -> bool:
    return magic[1:] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50


class ZstdStream:
    """Feed compressed bytes, take decompressed bytes (see the module docstring)."""

    def __init__(self) -> None:
        self._in = bytearray()
        self._pos = 0  # next unparsed byte in self._in
        self._base = 0  # file offset of self._in[0]
        self._frame_at: int | None = None  # file offset of the frame being decoded
        self._dobj: Any = None
        self._checksum = False
        self._skip = 0  # bytes of a skippable frame still to skip

    @property
    def cut_frame(self) -> int | None:
        """Offset of the frame the input so far ends inside, if any."""
        if self._frame_at is not None:
            return self._frame_at
        if self._skip or self._pos < len(self._in):
            return self._base + self._pos
        return None

    def feed(self, data: bytes) -> None:
        if self._pos > (1 << 20):
            del self._in[: self._pos]
            self._base += self._pos
            self._pos = 0
        self._in += data

    def _fail(self, why: str) -> ZstdCorrupt:
        return ZstdCorrupt(self._base + self._pos, why)

    def _push(self, end: int) -> bytes:
        """Feed self._in[self._pos:end] to the frame's decoder."""
        chunk = bytes(self._in[self._pos : end])
        try:
            out = bytes(self._dobj.decompress(chunk))
        except Exception as exc:  # zstandard.ZstdError
            raise self._fail(str(exc) or type(exc).__name__) from None
        self._pos = end
        return out

    def decode(self, limit: int = 1 << 20) -> bytes:
        """Decompressed bytes of the whole blocks fed so far, stopping once
        ``limit`` bytes are out (call again for more); b"" when more input
        is needed."""
        out: list[bytes] = []
        made = 0
        buf = self._in
        while made < limit:
            n = len(buf)
            if self._skip:
                step = min(self._skip, n - self._pos)
                if not step:
                    break
                self._pos += step
                self._skip -= step
                continue
            if self._frame_at is None:
                if n - self._pos < 4:
                    break
                magic = bytes(buf[self._pos : self._pos + 4])
                if _skippable(magic):
                    if n - self._pos < 8:
                        break
                    self._skip = int.from_bytes(buf[self._pos + 4 : self._pos + 8], "little")
                    self._pos += 8
                    continue
                if magic != MAGIC:
                    raise self._fail("not a zstd frame (bad magic number)")
                if n - self._pos < 5:
                    break
                fhd = buf[self._pos + 4]
                if fhd & 0x08:
                    raise self._fail("reserved bit set in the frame header")
                single = bool(fhd & 0x20)
                size = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
                size += (1 if single else 0, 2, 4, 8)[fhd >> 6]
                if n - self._pos < size:
                    break
                import zstandard  # only a .zst recording needs it (start-up stays light)

                self._frame_at = self._base + self._pos
                self._checksum = bool(fhd & 0x04)
                self._dobj = zstandard.ZstdDecompressor().decompressobj()
                out.append(self._push(self._pos + size))
                continue
            if n - self._pos < 3:
                break
            header = buf[self._pos] | buf[self._pos + 1] << 8 | buf[self._pos + 2] << 16
            last, kind, size = header & 1, (header >> 1) & 3, header >> 3
            if kind == 3:
                raise self._fail("a block of the reserved type")
            if size > MAX_BLOCK:
                raise self._fail("a block larger than 128 KiB")
            end = self._pos + 3 + (1 if kind == 1 else size)
            if last and self._checksum:
                end += 4
            if end > n:
                break
            block_at = self._base + self._pos
            data = self._push(end)
            made += len(data)
            out.append(data)
            if last:
                if not self._dobj.eof:
                    raise ZstdCorrupt(block_at, "the frame does not end after its last block")
                self._frame_at = None
                self._dobj = None
        return b"".join(out)


class FrameLines:
    """Lines of a ``.zst`` recording (see the module docstring). Owns ``raw``."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.truncated_at: int | None = None
        self._stream = ZstdStream()
        self._out = b""
        self._pos = 0
        self._eof = False

    def _more(self) -> bool:
        """Add decompressed bytes to the output; False at the end of the input."""
        while True:
            data = self._stream.decode()
            if data:
                self._out = self._out[self._pos :] + data
                self._pos = 0
                return True
            if self._eof:
                self.truncated_at = self._stream.cut_frame
                return False
            chunk = self.raw.read(_READ)
            if chunk:
                self._stream.feed(chunk)
            else:
                self._eof = True

    def readline(self, limit: int = -1) -> bytes:
        """One line with its newline (at most ``limit`` bytes), b"" at the end."""
        while True:
            out, pos = self._out, self._pos
            cut = out.find(b"\n", pos)
            if cut >= 0 and (limit < 0 or cut + 1 - pos <= limit):
                self._pos = cut + 1
                return out[pos : cut + 1]
            if limit >= 0 and len(out) - pos >= limit:
                self._pos = pos + limit
                return out[pos : pos + limit]
            if not self._more():
                self._pos = len(out)
                return out[pos:]

    def close(self) -> None:
        self.raw.close()
