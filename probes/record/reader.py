"""Reading a recording back: the ``Session``, and the four ways to read one.

The file is opened and cut into whole lines by ``rawlines`` (plain or
zstandard); each line is checked and decoded by ``linecheck`` (a block of
sample and status lines at once by ``fastpath``); the line layout and the
records are ``codec``'s. This module turns checked lines into sessions and
records:

- ``load_session(path)`` returns a ``Session`` or raises RecordingError with a
  one-line message; never another exception, whatever the file holds.
  ``SessionLoader`` is the same, a step at a time (a replay shows a long
  recording's head while it reads the rest); ``load_session`` is one run of
  it to the end.
- ``stream_session(path)``: a ``SessionStream``, the same checks one line at
  a time, in constant memory (``probetop export``).
- ``RecordingFollower``: the same checks over a recording still being
  written, whole new lines at each ``poll`` (``probetop attach``);
  ``decode_line``: one line's checks and records, for a reader that gets the
  lines another way (a remote view over SSH).

What every way shares:
- Only a regular file on a storage filesystem is read (``rawlines.open_recording``):
  a FIFO, a device (``/dev/zero``), a socket, a directory or a kernel file
  (``/proc/kmsg`` would take the kernel's messages from syslog) is refused
  before a byte is read.
- Memory is bounded whatever the input: a line longer than
  ``rawlines.MAX_LINE_BYTES`` is refused as soon as that many bytes have
  been read, a file larger than ``rawlines.MAX_FILE_BYTES`` is refused, and
  the parsed lines a ``Session`` keeps may weigh at most
  ``linecheck.MAX_WEIGHT`` in all.
- Every line is validated: the types of every field the reader, the report
  and the panes use (``t`` a finite number, ``values`` a mapping of strings to
  finite numbers or null, ``probe`` / ``level`` / ``message`` strings,
  ``extra`` / ``params`` mappings...). The first bad line is named by number:
  ``FILE: line N: 't' is not a finite number``.
- A torn last line (a kill -9 or a full disk mid-write) is skipped and
  reported in ``warnings`` (with a truncated last zstd frame and a missing
  footer; of a file a probetop is still recording, which it holds the lock
  of, one note says so instead: ``rawlines.end_warnings``); a bad line
  elsewhere is an error, because it means the file was edited or corrupted,
  not interrupted.
- Two paths, one verdict: ``load_session`` reads blocks (then 64-line
  batches) of sample and status lines through ``fastpath.decode_block``
  (msgspec, checked in C; the decoded objects kept as read-only mappings,
  ``extra`` as a checked ``LazyExtra``), other lines through
  ``linecheck.decode_body`` (orjson); whatever those cannot vouch for is
  read by the reference path (``json``, ``linecheck.check_line``,
  ``linecheck.weight``), which names the bad line. Both accept the same
  lines with the same content (tests/record/test_record_fast_paths.py,
  test_record_blocks.py).
- A ``Session``'s body line is a read-only ``Mapping`` equal to the dict
  ``json.loads`` gives; do not change one. ``Session.records()`` rebuilds
  ``Announce``/``Sample``/``Status``/``SeriesEnded`` records with ``t_ns``
  relative to the session start, so panes built for live data show a replay
  unchanged. ``Session.series_ends`` lists the recording's ``SeriesEnded``
  (none in recordings made before them).
"""

from __future__ import annotations

import contextlib
import gc
import os
import shlex
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from probetop.probes.core.sample import Announce, Record, SeriesEnded
from probetop.probes.record.codec import RecordingError, decode_record, probe_info
from probetop.probes.record.linecheck import (
    MAX_PROBES,
    MAX_WEIGHT,
    KeyTable,
    LineError,
    NotJson,
    check_header,
    decode_body,
    parse,
    weight,
    weight_bound,
)
from probetop.probes.record.rawlines import (
    BATCH_LINES,
    FOOTER_START,
    MAX_LINE_BYTES,
    Block,
    LineSource,
    Row,
    ZstdCorrupt,
    ZstdStream,
    end_warnings,
    is_zstd,
    open_lines,
    open_recording,
    read_chunks,
    read_rows,
)

