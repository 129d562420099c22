"""Following a recording that is still being written (``probetop attach``).

Contract:
- ``RecordingFollower(path).poll()`` returns the (t seconds, record) pairs of
  the whole lines added since the last call; the first call returns the
  header's probes (announced at t=0) and everything written so far. A line
  without its newline yet is kept back until the writer finishes it, so a
  record is never returned twice nor cut.
- Every line passes the reader's checks (``linecheck._check_header`` /
  ``_check_line``); a bad whole line raises RecordingError naming it.
- ``footer`` is set once the footer line arrived: the session ended.
- Reads at most ``max_bytes`` (default ``MAX_POLL_BYTES``) per call, so one
  call stays short even on a long history; call again until ``caught_up``.
- ``tail(max_bytes)`` reads, without moving the follower, the header's
  probes and the whole lines in the file's last ``max_bytes``: a quick
  picture of the newest records for a first frame.
- A ``.zst`` recording (told by its magic number) is followed the same way
  over its decompressed lines: every whole block is decoded as it arrives
  (the writer ends one per flush), ``max_bytes`` counts compressed bytes, a
  poll decompresses at most ``MAX_POLL_BYTES`` per call's worth of whole
  blocks, and a corrupted block raises RecordingError naming its offset.
  ``tail`` decodes the whole file (blocks cannot be entered mid-frame).
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probetop.probes.core.sample import Announce, Record
from probetop.probes.record.codec import RecordingError, decode_record
from probetop.probes.record.limits import MAX_LINE_BYTES
from probetop.probes.record.linecheck import LineError, _check_header, _decode_body, _parse
from probetop.probes.record.rawlines import _open
from probetop.probes.record.zst import ZstdCorrupt, ZstdStream, is_zstd

MAX_POLL_BYTES = 64 << 20


@dataclass
class DecodedLine:
    """What one line added: its records, and the header/footer known after it."""

    records: list[tuple[float, Record]]
    header: dict[str, Any] | None
    footer: dict[str, Any] | None


def decode_line(
    raw: bytes, header: dict[str, Any] | None, footer: dict[str, Any] | None, where: str
) -> DecodedLine:
    """Check and decode one raw line of a recording read in order: the first
    is the header (its probes announced at t=0), nothing may follow the
    footer. RecordingError naming ``where`` for a bad line."""
    try:
        if len(raw) > MAX_LINE_BYTES and not raw.startswith(b'{"type":"footer"'):
            raise LineError("is too long")
        if header is None:
            header = _check_header(_parse(raw))
            announced = [(0.0, Announce(p["id"], 0, p)) for p in header.get("probes", [])]
            return DecodedLine(announced, header, footer)
        if footer is not None:
            raise LineError("follows the footer (the footer is the last line)")
        line, kind, _counted = _decode_body(raw)
    except LineError as exc:
        raise RecordingError(f"{where}: {exc}") from None
    if kind == "footer":
        return DecodedLine([], header, line)
    record = decode_record(line) if kind else None
    records = [] if record is None else [(float(line.get("t", 0.0)), record)]
    return DecodedLine(records, header, footer)


class RecordingFollower:
    """Whole new lines of a growing recording, one ``poll`` at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] | None = None
        self.footer: dict[str, Any] | None = None
        self.caught_up = False
        self._file = _open(self.path)  # a regular file on storage, or RecordingError
        self._partial = b""
        self._line_no = 0
        self._zstd: ZstdStream | None = None
        self._kind_known = False

    def close(self) -> None:
        self._file.close()

    def poll(self, max_bytes: int = MAX_POLL_BYTES) -> list[tuple[float, Record]]:
        """Records of the whole lines written since the last call (see above)."""
        out: list[tuple[float, Record]] = []
        for raw in self.poll_lines(max_bytes):
            self._line_no += 1
            out.extend(self._line(raw))
        return out

    def poll_lines(self, max_bytes: int = MAX_POLL_BYTES) -> list[bytes]:
        """The raw whole lines (without their newline, decompressed, not yet
        checked) written since the last call: what ``probetop follow`` sends
        to a remote view, which checks them with a ``LineDecoder``."""
        try:
            chunk = self._file.read(max_bytes)
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read: {exc.strerror}") from None
        chunk = chunk or b""
        self.caught_up = len(chunk) < max_bytes
        chunk = self._decompress(chunk)
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        lines = data[:cut].split(b"\n")[:-1]
        footer = self._partial.startswith(b'{"type":"footer"')
        if len(self._partial) > MAX_LINE_BYTES and not footer:
            # numbered after the whole lines before it (was: the first of this read)
            raise RecordingError(f"{self.path}: line {self._line_no + len(lines) + 1} is too long")
        return lines

    def _decompress(self, chunk: bytes) -> bytes:
        """``chunk`` as lines: itself, or the whole blocks of a .zst recording."""
        if not self._kind_known:
            if self._file.tell() - len(chunk) == 0 and len(chunk) < 4:
                self._file.seek(0)  # too short to tell yet: read it again next time
                return b""
            self._kind_known = True
            if is_zstd(chunk[:4]):
                self._zstd = ZstdStream()
        if self._zstd is None:
            return chunk
        self._zstd.feed(chunk)
        out = []
        total = 0
        try:
            while data := self._zstd.decode():
                out.append(data)
                total += len(data)
                if total > MAX_POLL_BYTES:
                    raise RecordingError(f"{self.path}: more than 64 MiB in one poll")
        except ZstdCorrupt as exc:
            raise RecordingError(f"{self.path}: {exc}") from None
        return b"".join(out)

    def _line(self, raw: bytes) -> list[tuple[float, Record]]:
        out = decode_line(raw, self.header, self.footer, f"{self.path}: line {self._line_no}")
        self.header, self.footer = out.header, out.footer
        return out.records

    def tail(self, max_bytes: int) -> list[tuple[float, Record]]:
        """The header's probes and the records of the last ``max_bytes`` (see above)."""
        peek = RecordingFollower(self.path)
        try:
            f = peek._file
            if is_zstd(f.peek(4)[:4]):  # type: ignore[attr-defined]
                return self._zstd_tail(peek, max_bytes)
            header = f.readline(MAX_LINE_BYTES + 1)
            start = f.tell()
            end = os.fstat(f.fileno()).st_size
            if end - max_bytes > start:
                f.seek(end - max_bytes - 1)
                f.readline()  # the rest of a line cut by the seek
            body = f.read(max(0, end - f.tell()))
            body = body[: body.rfind(b"\n") + 1]
            out = peek._line(header.rstrip(b"\n"))
            for raw in body.split(b"\n")[:-1]:
                if not raw.startswith(b'{"type":"footer"'):
                    out.extend(peek._line(raw))
            return out
        finally:
            peek.close()

    @staticmethod
    def _zstd_tail(peek: RecordingFollower, max_bytes: int) -> list[tuple[float, Record]]:
        """``tail`` of a .zst recording: decode it all, keep the last lines."""
        kept: deque[bytes] = deque()
        size = 0
        header: bytes | None = None
        partial = b""
        while True:
            chunk = peek._file.read(1 << 20)
            data = partial + peek._decompress(chunk or b"")
            cut = data.rfind(b"\n") + 1
            partial = data[cut:]
            if len(partial) > MAX_LINE_BYTES and not partial.startswith(b'{"type":"footer"'):
                raise RecordingError(f"{peek.path}: a line is too long")
            for raw in data[:cut].split(b"\n")[:-1]:
                if header is None:
                    header = raw
                    continue
                if raw.startswith(b'{"type":"footer"'):
                    continue
                kept.append(raw)
                size += len(raw) + 1
                while size > max_bytes and kept:
                    size -= len(kept.popleft()) + 1
            if not chunk:
                break
        if header is None:
            return []
        out = peek._line(header)
        for raw in kept:
            out.extend(peek._line(raw))
        return out

    @property
    def size(self) -> int:
        """Bytes read so far."""
        return self._file.tell() if not self._file.closed else 0

    def __enter__(self) -> RecordingFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def file_size(path: str | Path) -> int:
    """The recording's size in bytes (0 if it is gone)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
