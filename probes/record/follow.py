"""Following a recording that is still being written (``probetop attach``).

Contract:
- ``RecordingFollower(path).poll()`` returns the (t seconds, record) pairs of
  the whole lines added since the last call; the first call returns the
  header's probes (announced at t=0) and everything written so far. A line
  without its newline yet is kept back until the writer finishes it, so a
  record is never returned twice nor cut.
- Every line passes the reader's checks (``reader._check_header`` /
  ``_check_line``); a bad whole line raises RecordingError naming it.
- ``footer`` is set once the footer line arrived: the session ended.
- Reads at most ``max_bytes`` (default ``MAX_POLL_BYTES``) per call, so one
  call stays short even on a long history; call again until ``caught_up``.
- ``tail(max_bytes)`` reads, without moving the follower, the header's
  probes and the whole lines in the file's last ``max_bytes``: a quick
  picture of the newest records for a first frame.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from probetop.probes.core.sample import Announce, Record
from probetop.probes.record.codec import RecordingError, decode_record
from probetop.probes.record.reader import (
    MAX_LINE_BYTES,
    LineError,
    _check_header,
    _check_line,
    _open,
    _parse,
)

MAX_POLL_BYTES = 64 << 20


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

    def close(self) -> None:
        self._file.close()

    def poll(self, max_bytes: int = MAX_POLL_BYTES) -> list[tuple[float, Record]]:
        """Records of the whole lines written since the last call (see above)."""
        try:
            chunk = self._file.read(max_bytes)
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read: {exc.strerror}") from None
        chunk = chunk or b""
        self.caught_up = len(chunk) < max_bytes
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        footer = self._partial.startswith(b'{"type":"footer"')
        if len(self._partial) > MAX_LINE_BYTES and not footer:
            raise RecordingError(f"{self.path}: line {self._line_no + 1} is too long")
        out: list[tuple[float, Record]] = []
        for raw in data[:cut].split(b"\n")[:-1]:
            self._line_no += 1
            out.extend(self._line(raw))
        return out

    def _line(self, raw: bytes) -> list[tuple[float, Record]]:
        where = f"{self.path}: line {self._line_no}"
        try:
            line = _parse(raw)
            if self.header is None:
                self.header = _check_header(line)
                return [(0.0, Announce(p["id"], 0, p)) for p in self.header.get("probes", [])]
            if self.footer is not None:
                raise LineError("follows the footer (the footer is the last line)")
            kind = _check_line(line)
        except LineError as exc:
            raise RecordingError(f"{where}: {exc}") from None
        if kind == "footer":
            self.footer = line
            return []
        record = decode_record(line) if kind else None
        return [] if record is None else [(float(line.get("t", 0.0)), record)]

    def tail(self, max_bytes: int) -> list[tuple[float, Record]]:
        """The header's probes and the records of the last ``max_bytes`` (see above)."""
        peek = RecordingFollower(self.path)
        try:
            f = peek._file
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
