"""What a view attached to a detached session reads: its recording, followed.

Contract:
- ``AttachedSession.open(info)`` opens the session's recording for following
  (RecordingError before any screen opens if it cannot be read).
- ``poll()`` returns every whole record line written since the last call
  (the first call: the whole history), reading until caught up.
- ``state`` is "running", "finished" or "died", re-read from the session's
  metadata at most once a second; a footer in the recording means finished.
- ``stop()`` stops the session (``control.stop_session``); blocking, so the
  dashboard calls it from a thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from probetop.probes.core.sample import Record
from probetop.probes.record import RecordingFollower
from probetop.tui.sessions.control import stop_session
from probetop.tui.sessions.registry import SessionInfo, meta_path, read_info

MAX_POLLS = 64  # per call: 64 x 64 MiB, more than any recording the reader accepts


@dataclass
class AttachedSession:
    """One session as an attached view sees it."""

    info: SessionInfo
    follower: RecordingFollower
    _state: str = "running"
    _checked: float = field(default=0.0)

    @classmethod
    def open(cls, info: SessionInfo) -> AttachedSession:
        return cls(info, RecordingFollower(info.recording), info.state)

    @property
    def name(self) -> str:
        return self.info.name

    def poll(self) -> list[tuple[float, Record]]:
        out: list[tuple[float, Record]] = []
        for _ in range(MAX_POLLS):
            out.extend(self.follower.poll())
            if self.follower.caught_up:
                break
        return out

    @property
    def state(self) -> str:
        if self.follower.footer is not None:
            return "finished"
        now = time.monotonic()
        if now - self._checked >= 1.0:
            self._checked = now
            info = read_info(meta_path(self.info.name))
            if info is not None:
                self.info = info
                self._state = info.state
        return self._state

    def stop(self, wait_s: float = 30.0) -> SessionInfo:
        self.info = stop_session(self.info, wait_s)
        self._state = self.info.state
        return self.info

    def close(self) -> None:
        self.follower.close()
