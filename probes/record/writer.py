"""JSON Lines session recorder (format: codec.py, docs/recording-format.md).

Contract:
- ``Recorder.check_path(path)`` fails fast (RecordingError) when the file cannot
  be created, so the CLI can refuse before any UI starts.
- The file is created with mode 0600 (recordings may reveal hosts and URLs).
- Line 1 is the header; then one line per record in arrival order; the last
  line is the footer with every probe's summary. Everything passes through
  ``redact`` first.
- Lines are flushed to the OS at least once a second, so a kill -9 loses at
  most the last second and every complete line stays valid JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from pathlib import Path
from typing import Any

import aiofiles
from probetop.probes import __version__
from probetop.probes.core.hub import Hub, Subscription
from probetop.probes.core.sample import Announce, Record, now_ns
from probetop.probes.record.codec import (
    FORMAT_NAME,
    SCHEMA_VERSION,
    RecordingError,
    dump_line,
    encode_record,
)
from probetop.probes.record.hostinfo import host_facts

FLUSH_EVERY_S = 0.5


def _open_private(path: str, flags: int, mode: int = 0o600) -> int:
    fd = os.open(path, flags, mode)
    os.fchmod(fd, mode)  # an existing file keeps its old mode on O_TRUNC
    return fd


def _wall_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class Recorder:
    """Writes one session to a JSON Lines file while the hub runs."""

    def __init__(self, path: str | os.PathLike[str], hub: Hub, command: list[str]) -> None:
        self.path = Path(path)
        self.hub = hub
        self.command = command
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._file: Any = None
        self.lines_written = 0
        self._skip_announce: set[str] = set()

    @staticmethod
    def check_path(path: str | os.PathLike[str]) -> None:
        """Raise RecordingError unless ``path`` can be created or overwritten."""
        p = Path(path)
        if p.is_dir():
            raise RecordingError(f"cannot record to {p}: it is a directory")
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise RecordingError(f"cannot record to {p}: directory {parent} does not exist")
        if p.exists():
            if not os.access(p, os.W_OK):
                raise RecordingError(f"cannot record to {p}: permission denied")
        elif not os.access(parent, os.W_OK | os.X_OK):
            raise RecordingError(f"cannot record to {p}: directory {parent} is not writable")

    def _t(self, t_ns: int) -> float:
        return round((t_ns - self.hub.started_ns) / 1e9, 6)

    def encode(self, record: Record) -> dict[str, Any]:
        """The JSON object of one record line."""
        return encode_record(record, self.hub.started_ns)

    async def start(self) -> None:
        """Open the file, write the header, and start draining the hub."""
        self.check_path(self.path)
        try:
            self._file = await aiofiles.open(
                self.path,
                "w",
                encoding="utf-8",
                opener=lambda p, f: _open_private(p, f | os.O_CREAT | os.O_TRUNC),
            )
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror}") from exc
        header = {
            "type": "header",
            "format": FORMAT_NAME,
            "schema": SCHEMA_VERSION,
            "probetop": __version__,
            "started_at": _wall_now(),
            "command": self.command,
            "host": host_facts(),
            "probes": list(self.hub.descriptions.values()),
        }
        await self._write(header)
        await self._file.flush()
        # Probes already known went into the header; the subscription would
        # announce them again, so skip those first announcements.
        self._skip_announce = set(self.hub.descriptions)
        self._sub = self.hub.subscribe(lossless=True)
        self._task = asyncio.get_running_loop().create_task(self._drain(), name="recorder")

    async def _write(self, obj: dict[str, Any]) -> None:
        await self._file.write(dump_line(obj))
        self.lines_written += 1

    async def _write_records(self, records: list[Record]) -> None:
        for record in records:
            if isinstance(record, Announce) and record.probe in self._skip_announce:
                self._skip_announce.discard(record.probe)
                continue
            await self._write(self.encode(record))

    async def _drain(self) -> None:
        assert self._sub is not None
        while not self._sub.closed:
            records = await self._sub.wait(timeout=FLUSH_EVERY_S)
            if records:
                await self._write_records(records)
                await self._file.flush()

    async def close(self, reason: str = "completed") -> None:
        """Write what is queued, then the footer with summaries, and close.

        Call after ``hub.stop()`` so the summaries are final. Safe to call twice.
        """
        if self._file is None:
            return
        if self._task is not None:
            # Closing the subscription ends _drain after it writes what it has
            # already drained; cancelling it mid-write lost those records.
            if self._sub is not None:
                self._sub.close()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._sub is not None:
            await self._write_records(self._sub.drain())
            self.hub.unsubscribe(self._sub)
        footer = {
            "type": "footer",
            "ended_at": _wall_now(),
            "duration_s": self._t(now_ns()),
            "reason": reason,
            "summaries": {pid: dict(s) for pid, s in self.hub.summaries.items()},
            "errors": dict(self.hub.errors),
        }
        await self._write(footer)
        await self._file.flush()
        await self._file.close()
        self._file = None


def schema_path() -> Path:
    """The JSON Schema every line of a recording validates against (shipped in the wheel)."""
    return Path(__file__).resolve().parent / "schema" / "session-line.schema.json"
