"""Warm-up job: checkpointing. Which checkpoint a warm-up uses, and when it is
saved (the file format is probes/disk/checkpoint.py).

``CheckpointKeeper(settings, target, identity)``:

- ``path``: ``--checkpoint`` or the target's default place;
- ``open()`` (at prepare): with ``--resume``, load the checkpoint and refuse it
  for another target, pass, block size or range; without, refuse to start
  over an unfinished one. Returns the pass to start with (a resumed
  "write+read" may start at its read pass);
- ``for_pass(pass_name)``: the checkpoint a pass records into (the resumed
  one, or a new one saved at once);
- ``save(checkpoint, extents)``: mark completed extents and save atomically;
  a failed save is not fatal (the previous file stays intact) and returns the
  message the first time it happens, for the caller to show;
- ``after_failure(what)``: the message for a pass stopped by an I/O error:
  what the checkpoint keeps and how to go on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk.checkpoint import Checkpoint, CheckpointError, default_path
from probetop.probes.disk.settings import WarmupSettings
from probetop.probes.disk.target import Target


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

    def open(self) -> str:
        """Check the checkpoint before anything starts; the pass to start with."""
        s, path = self.settings, self.path
        passes = s.passes
        if not s.resume:
            if os.path.exists(path):
                try:
                    unfinished = bool(Checkpoint.load(path).remaining())
                except Exception:
                    unfinished = False
                if unfinished:
                    raise TargetProbeError(
                        f"an unfinished warm-up checkpoint exists at {path}: add --resume to "
                        "continue it, or delete the file to start over."
                    )
            return passes[0]
        if not os.path.exists(path):
            raise TargetProbeError(
                f"--resume: no checkpoint at {path}. Start without --resume, or give "
                "the file with --checkpoint."
            )
        try:
            cp = Checkpoint.load(path)
        except (OSError, ValueError) as exc:
            raise TargetProbeError(f"--resume: cannot read checkpoint {path}: {exc}") from None
        # Passes before the checkpoint's were complete when it was started.
        start = cp.pass_name if cp.pass_name in passes else passes[0]
        reason = cp.matches(self.identity, start, s.bs, self.target.start, self.target.end)
        if reason:
            raise TargetProbeError(f"--resume refused: {reason}")
        self._current = cp
        self.resumed_from = int(cp.done_bytes)
        return start

    def for_pass(self, pass_name: str) -> Checkpoint:
        cp = self._current
        if cp is None or cp.pass_name != pass_name:
            t = self.target
            cp = Checkpoint(
                self.path, self.identity, pass_name, self.settings.bs, t.size, t.start, t.end
            )
            cp.save()
        self._current = cp
        return cp

    def save(self, cp: Checkpoint, extents: list[tuple[int, int]]) -> str | None:
        for start, end in extents:
            cp.mark_done(start, end)
        self.done_bytes = int(cp.done_bytes)
        try:
            cp.save()
        except CheckpointError as exc:
            if self.save_error != str(exc):
                self.save_error = str(exc)
                return str(exc)
        else:
            self.save_error = None
        return None

    def after_failure(self, what: str) -> str:
        message = (
            f"{what}. Checkpoint {self.path} keeps the {self.done_bytes:,} bytes done: "
            "fix the cause, then rerun with --resume."
        )
        if self.save_error:
            message += f" (but the last checkpoint save failed: {self.save_error})"
        return message
