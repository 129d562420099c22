"""What a view attached to a detached session reads: its recording, followed.

Contract:
- ``AttachedSession.open(info)`` opens the session's recording for following
  (RecordingError before any screen opens if it cannot be read).
- ``poll()`` returns every whole record line written since the last call
  (the first call: the whole history), reading until caught up;
  ``poll(max_bytes)`` reads at most that much (``caught_up`` says if more
  is waiting), so a long history loads a slice per frame.
- ``preview()`` is the newest ``PREVIEW_BYTES`` of the recording (the panes'
  first frame while the whole history loads), or [] when the recording is
  small enough to load at once.
- A recording that turns out unreadable (a damaged line, a .zst bomb)
  raises RecordingError from ``poll`` once; later polls return nothing
  (``failed`` keeps the message): the follower's place in a damaged file
  means nothing, and one message is enough (not one per frame).
- ``state`` is "running", "finished" or "died", re-read from the session's
  metadata at most once a second; a footer in the recording means finished.
- ``stop()`` stops the session (``control.stop_session``); blocking, so the
  dashboard calls it from a thread.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from probetop.probes.core.sample import Record
from probetop.probes.record import RecordingError, RecordingFollower
from probetop.tui.sessions.control import stop_session
from probetop.tui.sessions.registry import SessionInfo, meta_path, read_info

MAX_POLLS = 64  # per call: 64 x 64 MiB, more than any recording the reader accepts
PREVIEW_BYTES = 1 << 20  # about 3 minutes of `probetop demo`


@dataclass
class AttachedSession:
    """One session as an attached view sees it."""

    info: SessionInfo
    follower: RecordingFollower
    _state: str = "running"
    _checked: float = field(default=0.0)
    failed: str | None = None

    @classmethod
    def open(cls, info: SessionInfo) -> AttachedSession:
        return cls(info, RecordingFollower(info.recording), info.state)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def caught_up(self) -> bool:
        return self.failed is not None or self.follower.caught_up

    def preview(self) -> list[tuple[float, Record]]:
        if self.follower.size or os.stat(self.info.recording).st_size <= 2 * PREVIEW_BYTES:
            return []
        return self.follower.tail(PREVIEW_BYTES)

    def poll(self, max_bytes: int | None = None) -> list[tuple[float, Record]]:
        if self.failed is not None:
            return []
        try:
            if max_bytes is not None:
                return self.follower.poll(max_bytes)
            out: list[tuple[float, Record]] = []
            for _ in range(MAX_POLLS):
                out.extend(self.follower.poll())
                if self.follower.caught_up:
                    break
            return out
        except RecordingError as exc:
            self.failed = str(exc)
            raise

    @property
    def state(self) -> str:
        if self.follower.footer is not None:
            return "finished"
        now = time.monotonic()
        if now - self._checked >= 1.0:
            self._checked = now
            info = read_info(meta_path(self.info.name))
            if isinstance(info, SessionInfo):
                self.info = info
                self._state = info.state
        return self._state

    def stop(self, wait_s: float = 30.0) -> SessionInfo:
        done = stop_session(self.info, wait_s)
        if done is None:  # it ended before it started: nothing is listed
            self._state = "finished"
            return self.info
        self.info = done
        self._state = done.state
        return done

    def close(self) -> None:
        self.follower.close()