__all__ = [
    "MAX_POLL_BYTES",
    "STEP_BYTES",
    "DecodedLine",
    "RecordSequence",
    "RecordingFollower",
    "Session",
    "SessionLoader",
    "SessionStream",
    "decode_line",
    "load_session",
    "stream_session",
]


# -- the session ------------------------------------------------------------------


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

    @property
    def series_ends(self) -> list[SeriesEnded]:
        """Every ``series_end`` line's record, in file order (``t_ns`` relative
        to the start); empty for recordings made before them."""
        out = []
        for line in self.lines:
            if line.get("type") == "series_end":
                record = decode_record(line)
                assert isinstance(record, SeriesEnded)
                out.append(record)
        return out

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


_RECORD_TYPES = frozenset({"sample", "status", "probe", "series_end"})


class RecordSequence(Sequence[tuple[float, Record]]):
    """``Session.records()``: the header's announcements, then one record
    per sample, status, probe or series_end line (validated when read), each made from
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
        assert record is not None  # a sample, status, probe or series_end line makes one
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


# -- load_session and SessionLoader: a Session in memory -----------------------------


def load_session(path: str | Path) -> Session:
    """Read and check a recording. See the module docstring for the rules."""
    with SessionLoader(path) as loader:
        return loader.finish()


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a recording is read: the lines
    make no cycles, so its passes over the growing heap (a sixth of the
    time) would free nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def decode_block(
    raws: list[bytes], data: bytes | None = None
) -> tuple[list[Mapping[str, Any]], int] | None:
    """``fastpath.decode_block``, imported when a recording is first read
    (msgspec and its decoder cost 12 ms that ``--version`` need not pay)."""
    from probetop.probes.record import fastpath

    return fastpath.decode_block(raws, data)


class _Loader:
    """The body lines of one recording read into a ``Session``: a block at a
    time on the fast path, then (for a block it cannot vouch for) a batch at
    a time, and a line at a time on the reference path for a batch that
    still fails, which names the bad line."""

    def __init__(self, p: Path, header: dict[str, Any]) -> None:
        self.p = p
        self.header = header
        self.session = Session(path=p, header=header, lines=[], footer=None)
        try:
            self.budget = MAX_WEIGHT - weight(header, MAX_WEIGHT)
        except LineError as exc:
            raise RecordingError(f"{p}: line 1: {exc}") from None
        self.exact = False  # True once the bounds ran out: every weight counted exactly
        self.keys = KeyTable()
        self.probes = {info["id"] for info in header.get("probes", [])}
        self.skipped = 0
        self.done = False  # a torn last line was skipped
        self.torn_line: int | None = None  # its number

    def _fast(self, raws: list[bytes], data: bytes | None = None) -> bool:
        """Keep ``raws`` if the fast path vouches for them all; False if not."""
        if self.exact or self.session.footer is not None:
            return False
        fast = decode_block(raws, data)
        if fast is None:
            return False
        lines, bound = fast
        if self.budget - bound < 0:
            self._count_exactly()  # then the lines are read again, one at a time
            return False
        self.budget -= bound
        self.session.lines.extend(lines)
        return True

    def block(self, block: Block) -> None:
        """Read a block of lines (none of them the file's last)."""
        if self._fast(block.raws, block.data):
            return
        rows = block.rows()
        for at in range(0, len(rows), BATCH_LINES):
            self.batch(rows[at : at + BATCH_LINES], last=False)

    def batch(self, rows: list[Row], *, last: bool) -> None:
        """Read ``rows``; ``last``: they end the file."""
        if self._fast([raw for _n, raw, _e in rows]):
            return
        for i, row in enumerate(rows):
            self.one(row, last=last and i == len(rows) - 1)
            if self.done:
                return

    def _count_exactly(self) -> None:
        """From now on weigh every line exactly; the bounds so far may have
        overstated, so weigh what is kept again."""
        self.exact = True
        budget = MAX_WEIGHT - weight(self.header, MAX_WEIGHT)
        for kept in self.session.lines:
            if budget < 0:
                break
            budget -= weight(kept, budget)
        self.budget = budget

    def one(self, row: tuple[int, bytes, bool], *, last: bool) -> None:
        """Read one line (the reference path, or ``decode_body``'s fast one)."""
        p, session = self.p, self.session
        number, raw, _ended = row
        try:
            if session.footer is not None:
                raise LineError("follows the footer (the footer is the last line)")
            line, kind, counted = decode_body(raw, self.keys)
            if counted or self.exact:
                self.budget -= weight(line, self.budget)
            else:
                self.budget -= weight_bound(raw)
                if self.budget < 0:  # the bounds may overstate: count exactly
                    self._count_exactly()
                    self.budget -= weight(line, self.budget)
        except LineError as exc:
            if last and isinstance(exc, NotJson):
                self.torn_line = number  # said with the end's other warnings
                self.done = True
                return
            raise RecordingError(f"{p}: line {number}: {exc}") from None
        if self.budget < 0:
            raise RecordingError(
                f"{p}: line {number}: the recording holds more data than probetop keeps "
                f"in memory (a weight of {MAX_WEIGHT:,}: JSON values, objects count 3)"
            )
        if kind == "footer":
            session.footer = line
        elif kind:
            if kind == "probe":
                self.probes.add(line["id"])
                if len(self.probes) > MAX_PROBES:
                    raise RecordingError(f"{p}: line {number}: more than {MAX_PROBES} probes")
            session.lines.append(line)
        else:
            self.skipped += 1


# Compressors probetop does not read, by their files' first bytes: named,
# so `gzip s.jsonl; probetop report s.jsonl.gz` says what to do.
_OTHER_COMPRESSION = (
    (b"\x1f\x8b", "gzip", "gunzip"),
    (b"\xfd7zXZ\x00", "xz", "unxz"),
    (b"BZh", "bzip2", "bunzip2"),
    (b"\x04\x22\x4d\x18", "lz4", "unlz4"),
)


def _not_json(p: Path, first: bytes) -> RecordingError:
    """The error for a first line that is not JSON (a compressed file named)."""
    for magic, name, undo in _OTHER_COMPRESSION:
        if first.startswith(magic):
            q = shlex.quote(str(p))
            return RecordingError(
                f"{p}: {name}-compressed; probetop reads plain or zstandard (.zst) "
                f"recordings: `{undo} {q}` first (or `{undo} -c {q} | zstd -o FILE.zst`)"
            )
    if first.startswith(b"\xef\xbb\xbf"):  # what some editors put first on saving
        return RecordingError(
            f"{p}: starts with a UTF-8 byte-order mark (an editor added it), so its first "
            f"line is not JSON; remove it: sed -i '1s/^\\xEF\\xBB\\xBF//' {shlex.quote(str(p))}"
        )
    return RecordingError(f"{p}: not a probetop recording (first line is not JSON)")


def _header_of(first: Row | None, p: Path, *, weigh: bool = False) -> dict[str, Any]:
    """The checked header from the file's first row (``weigh``: also within
    MAX_WEIGHT); RecordingError naming what is wrong with it."""
    if first is None or not first[1].strip():
        raise RecordingError(f"{p}: {_why_no_first_line(p)}, not a probetop recording")
    try:
        header = check_header(parse(first[1]))
        if weigh:
            weight(header, MAX_WEIGHT)
    except NotJson:
        raise _not_json(p, first[1]) from None
    except LineError as exc:
        raise RecordingError(f"{p}: line 1: {exc}") from None
    except RecordingError as exc:
        raise RecordingError(f"{p}: {exc}") from None
    return header


def _why_no_first_line(p: Path) -> str:
    """Why a file gave no first line: empty, or bytes that make no whole line
    (a .zst cut off inside its first block said "empty file" at 500 bytes)."""
    try:
        size = p.stat().st_size
    except OSError:
        return "empty file"
    if size == 0:
        return "empty file"
    with contextlib.suppress(OSError), p.open("rb") as f:
        head = f.read(1 << 20)
        if head.startswith(b"\x28\xb5\x2f\xfd"):
            import zstandard

            stream = zstandard.ZstdDecompressor().decompressobj()
            with contextlib.suppress(zstandard.ZstdError):
                if not stream.decompress(head).strip() and stream.eof:
                    return "zstandard-compressed empty file"
            return f"{size:,} bytes of zstandard that end before its first line is whole (cut off)"
    return f"empty file ({size:,} byte{'' if size == 1 else 's'} of blank lines)"


def _read_header(f: LineSource, p: Path) -> tuple[dict[str, Any], int]:
    """The checked header (line 1) and its size in bytes, newline included."""
    first = next(read_rows(f, p), None)
    header = _header_of(first, p)  # refuses an empty file: ``first`` is a row
    return header, (len(first[1]) + first[2]) if first is not None else 0


STEP_BYTES = 4 << 20
"""What ``SessionLoader.step`` reads by default: about 20 ms of work."""


class SessionLoader:
    """A recording read into a ``Session`` a step at a time, with the same
    checks and messages as ``load_session`` (which is this, run to the end).

    Opening it reads and checks the header (RecordingError as
    ``load_session``). ``session`` is the lines read so far: each one checked
    before it is added, so what it holds is never wrong, only not all there
    yet. ``step()`` reads some more and returns how many lines it added;
    RecordingError names the first bad line as ``load_session`` would (the
    file is closed then, and ``error`` holds it). Once ``done``, ``session`` is what
    ``load_session`` returns (footer and warnings included) and the file is
    closed. A replay shows the head of a long recording while the rest is
    read (``tui/ui/app.py``). Use as a context manager, or ``close()``."""

    def __init__(self, path: str | Path) -> None:
        p = self.path = Path(path)
        self.done = False
        self.error: RecordingError | None = None  # what step() raised, if it did
        self._file: LineSource | None = open_lines(p)
        try:
            header, size = _read_header(self._file, p)
            self._loader = _Loader(p, header)
            self._chunks = read_chunks(self._file, p, size)
        except BaseException:
            self.close()
            raise

    @property
    def session(self) -> Session:
        return self._loader.session

    def __enter__(self) -> SessionLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def step(self, nbytes: int = STEP_BYTES) -> int:
        """Read about ``nbytes`` more of the file (at least a block); the
        number of lines added to ``session``."""
        if self.done:
            return 0
        loader = self._loader
        before = len(loader.session.lines)
        try:
            with _gc_paused():
                while nbytes > 0:
                    chunk = next(self._chunks, None)
                    if chunk is None:
                        self._finish()
                        break
                    if isinstance(chunk, Block):
                        loader.block(chunk)
                        nbytes -= len(chunk.data)  # about: it holds the next line too
                    else:
                        rows, last = chunk
                        loader.batch(rows, last=last)
                        nbytes -= sum(len(raw) for _n, raw, _e in rows)
        except RecordingError as exc:
            self.error = exc
            self.close()
            raise
        except BaseException:
            self.close()
            raise
        return len(loader.session.lines) - before

    def finish(self) -> Session:
        """Read the rest; the whole ``Session``."""
        while not self.done:
            self.step(1 << 62)
        return self.session

    def _finish(self) -> None:
        loader, p, f = self._loader, self.path, self._file
        session = loader.session
        if loader.skipped:
            session.warnings.append(
                f"{p}: skipped {loader.skipped} lines of a type this probetop ignores"
            )
        session.warnings.extend(
            end_warnings(p, f, loader.torn_line, footer=session.footer is not None)
        )
        self.done = True
        self.close()


# -- stream_session: one pass, one line in memory -----------------------------------


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
        self._file: LineSource | None = None
        self._rows: Iterator[tuple[int, bytes, bool]] | None = None

    def __enter__(self) -> SessionStream:
        p = self.path
        self._file = open_lines(p)
        try:
            self._rows = read_rows(self._file, p)
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
                line, kind, counted = decode_body(raw)
                if counted:
                    weight(line, MAX_WEIGHT)  # numbers too large
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
        self.warnings.extend(end_warnings(p, self._file, torn, footer=self.footer is not None))


def stream_session(path: str | Path) -> SessionStream:
    """A ``SessionStream`` over ``path`` (enter it to open and check the header)."""
    return SessionStream(path)


# -- following a recording still being written, and single lines ---------------------


MAX_POLL_BYTES = 64 << 20
"""What ``RecordingFollower.poll`` reads at most per call, by default."""


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
        if len(raw) > MAX_LINE_BYTES and not raw.startswith(FOOTER_START):
            raise LineError("is too long")
        if header is None:
            header = check_header(parse(raw))
            announced = [(0.0, Announce(p["id"], 0, p)) for p in header.get("probes", [])]
            return DecodedLine(announced, header, footer)
        if footer is not None:
            raise LineError("follows the footer (the footer is the last line)")
        line, kind, _counted = decode_body(raw)
    except LineError as exc:
        raise RecordingError(f"{where}: {exc}") from None
    if kind == "footer":
        return DecodedLine([], header, line)
    record = decode_record(line) if kind else None
    records = [] if record is None else [(float(line.get("t", 0.0)), record)]
    return DecodedLine(records, header, footer)


class RecordingFollower:
    """Whole new lines of a growing recording, one ``poll`` at a time.

    - ``poll()`` returns the (t seconds, record) pairs of the whole lines
      added since the last call; the first call returns the header's probes
      (announced at t=0) and everything written so far. A line without its
      newline yet is kept back until the writer finishes it, so a record is
      never returned twice nor cut. Every line passes ``decode_line``'s
      checks; a bad whole line raises RecordingError naming it.
    - ``footer`` is set once the footer line arrived: the session ended.
    - Reads at most ``max_bytes`` (default ``MAX_POLL_BYTES``) per call, so
      one call stays short even on a long history; call again until
      ``caught_up``.
    - ``tail(max_bytes)`` reads, without moving the follower, the header's
      probes and the whole lines in the file's last ``max_bytes``: a quick
      picture of the newest records for a first frame.
    - A ``.zst`` recording (told by its magic number) is followed the same
      way over its decompressed lines: every whole block is decoded as it
      arrives (the writer ends one per flush), ``max_bytes`` counts
      compressed bytes, a poll decompresses at most ``MAX_POLL_BYTES`` per
      call's worth of whole blocks, and a corrupted block raises
      RecordingError naming its offset. ``tail`` decodes the whole file
      (blocks cannot be entered mid-frame).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] | None = None
        self.footer: dict[str, Any] | None = None
        self.caught_up = False
        self._file = open_recording(self.path)  # a regular file on storage, or RecordingError
        self._partial = b""
        self._line_no = 0
        self._zstd: ZstdStream | None = None
        self._kind_known = False

    def close(self) -> None:
        self._file.close()

    def poll(self, max_bytes: int = MAX_POLL_BYTES) -> list[tuple[float, Record]]:
        """Records of the whole lines written since the last call (see the class)."""
        out: list[tuple[float, Record]] = []
        for raw in self.poll_lines(max_bytes):
            self._line_no += 1
            out.extend(self._line(raw))
        return out

    def poll_lines(self, max_bytes: int = MAX_POLL_BYTES) -> list[bytes]:
        """The raw whole lines (without their newline, decompressed, not yet
        checked) written since the last call: what ``probetop follow`` sends
        to a remote view, which checks them with ``decode_line``."""
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
        footer = self._partial.startswith(FOOTER_START)
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
        """The header's probes and the records of the last ``max_bytes`` (see the class)."""
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
                if not raw.startswith(FOOTER_START):
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
            if len(partial) > MAX_LINE_BYTES and not partial.startswith(FOOTER_START):
                raise RecordingError(f"{peek.path}: a line is too long")
            for raw in data[:cut].split(b"\n")[:-1]:
                if header is None:
                    header = raw
                    continue
                if raw.startswith(FOOTER_START):
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
