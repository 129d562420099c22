"""Passive system probes: per-core CPU, per-disk I/O, per-NIC packets (psutil).

Each is cheap (a few /proc reads per interval, well under 0.5% of a core at
1 Hz) and reports per-interval rates computed from counter deltas over the
measured monotonic interval, never cumulative totals.

Metric keys carry the entity: ``core_busy_pct@cpu0``, ``read_iops@vda``,
``rx_pps@eth0``. Each probe builds its interval as a typed record
(``records.py``) and lets the record lay out the Sample.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import psutil
from probetop.probes.core.base import Emit, MetricSpec
from probetop.probes.core.passive import (
    CPU_PROBE_ID,
    DISK_PROBE_ID,
    NET_PROBE_ID,
    DiskCounters,
    NicCounters,
)
from probetop.probes.core.sample import Sample, now_ns
from probetop.probes.core.stats import rate
from probetop.probes.core.ticker import Ticker
from probetop.probes.system.records import (
    CPU_METRICS,
    DISK_METRICS,
    NET_METRICS,
    CoreReading,
    CpuLoadInterval,
    DiskInterval,
    NetInterval,
)


class _PassiveProbe:
    """Shared loop: read counters each tick, emit deltas as one Sample."""

    kind = "system"
    id = "system"
    metrics: tuple[MetricSpec, ...] = ()
    background = True  # never keeps a headless run alive by itself

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.samples = 0

    def prepare(self) -> None:
        self.read()  # fail now, not in the loop, if /proc is unreadable

    def params(self) -> Mapping[str, Any]:
        return {"interval_s": self.interval_s}

    def reference_command(self) -> str | None:
        return None

    def read(self) -> Any:
        raise NotImplementedError

    def interval(self, before: Any, after: Any, seconds: float) -> Any:
        """The typed record of one interval (it has ``to_sample(t_ns, seconds)``)."""
        raise NotImplementedError

    def values(self, before: Any, after: Any, seconds: float) -> dict[str, float | None]:
        """One interval's metric values, as its Sample carries them."""
        return dict(self.sample(before, after, 0, seconds).values)

    def sample(self, before: Any, after: Any, t_ns: int, seconds: float) -> Sample:
        sample: Sample = self.interval(before, after, seconds).to_sample(t_ns, seconds)
        return sample

    async def run(self, emit: Emit) -> None:
        ticker = Ticker(self.interval_s)
        before, t0 = self.read(), now_ns()
        while True:
            t1 = await ticker.tick()
            after = self.read()
            emit(self.sample(before, after, t1, (t1 - t0) / 1e9))
            self.samples += 1
            before, t0 = after, t1

    def summary(self) -> Mapping[str, Any]:
        return {"samples": self.samples}


class CpuLoadProbe(_PassiveProbe):
    """Per-core busy %, per-core frequency, load average."""

    kind = CPU_PROBE_ID
    id = CPU_PROBE_ID
    metrics = CPU_METRICS

    def read(self) -> list[Any]:
        return psutil.cpu_times(percpu=True)

    @staticmethod
    def _total(t: Any) -> float:
        # Linux counts guest time inside user/nice too; psutil's cpu_percent
        # subtracts it, and so do we, to agree with top and psutil.
        return sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)

    @classmethod
    def _busy(cls, before: Any, after: Any) -> float | None:
        idle = (after.idle - before.idle) + (
            getattr(after, "iowait", 0) - getattr(before, "iowait", 0)
        )
        total = cls._total(after) - cls._total(before)
        if total <= 0:
            return None
        return max(0.0, min(100.0, round(100.0 * (total - idle) / total, 3)))

    def interval(self, before: Any, after: Any, seconds: float) -> CpuLoadInterval:
        busy = [self._busy(b, a) for b, a in zip(before, after, strict=False)]
        try:
            freqs = psutil.cpu_freq(percpu=True) or []
        except (OSError, NotImplementedError):
            freqs = []
        mhz = [float(f.current) if f is not None and f.current else None for f in freqs]
        cores = {
            f"cpu{i}": CoreReading(b, mhz[i] if i < len(mhz) else None) for i, b in enumerate(busy)
        }
        known = [b for b in busy if b is not None]
        load1, load5, load15 = os.getloadavg()
        mean = sum(known) / len(known) if known else None
        return CpuLoadInterval(mean, cores, load1, load5, load15)


