"""Warm-up job: checkpointing. Which checkpoint a warm-up uses, and when it is
saved (the file format is probes/disk/warmup/checkpoint.py).

``CheckpointKeeper(settings, target, identity)``:

- ``path``: ``--checkpoint`` or the target's default place;
- ``open()`` (at prepare): the path must be free, empty, or a probetop
  checkpoint: anything else (``~/notes.txt``, a directory, a device, a FIFO)
  is refused and never overwritten; a damaged checkpoint is refused with the
  way to start over, never silently replaced. With ``--resume``, load it and
  refuse it for another target, pass, block size or range; without, refuse
  to start over an unfinished one (except an unfinished read pass's under a
  confirmed write pass, which destroys what it tracked). Also checks that no other warm-up uses
  the same checkpoint file (``checkpoint.checkpoint_lock``) and that its
  directory is writable. Returns the pass to start with (a resumed
  "write+read" may start at its read pass);
- ``hold()`` / ``close(timeout)`` (at run): hold the checkpoint's lock for the
  run; ``close`` waits up to ``timeout`` for the last save and drops it;
- ``for_pass(pass_name)``: the checkpoint a pass records into (the resumed
  one, or a new one saved at once);
- ``save(checkpoint, extents)``: mark completed extents and hand the bytes
  to a background writer (``BackgroundSaver``: a daemon thread, atomic
  write-rename, newest state wins), so a slow or hung filesystem never
  blocks the event loop or a stop; a failed save is not fatal (the previous
  file stays intact) and its message is returned once, for the caller to
  show;
- ``after_failure(what)``: the message for a pass stopped by an I/O error:
  what the checkpoint keeps and how to go on.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probetop.probes.core.base import TargetProbeError
from probetop.probes.core.targetlock import TargetBusy, TargetLock
from probetop.probes.disk.target import Target
from probetop.probes.disk.targeterrors import target_errors
from probetop.probes.disk.warmup.checkpoint import (
    Checkpoint,
    CheckpointError,
    NotACheckpoint,
    checkpoint_lock,
    default_path,
    restart_advice,
    write_atomic,
)
from probetop.probes.disk.warmup.settings import WarmupSettings

SAVE_EVERY_S = 0.5  # at most this often; the last save at the end of a pass


class BackgroundSaver:
    """Writes checkpoint bytes atomically in a daemon thread; see the module
    docstring. ``error`` is the last save's failure (None once one works)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.error: str | None = None
        self._cond = threading.Condition()
        self._pending: bytes | None = None
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="probetop-checkpoint", daemon=True)
        self._thread.start()

    def submit(self, payload: bytes) -> None:
        with self._cond:
            self._pending = payload  # the newest state replaces one not yet written
            self._cond.notify()

    def flush(self, timeout: float) -> bool:
        """Wait until everything submitted is written; False if ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending is not None or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float) -> bool:
        done = self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify()
        return done

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:
                    return
                payload, self._pending = self._pending, None
                self._busy = True
            try:
                write_atomic(self.path, payload)
                error = None
            except CheckpointError as exc:
                error = str(exc)
            with self._cond:
                self.error = error
                self._busy = False
                self._cond.notify_all()


class CheckpointKeeper:
    """See the module docstring."""

    def __init__(
        self, settings: WarmupSettings, target: Target, identity: Mapping[str, Any]
    ) -> None:
        self.settings = settings
        self.target = target
        self.identity = dict(identity)
        self.path = settings.checkpoint or str(default_path(settings.target))
        self.resumed_from: int | None = None
        self.done_bytes = 0
        self.save_error: str | None = None
        self._current: Checkpoint | None = None
        self._lock: TargetLock = checkpoint_lock(self.path)
        self._saver: BackgroundSaver | None = None
        self._last_save = 0.0
        self._reported: str | None = None

    @property
    def lock(self) -> TargetLock:
        """The checkpoint file's lock (held from ``hold`` to ``close``)."""
        return self._lock

    def open(self) -> str:
        """Check the checkpoint before anything starts; the pass to start with."""
        try:
            self._lock.check()
        except TargetBusy as exc:
            raise TargetProbeError(str(exc)) from None
        self._check_directory()
        s, path = self.settings, self.path
        passes = s.passes
        if not s.resume:
            existing = self._existing()
            # A confirmed write pass destroys what an unfinished read pass
            # was keeping track of: its checkpoint is superseded (the
            # dashboard's switch from a read pass over a fresh volume).
            supersedes = (
                existing is not None and existing.pass_name == "read" and s.writes and s.confirmed
            )
            if existing is not None and existing.remaining() and not supersedes:
                raise TargetProbeError(
                    f"an unfinished warm-up checkpoint exists at {path}: add --resume to "
                    f"continue it, or {restart_advice(path)}."
                )
            return passes[0]
        if not os.path.lexists(path):
            raise TargetProbeError(
                f"--resume: no checkpoint at {path}. Start without --resume, or give "
                "the file with --checkpoint."
            )
        try:
            cp = Checkpoint.load(path)
        except CheckpointError as exc:
            raise TargetProbeError(f"--resume: {exc}") from None
        # Passes before the checkpoint's were complete when it was started.
        start = cp.pass_name if cp.pass_name in passes else passes[0]
        reason = cp.matches(self.identity, start, s.bs, self.target.start, self.target.end)
        if reason:
            raise TargetProbeError(f"--resume refused: {reason}")
        self._current = cp
        self.resumed_from = self.done_bytes = int(cp.done_bytes)
        return start

    def _existing(self) -> Checkpoint | None:
        """What is at the path now: None (nothing, or an empty file: nothing to
        lose), or a valid checkpoint; refuses anything else (see ``open``)."""
        path = self.path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if os.path.islink(path):
                raise TargetProbeError(
                    f"--checkpoint {path} is a dangling symbolic link: give a plain file name"
                ) from None
            return None
        except OSError as exc:
            raise TargetProbeError(f"checkpoint {path}: {exc.strerror}") from None
        if stat.S_ISREG(st.st_mode) and st.st_size == 0:
            return None
        try:
            return Checkpoint.load(path)
        except NotACheckpoint as exc:
            raise TargetProbeError(str(exc)) from None
        except CheckpointError as exc:  # corrupt, newer format, unreadable
            raise TargetProbeError(str(exc)) from None

    def _check_directory(self) -> None:
        """The checkpoint's directory exists and is writable. Only the default
        place (/var/lib/probetop/warmup) is created; a --checkpoint FILE's
        directory must exist, as for a file target."""
        directory = Path(self.path).parent
        if self.settings.checkpoint is not None and not directory.is_dir():
            raise TargetProbeError(
                f"--checkpoint {self.path}: directory {directory} does not exist. Create it first."
            )
        with target_errors(str(directory), "creating the checkpoint's directory"):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise TargetProbeError(
                f"cannot write the checkpoint in {directory} (permission denied): give "
                "--checkpoint FILE somewhere writable"
            )

    def hold(self) -> None:
        """Take the checkpoint's lock for the run (TargetProbeError if taken)."""
        try:
            self._lock.acquire()
        except TargetBusy as exc:
            raise TargetProbeError(str(exc)) from None
        self._saver = BackgroundSaver(self.path)

    def close(self, timeout: float) -> str | None:
        """Wait up to ``timeout`` for the last save, then drop the lock; a
        message if the last save did not finish (the file holds an earlier,
        valid state) or failed."""
        message = None
        if self._saver is not None:
            if not self._saver.close(timeout):
                message = (
                    f"the last checkpoint save did not finish within {timeout:g} s (the "
                    f"filesystem is not answering): {self.path} holds an earlier, valid state"
                )
            elif self._saver.error:
                message = self._saver.error
        self._lock.release()
        return message

    def for_pass(self, pass_name: str) -> Checkpoint:
        cp = self._current
        if cp is None or cp.pass_name != pass_name:
            t = self.target
            cp = Checkpoint(
                self.path, self.identity, pass_name, self.settings.bs, t.size, t.start, t.end
            )
            self._submit(cp, force=True)
        self._current = cp
        return cp

    def save(
        self, cp: Checkpoint, extents: list[tuple[int, int]], *, force: bool = False
    ) -> str | None:
        for start, end in extents:
            cp.mark_done(start, end)
        self.done_bytes = int(cp.done_bytes)
        return self._submit(cp, force=force)

    def _submit(self, cp: Checkpoint, *, force: bool) -> str | None:
        now = time.monotonic()
        if self._saver is None:  # not running (tests, prepare only): save in place
            try:
                cp.save()
                self.save_error = None
            except CheckpointError as exc:
                self.save_error = str(exc)
        elif force or now - self._last_save >= SAVE_EVERY_S:
            self._saver.submit(cp.encode())
            self._last_save = now
            self.save_error = self._saver.error
        if self.save_error and self.save_error != self._reported:
            self._reported = self.save_error
            return self.save_error
        if not self.save_error:
            self._reported = None
        return None

    def after_failure(self, what: str) -> str:
        message = (
            f"{what}. Checkpoint {self.path} keeps the {self.done_bytes:,} bytes done: "
            "fix the cause, then rerun with --resume."
        )
        if self.save_error:
            message += f" (but the last checkpoint save failed: {self.save_error})"
        return message
