"""Streaming a recording: one pass, one line in memory at a time.

Contract: ``stream_session(path)`` gives a ``SessionStream``; entering it
opens the file and checks the header as ``load_session`` does; ``records()``
yields each record with the same checks per line (RecordingError naming the
first bad line; a torn last line skipped with a warning), without
``load_session``'s in-memory weight limit (``probetop export``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from probetop.probes.core.sample import Announce, Record
from probetop.probes.record.codec import RecordingError, decode_record
from probetop.probes.record.limits import MAX_PROBES, MAX_WEIGHT
from probetop.probes.record.linecheck import LineError, NotJson, _decode_body, _weight
from probetop.probes.record.rawlines import _end_warnings, _Lines, _open_lines, _rows
from probetop.probes.record.reader import _header_of

__all__ = ["SessionStream", "stream_session"]


class SessionStream:
    """A recording read one line at a time, for a consumer that needs one
    pass and no history (``probetop export``): memory stays one line,
    whatever the recording's length. The same checks as ``load_session``
    (header, every line, torn last line skipped with a warning), without
    its in-memory weight limit. Use as a context manager; ``header`` is read
    on entry, ``footer`` and ``warnings`` are known once ``records()`` is
    exhausted."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] = {}
        self.footer: dict[str, Any] | None = None
        self.warnings: list[str] = []
        self._file: _Lines | None = None
        self._rows: Iterator[tuple[int, bytes, bool]] | None = None

    def __enter__(self) -> SessionStream:
        p = self.path
        self._file = _open_lines(p)
        try:
            self._rows = _rows(self._file, p)
            self.header = _header_of(next(self._rows, None), p, weigh=True)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def header_probes(self) -> dict[str, dict[str, Any]]:
        return {p["id"]: p for p in self.header.get("probes", [])}

    def records(self) -> Iterator[tuple[float, Record]]:
        """(t seconds, record) in file order, header probes announced at t=0.
        Raises RecordingError (naming the line) at the first bad line."""
        if self._rows is None:
            raise RecordingError(f"{self.path}: the stream is not open")
        p = self.path
        for pid, info in self.header_probes().items():
            yield 0.0, Announce(pid, 0, info)
        probes = set(self.header_probes())
        skipped = 0
        torn: int | None = None
        rows = self._rows
        row = next(rows, None)
        while row is not None:
            number, raw, _ended = row
            following = next(rows, None)
            try:
                if self.footer is not None:
                    raise LineError("follows the footer (the footer is the last line)")
                line, kind, counted = _decode_body(raw)
                if counted:
                    _weight(line, MAX_WEIGHT)  # numbers too large
            except LineError as exc:
                if following is None and isinstance(exc, NotJson):
                    torn = number  # said with the end's other warnings
                    break
                raise RecordingError(f"{p}: line {number}: {exc}") from None
            if kind == "footer":
                self.footer = line
            elif kind:
                if kind == "probe":
                    probes.add(line["id"])
                    if len(probes) > MAX_PROBES:
                        raise RecordingError(f"{p}: line {number}: more than {MAX_PROBES} probes")
                record = decode_record(line)
                if record is not None:
                    yield float(line.get("t", 0.0)), record
            else:
                skipped += 1
            row = following
        if skipped:
            self.warnings.append(f"{p}: skipped {skipped} lines of a type this probetop ignores")
        self.warnings.extend(_end_warnings(p, self._file, torn, footer=self.footer is not None))


def stream_session(path: str | Path) -> SessionStream:
    """A ``SessionStream`` over ``path`` (enter it to open and check the header)."""
    return SessionStream(path)
