"""Reading recordings back: validation, torn-line tolerance, and a player.

Contract:
- ``load_session(path)`` returns a ``Session`` or raises RecordingError with a
  one-line message (missing file, not a recording, newer schema).
- A torn last line (a kill -9 mid-write) is skipped and reported in
  ``Session.warnings``; a bad line elsewhere is an error, because it means the
  file was edited or corrupted, not interrupted.
- ``Session.records()`` rebuilds ``Announce``/``Sample``/``Status`` records with
  ``t_ns`` relative to the session start, so panes built for live data show a
  replay unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probetop.probes.core.sample import Announce, Record
from probetop.probes.record.codec import RecordingError, check_header, decode_record, probe_info


@dataclass
class Session:
    """A recording read into memory."""

    path: Path
    header: dict[str, Any]
    lines: list[dict[str, Any]]
    footer: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)

    @property
    def probes(self) -> dict[str, dict[str, Any]]:
        """Probe descriptions by id: the header's, then any added later."""
        found = self.header_probes()
        for line in self.lines:
            if line.get("type") == "probe":
                found[line["id"]] = probe_info(line)
        return found

    @property
    def duration_s(self) -> float:
        if self.footer and self.footer.get("duration_s") is not None:
            return float(self.footer["duration_s"])
        return max((float(line.get("t", 0.0)) for line in self.lines), default=0.0)

    def samples(self, probe_id: str | None = None) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines
            if line.get("type") == "sample" and (probe_id is None or line["probe"] == probe_id)
        ]

    def records(self) -> Iterator[tuple[float, Record]]:
        """(t seconds, record) in file order; header probes are announced at t=0."""
        for pid, info in self.header_probes().items():
            yield 0.0, Announce(pid, 0, info)
        for line in self.lines:
            record = decode_record(line)
            if record is not None:
                yield float(line.get("t", 0.0)), record

    def header_probes(self) -> dict[str, dict[str, Any]]:
        return {p["id"]: p for p in self.header.get("probes", [])}


def load_session(path: str | Path) -> Session:
    """Read and check a recording. See the module docstring for the rules."""
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"{p}: no such file")
    if p.is_dir():
        raise RecordingError(f"{p}: is a directory, not a recording")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise RecordingError(f"{p}: cannot read: {exc.strerror}") from exc
    text = raw.decode("utf-8", errors="replace")
    rows = text.split("\n")
    torn_tail = rows[-1] != ""  # a complete file ends with a newline
    rows = rows[:-1] if not torn_tail else rows
    if not rows or not rows[0].strip():
        raise RecordingError(f"{p}: empty file, not a probetop recording")
    try:
        header = json.loads(rows[0])
    except json.JSONDecodeError:
        raise RecordingError(f"{p}: not a probetop recording (first line is not JSON)") from None
    header = check_header(header, str(p))
    session = Session(path=p, header=header, lines=[], footer=None)
    body = rows[1:]
    for number, row in enumerate(body, start=2):
        last = number == len(body) + 1
        try:
            obj = json.loads(row)
        except json.JSONDecodeError:
            if last:
                session.warnings.append(
                    f"{p}: skipped a torn last line (line {number}); the recording was cut off"
                )
                break
            raise RecordingError(f"{p}: line {number} is not valid JSON") from None
        if obj.get("type") == "footer":
            session.footer = obj
        else:
            session.lines.append(obj)
    if session.footer is None:
        session.warnings.append(f"{p}: no footer; the session ended without closing the file")
    return session
