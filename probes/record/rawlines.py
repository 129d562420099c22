"""A recording's file opened and cut into whole lines, plain or zstandard.

Contract:
- ``open_recording(p)`` opens only a regular file on a storage filesystem
  (checked on the open descriptor, opened non-blocking): a FIFO, a device, a
  socket, a directory or a kernel file (``/proc``, ``/sys``) is refused with
  RecordingError before a byte is read. ``open_lines(p)`` is the same file
  as a ``LineSource``: decompressed when it starts with the zstandard magic
  number (``is_zstd``), whatever its name.
- ``read_rows`` gives its lines one ``Row`` at a time and ``read_chunks`` a
  ``Block`` of whole lines at a time, then batches of rows for the end of the
  file; both cap every line at ``MAX_LINE_BYTES`` (a footer, which starts
  with ``FOOTER_START``, at ``MAX_FOOTER_BYTES``) and the file at
  ``MAX_FILE_BYTES`` while reading, and raise RecordingError (never another
  exception) with a one-line message.
- ``end_warnings`` says what the file's end tells (a torn last line, a cut
  zstd frame, no footer; of a file a probetop still writes, that it does).
- What the lines hold is checked by ``linecheck``, not here.

The zstandard side (format of a ``.zst`` recording):
- A ``.zst`` recording is a sequence of standard zstandard frames (RFC 8878;
  ``zstdcat`` reads it). The writer ends a *block* at every flush (so every
  flush is decodable on its own terms, and a block holds whole lines) and a
  *frame* every ``ZSTD_FRAME_S`` seconds or ``ZSTD_FRAME_RAW`` bytes, with a
  content checksum (``zstdfile``).
- ``ZstdStream`` decodes fed bytes one whole block at a time, walking the
  block headers itself: a block holds at most 128 KiB, so ``decode(limit)``
  never makes more than ``limit`` + 128 KiB of output at once, whatever the
  input (a small "zst bomb" costs no memory; the readers cap the total).
  Bytes that cannot be a frame (bad magic, reserved block type, a block that
  does not decode, a checksum mismatch) raise ``ZstdCorrupt`` naming the
  byte offset of the block (or frame header) where decoding failed.
  ``cut_frame`` is the offset of a frame that the input ended inside (a
  kill -9 mid-run): its whole blocks were decoded.
- ``FrameLines`` is the ``LineSource`` of a ``.zst`` file: ``readline(limit)``
  as on a binary file; ``truncated_at`` holds ``cut_frame`` at the end.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS, file_kind, filesystem_type
from probetop.probes.core.targetlock import holder
from probetop.probes.record.codec import RecordingError

MAX_LINE_BYTES = 1 << 20
"""Longest line read (1 MiB): a sample or status line is a few KiB."""
MAX_FOOTER_BYTES = 64 << 20
"""Longest footer line: the footer holds every probe's summary, which grows
with the run (per-interval rows: 2.4 MB after an hour of `probetop demo`);
64 MiB is over a day of it. Only a line that starts as a footer
(``FOOTER_START``) may be this long, so a hostile file still costs at most
1 MiB per line until then."""
FOOTER_START = b'{"type":"footer"'
"""How the writer starts a footer line (the one line allowed past MAX_LINE_BYTES)."""
MAX_FILE_BYTES = 256 << 20
"""Largest recording read (256 MiB of lines, decompressed: about 9 hours of
`probetop demo`)."""


def open_recording(p: Path) -> IO[bytes]:
    """The recording opened for reading; only a regular file is accepted."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise RecordingError(f"{p}: no such file") from None
    except OSError as exc:
        raise RecordingError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise RecordingError(f"{p}: is a directory, not a recording")
        if not stat.S_ISREG(st.st_mode):
            raise RecordingError(f"{p}: is {file_kind(st.st_mode)}, not a recording file")
        if st.st_size > MAX_FILE_BYTES:
            raise RecordingError(_too_big(p, st.st_size))
        # Reading some kernel files has side effects (/proc/kmsg takes the
        # messages from syslog) or never ends: never read one.
        fstype = filesystem_type(os.path.dirname(os.path.realpath(p)) or ".")
        if fstype in PSEUDO_FILESYSTEMS:
            raise RecordingError(f"{p}: is on a {fstype} filesystem, not a recording file")
        return os.fdopen(fd, "rb", buffering=1 << 16)
    except BaseException:
        os.close(fd)
        raise


