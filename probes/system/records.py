"""What a passive sample carries, typed: the collectors write it, the system
panes read it.

The vocabulary (probe ids, metric names) is core's (``probes.core.passive``),
because other families' panes read the same samples; this module adds the
family's own side: the MetricSpecs, and one record class per probe whose
``to_sample`` is the only place that lays a passive interval out as a
``Sample`` and whose ``from_sample`` reads one back.

Contract:
- ``to_sample`` keeps the recording format of probetop 0.1 byte for byte
  (the same keys in the same order), so old recordings replay and new ones
  read in old versions.
- ``from_sample`` is tolerant: a sample of another probe reads as an empty
  record, missing values as None; it never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from probetop.probes.core.base import MetricSpec
from probetop.probes.core.passive import (
    BUSY_PCT,
    CORE_BUSY_PCT,
    CORE_MHZ,
    CPU_PROBE_ID,
    DISK_BUSY_PCT,
    DISK_PROBE_ID,
    DISK_QUEUE_DEPTH,
    LOAD1,
    LOAD5,
    LOAD15,
    NET_PROBE_ID,
    READ_BPS,
    READ_IOPS,
    READ_LAT_MS,
    RX_BPS,
    RX_DROPS,
    RX_ERRORS,
    RX_PPS,
    TX_BPS,
    TX_DROPS,
    TX_ERRORS,
    TX_PPS,
    WRITE_BPS,
    WRITE_IOPS,
    WRITE_LAT_MS,
    DiskCounters,
    NicCounters,
    per_entity,
)
from probetop.probes.core.sample import Sample, metric_key

CPU_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(BUSY_PCT, "%", "share of the interval the CPU was not idle (all cores)", True),
    MetricSpec(CORE_BUSY_PCT, "%", "share of the interval this core was not idle"),
    MetricSpec(CORE_MHZ, "MHz", "current frequency of this core, where the kernel shows it"),
    MetricSpec(LOAD1, "", "1-minute load average (runnable + uninterruptible tasks)", True),
    MetricSpec(LOAD5, "", "5-minute load average"),
    MetricSpec(LOAD15, "", "15-minute load average"),
)
DISK_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(READ_IOPS, "IO/s", "reads completed per second", True),
    MetricSpec(WRITE_IOPS, "IO/s", "writes completed per second", True),
    MetricSpec(READ_BPS, "B/s", "bytes read per second"),
    MetricSpec(WRITE_BPS, "B/s", "bytes written per second"),
    MetricSpec(READ_LAT_MS, "ms", "average time per read completed in the interval"),
    MetricSpec(WRITE_LAT_MS, "ms", "average time per write completed in the interval"),
    MetricSpec(DISK_BUSY_PCT, "%", "share of the interval with I/O in flight (iostat %util)"),
    MetricSpec(
        DISK_QUEUE_DEPTH,
        "",
        "reads and writes in flight, on average over the interval (iostat aqu-sz)",
    ),
)
NET_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(RX_PPS, "pkt/s", "packets received per second", True),
    MetricSpec(TX_PPS, "pkt/s", "packets sent per second", True),
    MetricSpec(RX_BPS, "B/s", "bytes received per second"),
    MetricSpec(TX_BPS, "B/s", "bytes sent per second"),
    MetricSpec(RX_ERRORS, "/s", "receive errors per second"),
    MetricSpec(TX_ERRORS, "/s", "transmit errors per second"),
    MetricSpec(RX_DROPS, "/s", "received packets dropped per second"),
    MetricSpec(TX_DROPS, "/s", "outgoing packets dropped per second"),
)


@dataclass(frozen=True, slots=True)
class CoreReading:
    """One core in one interval: busy % (None: no time passed) and MHz (None: unknown)."""

    busy_pct: float | None
    mhz: float | None = None


@dataclass(frozen=True, slots=True)
class CpuLoadInterval:
    """One interval of ``system.cpu``: every core, their mean, load averages."""

    KIND: ClassVar[str] = CPU_PROBE_ID
    METRICS: ClassVar[tuple[MetricSpec, ...]] = CPU_METRICS

    busy_pct: float | None
    cores: dict[str, CoreReading] = field(default_factory=dict)
    load1: float | None = None
    load5: float | None = None
    load15: float | None = None

    def to_sample(self, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {}
        for core, reading in self.cores.items():
            values[metric_key(CORE_BUSY_PCT, core)] = reading.busy_pct
        values[BUSY_PCT] = self.busy_pct
        for core, reading in self.cores.items():
            if reading.mhz is not None:
                values[metric_key(CORE_MHZ, core)] = reading.mhz
        values[LOAD1], values[LOAD5], values[LOAD15] = self.load1, self.load5, self.load15
        return Sample(CPU_PROBE_ID, t_ns, interval_s, values)

    @classmethod
    def from_sample(cls, sample: Sample) -> CpuLoadInterval:
        if sample.probe != CPU_PROBE_ID:
            return cls(None)
        cores = {
            core: CoreReading(m.get(CORE_BUSY_PCT), m.get(CORE_MHZ))
            for core, m in per_entity(sample).items()
        }
        v = sample.values
        return cls(v.get(BUSY_PCT), cores, v.get(LOAD1), v.get(LOAD5), v.get(LOAD15))


@dataclass(frozen=True, slots=True)
class DiskInterval:
    """One interval of ``system.disk``: every whole disk, as the kernel counted it."""

    KIND: ClassVar[str] = DISK_PROBE_ID
    METRICS: ClassVar[tuple[MetricSpec, ...]] = DISK_METRICS

    disks: dict[str, DiskCounters] = field(default_factory=dict)

    def to_sample(self, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {}
        for name, d in self.disks.items():
            values[metric_key(READ_IOPS, name)] = d.read_iops
            values[metric_key(WRITE_IOPS, name)] = d.write_iops
            values[metric_key(READ_BPS, name)] = d.read_bps
            values[metric_key(WRITE_BPS, name)] = d.write_bps
            values[metric_key(READ_LAT_MS, name)] = d.read_lat_ms
            values[metric_key(WRITE_LAT_MS, name)] = d.write_lat_ms
            if d.busy_pct is not None:  # absent where the kernel has no busy time
                values[metric_key(DISK_BUSY_PCT, name)] = d.busy_pct
            if d.queue_depth is not None:
                values[metric_key(DISK_QUEUE_DEPTH, name)] = d.queue_depth
        return Sample(DISK_PROBE_ID, t_ns, interval_s, values)

    @classmethod
    def from_sample(cls, sample: Sample) -> DiskInterval:
        return cls(DiskCounters.all_from_sample(sample))


@dataclass(frozen=True, slots=True)
class NetInterval:
    """One interval of ``system.net``: every network interface."""

    KIND: ClassVar[str] = NET_PROBE_ID
    METRICS: ClassVar[tuple[MetricSpec, ...]] = NET_METRICS

    nics: dict[str, NicCounters] = field(default_factory=dict)

    def to_sample(self, t_ns: int, interval_s: float) -> Sample:
        values: dict[str, float | None] = {}
        for name, n in self.nics.items():
            values[metric_key(RX_PPS, name)] = n.rx_pps
            values[metric_key(TX_PPS, name)] = n.tx_pps
            values[metric_key(RX_BPS, name)] = n.rx_bps
            values[metric_key(TX_BPS, name)] = n.tx_bps
            values[metric_key(RX_ERRORS, name)] = n.rx_errors
            values[metric_key(TX_ERRORS, name)] = n.tx_errors
            values[metric_key(RX_DROPS, name)] = n.rx_drops
            values[metric_key(TX_DROPS, name)] = n.tx_drops
        return Sample(NET_PROBE_ID, t_ns, interval_s, values)

    @classmethod
    def from_sample(cls, sample: Sample) -> NetInterval:
        return cls(NicCounters.all_from_sample(sample))


# Names that are virtual network interfaces or block devices: hidden while idle.
VIRTUAL_NIC_PREFIXES = (
    "ifb", "veth", "docker", "br-", "virbr", "vnet", "tap", "tun", "dummy", "cali",
    "flannel", "cni", "vxlan", "kube", "lxc", "podman", "vmnet", "vboxnet", "gre",
    "gretap", "erspan", "sit", "ip6tnl", "ip6gre", "nlmon", "teql",
)  # fmt: skip
VIRTUAL_DISK_PREFIXES = ("loop", "nbd", "ram", "zram", "sr", "fd")


def is_virtual_nic(name: str) -> bool:
    """A software interface (tunnel, bridge, container pair, traffic shaper): by name."""
    return name.startswith(VIRTUAL_NIC_PREFIXES)


def is_virtual_disk(name: str) -> bool:
    """A loop, network, RAM or optical device rather than a disk: by name."""
    return name.startswith(VIRTUAL_DISK_PREFIXES)
