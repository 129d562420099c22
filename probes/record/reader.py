"""Reading a recording back into a ``Session``: the header, then every line.

The file opened and cut into rows and blocks is ``rawlines``; the checks of
one line are in ``linecheck``; the ``Session`` read is in ``session``; the
one-pass reader in constant memory is ``stream``.

Contract:
- ``load_session(path)`` returns a ``Session`` or raises RecordingError with a
  one-line message; never another exception, whatever the file holds.
- Only a regular file on a storage filesystem is read (opened non-blocking
  and checked on the open descriptor): a FIFO, a device (``/dev/zero``,
  ``/dev/urandom``), a socket, a directory or a kernel file (``/proc``,
  ``/sys``: reading ``/proc/kmsg`` would take the kernel's messages from
  syslog) is refused before a byte is read.
- Memory is bounded whatever the input: the file is read in blocks of
  whole lines (``rawlines._chunks``; the line reader ``rawlines._rows``
  where that cannot be done), a line longer than ``MAX_LINE_BYTES`` is
  refused as soon as that many bytes have been read, a file larger than
  ``MAX_FILE_BYTES`` is refused, and the parsed lines kept may weigh at
  most ``MAX_WEIGHT`` in all.
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
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from probetop.probes.record.codec import (
    RecordingError,
)
from probetop.probes.record.limits import (
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
from probetop.probes.record.rawlines import (
    BATCH_LINES,
    Row,
    _Block,
    _chunks,
    _end_warnings,
    _Lines,
    _open_lines,
    _rows,
)
from probetop.probes.record.session import RecordSequence, Session

__all__ = [
    "RecordSequence",
    "Session",
    "SessionLoader",
    "load_session",
]


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
    read (``tui/ui/app.py``). Use as a context manager, or ``close()``."""

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