class LineSource(Protocol):
    """What ``read_rows`` reads: a binary file, or ``FrameLines`` over a .zst one."""

    def readline(self, limit: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


def open_lines(p: Path) -> IO[bytes] | FrameLines:
    """The recording's lines: plain, or decompressed when the file starts
    with the zstandard magic number (whatever its name)."""
    f = open_recording(p)
    try:
        head = f.peek(4)[:4]  # type: ignore[attr-defined]
    except OSError as exc:
        f.close()
        raise RecordingError(f"{p}: cannot read: {exc.strerror}") from None
    return FrameLines(f) if is_zstd(head) else f


def end_warnings(p: Path, f: LineSource | None, torn_line: int | None, footer: bool) -> list[str]:
    """What the end of a recording tells: a torn last line or a truncated last
    zstd frame skipped, no footer. While a probetop still writes the file
    (it holds the file's lock) those are no accident, only where the writer
    has got to, so one note says that instead: "the session ended without
    closing the file" was said of a session still running."""
    cut_at = getattr(f, "truncated_at", None) if f is not None else None
    if footer and torn_line is None and cut_at is None:
        return []
    if not footer:
        writer = holder(os.path.realpath(p))
        if writer is not None:
            return [f"{p}: still being recorded by {writer}; read as far as it has written"]
    out = []
    if torn_line is not None:
        out.append(f"{p}: skipped a torn last line (line {torn_line}); the recording was cut off")
    if cut_at is not None:
        out.append(
            f"{p}: skipped a truncated last zstd frame (at byte {cut_at}); "
            "the recording was cut off"
        )
    if not footer:
        out.append(f"{p}: no footer; the session ended without closing the file")
    return out


def _size(n: float) -> str:
    return f"{n / (1 << 20):,.0f} MiB" if n >= 1 << 20 else f"{n / 1024:,.0f} KiB"


def _too_big(p: Path, size: int | None) -> str:
    # size None: found while reading (a .zst's decompressed lines, a growing file)
    what = _size(size) if size is not None else f"more than {_size(MAX_FILE_BYTES)} of lines"
    return (
        f"{p}: is {what}; probetop reads recordings up to {_size(MAX_FILE_BYTES)} "
        "(split it with `split -l`, keeping line 1, the header, at the top of each part)"
    )


Row = tuple[int, bytes, bool]
"""(line number, bytes without the newline, ended by a newline)."""


def read_rows(f: LineSource, p: Path, number: int = 0, total: int = 0) -> Iterator[Row]:
    """The lines after the first ``number`` (``total`` bytes) as rows, with
    every line and the file's total (decompressed) size capped while reading."""
    while True:
        try:
            raw = f.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            raise RecordingError(f"{p}: cannot read line {number + 1}: {exc.strerror}") from None
        except ZstdCorrupt as exc:
            raise RecordingError(f"{p}: {exc}") from None
        if not raw:
            return
        number += 1
        total += len(raw)
        if total > MAX_FILE_BYTES:
            raise RecordingError(_too_big(p, None))
        if raw.endswith(b"\n"):
            yield number, raw[:-1], True
        elif len(raw) > MAX_LINE_BYTES and raw.startswith(FOOTER_START):
            try:
                rest = f.readline(MAX_FOOTER_BYTES - len(raw) + 1)
            except OSError as exc:
                raise RecordingError(f"{p}: cannot read line {number}: {exc.strerror}") from None
            except ZstdCorrupt as exc:
                raise RecordingError(f"{p}: {exc}") from None
            raw += rest
            total += len(rest)
            if total > MAX_FILE_BYTES:
                raise RecordingError(_too_big(p, None))
            if raw.endswith(b"\n"):
                yield number, raw[:-1], True
            elif len(raw) > MAX_FOOTER_BYTES:
                raise RecordingError(
                    f"{p}: line {number} (the footer) is longer than {_size(MAX_FOOTER_BYTES)}"
                )
            else:
                yield number, raw, False
        elif len(raw) > MAX_LINE_BYTES:
            raise RecordingError(
                f"{p}: line {number} is longer than {_size(MAX_LINE_BYTES)} "
                "(not a probetop recording, or a corrupted one)"
            )
        else:
            yield number, raw, False


class _Rest:
    """``readline`` over bytes already read (``buf``), then the rest of ``f``:
    where the block reader hands a file over to ``read_rows``."""

    def __init__(self, buf: bytes, f: IO[bytes]) -> None:
        self.buf = buf
        self.f = f

    def readline(self, limit: int = -1, /) -> bytes:
        buf = self.buf
        if not buf:
            return self.f.readline(limit)
        cut = buf.find(b"\n", 0, limit if limit >= 0 else len(buf))
        if cut >= 0:
            self.buf = buf[cut + 1 :]
            return buf[: cut + 1]
        if 0 <= limit <= len(buf):
            self.buf = buf[limit:]
            return buf[:limit]
        self.buf = b""
        return buf + self.f.readline(limit - len(buf) if limit >= 0 else -1)

    def close(self) -> None:
        self.f.close()


BLOCK_BYTES = 1 << 18
"""Bytes read at a time by the block reader; at most MAX_LINE_BYTES, so that
a line inside one block is never too long."""
BATCH_LINES = 64
"""Lines checked together when a block could not be (the reader's loader)."""


@dataclass
class Block:
    """Whole lines (``raws``, without their newlines), none of them the
    file's last line and none longer than MAX_LINE_BYTES; ``data`` holds
    them (and maybe more), for checks made on the whole at once."""

    first: int  # the first line's number
    raws: list[bytes]
    data: bytes

    def rows(self) -> list[Row]:
        first = self.first
        return [(first + i, raw, True) for i, raw in enumerate(self.raws)]


def read_chunks(
    f: LineSource, p: Path, header_bytes: int
) -> Iterator[Block | tuple[list[Row], bool]]:
    """The body of a recording whose header (``header_bytes`` long) was read:
    ``Block``s while the lines are plain (a read per BLOCK_BYTES, no Python
    work per line), then batches of rows from ``read_rows``, with True for the
    one that ends the file.

    Rows take over for the end of the file (its last line may be torn) and
    for whatever is not plain: a long line (the footer may be one), a file
    about to pass MAX_FILE_BYTES (``read_rows`` says where), a ``.zst`` one.
    Together they give exactly the rows ``read_rows`` would give."""
    number, total = 1, header_bytes  # lines and bytes given so far
    if isinstance(f, io.BufferedReader):
        buf = b""
        while True:
            try:
                chunk = f.read(BLOCK_BYTES)
            except OSError as exc:
                why = exc.strerror
                raise RecordingError(f"{p}: cannot read line {number + 1}: {why}") from None
            if not chunk:
                break
            buf = buf + chunk if buf else chunk
            if total + len(buf) > MAX_FILE_BYTES:
                break
            end = buf.rfind(b"\n")
            # Hold the last whole line back: it may be the file's last.
            cut = buf.rfind(b"\n", 0, end) if end > 0 else -1
            if cut < 0:
                if len(buf) > MAX_LINE_BYTES:
                    break  # a long line: read_rows refuses it or reads it as the footer
                continue
            first_end = buf.find(b"\n")
            if first_end > MAX_LINE_BYTES or cut - first_end - 1 > MAX_LINE_BYTES:
                break  # the block may hold a long line
            raws = buf.split(b"\n")
            held = raws[-2:]  # the whole line held back, and the start of the next
            del raws[-2:]
            yield Block(number + 1, raws, buf)
            number += len(raws)
            total += cut + 1
            buf = b"\n".join(held)
        f = _Rest(buf, f)
    pending: list[Row] = []
    for row in read_rows(f, p, number, total):
        pending.append(row)
        if len(pending) > BATCH_LINES:  # one held back: is it the last line?
            yield pending[:-1], False
            del pending[:-1]
    yield pending, True


# -- zstandard -----------------------------------------------------------------
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
