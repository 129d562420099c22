"""The kernel's view that every session carries: names and typed readers.

Every dashboard runs the system family's passive collectors (per-core CPU,
per-disk, per-NIC counters). Other families' panes show the kernel's figures
for their own target beside the probe's (the IOPS pane shows the disk's
IO/s as the kernel counted them). So that no family depends on another,
the vocabulary of those samples lives here, in core: the probe ids, the
metric names, and readers that turn a passive sample into typed records.

Contract: ``probes.system`` produces samples with exactly these ids and
names; panes read them only through ``CoreLoad`` / ``DiskCounters`` /
``NicCounters``. Unknown or missing values read as None, never raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from probetop.probes.core.sample import Sample, split_key

CPU_PROBE_ID = "system.cpu"
DISK_PROBE_ID = "system.disk"
NET_PROBE_ID = "system.net"

# system.cpu
BUSY_PCT = "busy_pct"
CORE_BUSY_PCT = "core_busy_pct"
CORE_MHZ = "core_mhz"
LOAD1, LOAD5, LOAD15 = "load1", "load5", "load15"
# system.disk (per device)
READ_IOPS, WRITE_IOPS = "read_iops", "write_iops"
READ_BPS, WRITE_BPS = "read_Bps", "write_Bps"
READ_LAT_MS, WRITE_LAT_MS = "read_lat_ms", "write_lat_ms"
DISK_BUSY_PCT = "busy_pct"
DISK_QUEUE_DEPTH = "aqu_sz"
# system.net (per interface)
RX_PPS, TX_PPS = "rx_pps", "tx_pps"
RX_BPS, TX_BPS = "rx_Bps", "tx_Bps"
RX_ERRORS, TX_ERRORS = "rx_errors", "tx_errors"
RX_DROPS, TX_DROPS = "rx_drops", "tx_drops"


def per_entity(sample: Sample) -> dict[str, dict[str, float | None]]:
    """``{entity: {metric: value}}`` of a sample's ``metric@entity`` keys."""
    out: dict[str, dict[str, float | None]] = {}
    for key, value in sample.values.items():
        name, entity = split_key(key)
        if entity is not None:
            out.setdefault(entity, {})[name] = value
    return out


@dataclass(frozen=True, slots=True)
class CoreLoad:
    """One interval of ``system.cpu``: busy % of each core (``cpu0`` ...)."""

    busy_pct: float | None
    cores: dict[str, float | None]

    @classmethod
    def from_sample(cls, sample: Sample) -> CoreLoad | None:
        if sample.probe != CPU_PROBE_ID:
            return None
        cores = {e: m.get(CORE_BUSY_PCT) for e, m in per_entity(sample).items()}
        return cls(sample.values.get(BUSY_PCT), cores)


@dataclass(frozen=True, slots=True)
class DiskCounters:
    """One interval of one disk as the kernel counted it (iostat's view)."""

    device: str
    read_iops: float | None
    write_iops: float | None
    read_bps: float | None
    write_bps: float | None
    read_lat_ms: float | None
    write_lat_ms: float | None
    busy_pct: float | None
    queue_depth: float | None = None  # iostat's aqu-sz: I/Os in flight, on average

    @classmethod
    def all_from_sample(cls, sample: Sample) -> dict[str, DiskCounters]:
        """Every disk in a ``system.disk`` sample ({} for any other sample)."""
        if sample.probe != DISK_PROBE_ID:
            return {}
        return {
            device: cls(
                device,
                m.get(READ_IOPS),
                m.get(WRITE_IOPS),
                m.get(READ_BPS),
                m.get(WRITE_BPS),
                m.get(READ_LAT_MS),
                m.get(WRITE_LAT_MS),
                m.get(DISK_BUSY_PCT),
                m.get(DISK_QUEUE_DEPTH),
            )
            for device, m in per_entity(sample).items()
        }


@dataclass(frozen=True, slots=True)
class NicCounters:
    """One interval of one network interface as the kernel counted it."""

    interface: str
    rx_pps: float | None
    tx_pps: float | None
    rx_bps: float | None
    tx_bps: float | None
    rx_errors: float | None
    tx_errors: float | None
    rx_drops: float | None
    tx_drops: float | None

    @classmethod
    def all_from_sample(cls, sample: Sample) -> dict[str, NicCounters]:
        """Every interface in a ``system.net`` sample ({} for any other sample)."""
        if sample.probe != NET_PROBE_ID:
            return {}
        return {
            nic: cls(
                nic,
                m.get(RX_PPS),
                m.get(TX_PPS),
                m.get(RX_BPS),
                m.get(TX_BPS),
                m.get(RX_ERRORS),
                m.get(TX_ERRORS),
                m.get(RX_DROPS),
                m.get(TX_DROPS),
            )
            for nic, m in per_entity(sample).items()
        }
