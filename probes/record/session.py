"""A recording read into memory, and the records a replay makes of it.

Contract: ``Session`` holds the checked header, body lines and footer of one
recording (``reader.load_session`` / ``SessionLoader`` build it; every line
in it passed the reader's checks). A body line is a read-only ``Mapping``
equal to the dict ``json.loads`` gives (the fast path keeps its decoded
objects: ``fastpath._Line``); do not change one. ``Session.records()`` rebuilds
``Announce``/``Sample``/``Status`` records with ``t_ns`` relative to the
session start, so panes built for live data show a replay unchanged. It is a
``RecordSequence``: each record is made when read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from probetop.probes.core.sample import Announce, Record
from probetop.probes.record.codec import (
    decode_record,
    probe_info,
)


@dataclass
class Session:
    """A recording read into memory."""

    path: Path
    header: dict[str, Any]
    lines: list[Mapping[str, Any]]
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
    def assertions(self) -> list[dict[str, Any]]:
        """The ``--assert`` outcomes the footer stores (none in older recordings)."""
        return list((self.footer or {}).get("assertions", []))

    @property
    def duration_s(self) -> float:
        if self.footer and self.footer.get("duration_s") is not None:
            return float(self.footer["duration_s"])
        return max((float(line.get("t", 0.0)) for line in self.lines), default=0.0)

    def samples(self, probe_id: str | None = None) -> list[Mapping[str, Any]]:
        return [
            line
            for line in self.lines
            if line.get("type") == "sample" and (probe_id is None or line["probe"] == probe_id)
        ]

    def records(self) -> RecordSequence:
        """(t seconds, record) in file order; header probes are announced at t=0.
        A sequence whose records are made when they are read (a replay's
        first frame needs the first few of an hour's)."""
        announced = [(0.0, Announce(pid, 0, info)) for pid, info in self.header_probes().items()]
        return RecordSequence(announced, self.lines)

    def header_probes(self) -> dict[str, dict[str, Any]]:
        return {p["id"]: p for p in self.header.get("probes", [])}


_RECORD_TYPES = frozenset({"sample", "status", "probe"})


class RecordSequence(Sequence[tuple[float, Record]]):
    """``Session.records()``: the header's announcements, then one record
    per sample, status or probe line (validated when read), each made from
    its line when it is read. ``times`` are all the time stamps,
    without making any record."""

    def __init__(
        self, announced: list[tuple[float, Record]], lines: list[Mapping[str, Any]]
    ) -> None:
        self._announced = announced
        self._lines: list[Mapping[str, Any]] = []
        self.add(lines)

    def add(self, lines: Sequence[Mapping[str, Any]]) -> list[float]:
        """Append the records of more lines (a recording still being read,
        ``SessionLoader``); their time stamps."""
        # load_session keeps only these; a Session made by hand may hold others,
        # which (as decode_record says) make no record.
        kept = [line for line in lines if line.get("type") in _RECORD_TYPES]
        self._lines.extend(kept)
        return [float(x.get("t", 0.0)) for x in kept]

    @property
    def times(self) -> list[float]:
        return [t for t, _r in self._announced] + [float(x.get("t", 0.0)) for x in self._lines]

    def __len__(self) -> int:
        return len(self._announced) + len(self._lines)

    def _make(self, i: int) -> tuple[float, Record]:
        if i < len(self._announced):
            return self._announced[i]
        line = self._lines[i - len(self._announced)]
        record = decode_record(line)
        assert record is not None  # a sample, status or probe line makes one
        return float(line.get("t", 0.0)), record

    @overload
    def __getitem__(self, index: int) -> tuple[float, Record]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[float, Record]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._make(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._make(index)

    def __iter__(self) -> Iterator[tuple[float, Record]]:
        for i in range(len(self)):
            yield self._make(i)
