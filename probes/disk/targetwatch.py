"""A target that changes under a run, noticed once a tick.

Contract: ``TargetWatch(target).problem()``: the target was removed,
replaced, shrunk below the area in use, a loop device detached: what, in
one line; else None.
"""

from __future__ import annotations

import os
import stat

from probetop.probes.core.base import ProbeError
from probetop.probes.disk.blockdev import identify
from probetop.probes.disk.target import Target
from probetop.probes.disk.targeterrors import describe_os_error


class TargetWatch:
    """Notices a target that changed under a run: removed, replaced by another
    file or device, shrunk below the area in use, a loop device detached.
    ``problem()`` (cheap: one stat, for a device one sysfs read) says what,
    or None; the probes look once per tick and stop with that message."""

    def __init__(self, target: Target) -> None:
        self.path = target.path
        self.end = target.end
        st = os.stat(target.path)
        self._kind = target.kind
        self._id = (st.st_rdev,) if stat.S_ISBLK(st.st_mode) else (st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return f"{self.path} disappeared during the run ({describe_os_error(exc)})"
        block = stat.S_ISBLK(st.st_mode)
        now = (st.st_rdev,) if block else (st.st_dev, st.st_ino)
        if now != self._id or block != (self._kind == "block"):
            return f"{self.path} was replaced by another file or device during the run"
        if block:
            try:
                size = identify(self.path).size_bytes
            except ProbeError as exc:
                return f"{self.path} became unusable during the run ({exc})"
        else:
            size = st.st_size
        if size < self.end:
            return (
                f"{self.path} shrank to {size:,} bytes during the run (the area in use ends "
                f"at {self.end:,}): stopped"
            )
        return None
