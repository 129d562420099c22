"""JSON Lines session recorder (format: docs/recording-format.md).

Contract:
- ``Recorder.check_path(path)`` (``check_recording_path``: ``check_target``,
  and no name ending in another compressor's suffix) fails fast (RecordingError,
  exit 2) unless ``path`` is, or can be created as, a regular file on a
  storage filesystem that this process can write: devices (``/dev/full``,
  ``/dev/null``, a symlink to one), FIFOs (opening one for writing blocks
  until a reader comes), sockets, directories, kernel filesystems
  (``/proc``, ``/sys``, ``/dev``...), read-only filesystems, directories
  without permission and a full filesystem are all refused with one plain
  message. It never truncates or leaves anything behind.
- ``start()`` opens the target non-blocking and checks the open file again
  (a FIFO or device swapped in after the check is refused, never written);
  only then is it truncated. The file is mode 0600 (recordings may reveal
  hosts and URLs).
- Line 1 is the header; then one line per record in arrival order; the last
  line is the footer with every probe's summary. Everything passes through
  ``redact`` first.
- Lines reach the OS (``os.write``, no user-space buffer) at least every
  ``FLUSH_EVERY_S``: a kill -9 loses at most the last half second, and every
  line in the file is whole.
- A target whose name ends in ``.zst`` is written as zstandard
  (``ZstdLineFile``): every flush is one whole block of whole lines, written
  in one go, and a frame (with a content checksum) ends at least every
  ``ZSTD_FRAME_S``; a kill -9 loses at most the last flush (half a second),
  and every whole block decodes to whole lines.
- A write error (ENOSPC, EIO, EFBIG, EROFS...) never tears a line: the file
  is truncated back to the end of the last whole line (of a .zst one: the
  end of the last whole flush, so no torn block follows the earlier ones),
  the recording stops
  (nothing more is queued for it, so memory stays flat), ``failure`` holds a
  one-line message and ``on_error(message)`` is called once, in the event
  loop. The probes are not affected. A recording that failed has no footer;
  the host reports it and exits with ``RECORDING_INCOMPLETE_EXIT``.
- ``Recorder.in_memory(hub, command)`` records the same lines, compressed,
  into an anonymous memory file (memfd: no disk I/O on the machine being
  measured, no path, no lock) with a slower flush (``MEMORY_FLUSH_EVERY_S``).
  ``await move_to(path)`` later copies what it holds to a new file at
  ``path`` (checked and locked like any target, created, never an existing
  file) and goes on writing there at the normal flush rate: the file holds
  every line since the header, nothing lost or repeated, as if it had been
  recorded there from the start. The dashboard keeps such a history so a
  foreground run can be detached into a session (tui/sessions/foreground.py).
- ``on_header(hook)``: ``hook(path)`` is called, in this process's event
  loop, each time a ``Recorder`` here has written its header line to the
  file at ``path`` (``start()``, not an in-memory recording): the whole line
  is in the file then, readable by anyone. A detached session's process says
  "ready" to its starter from there (tui/sessions/daemon.py). A hook must not
  raise or block.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from probetop.probes import version
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.sample import Announce, Record, now_ns
from probetop.probes.core.targetlock import TargetBusy, TargetLock
from probetop.probes.record.codec import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    RecordingError,
    dump_line_bytes,
    encode_record,
)
from probetop.probes.record.hostinfo import host_facts

FLUSH_EVERY_S = 0.5
MEMORY_FLUSH_EVERY_S = 5.0
"""An in-memory recording needs no durability: fewer, larger compressed blocks."""
MEMORY_CAP_BYTES = 256 << 20
"""An in-memory recording stops (quietly, ``failure`` set) past this size."""

FooterFields = Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Any]]], Mapping[str, Any]]
"""``Recorder(footer_fields=...)``: (summaries, probe descriptions by id) ->
fields added to the footer (``assertions``: the ``--assert`` outcomes)."""

HeaderHook = Callable[[Path], None]
"""``on_header(hook)``: called with the recording's path once its header is written."""

_header_hooks: list[HeaderHook] = []


def on_header(hook: HeaderHook) -> Callable[[], None]:
    """Call ``hook(path)`` after each header a Recorder in this process
    writes to a file (see the module docstring); returns the function that
    removes the hook again."""
    _header_hooks.append(hook)
    return lambda: _header_hooks.remove(hook) if hook in _header_hooks else None


