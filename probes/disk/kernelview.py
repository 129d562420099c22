"""The kernel's view of the device under a disk target, and the notes that
say when a measured rate is "too good to be true".

Contract:
- ``device_below(path)``: the kernel disk whose /proc/diskstats counters
  show the I/O that really reached a device for ``path``: a block device
  itself, except a loop device: the disk holding its backing file (the loop
  device counts every request, even those its file answers from holes or
  the page cache); a file: the disk holding its filesystem; None without one
  (tmpfs, NFS).
- ``KernelView(path)``: bytes read and written on that disk since it was
  made (``delta()``; None when there is no disk or it vanished).
- The notes for a run's figures: ``buffered_note`` (the page cache, worded
  for the directions that ran), ``zeros_note`` (reads only: what came back
  as holes or zeros) and ``rate_note`` (a rate far above what the disk under
  the target did in the same time, ``implausible``; a write's explanation
  is a cache, never "answered with zeros", which only reads can be).
"""

from __future__ import annotations

import os
import stat

from probetop.probes.disk import sysfs
from probetop.probes.disk.mounts import backing_device
from probetop.probes.disk.units import bandwidth

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors on every device
MIN_BYTES = 64 << 20  # below this, caches and timing make the comparison meaningless
PLAUSIBLE_SHARE = 0.5  # the disk did less than this share of our bytes: too good


def device_below(path: str) -> str | None:
    """See the module docstring."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISBLK(st.st_mode):
        sysdir = sysfs.sysfs_dir(sysfs.majmin_of(st.st_rdev))
        if sysdir is not None:
            file = sysfs.read_text(sysdir / "loop" / "backing_file")
            if file:
                return backing_device(file.removesuffix(" (deleted)"))
    return backing_device(path)


def _read_counters(name: str) -> tuple[int, int] | None:
    """(bytes read, bytes written) of disk ``name`` from /proc/diskstats."""
    try:
        with open("/proc/diskstats", encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 10 and fields[2] == name:
                    return int(fields[5]) * SECTOR_BYTES, int(fields[9]) * SECTOR_BYTES
    except (OSError, ValueError):
        return None
    return None


class KernelView:
    """Bytes the disk under a target read and wrote since it was made."""

    def __init__(self, path: str) -> None:
        self.device = device_below(path)
        self._start = _read_counters(self.device) if self.device else None

    def delta(self) -> tuple[int, int] | None:
        if self.device is None or self._start is None:
            return None
        now = _read_counters(self.device)
        if now is None:
            return None
        return now[0] - self._start[0], now[1] - self._start[1]


def rate_note(
    direction: str,
    our_bytes: int,
    seconds: float,
    device: str | None,
    kernel_bytes: int | None,
    zero_bytes: int | None = None,
) -> str | None:
    """A note when ``our_bytes`` moved in ``seconds`` is far above what the
    disk under the target did (``kernel_bytes``) in the same time, with the
    explanation that fits the direction: writes that did not reach the disk
    went to a cache (never to "zeros"); reads came back from holes or
    never-written blocks (``zero_bytes``: how many read back all zero, when
    known) or from a cache."""
    if device is None or seconds <= 0 or not implausible(our_bytes, kernel_bytes):
        return None
    assert kernel_bytes is not None
    ours = bandwidth(our_bytes / seconds)
    theirs = bandwidth(max(0, kernel_bytes) / seconds)
    head = f"too good to be true: {ours} {direction}, but the disk under the target ({device}) "
    tail = " in the same time (kernel's /proc/diskstats): "
    if direction == "write":
        return (
            head + f"wrote only {theirs}" + tail + "the rest has not reached it yet: a cache "
            "took it (the page cache of a loop device's backing file or of buffered I/O), "
            "to be written back later; the rate is the cache's, not the device's"
        )
    zero_share = zero_bytes / our_bytes if zero_bytes is not None and our_bytes else None
    if zero_share is not None and zero_share < 0.01:
        why = (
            "the rest came from a cache (the page cache of a loop device's backing file or "
            "of buffered I/O), not from the device"
        )
    elif zero_share is not None:
        why = (
            f"{100 * zero_share:.0f} % came back as holes or never-written blocks, which a "
            "volume answers with zeros without reading anything; the rest from a cache"
        )
    else:
        why = (
            "the rest never reached it (holes or never-written blocks answered with zeros, "
            "or the page cache)"
        )
    return head + f"read only {theirs}" + tail + why


def implausible(our_bytes: int, kernel_bytes: int | None) -> bool:
    """True when at least ``MIN_BYTES`` moved and the disk under the target
    saw less than ``PLAUSIBLE_SHARE`` of them: a rate the kernel's view of
    the device does not make plausible."""
    if kernel_bytes is None or our_bytes < MIN_BYTES:
        return False
    return kernel_bytes < our_bytes * PLAUSIBLE_SHARE


def buffered_note(direction: str = "both") -> str:
    """The page-cache note; ``direction`` "read", "write" or "both" says
    which half applies."""
    what = {
        "read": "reads may come from memory",
        "write": "writes are counted when they reach the cache, not the device (dd to a "
        "file without oflag=direct shows the same)",
    }
    said = [what[d] for d in ("read", "write") if direction in (d, "both")]
    return (
        "too good to be true: buffered I/O goes through the page cache: "
        + " and ".join(said)
        + "; use O_DIRECT (the default) to measure the device"
    )


def zeros_note(zero_bytes: int, read_bytes: int) -> str | None:
    """A note when a share of what was read came back all zero or from holes."""
    if read_bytes <= 0 or zero_bytes <= 0:
        return None
    pct = 100.0 * zero_bytes / read_bytes
    if pct < 1.0:
        return None
    return (
        f"too good to be true: {pct:.1f} % of the bytes read came back all zero (holes or "
        "never-written blocks, which a volume answers without reading anything): read "
        "rates there are not the device's"
    )
