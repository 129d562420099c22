"""Reading recordings back: the file, its blocks and lines, torn-line tolerance.

The checks of one line are in ``linecheck``; the ``Session`` read is in
``session``.

Contract:
- ``load_session(path)`` returns a ``Session`` or raises RecordingError with a
  one-line message; never another exception, whatever the file holds.
- Only a regular file on a storage filesystem is read (opened non-blocking
  and checked on the open descriptor): a FIFO, a device (``/dev/zero``,
  ``/dev/urandom``), a socket, a directory or a kernel file (``/proc``,
  ``/sys``: reading ``/proc/kmsg`` would take the kernel's messages from
  syslog) is refused before a byte is read.
- Memory is bounded whatever the input: the file is read in blocks of
  whole lines (``_chunks``; the line reader ``_rows`` where that cannot be
  done), a line longer than ``MAX_LINE_BYTES`` is refused as soon as that
  many bytes have been read, a file larger than ``MAX_FILE_BYTES`` is refused, and the
  parsed lines kept may weigh at most ``MAX_WEIGHT`` in all.
- Every line is validated: the types of every field the reader, the report
  and the panes use (``t`` a finite number, ``values`` a mapping of strings to
  finite numbers or null, ``probe`` / ``level`` / ``message`` strings,
  ``extra`` / ``params`` mappings...). The first bad line is named by number:
  ``FILE: line N: 't' is not a finite number``.
- A torn last line (a kill -9 or a full disk mid-write) is skipped and
  reported in ``Session.warnings`` (with a truncated last zstd frame and a
  missing footer; of a file a probetop is still recording, which it holds
  the lock of, one note says so instead: ``_end_warnings``); a bad line
  elsewhere is an error, because it means the file was edited or corrupted,
  not interrupted.
- Two paths, one verdict: blocks (then 64-line batches) of sample and
  status lines go through ``fastpath.decode_block`` (msgspec, checked in C;
  the decoded objects kept as read-only mappings, ``extra`` as a checked
  ``LazyExtra``), other lines through orjson;
  whatever those cannot vouch for is read by the reference path
  (``linecheck``: ``json``, ``_check_line``, ``_weight``), which names the
  bad line. Both
  accept the same lines with the same content
  (tests/record/test_record_fast_paths.py, test_record_blocks.py).
- ``SessionLoader`` reads a recording a step at a time with the same checks
  (a replay shows a long recording's head while it reads the rest);
  ``load_session`` is one run of it to the end.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import shlex
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from probetop.probes.core.mountinfo import PSEUDO_FILESYSTEMS
from probetop.probes.core.sample import Announce, Record
from probetop.probes.core.targetlock import holder
from probetop.probes.record.codec import (
    RecordingError,
    decode_record,
)
from probetop.probes.record.limits import (
    _FOOTER_START,
    MAX_FILE_BYTES,
    MAX_FOOTER_BYTES,
    MAX_LINE_BYTES,
    MAX_PROBES,
    MAX_WEIGHT,
)
from probetop.probes.record.linecheck import (
    LineError,
    NotJson,
    _check_header,
    _decode_body,
    _Keys,
    _parse,
    _weight,
    _weight_bound,
)
from probetop.probes.record.session import RecordSequence, Session
from probetop.probes.record.target import file_kind, filesystem_type
from probetop.probes.record.zst import FrameLines, ZstdCorrupt, is_zstd

__all__ = [
    "RecordSequence",
    "Session",
    "SessionLoader",
    "SessionStream",
    "load_session",
    "stream_session",
]


# -- reading ---------------------------------------------------------------


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
            self.budget = MAX_WEIGHT - _weight(header, MAX_WEIGHT)
        except LineError as exc:
            raise RecordingError(f"{p}: line 1: {exc}") from None
        self.exact = False  # True once the bounds ran out: every weight counted exactly
        self.keys = _Keys()
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

    def block(self, block: _Block) -> None:
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
        budget = MAX_WEIGHT - _weight(self.header, MAX_WEIGHT)
        for kept in self.session.lines:
            if budget < 0:
                break
            budget -= _weight(kept, budget)
        self.budget = budget

    def one(self, row: tuple[int, bytes, bool], *, last: bool) -> None:
        """Read one line (the reference path, or ``_decode_body``'s fast one)."""
        p, session = self.p, self.session
        number, raw, _ended = row
        try:
            if session.footer is not None:
                raise LineError("follows the footer (the footer is the last line)")
            line, kind, counted = _decode_body(raw, self.keys)
            if counted or self.exact:
                self.budget -= _weight(line, self.budget)
            else:
                self.budget -= _weight_bound(raw)
                if self.budget < 0:  # the bounds may overstate: count exactly
                    self._count_exactly()
                    self.budget -= _weight(line, self.budget)
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
        raise RecordingError(f"{p}: empty file, not a probetop recording")
    try:
        header = _check_header(_parse(first[1]))
        if weigh:
            _weight(header, MAX_WEIGHT)
    except NotJson:
        raise _not_json(p, first[1]) from None
    except LineError as exc:
        raise RecordingError(f"{p}: line 1: {exc}") from None
    except RecordingError as exc:
        raise RecordingError(f"{p}: {exc}") from None
    return header


def _read_header(f: _Lines, p: Path) -> tuple[dict[str, Any], int]:
    """The checked header (line 1) and its size in bytes, newline included."""
    first = next(_rows(f, p), None)
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
    read (``tui/app.py``). Use as a context manager, or ``close()``."""

    def __init__(self, path: str | Path) -> None:
        p = self.path = Path(path)
        self.done = False
        self.error: RecordingError | None = None  # what step() raised, if it did
        self._file: _Lines | None = _open_lines(p)
        try:
            header, size = _read_header(self._file, p)
            self._loader = _Loader(p, header)
            self._chunks = _chunks(self._file, p, size)
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
                    if isinstance(chunk, _Block):
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
            _end_warnings(p, f, loader.torn_line, footer=session.footer is not None)
        )
        self.done = True
        self.close()


# -- streaming ---------------------------------------------------------------


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
