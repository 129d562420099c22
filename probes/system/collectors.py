"""Passive system probes: per-core CPU, per-disk I/O, per-NIC packets (/proc).

Each is cheap (one ``pread`` of a kept-open /proc file per interval, see
``procfs.py``; about 30 µs a probe) and reports per-interval rates computed
from counter deltas over the measured monotonic interval, never cumulative
totals.

First reading: ``passive_probes`` reads each probe's counters as it makes
it (``take_first_reading``), early in the process, before the dashboard's
first frame; ``run`` starts its first interval there, so the first rate
lands one interval after the probe was made, not one interval after the
probes start (behind the first frame and the recording's start). An
interval is never shorter than ``interval_s``: a first reading older than
one interval when ``run`` starts gives a first interval as long as its age
(up to ``FIRST_READING_MAX_AGE`` intervals; an older one is read again).

Metric keys carry the entity: ``core_busy_pct@cpu0``, ``read_iops@vda``,
``rx_pps@eth0``. Each probe builds its interval as a typed record
(``records.py``) and lets the record lay out the Sample.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

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
from probetop.probes.system.procfs import (
    CpuFreq,
    CpuTicks,
    DiskTicks,
    NicTicks,
    counter_delta,
    cpu_ticks,
    disk_counters,
    nic_counters,
)
from probetop.probes.system.records import (
    CPU_METRICS,
    DISK_METRICS,
    NET_METRICS,
    CoreReading,
    CpuLoadInterval,
    DiskInterval,
    NetInterval,
)

#: A first reading older than this many intervals when ``run`` starts is
#: read again (see the module docstring).
FIRST_READING_MAX_AGE = 3


class _PassiveProbe:
    """Shared loop: read counters each tick, emit deltas as one Sample."""

    kind = "system"
    id = "system"
    metrics: tuple[MetricSpec, ...] = ()
    background = True  # never keeps a headless run alive by itself
    # Each sample names every core, disk or NIC read: one missing has gone
    # (the hub ends its series at once, core/series.py).
    lists_every_entity = True

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.samples = 0
        self._first: tuple[Any, int] | None = None  # (counters, monotonic ns)

    def take_first_reading(self) -> None:
        """Read the counters now: ``run``'s first interval starts here. An
        unreadable /proc is left for ``prepare`` to report."""
        try:
            self._first = (self.read(), now_ns())
        except OSError:
            self._first = None

    def prepare(self) -> None:
        if self._first is None:
            self._first = (self.read(), now_ns())  # fail now, not in the loop

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

    def _starting_reading(self) -> tuple[Any, int]:
        """The first interval's start: the first reading while young enough
        (module docstring), else one taken now."""
        first, self._first = self._first, None
        now = now_ns()
        if first is not None and now - first[1] < FIRST_READING_MAX_AGE * self.interval_s * 1e9:
            return first
        return self.read(), now

    async def run(self, emit: Emit) -> None:
        before, t0 = self._starting_reading()
        # The first deadline one interval after that reading, or now when it
        # is older than that (its interval is then longer, never shorter).
        ticker = Ticker(self.interval_s, start_ns=max(t0, now_ns() - int(self.interval_s * 1e9)))
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

    def __init__(self, interval_s: float = 1.0) -> None:
        super().__init__(interval_s)
        self._freq: CpuFreq | None = None

    def read(self) -> dict[int, CpuTicks]:
        return cpu_ticks()

    @staticmethod
    def _busy(before: CpuTicks | None, after: CpuTicks) -> float | None:
        # Guest time is inside user/nice too: counted once, as top and psutil do.
        if before is None:
            return None
        total = counter_delta(after.total, before.total)
        if total <= 0:
            return None
        idle = counter_delta(after.idle_all, before.idle_all)
        return max(0.0, min(100.0, round(100.0 * (total - idle) / total, 3)))

    def interval(
        self, before: dict[int, CpuTicks], after: dict[int, CpuTicks], seconds: float
    ) -> CpuLoadInterval:
        if self._freq is None:
            self._freq = CpuFreq()
        mhz = self._freq.read()
        cores = {}
        for cpu, ticks in after.items():
            freq = mhz.get(cpu)
            cores[f"cpu{cpu}"] = CoreReading(self._busy(before.get(cpu), ticks), freq or None)
        known = [c.busy_pct for c in cores.values() if c.busy_pct is not None]
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

    def read(self) -> dict[str, DiskTicks]:
        counters = disk_counters()
        if self.devices:
            return {k: v for k, v in counters.items() if k in self.devices}
        # Re-list /sys/block every 10 reads: loop devices come and go.
        if self._disks_checked % 10 == 0:
            self._disks_cache = _whole_disks()
        self._disks_checked += 1
        disks = self._disks_cache
        return {k: v for k, v in counters.items() if disks is None or k in disks}

    def interval(
        self, before: dict[str, DiskTicks], after: dict[str, DiskTicks], seconds: float
    ) -> DiskInterval:
        disks: dict[str, DiskCounters] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            reads = counter_delta(a.read_count, b.read_count)
            writes = counter_delta(a.write_count, b.write_count)
            busy = None
            if a.busy_time is not None and b.busy_time is not None and seconds > 0:
                busy_ms = counter_delta(a.busy_time, b.busy_time)
                busy = max(0.0, min(100.0, busy_ms / (seconds * 1000.0) * 100.0))
            read_ms = counter_delta(a.read_time, b.read_time)
            write_ms = counter_delta(a.write_time, b.write_time)
            # Time each completed read and write spent in flight, summed (ms),
            # over the interval: the average queue depth (iostat's aqu-sz).
            depth = (read_ms + write_ms) / (seconds * 1000.0) if seconds > 0 else None
            disks[name] = DiskCounters(
                device=name,
                read_iops=rate(reads, seconds),
                write_iops=rate(writes, seconds),
                read_bps=rate(counter_delta(a.read_bytes, b.read_bytes), seconds),
                write_bps=rate(counter_delta(a.write_bytes, b.write_bytes), seconds),
                read_lat_ms=read_ms / reads if reads > 0 else None,
                write_lat_ms=write_ms / writes if writes > 0 else None,
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

    def read(self) -> dict[str, NicTicks]:
        counters = nic_counters()
        if self.nics:
            return {k: v for k, v in counters.items() if k in self.nics}
        return counters

    def interval(
        self, before: dict[str, NicTicks], after: dict[str, NicTicks], seconds: float
    ) -> NetInterval:
        nics: dict[str, NicCounters] = {}
        for name, a in after.items():
            b = before.get(name)
            if b is None:
                continue
            nics[name] = NicCounters(
                interface=name,
                rx_pps=rate(counter_delta(a.packets_recv, b.packets_recv), seconds),
                tx_pps=rate(counter_delta(a.packets_sent, b.packets_sent), seconds),
                rx_bps=rate(counter_delta(a.bytes_recv, b.bytes_recv), seconds),
                tx_bps=rate(counter_delta(a.bytes_sent, b.bytes_sent), seconds),
                rx_errors=rate(counter_delta(a.errin, b.errin), seconds),
                tx_errors=rate(counter_delta(a.errout, b.errout), seconds),
                rx_drops=rate(counter_delta(a.dropin, b.dropin), seconds),
                tx_drops=rate(counter_delta(a.dropout, b.dropout), seconds),
            )
        return NetInterval(nics)


def passive_probes(interval_s: float = 1.0) -> list[_PassiveProbe]:
    """The three passive panes every dashboard shows, each with its first
    reading taken (module docstring): make them as early as the process can."""
    probes: list[_PassiveProbe] = [
        CpuLoadProbe(interval_s),
        DiskProbe(interval_s),
        NetProbe(interval_s),
    ]
    for probe in probes:
        probe.take_first_reading()
    return probes
