"""fio's ``disk_util``: the kernel's view of the target's disk over a run,
read from /proc/diskstats.

Contract:
- ``read_diskstats(name)`` is one ``DiskStat`` (the counters fio reads for
  a disk, in /proc/diskstats' units: I/Os, 512-byte sectors, ms) or None when
  the kernel lists no such disk (tmpfs, NFS: no block device).
- ``disk_util(name, before, after, msec)`` is one entry of fio's
  ``disk_util[]`` (fio's keys, types and units: ``util`` is the share of
  the ``msec`` wall time the disk had I/O in flight, in %, capped at 100).
- ``terse_fields(entry)`` is the same entry in fio's terse layout.
Pure reads: a vanished disk gives None, never an exception.
"""

from __future__ import annotations

from typing import Any, NamedTuple

DISKSTATS = "/proc/diskstats"


class DiskStat(NamedTuple):
    """The /proc/diskstats counters fio's disk_util is made of."""

    read_ios: int
    read_merges: int
    read_sectors: int
    read_ticks: int  # ms
    write_ios: int
    write_merges: int
    write_sectors: int
    write_ticks: int  # ms
    io_ticks: int  # ms with I/O in flight
    time_in_queue: int  # ms, weighted by the I/Os in flight

    def minus(self, before: DiskStat) -> DiskStat:
        # Counters are unsigned in the kernel: a wrap reads as a huge delta; clamp at 0.
        return DiskStat(*(max(0, a - b) for a, b in zip(self, before, strict=True)))


def read_diskstats(name: str, path: str = DISKSTATS) -> DiskStat | None:
    """The counters of disk ``name`` ("loop0", "vda"), or None."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 14 and fields[2] == name:
                    v = [int(x) for x in fields[3:14]]
                    # reads, merges, sectors, ms; writes ...; in flight; io ms; weighted ms
                    return DiskStat(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[9], v[10])
    except (OSError, ValueError):
        return None
    return None


def disk_util(name: str, before: DiskStat, after: DiskStat, msec: int) -> dict[str, Any]:
    """One ``disk_util[]`` entry as fio 3.33 writes it (``json_array_add_disk_util``;
    later fio versions add ``read_sectors``/``write_sectors``)."""
    d = after.minus(before)
    util = min(100.0, 100.0 * d.io_ticks / msec) if msec > 0 else 0.0
    return {
        "name": name,
        "read_ios": d.read_ios,
        "write_ios": d.write_ios,
        "read_merges": d.read_merges,
        "write_merges": d.write_merges,
        "read_ticks": d.read_ticks,
        "write_ticks": d.write_ticks,
        "in_queue": d.time_in_queue,
        "util": util,
    }


def terse_fields(entry: dict[str, Any]) -> str:
    """fio's terse disk-util fields (``print_disk_util``), leading ``;`` included."""
    return (
        f";{entry['name']};{entry['read_ios']};{entry['write_ios']};{entry['read_merges']};"
        f"{entry['write_merges']};{entry['read_ticks']};{entry['write_ticks']};"
        f"{entry['in_queue']};{entry['util']:3.2f}%"
    )