RECORDING_INCOMPLETE_EXIT = 74
"""Exit status of a run whose recording could not be completed (a write
error mid-run). sysexits.h's EX_IOERR: apart from 0/1/2 and HTTP's 3..12."""

MIN_FREE_BYTES = 64 * 1024
"""A target filesystem with less free space than this is refused up front."""

# Kernel interfaces, not storage: writing a recording there either fails
# half-way or, worse, changes a kernel setting (/proc/sys/..., /sys/...).
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "efivarfs",
        "mqueue",
        "binfmt_misc",
        "selinuxfs",
        "hugetlbfs",
        "rpc_pipefs",
        "nsfs",
        "autofs",
        "nfsd",
    }
)

_OPEN_FLAGS = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def _wall_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def file_kind(mode: int) -> str:
    """What a stat mode is, in words ("a FIFO", "a character device"...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def _unescape_mount(field: str) -> str:
    r"""mountinfo escapes space, tab, newline and backslash as \040 etc."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def filesystem_type(directory: str) -> str | None:
    """The filesystem type that holds ``directory`` (Linux mountinfo), or None."""
    try:
        st = os.stat(directory)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            rows = f.read().splitlines()
    except OSError:
        return None
    want = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    best: tuple[int, str] | None = None
    by_dev: str | None = None
    real = os.path.realpath(directory)
    for row in rows:
        left, sep, right = row.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        fstype = right.split()[0]
        if fields[2] == want:
            by_dev = fstype  # the last mount of this device wins, as in the kernel
        mount = _unescape_mount(fields[4])
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= best[0]):
            best = (len(mount), fstype)
    if by_dev is not None:
        return by_dev
    return best[1] if best is not None else None


def check_target(path: str | os.PathLike[str], *, verb: str = "record to") -> str:
    """Raise RecordingError unless ``path`` can be recorded to (see the
    module docstring). Creates nothing that stays, truncates nothing.
    Returns the real path (through symlinks): the file to write.

    Every file probetop writes at a user's word (``--record``, ``export
    --out``, ``compare --plot``) passes this one check, with ``verb`` naming
    the act in the message: a device, FIFO, socket, kernel filesystem or a
    file another probetop holds is never written, let alone replaced."""
    p = Path(path)
    name = str(p)
    if not name:
        raise RecordingError(f"cannot {verb} an empty path")
    real = os.path.realpath(p)  # through symlinks, dangling ones included
    directory = os.path.dirname(real) or "."

    def refuse(why: str) -> RecordingError:
        return RecordingError(f"cannot {verb} {name}: {why}")

    # A file another probetop is using (its recording, an IOPS or warm-up
    # target, a checkpoint) is never written over: the same lock as the disk
    # probes', keyed by the file's identity.
    try:
        TargetLock.for_target(real, "record").check()
    except TargetBusy as exc:
        raise refuse(str(exc)) from None

    try:
        st: os.stat_result | None = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        target = "" if real == os.path.abspath(p) else f" (a link to {real})"
        raise refuse(f"it is {file_kind(st.st_mode)}{target}, not a regular file")
    if st is None:
        try:
            dst = os.stat(directory)
        except FileNotFoundError:
            raise refuse(f"directory {directory} does not exist") from None
        except OSError as exc:
            raise refuse(f"directory {directory}: {exc.strerror}") from None
        if not stat.S_ISDIR(dst.st_mode):
            raise refuse(f"{directory} is not a directory")
    fstype = filesystem_type(directory)
    if fstype in PSEUDO_FILESYSTEMS:
        raise refuse(f"{directory} is on a {fstype} filesystem (a kernel interface, not storage)")
    _try_open(real, exists=st is not None, refuse=refuse)
    try:
        vfs = os.statvfs(directory)
    except OSError:
        return real
    free = (vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail) * vfs.f_frsize
    if vfs.f_blocks and free < MIN_FREE_BYTES:
        raise refuse(
            f"the filesystem of {directory} is full ({free // 1024} KiB free; "
            f"at least {MIN_FREE_BYTES // 1024} KiB are needed to start)"
        )
    return real


