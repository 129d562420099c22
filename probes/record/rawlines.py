"""A recording's file opened and cut into rows and blocks of whole lines.

Contract: only a regular file on a storage filesystem is opened (``_open``,
checked on the open descriptor; a ``.zst`` one is decompressed whatever its
name: ``_open_lines``). ``_rows`` gives its lines one at a time and
``_chunks`` a block of whole lines at a time, then rows for the end of the
file; both cap every line at MAX_LINE_BYTES (the footer at
MAX_FOOTER_BYTES) and the file at MAX_FILE_BYTES while reading, and raise
RecordingError (never another exception) with a one-line message.
``_end_warnings`` says what the file's end tells (a torn last line, a cut
zstd frame, no footer). What the lines hold is checked by the readers
(``reader``, ``stream``), not here.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS
from probetop.probes.core.targetlock import holder
from probetop.probes.record.codec import RecordingError
from probetop.probes.record.limits import (
    _FOOTER_START,
    MAX_FILE_BYTES,
    MAX_FOOTER_BYTES,
    MAX_LINE_BYTES,
)
from probetop.probes.record.target import file_kind, filesystem_type
from probetop.probes.record.zst import FrameLines, ZstdCorrupt, is_zstd


def _open(p: Path) -> IO[bytes]:
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


class _Lines(Protocol):
    """What ``_rows`` reads: a binary file, or ``FrameLines`` over a .zst one."""

    def readline(self, limit: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


def _open_lines(p: Path) -> IO[bytes] | FrameLines:
    """The recording's lines: plain, or decompressed when the file starts
    with the zstandard magic number (whatever its name)."""
    f = _open(p)
    try:
        head = f.peek(4)[:4]  # type: ignore[attr-defined]
    except OSError as exc:
        f.close()
        raise RecordingError(f"{p}: cannot read: {exc.strerror}") from None
    return FrameLines(f) if is_zstd(head) else f


def _end_warnings(p: Path, f: _Lines | None, torn_line: int | None, footer: bool) -> list[str]:
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


def _rows(f: _Lines, p: Path, number: int = 0, total: int = 0) -> Iterator[Row]:
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
        elif len(raw) > MAX_LINE_BYTES and raw.startswith(_FOOTER_START):
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
    where the block reader hands a file over to ``_rows``."""

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
"""Lines checked together when a block could not be (``_Loader.block``)."""


@dataclass
class _Block:
    """Whole lines (``raws``, without their newlines), none of them the
    file's last line and none longer than MAX_LINE_BYTES; ``data`` holds
    them (and maybe more), for checks made on the whole at once."""

    first: int  # the first line's number
    raws: list[bytes]
    data: bytes

    def rows(self) -> list[Row]:
        first = self.first
        return [(first + i, raw, True) for i, raw in enumerate(self.raws)]


def _chunks(f: _Lines, p: Path, header_bytes: int) -> Iterator[_Block | tuple[list[Row], bool]]:
    """The body of a recording whose header (``header_bytes`` long) was read:
    ``_Block``s while the lines are plain (a read per BLOCK_BYTES, no Python
    work per line), then batches of rows from ``_rows``, with True for the
    one that ends the file.

    Rows take over for the end of the file (its last line may be torn) and
    for whatever is not plain: a long line (the footer may be one), a file
    about to pass MAX_FILE_BYTES (``_rows`` says where), a ``.zst`` one.
    Together they give exactly the rows ``_rows`` would give."""
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
                    break  # a long line: _rows refuses it or reads it as the footer
                continue
            first_end = buf.find(b"\n")
            if first_end > MAX_LINE_BYTES or cut - first_end - 1 > MAX_LINE_BYTES:
                break  # the block may hold a long line
            raws = buf.split(b"\n")
            held = raws[-2:]  # the whole line held back, and the start of the next
            del raws[-2:]
            yield _Block(number + 1, raws, buf)
            number += len(raws)
            total += cut + 1
            buf = b"\n".join(held)
        f = _Rest(buf, f)
    pending: list[Row] = []
    for row in _rows(f, p, number, total):
        pending.append(row)
        if len(pending) > BATCH_LINES:  # one held back: is it the last line?
            yield pending[:-1], False
            del pending[:-1]
    yield pending, True
