"""JSON Lines session recorder (format: docs/recording-format.md).

Contract:
- ``Recorder.check_path(path)`` is ``target.check_recording_path``: a
  target that cannot hold a recording is refused before anything starts.
- ``start()`` opens the target with ``target.open_target`` (checked again
  on the open descriptor, then truncated, mode 0600).
- Line 1 is the header; then one line per record in arrival order; the last
  line is the footer with every probe's summary. Everything passes through
  ``redact`` first.
- Lines reach the OS (``os.write``, no user-space buffer) at least every
  ``FLUSH_EVERY_S``: a kill -9 loses at most the last half second, and every
  line in the file is whole.
- A target whose name ends in ``.zst`` is written as zstandard
  (``zstdfile.ZstdLineFile``), else as plain lines (``linefile.LineFile``):
  either way a flush is whole lines, or whole blocks of them.
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
- Every file operation (checks, open, write, fsync, close) runs in the
  recorder's own daemon thread (``IoThread``), never in the event loop: a
  write stalled on a hung disk (NFS, a dying drive) leaves the loop, the
  probes and the dashboard running, and the records queue until the disk
  answers, then all reach the file. Not ``asyncio.to_thread`` (nor
  aiofiles, which is the same thing): ``asyncio.run`` joins the default
  executor's threads on its way out, so a write stuck in the kernel kept
  the process alive after Ctrl-C; a daemon thread never does.
- ``close()`` waits at most ``CLOSE_WAIT_S`` for what is queued, the footer
  and the fsync. A disk that has not finished a write by then fails the
  recording (``failure``: "the disk has not finished a write in 5 s", no
  footer, ``on_error``), so a stop with a hung disk ends within that bound;
  the stalled write is left to the thread, which closes the file when the
  disk answers.
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from probetop.probes import version
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.iothread import DiskStalled, IoThread
from probetop.probes.core.sample import Announce, Record, now_ns
from probetop.probes.core.targetlock import TargetBusy, TargetLock
from probetop.probes.record.codec import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    RecordingError,
    dump_line_bytes,
    encode_record,
)
from probetop.probes.record.errors import RECORDING_INCOMPLETE_EXIT as RECORDING_INCOMPLETE_EXIT
from probetop.probes.record.hostinfo import host_facts
from probetop.probes.record.linefile import LineFile, WriteFailed
from probetop.probes.record.target import OPEN_FLAGS, check_recording_path, open_error, open_target
from probetop.probes.record.zstdfile import ZstdLineFile, is_zstd_path

FLUSH_EVERY_S = 0.5
MEMORY_FLUSH_EVERY_S = 5.0
"""An in-memory recording needs no durability: fewer, larger compressed blocks."""
MEMORY_CAP_BYTES = 256 << 20
"""An in-memory recording stops (quietly, ``failure`` set) past this size."""
CLOSE_WAIT_S = 5.0
"""The longest ``close()`` waits for the disk (queued lines, footer, fsync):
a stop with a hung disk ends after this, the recording marked incomplete."""

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


def _wall_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


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
        self._thread: IoThread | None = None  # every file operation, off the loop

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
        lock = await self._io_thread().run(_lock_target, target)
        async with self._io:  # no write in flight: the memory file is whole
            file = self._file
            assert file is not None
            try:
                await self._io_thread().run(_copy_to, file, target)
            except RecordingError:
                lock.release()
                raise
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
        try:
            await self._start()
        except BaseException:
            self._stop_thread()  # no thread left waiting for work that never comes
            raise

    async def _start(self) -> None:
        io = self._io_thread()
        if self.memory_fd is not None:
            fd = self.memory_fd  # anonymous: no path to check, nothing to lock
        else:
            # held until close: no other probetop writes this file
            self._lock = await io.run(_lock_target, self.path)
            try:
                fd = await io.run(open_target, self.path)
            except BaseException:
                self._release_lock()
                raise
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
            await io.run(self._file.write_lines, self._line(header))
        except WriteFailed as exc:
            io.post(self._file.close)
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

    def _io_thread(self) -> IoThread:
        if self._thread is None:
            self._thread = IoThread("probetop-recorder")
        return self._thread

    async def _write(self, data: bytes, timeout: float | None = None) -> bool:
        """Write whole lines; on an error stop the recording. True if written.
        ``timeout``: DiskStalled once it passes (the write goes on, unawaited)."""
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
                await self._io_thread().run(file.write_lines, data, timeout=timeout)
            except WriteFailed as exc:
                self._fail(str(exc), torn=exc.torn)
                return False
        return True

    def _fail(self, reason: str, *, torn: bool = False, stalled: bool = False) -> None:
        """Stop recording after an error: no more records are queued for it."""
        if self.failure is not None:
            return
        kept = self.lines_written
        tail = (
            "its last line may be cut (the file could not be truncated)"
            if torn
            else f"it keeps the {kept} whole lines written before"
            + (" (and the stalled write's, if the disk ever finishes it)" if stalled else "")
        )
        self.failure = f"recording to {self.path} stopped: {reason}; {tail}, with no footer"
        if self._sub is not None:
            self._sub.close()
            self.hub.unsubscribe(self._sub)
        if self._file is not None:
            self._lines_at_close = self._file.lines
            self._io_thread().post(self._file.close)  # after a stalled write, if one is
            self._file = None
        self._stop_thread()
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

    async def close(self, reason: str = "completed", timeout: float = CLOSE_WAIT_S) -> None:
        """Write what is queued, then the footer with summaries, and close.

        Call after ``hub.stop()`` so the summaries are final. Safe to call
        twice. A write error here sets ``failure`` (and calls ``on_error``)
        instead of raising. Waits at most ``timeout`` for the disk: a write
        not finished by then fails the recording (module docstring)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            await self._close(reason, deadline)
        except DiskStalled:
            self._fail(
                f"the disk has not finished a write in {timeout:g} s (a hung or very slow "
                "filesystem)",
                stalled=True,
            )
        finally:
            self._stop_thread()

    async def _close(self, reason: str, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        if self._task is not None:
            # Closing the subscription ends _drain after it writes what it has
            # already drained; cancelling it mid-write lost those records.
            if self._sub is not None:
                self._sub.close()
            task = self._task
            await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
            if not task.done():  # stuck in a write the disk does not finish
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                self._task = None
                raise DiskStalled
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
            if not await self._write(pending, timeout=deadline - loop.time()):
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
        if not await self._write(self._line(footer), timeout=deadline - loop.time()):
            return
        file, self._file = self._file, None
        self._lines_at_close = file.lines
        try:
            await self._io_thread().run(file.sync_and_close, timeout=deadline - loop.time())
        except DiskStalled:
            # Every line, the footer too, is with the OS: only the fsync is
            # still waiting. The file reads as complete; the thread closes it.
            pass
        except OSError as exc:  # EIO on writeback: the data may not be on disk
            self._fail(f"{exc.strerror or exc} while saving it to disk", torn=False)
        finally:
            self._release_lock()

    def _stop_thread(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()  # after what is queued (a stalled write, the file's close)

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()


def _lock_target(path: Path) -> TargetLock:
    """Check ``path`` as a recording target and take its lock (held until
    close: no other probetop writes this file); RecordingError if refused."""
    check_recording_path(path)
    lock = TargetLock.for_target(os.path.realpath(path), "record")
    try:
        lock.acquire()
    except TargetBusy as exc:
        raise RecordingError(f"cannot record to {path}: {exc}") from None
    return lock


def _copy_to(file: LineFile, target: Path) -> None:
    """``move_to``'s copy: the in-memory recording ``file`` into a new file at
    ``target`` (never an existing one), synced, and ``file``'s descriptor
    made to name it. RecordingError (the new file removed) on failure."""
    try:
        fd = os.open(target, OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise RecordingError(f"cannot record to {target}: {open_error(target, exc)}") from None
    try:
        os.set_blocking(fd, True)
        _copy_all(file.fd, fd, file.offset)
        os.fsync(fd)
        os.dup2(fd, file.fd)  # the writer's descriptor now names the file
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise RecordingError(f"cannot record to {target}: {exc.strerror}") from None
    finally:
        os.close(fd)


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
