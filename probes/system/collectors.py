"""Passive system probes: per-core CPU, per-disk I/O, per-NIC packets (psutil).

Each is cheap (a few /proc reads per interval, well under 0.5% of a core at
1 Hz) and reports per-interval rates computed from counter deltas over the
measured monotonic interval, never cumulative totals.

Metric keys carry the entity: ``busy_pct@cpu0``, ``read_iops@vda``,
``rx_pps@eth0``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import psutil
from probetop.probes.core.base import Emit, MetricSpec
from probetop.probes.core.sample import Sample, metric_key, now_ns
from probetop.probes.core.stats import rate
from probetop.probes.core.ticker import Ticker


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

    def values(self, before: Any, after: Any, seconds: float) -> dict[str, float | None]:
        raise NotImplementedError

    async def run(self, emit: Emit) -> None:
        ticker = Ticker(self.interval_s)
        before, t0 = self.read(), now_ns()
        while True:
            t1 = await ticker.tick()
            after = self.read()
            seconds = (t1 - t0) / 1e9
            emit(Sample(self.id, t1, seconds, self.values(before, after, seconds)))
            self.samples += 1
            before, t0 = after, t1

    def summary(self) -> Mapping[str, Any]:
        return {"samples": self.samples}


class CpuLoadProbe(_PassiveProbe):
    """Per-core busy %, per-core frequency, load average."""

    kind = "system.cpu"
    id = "system.cpu"
    metrics = (
        MetricSpec("busy_pct", "%", "share of the interval the CPU was not idle (all cores)", True),
        MetricSpec("core_busy_pct", "%", "share of the interval this core was not idle"),
        MetricSpec("core_mhz", "MHz", "current frequency of this core, where the kernel shows it"),
        MetricSpec("load1", "", "1-minute load average (runnable + uninterruptible tasks)", True),
        MetricSpec("load5", "", "5-minute load average"),
        MetricSpec("load15", "", "15-minute load average"),
    )

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

    def values(self, before: Any, after: Any, seconds: float) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        busies = []
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            busy = self._busy(b, a)
            out[metric_key("core_busy_pct", f"cpu{i}")] = busy
            if busy is not None:
                busies.append(busy)
        out["busy_pct"] = sum(busies) / len(busies) if busies else None
        try:
            freqs = psutil.cpu_freq(percpu=True) or []
        except (OSError, NotImplementedError):
            freqs = []
        for i, f in enumerate(freqs):
            if f is not None and f.current:
                out[metric_key("core_mhz", f"cpu{i}")] = float(f.current)
        out["load1"], out["load5"], out["load15"] = os.getloadavg()
        return out


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

    kind = "system.disk"
    id = "system.disk"
    metrics = (
        MetricSpec("read_iops", "IO/s", "reads completed per second", True),
        MetricSpec("write_iops", "IO/s", "writes completed per second", True),
        MetricSpec("read_Bps", "B/s", "bytes read per second"),
        MetricSpec("write_Bps", "B/s", "bytes written per second"),
        MetricSpec("read_lat_ms", "ms", "average time per read completed in the interval"),
        MetricSpec("write_lat_ms", "ms", "average time per write completed in the interval"),
        MetricSpec("busy_pct", "%", "share of the interval with I/O in flight (iostat %util)"),
    )

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

    def values(self, before: Any, after: Any, seconds: float) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            reads = a.read_count - b.read_count
            writes = a.write_count - b.write_count
            out[metric_key("read_iops", name)] = rate(reads, seconds)
            out[metric_key("write_iops", name)] = rate(writes, seconds)
            out[metric_key("read_Bps", name)] = rate(a.read_bytes - b.read_bytes, seconds)
            out[metric_key("write_Bps", name)] = rate(a.write_bytes - b.write_bytes, seconds)
            out[metric_key("read_lat_ms", name)] = (
                (a.read_time - b.read_time) / reads if reads > 0 else None
            )
            out[metric_key("write_lat_ms", name)] = (
                (a.write_time - b.write_time) / writes if writes > 0 else None
            )
            busy_ms = getattr(a, "busy_time", None)
            if busy_ms is not None and seconds > 0:
                busy = (a.busy_time - b.busy_time) / (seconds * 1000.0) * 100.0
                out[metric_key("busy_pct", name)] = max(0.0, min(100.0, busy))
        return out


class NetProbe(_PassiveProbe):
    """Per-NIC packets/s and bytes/s in and out, errors and drops per second."""

    kind = "system.net"
    id = "system.net"
    metrics = (
        MetricSpec("rx_pps", "pkt/s", "packets received per second", True),
        MetricSpec("tx_pps", "pkt/s", "packets sent per second", True),
        MetricSpec("rx_Bps", "B/s", "bytes received per second"),
        MetricSpec("tx_Bps", "B/s", "bytes sent per second"),
        MetricSpec("rx_errors", "/s", "receive errors per second"),
        MetricSpec("tx_errors", "/s", "transmit errors per second"),
        MetricSpec("rx_drops", "/s", "received packets dropped per second"),
        MetricSpec("tx_drops", "/s", "outgoing packets dropped per second"),
    )

    def __init__(self, interval_s: float = 1.0, nics: list[str] | None = None) -> None:
        super().__init__(interval_s)
        self.nics = nics

    def read(self) -> dict[str, Any]:
        counters = psutil.net_io_counters(pernic=True, nowrap=True) or {}
        if self.nics:
            return {k: v for k, v in counters.items() if k in self.nics}
        return counters

    def values(self, before: Any, after: Any, seconds: float) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            out[metric_key("rx_pps", name)] = rate(a.packets_recv - b.packets_recv, seconds)
            out[metric_key("tx_pps", name)] = rate(a.packets_sent - b.packets_sent, seconds)
            out[metric_key("rx_Bps", name)] = rate(a.bytes_recv - b.bytes_recv, seconds)
            out[metric_key("tx_Bps", name)] = rate(a.bytes_sent - b.bytes_sent, seconds)
            out[metric_key("rx_errors", name)] = rate(a.errin - b.errin, seconds)
            out[metric_key("tx_errors", name)] = rate(a.errout - b.errout, seconds)
            out[metric_key("rx_drops", name)] = rate(a.dropin - b.dropin, seconds)
            out[metric_key("tx_drops", name)] = rate(a.dropout - b.dropout, seconds)
        return out


def passive_probes(interval_s: float = 1.0) -> list[_PassiveProbe]:
    """The three passive panes every dashboard shows."""
    return [CpuLoadProbe(interval_s), DiskProbe(interval_s), NetProbe(interval_s)]