def _open_error(path: str | os.PathLike[str], exc: OSError) -> str:
    """Why ``path`` could not be opened for writing, in words: a FIFO with no
    reader fails with ENXIO, which says nothing to a user."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return exc.strerror or str(exc)
    if not stat.S_ISREG(mode):
        return f"it is {file_kind(mode)}, not a regular file"
    return exc.strerror or str(exc)


def _try_open(real: str, *, exists: bool, refuse: Callable[[str], RecordingError]) -> None:
    """Open the target for writing the way ``start`` will, without changing
    it: an existing file is opened without truncation, a new one is created
    and removed again."""
    created = False
    try:
        if exists:
            fd = os.open(real, _OPEN_FLAGS)
        else:
            try:
                fd = os.open(real, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
                created = True
            except FileExistsError:  # appeared since the stat: check it as it is
                fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise refuse(_open_error(real, exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse(f"it is {file_kind(mode)}, not a regular file")
    finally:
        os.close(fd)
        if created:
            with contextlib.suppress(OSError):
                os.unlink(real)


def _open_target(path: Path) -> int:
    """Open ``path`` for recording: refuse anything but a regular file (checked
    on the open descriptor), then make it private and empty."""
    try:
        fd = os.open(path, _OPEN_FLAGS | os.O_CREAT, 0o600)
    except OSError as exc:
        raise RecordingError(f"cannot record to {path}: {_open_error(path, exc)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RecordingError(
                f"cannot record to {path}: it is {file_kind(mode)}, not a regular file"
            )
        os.fchmod(fd, 0o600)  # an existing file keeps its old mode otherwise
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise RecordingError(f"cannot record to {path}: {exc.strerror}") from None
    except RecordingError:
        os.close(fd)
        raise
    return fd


class WriteFailed(Exception):
    """A write error; the file ends with a whole line (``torn`` if even the
    truncation back to it failed)."""

    def __init__(self, error: OSError, torn: bool) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error
        self.torn = torn


class _PartialWrite(Exception):
    """``LineFile._write_all`` failed after ``done`` bytes."""

    def __init__(self, error: OSError, done: int) -> None:
        super().__init__(error)
        self.error = error
        self.done = done


class LineFile:
    """An append-only file of whole lines: ``write_lines`` either writes
    every line or leaves the file ending at the last whole line it wrote.

    Blocking; the recorder calls it in a worker thread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.offset = 0  # end of the last whole line
        self.lines = 0

    def write_lines(self, data: bytes) -> None:
        """Write ``data`` (whole lines, each ending in a newline)."""
        try:
            self._write_all(data)
        except _PartialWrite as partial:
            whole = data.rfind(b"\n", 0, partial.done) + 1  # bytes of whole lines written
            self.lines += data.count(b"\n", 0, whole)
            self.offset += whole
            raise self._cut_back(partial, whole != partial.done) from partial.error
        self.offset += len(data)
        self.lines += data.count(b"\n")

    def _write_all(self, blob: bytes) -> None:
        """Write all of ``blob``; on an error, ``_PartialWrite`` says how much went."""
        view = memoryview(blob)
        done = 0
        try:
            while done < len(blob):
                n = os.write(self.fd, view[done:])
                if n <= 0:  # a regular file never does this; do not spin
                    raise OSError(5, "write returned 0")
                done += n
        except OSError as exc:
            raise _PartialWrite(exc, done) from exc

    def _cut_back(self, partial: _PartialWrite, needed: bool) -> WriteFailed:
        """After a failed write, truncate the file back to ``offset`` if
        ``needed`` (a torn part was written); the error to raise."""
        torn = False
        if needed:
            try:
                os.ftruncate(self.fd, self.offset)
                os.lseek(self.fd, self.offset, os.SEEK_SET)
            except OSError:
                torn = True
        return WriteFailed(partial.error, torn)

    def sync_and_close(self) -> None:
        try:
            os.fsync(self.fd)
        finally:
            os.close(self.fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


ZSTD_LEVEL = 9
"""Compression level of ``.zst`` recordings (benchmarks/recording_zstd.py)."""
ZSTD_FRAME_S = 60.0
"""A ``.zst`` recording ends a frame (a unit ``zstdcat`` checks) at least this often."""
ZSTD_FRAME_RAW = 4 << 20
"""... and before its uncompressed content passes this many bytes."""


def is_zstd_path(path: str | os.PathLike[str]) -> bool:
    """A recording target written compressed: its name ends in ``.zst``."""
    return os.fspath(path).lower().endswith(".zst")


OTHER_COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2", ".lz4", ".zip", ".br")
"""Names that promise a compression probetop does not write."""


def check_recording_path(path: str | os.PathLike[str]) -> str:
    """``check_target`` for a recording, which also refuses a name promising
    another compression: ``--record s.jsonl.gz`` wrote plain JSON Lines under
    a gzip name (zcat and gunzip then fail on it)."""
    name = os.fspath(path)
    suffix = next((x for x in OTHER_COMPRESSED_SUFFIXES if name.lower().endswith(x)), None)
    if suffix is not None:
        raise RecordingError(
            f"cannot record to {name}: probetop writes plain JSON Lines, or zstandard when "
            f"the name ends in .zst, never {suffix}; name it .jsonl or .jsonl.zst"
        )
    return check_target(path)


class ZstdLineFile(LineFile):
    """A ``LineFile`` written as zstandard (format: probes/record/zst.py).

    Each ``write_lines`` call is compressed and written in one go ending a
    block (``FLUSH_BLOCK``): it reaches the OS whole, and the reader decodes
    it without the rest of its frame. A frame ends every ``ZSTD_FRAME_S``
    or ``ZSTD_FRAME_RAW`` bytes, and at ``sync_and_close``. On a write error
    the file is truncated back to the end of the last whole write (``offset``),
    so no torn block is left; that frame stays unfinished, and the reader
    keeps its whole blocks with a warning, as it skips a torn last line.
    ``lines`` counts the lines of whole writes; ``raw_bytes`` their size."""

    def __init__(self, fd: int, level: int = ZSTD_LEVEL) -> None:
        super().__init__(fd)
        import zstandard  # only a .zst recording needs it

        self._zstd = zstandard
        self._cctx = zstandard.ZstdCompressor(level=level, write_checksum=True)
        self._obj: Any = None
        self._frame_raw = 0
        self._frame_start = 0.0
        self.raw_bytes = 0

    def _end_frame(self) -> bytes:
        obj, self._obj = self._obj, None
        self._frame_raw = 0
        return bytes(obj.flush(self._zstd.COMPRESSOBJ_FLUSH_FINISH)) if obj is not None else b""

    def write_lines(self, data: bytes) -> None:
        if not data:
            return
        out = []
        if self._frame_raw and self._frame_raw + len(data) > ZSTD_FRAME_RAW:
            out.append(self._end_frame())
        if self._obj is None:
            self._obj = self._cctx.compressobj()
            self._frame_start = time.monotonic()
        out.append(self._obj.compress(data))
        self._frame_raw += len(data)
        if (
            self._frame_raw >= ZSTD_FRAME_RAW
            or time.monotonic() - self._frame_start >= ZSTD_FRAME_S
        ):
            out.append(self._end_frame())
        else:
            out.append(self._obj.flush(self._zstd.COMPRESSOBJ_FLUSH_BLOCK))
        self._write_whole(b"".join(out))
        self.lines += data.count(b"\n")
        self.raw_bytes += len(data)

    def _write_whole(self, blob: bytes) -> None:
        """Write ``blob`` or truncate back to ``offset`` (see the class docstring)."""
        try:
            self._write_all(blob)
        except _PartialWrite as partial:
            self._obj = None  # its state holds what was not written: never reuse it
            raise self._cut_back(partial, partial.done > 0) from partial.error
        self.offset += len(blob)

    def sync_and_close(self) -> None:
        try:
            if self._obj is not None:
                self._write_whole(self._end_frame())
        except WriteFailed as exc:
            os.close(self.fd)
            raise exc.error from None
        super().sync_and_close()


class Recorder:
    """Writes one session to a JSON Lines file while the hub runs."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        hub: Hub,
        command: list[str],
        on_error: Callable[[str], None] | None = None,
        footer_fields: FooterFields | None = None,
    ) -> None:
        self.path = Path(path)
        # Extra footer fields from the final summaries and probe descriptions
        # (the CLI's --assert outcomes); a failure there never loses the footer.
        self.footer_fields = footer_fields
        self.hub = hub
        self.command = command
        self.on_error = on_error
        self.failure: str | None = None
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._file: LineFile | None = None
        self._lock: TargetLock | None = None
        self._skip_announce: set[str] = set()
        self._lines_at_close = 0
        self.flush_every_s = FLUSH_EVERY_S
        self.memory_fd: int | None = None  # set while recording into memory
        # One write at a time: move_to swaps the file between two writes.
        self._io = asyncio.Lock()

    check_path = staticmethod(check_recording_path)

    @classmethod
    def in_memory(
        cls,
        hub: Hub,
        command: list[str],
        on_error: Callable[[str], None] | None = None,
        footer_fields: FooterFields | None = None,
    ) -> Recorder:
        """A recorder into an anonymous memory file (see the module docstring);
        ``start()`` it as any other. OSError where memfd is unavailable."""
        recorder = cls("memory.jsonl.zst", hub, command, on_error, footer_fields)
        recorder.memory_fd = os.memfd_create("probetop-history", os.MFD_CLOEXEC)
        recorder.flush_every_s = MEMORY_FLUSH_EVERY_S
        return recorder

    @property
    def in_memory_bytes(self) -> int:
        """Bytes held in memory (0 once moved to a file)."""
        return self._file.offset if self.memory_fd is not None and self._file else 0

    async def move_to(self, path: str | os.PathLike[str]) -> None:
        """Copy an in-memory recording to a new file at ``path`` and go on
        writing there (module docstring). RecordingError if ``path`` is refused
        or exists, or if this recording is not in memory or has failed."""
        target = Path(path)
        if self.memory_fd is None or self._file is None or self.failure is not None:
            raise RecordingError(f"cannot move the recording to {target}: it is not in memory")
        self.check_path(target)
        lock = TargetLock.for_target(os.path.realpath(target), "record")
        try:
            lock.acquire()
        except TargetBusy as exc:
            raise RecordingError(f"cannot record to {target}: {exc}") from None
        async with self._io:  # no write in flight: the memory file is whole
            file = self._file
            assert file is not None
            try:
                fd = os.open(target, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as exc:
                lock.release()
                raise RecordingError(
                    f"cannot record to {target}: {_open_error(target, exc)}"
                ) from None
            try:
                os.set_blocking(fd, True)
                await asyncio.to_thread(_copy_all, file.fd, fd, file.offset)
                os.fsync(fd)
                os.dup2(fd, file.fd)  # the writer's descriptor now names the file
            except OSError as exc:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(target)
                lock.release()
                raise RecordingError(f"cannot record to {target}: {exc.strerror}") from None
            os.close(fd)
            self.memory_fd = None
            self.path = target
            self._lock = lock
            self.flush_every_s = FLUSH_EVERY_S

    @property
    def lines_written(self) -> int:
        """Whole lines in the file so far."""
        return self._file.lines if self._file is not None else self._lines_at_close

    def _t(self, t_ns: int) -> float:
        return round((t_ns - self.hub.started_ns) / 1e9, 6)

    def encode(self, record: Record) -> dict[str, Any]:
        """The JSON object of one record line (the layout is codec.py's)."""
        return encode_record(record, self.hub.started_ns)

    @staticmethod
    def _line(obj: dict[str, Any]) -> bytes:
        return dump_line_bytes(obj)

    async def start(self) -> None:
        """Open the file, write the header, and start draining the hub.

        RecordingError if the target is refused or the header cannot be
        written (nothing is subscribed then)."""
        if self.memory_fd is not None:
            fd = self.memory_fd  # anonymous: no path to check, nothing to lock
        else:
            self.check_path(self.path)
            lock = TargetLock.for_target(os.path.realpath(self.path), "record")
            try:
                lock.acquire()  # held until close: no other probetop writes this file
            except TargetBusy as exc:
                raise RecordingError(f"cannot record to {self.path}: {exc}") from None
            self._lock = lock
            fd = await asyncio.to_thread(_open_target, self.path)
        try:
            self._file = ZstdLineFile(fd) if is_zstd_path(self.path) else LineFile(fd)
        except ImportError:
            os.close(fd)
            self._release_lock()
            raise RecordingError(
                f"cannot record to {self.path}: the zstandard package is not installed"
            ) from None
        header = {
            "type": "header",
            "format": FORMAT_NAME,
            "schema": SCHEMA_VERSION,
            "probetop": version(),
            "started_at": _wall_now(),
            "command": self.command,
            "host": host_facts(),
            "probes": list(self.hub.descriptions.values()),
        }
        try:
            await asyncio.to_thread(self._file.write_lines, self._line(header))
        except WriteFailed as exc:
            self._file.close()
            self._file = None
            self._release_lock()
            raise RecordingError(f"cannot record to {self.path}: {exc}") from None
        # Probes already known went into the header; the subscription would
        # announce them again, so skip those first announcements.
        self._skip_announce = set(self.hub.descriptions)
        self._sub = self.hub.subscribe(lossless=True)
        self._task = asyncio.get_running_loop().create_task(self._drain(), name="recorder")
        if self.memory_fd is None:  # the header is in the file: say so
            for hook in list(_header_hooks):
                hook(self.path)

    def _encode_records(self, records: Iterable[Record]) -> bytes:
        out = []
        for record in records:
            if isinstance(record, Announce) and record.probe in self._skip_announce:
                self._skip_announce.discard(record.probe)
                continue
            out.append(self._line(self.encode(record)))
        return b"".join(out)

    async def _write(self, data: bytes) -> bool:
        """Write whole lines; on an error stop the recording. True if written."""
        if self._file is None or self.failure is not None:
            return False
        if not data:
            return True
        async with self._io:
            file = self._file
            if file is None:
                return False
            if self.memory_fd is not None and file.offset > MEMORY_CAP_BYTES:
                self._fail(f"the in-memory history passed {MEMORY_CAP_BYTES >> 20} MiB")
                return False
            try:
                await asyncio.to_thread(file.write_lines, data)
            except WriteFailed as exc:
                self._fail(str(exc), torn=exc.torn)
                return False
        return True

    def _fail(self, reason: str, *, torn: bool = False) -> None:
        """Stop recording after an error: no more records are queued for it."""
        if self.failure is not None:
            return
        kept = self.lines_written
        tail = (
            "its last line may be cut (the file could not be truncated)"
            if torn
            else f"it keeps the {kept} whole lines written before"
        )
        self.failure = f"recording to {self.path} stopped: {reason}; {tail}, with no footer"
        if self._sub is not None:
            self._sub.close()
            self.hub.unsubscribe(self._sub)
        if self._file is not None:
            self._lines_at_close = self._file.lines
            self._file.close()
            self._file = None
        self._release_lock()
        if self.on_error is not None:
            self.on_error(self.failure)

    async def _drain(self) -> None:
        assert self._sub is not None
        sub = self._sub
        try:
            while not sub.closed and self.failure is None:
                # One write per flush period (0.5 s to a file, 5 s in memory),
                # not one per record: the demo's history woke for every sample.
                records = await sub.wait_batch(self.flush_every_s)
                if records and not await self._write(self._encode_records(records)):
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a record that cannot be encoded: say so, never silently
            self._fail(f"{type(exc).__name__}: {exc}")

    async def close(self, reason: str = "completed") -> None:
        """Write what is queued, then the footer with summaries, and close.

        Call after ``hub.stop()`` so the summaries are final. Safe to call
        twice. A write error here sets ``failure`` (and calls ``on_error``)
        instead of raising.
        """
        if self._task is not None:
            # Closing the subscription ends _drain after it writes what it has
            # already drained; cancelling it mid-write lost those records.
            if self._sub is not None:
                self._sub.close()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._file is None:
            return
        if self._sub is not None:
            try:
                pending = self._encode_records(self._sub.drain())
            except Exception as exc:
                self._fail(f"{type(exc).__name__}: {exc}")
                return
            self.hub.unsubscribe(self._sub)
            if not await self._write(pending):
                return
        summaries = {pid: dict(s) for pid, s in self.hub.summaries.items()}
        footer: dict[str, Any] = {
            "type": "footer",
            "ended_at": _wall_now(),
            "duration_s": self._t(now_ns()),
            "reason": reason,
            "summaries": summaries,
            "errors": dict(self.hub.errors),
        }
        if self.footer_fields is not None:
            try:
                extra = self.footer_fields(summaries, dict(self.hub.descriptions))
            except Exception as exc:
                extra = {"footer_fields_error": f"{type(exc).__name__}: {exc}"}
            footer.update({k: v for k, v in extra.items() if k not in footer})
        if not await self._write(self._line(footer)):
            return
        file, self._file = self._file, None
        self._lines_at_close = file.lines
        try:
            await asyncio.to_thread(file.sync_and_close)
        except OSError as exc:  # EIO on writeback: the data may not be on disk
            self._file = None
            self._fail(f"{exc.strerror or exc} while saving it to disk", torn=False)
        finally:
            self._release_lock()

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


def _copy_all(src: int, dst: int, size: int) -> None:
    """Copy the first ``size`` bytes of ``src`` to ``dst`` (at its offset)."""
    done = 0
    while done < size:
        chunk = os.pread(src, min(1 << 20, size - done), done)
        if not chunk:
            raise OSError(5, "the in-memory recording is shorter than written")
        view = memoryview(chunk)
        while view:
            n = os.write(dst, view)
            view = view[n:]
        done += len(chunk)


def schema_path() -> Path:
    """The JSON Schema every line of a recording validates against (shipped in the wheel)."""
    return Path(__file__).resolve().parent / "schema" / "session-line.schema.json"
