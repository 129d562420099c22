"""Room on a filesystem for a file that is about to grow.

Contract: ``check_room(path, need, what)``: a file that is about to grow (a
layout, writes into its holes) must fit in its filesystem's free space and
leave ``keep_free(total)`` free: 5 % of the filesystem, at most 1 GiB (ext4
reserves 5 % for root for the same reason: a full filesystem breaks
whatever else writes there; the 1 GiB cap keeps the margin sensible on big
volumes). Refused (``ProbeError``) with the numbers: needed, free, what
would be left. ``allocation_needed`` is what writing a range of a file
would allocate; ``room_for`` the free space (None if unknown).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from probetop.probes.core.base import TargetProbeError
from probetop.probes.disk.capacity import human
from probetop.probes.disk.mounts import existing_dir, filesystem_of
from probetop.probes.disk.targeterrors import target_errors

KEEP_FREE_SHARE = 0.05
KEEP_FREE_MAX = 1 << 30


def keep_free(total: int) -> int:
    """Bytes a filesystem of ``total`` bytes keeps free: 5 %, at most 1 GiB."""
    return min(int(total * KEEP_FREE_SHARE), KEEP_FREE_MAX)


@dataclass(frozen=True, slots=True)
class Room:
    """Free space of the filesystem holding a path."""

    free: int  # bytes an unprivileged writer may still use (f_bavail)
    total: int
    point: str  # its mount point, for the message

    @property
    def keep(self) -> int:
        return keep_free(self.total)


def room_for(path: str) -> Room | None:
    """Free space where ``path`` lives; None when the filesystem does not say
    (it reports no size: ramfs, some FUSE filesystems)."""
    where = path if os.path.exists(path) else existing_dir(path)
    st = os.statvfs(where)
    if st.f_blocks == 0:
        return None
    mount = filesystem_of(where)
    return Room(
        free=st.f_bavail * st.f_frsize,
        total=st.f_blocks * st.f_frsize,
        point=mount.point if mount else existing_dir(where),
    )


def allocation_needed(path: str, start: int, end: int) -> int:
    """At most how many bytes writing [start, end) of ``path`` allocates: the
    part beyond its end plus its holes (sparse regions) inside the range."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return end
    if not stat.S_ISREG(st.st_mode):
        return 0
    beyond = max(0, end - max(st.st_size, start))
    inside = max(0, min(end, st.st_size) - start)
    holes = max(0, st.st_size - st.st_blocks * 512)
    return beyond + min(holes, inside)


def check_room(path: str, need: int, what: str) -> None:
    """Refuse (TargetProbeError) ``need`` more bytes where ``path`` lives when
    they would not fit or would leave less than ``keep_free`` free."""
    if need <= 0:
        return
    with target_errors(path, "checking free space"):
        room = room_for(path)
    if room is None:
        raise TargetProbeError(
            f"{path}: its filesystem does not report its size (ramfs?), so probetop cannot "
            f"check that {human(need)} fit; create the file yourself first (e.g. with fio "
            "or dd) or use another filesystem"
        )
    left = room.free - need
    if left >= room.keep:
        return
    verdict = (
        f"would not fit (short by {human(-left)})"
        if left < 0
        else f"would leave only {human(left)} free"
    )
    raise TargetProbeError(
        f"{what} {path} needs {human(need)}; its filesystem ({room.point}) has "
        f"{human(room.free)} free of {human(room.total)}: it {verdict}. probetop keeps at "
        f"least {human(room.keep)} free there (5 % of the filesystem, at most 1 GiB). "
        "Give a smaller --size (or --range), or a target on a bigger filesystem."
    )
