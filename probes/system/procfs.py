"""The kernel's counters for the passive probes, read straight from /proc.

psutil reopens and re-parses each file per call, builds a namedtuple per
device and keeps a wrap-around table (``nowrap``); it also reads
/proc/cpuinfo for frequencies even where sysfs has them. At 1 Hz for every
dashboard that was ~0.6 ms of CPU a second, measured in the dashboard (more
than drawing one of its panes). Here each file stays open and is re-read
from offset 0 with one ``pread`` (procfs regenerates it), and only the
fields the panes use are parsed.

Contract:
- ``cpu_ticks()``: ``{cpu number: CpuTicks}`` from /proc/stat (USER_HZ ticks).
- ``disk_counters()``: ``{device: DiskTicks}`` from /proc/diskstats, every
  line (disks and partitions); bytes are 512-byte sectors times 512, as
  the kernel counts them whatever the device's sector size.
- ``nic_counters()``: ``{interface: NicTicks}`` from /proc/net/dev.
- ``CpuFreq().read()``: ``{cpu number: MHz}`` from cpufreq in sysfs, else
  from /proc/cpuinfo (re-read every 10th call); ``{}`` when neither exists.
- ``counter_delta(after, before)``: the increase of a kernel counter (one
  that went down counts from zero).
Each function raises OSError when its file cannot be read.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from typing import NamedTuple

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors on every device


class CpuTicks(NamedTuple):
    """One CPU's line of /proc/stat (USER_HZ ticks since boot)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0  # also counted in user
    guest_nice: int = 0  # also counted in nice

    @property
    def total(self) -> int:
        """All ticks, guest time counted once (as top and psutil do)."""
        return sum(self) - self.guest - self.guest_nice

    @property
    def idle_all(self) -> int:
        return self.idle + self.iowait


class DiskTicks(NamedTuple):
    """One block device's counters from /proc/diskstats."""

    read_count: int
    write_count: int
    read_bytes: int
    write_bytes: int
    read_time: int  # ms spent reading
    write_time: int  # ms spent writing
    busy_time: int | None  # ms with I/O in flight (None on a partition line)


class NicTicks(NamedTuple):
    """One interface's counters from /proc/net/dev."""

    bytes_recv: int
    packets_recv: int
    errin: int
    dropin: int
    bytes_sent: int
    packets_sent: int
    errout: int
    dropout: int


class ProcFile:
    """A kernel file kept open and re-read whole from its start."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._size = 8192

    def read(self) -> bytes:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        while True:
            data = os.pread(self._fd, self._size, 0)
            if len(data) < self._size:
                return data
            self._size *= 2  # more CPUs or devices than the buffer held

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


_STAT = ProcFile("/proc/stat")
_DISKSTATS = ProcFile("/proc/diskstats")
_NETDEV = ProcFile("/proc/net/dev")


def cpu_ticks(source: ProcFile = _STAT) -> dict[int, CpuTicks]:
    out: dict[int, CpuTicks] = {}
    for line in source.read().split(b"\n"):
        if not line.startswith(b"cpu"):
            if out:
                break  # the cpuN lines come together, after "cpu "
            continue
        name, *fields = line.split()
        if name == b"cpu":
            continue  # the all-CPU total: the probe averages its cores
        out[int(name[3:])] = CpuTicks(*map(int, fields[:10]))
    return out


def disk_counters(source: ProcFile = _DISKSTATS) -> dict[str, DiskTicks]:
    out = {}
    for line in source.read().split(b"\n"):
        fields = line.split()
        n = len(fields)
        if n == 14 or n >= 18:  # a disk (Linux 2.6+; 4.18 and 5.5 added fields)
            reads, _rm, rsec, rtime, writes, _wm, wsec, wtime, _inflight, busy = map(
                int, fields[3:13]
            )
            out[fields[2].decode()] = DiskTicks(
                reads,
                writes,
                rsec * SECTOR_BYTES,
                wsec * SECTOR_BYTES,
                rtime,
                wtime,
                busy,
            )
        elif n == 7:  # a partition on old kernels: four counters only
            reads, rsec, writes, wsec = map(int, fields[3:7])
            out[fields[2].decode()] = DiskTicks(
                reads, writes, rsec * SECTOR_BYTES, wsec * SECTOR_BYTES, 0, 0, None
            )
    return out


def nic_counters(source: ProcFile = _NETDEV) -> dict[str, NicTicks]:
    out = {}
    for line in source.read().split(b"\n")[2:]:  # two header lines
        name, colon, rest = line.rpartition(b":")
        if not colon:
            continue
        f = rest.split()
        if len(f) < 12:
            continue
        out[name.strip().decode()] = NicTicks(
            int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[8]), int(f[9]), int(f[10]), int(f[11])
        )
    return out


_CPUFREQ = re.compile(r"/cpu(\d+)/cpufreq/scaling_cur_freq$")


class CpuFreq:
    """Current MHz per CPU: sysfs cpufreq (kHz) where the kernel has it,
    else the "cpu MHz" lines of /proc/cpuinfo, re-read every
    ``CPUINFO_EVERY`` calls only: the kernel builds that whole file for it
    (30 µs on 2 CPUs, more than the rest of the CPU probe), and where there
    is no cpufreq (most VMs) the figure does not move."""

    CPUINFO_EVERY = 10

    def __init__(self) -> None:
        self._calls = 0
        self._cpuinfo_mhz: dict[int, float] = {}
        self.sysfs: dict[int, ProcFile] = {}
        for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"):
            match = _CPUFREQ.search(path)
            if match:
                self.sysfs[int(match.group(1))] = ProcFile(path)
        self.cpuinfo = None if self.sysfs else ProcFile("/proc/cpuinfo")

    def read(self) -> dict[int, float]:
        out: dict[int, float] = {}
        if self.cpuinfo is None:
            for cpu, source in self.sysfs.items():
                with contextlib.suppress(OSError, ValueError):  # offline CPU
                    out[cpu] = int(source.read()) / 1000.0
            return out
        self._calls += 1
        if self._calls % self.CPUINFO_EVERY != 1:
            return dict(self._cpuinfo_mhz)
        with contextlib.suppress(OSError):
            cpu = -1
            for line in self.cpuinfo.read().split(b"\n"):
                if line.startswith(b"processor"):
                    cpu = int(line.rpartition(b":")[2])
                elif line.startswith(b"cpu MHz") and cpu >= 0:
                    out[cpu] = float(line.rpartition(b":")[2])
        self._cpuinfo_mhz = out
        return dict(out)

    def close(self) -> None:
        for source in self.sysfs.values():
            source.close()
        if self.cpuinfo is not None:
            self.cpuinfo.close()


def counter_delta(after: int, before: int) -> int:
    """The increase of a kernel counter. One that went down restarted from
    zero (a device re-created, or a 32-bit counter that wrapped: then only
    the few counts before the wrap are missed), as psutil's ``nowrap``
    assumes: never a negative rate, never a 4-billion spike."""
    return after - before if after >= before else after