def _whole_disks() -> set[str] | None:
    """Block devices that are whole disks (not partitions), or None if unknown.

    RAM disks and unbound loop devices are left out: they never do I/O that
    matters and would only crowd the pane.
    """
    try:
        names = os.listdir("/sys/block")
    except OSError:
        return None
    keep = set()
    for name in names:
        if name.startswith(("ram", "zram")):
            continue
        if name.startswith("loop"):
            try:
                with open(f"/sys/block/{name}/size", encoding="ascii") as f:
                    if int(f.read().strip() or 0) == 0:
                        continue
            except OSError:
                continue
        keep.add(name)
    return keep


class DiskProbe(_PassiveProbe):
    """Per-disk IOPS, bytes/s, average latency per I/O and busy % (kernel's view)."""

    kind = DISK_PROBE_ID
    id = DISK_PROBE_ID
    metrics = DISK_METRICS

    def __init__(self, interval_s: float = 1.0, devices: list[str] | None = None) -> None:
        super().__init__(interval_s)
        self.devices = devices
        self._disks_cache: set[str] | None = None
        self._disks_checked = 0

    def read(self) -> dict[str, Any]:
        counters = psutil.disk_io_counters(perdisk=True, nowrap=True) or {}
        if self.devices:
            return {k: v for k, v in counters.items() if k in self.devices}
        # Re-list /sys/block every 10 reads: loop devices come and go.
        if self._disks_checked % 10 == 0:
            self._disks_cache = _whole_disks()
        self._disks_checked += 1
        disks = self._disks_cache
        return {k: v for k, v in counters.items() if disks is None or k in disks}

    def interval(self, before: Any, after: Any, seconds: float) -> DiskInterval:
        disks: dict[str, DiskCounters] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            reads = a.read_count - b.read_count
            writes = a.write_count - b.write_count
            busy = None
            if getattr(a, "busy_time", None) is not None and seconds > 0:
                busy_pct = (a.busy_time - b.busy_time) / (seconds * 1000.0) * 100.0
                busy = max(0.0, min(100.0, busy_pct))
            # Time each completed read and write spent in flight, summed (ms),
            # over the interval: the average queue depth (iostat's aqu-sz).
            in_flight_ms = (a.read_time - b.read_time) + (a.write_time - b.write_time)
            depth = in_flight_ms / (seconds * 1000.0) if seconds > 0 else None
            disks[name] = DiskCounters(
                device=name,
                read_iops=rate(reads, seconds),
                write_iops=rate(writes, seconds),
                read_bps=rate(a.read_bytes - b.read_bytes, seconds),
                write_bps=rate(a.write_bytes - b.write_bytes, seconds),
                read_lat_ms=(a.read_time - b.read_time) / reads if reads > 0 else None,
                write_lat_ms=(a.write_time - b.write_time) / writes if writes > 0 else None,
                busy_pct=busy,
                queue_depth=max(0.0, depth) if depth is not None else None,
            )
        return DiskInterval(disks)


class NetProbe(_PassiveProbe):
    """Per-NIC packets/s and bytes/s in and out, errors and drops per second."""

    kind = NET_PROBE_ID
    id = NET_PROBE_ID
    metrics = NET_METRICS

    def __init__(self, interval_s: float = 1.0, nics: list[str] | None = None) -> None:
        super().__init__(interval_s)
        self.nics = nics

    def read(self) -> dict[str, Any]:
        counters = psutil.net_io_counters(pernic=True, nowrap=True) or {}
        if self.nics:
            return {k: v for k, v in counters.items() if k in self.nics}
        return counters

    def interval(self, before: Any, after: Any, seconds: float) -> NetInterval:
        nics: dict[str, NicCounters] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            nics[name] = NicCounters(
                interface=name,
                rx_pps=rate(a.packets_recv - b.packets_recv, seconds),
                tx_pps=rate(a.packets_sent - b.packets_sent, seconds),
                rx_bps=rate(a.bytes_recv - b.bytes_recv, seconds),
                tx_bps=rate(a.bytes_sent - b.bytes_sent, seconds),
                rx_errors=rate(a.errin - b.errin, seconds),
                tx_errors=rate(a.errout - b.errout, seconds),
                rx_drops=rate(a.dropin - b.dropin, seconds),
                tx_drops=rate(a.dropout - b.dropout, seconds),
            )
        return NetInterval(nics)


def passive_probes(interval_s: float = 1.0) -> list[_PassiveProbe]:
    """The three passive panes every dashboard shows."""
    return [CpuLoadProbe(interval_s), DiskProbe(interval_s), NetProbe(interval_s)]
