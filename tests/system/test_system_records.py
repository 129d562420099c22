"""The system family's typed records: they lay out exactly the samples
probetop 0.1 recorded, and read them back."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from probetop.probes.core.passive import CPU_PROBE_ID, DISK_PROBE_ID, NET_PROBE_ID
from probetop.probes.core.sample import Sample
from probetop.probes.record.reader import load_session
from probetop.probes.system import (
    CPU_METRICS,
    DISK_METRICS,
    NET_METRICS,
    CpuLoadInterval,
    CpuLoadProbe,
    DiskInterval,
    DiskProbe,
    NetInterval,
    NetProbe,
    is_virtual_disk,
    is_virtual_nic,
    passive_probes,
)

DATA = Path(__file__).resolve().parent.parent / "data"
RECORDS = {CPU_PROBE_ID: CpuLoadInterval, DISK_PROBE_ID: DiskInterval, NET_PROBE_ID: NetInterval}


def _recorded(name: str) -> list[Sample]:
    session = load_session(DATA / name)
    return [r for _t, r in session.records() if isinstance(r, Sample) and r.probe in RECORDS]


@pytest.mark.parametrize("name", ["tui_session.jsonl", "demo_session.jsonl"])
def test_recorded_samples_round_trip_key_for_key(name: str) -> None:
    samples = _recorded(name)
    assert {s.probe for s in samples} == set(RECORDS)
    for sample in samples:
        record = RECORDS[sample.probe].from_sample(sample)
        again = record.to_sample(sample.t_ns, sample.interval_s)
        assert again.probe == sample.probe
        # Same keys in the same order, same values: recordings stay byte-compatible.
        assert list(again.values.items()) == list(sample.values.items())
        assert not again.extra


def test_live_collectors_write_through_their_records() -> None:
    for probe in passive_probes(0.1):
        before = probe.read()
        time.sleep(0.05)
        sample = probe.sample(before, probe.read(), 123, 0.05)
        assert sample.probe == probe.id and sample.t_ns == 123
        record = RECORDS[probe.id].from_sample(sample)
        assert list(record.to_sample(123, 0.05).values) == list(sample.values)
    cpu = CpuLoadProbe(0.1)
    first = cpu.read()
    time.sleep(0.05)
    load = CpuLoadInterval.from_sample(cpu.sample(first, cpu.read(), 1, 0.05))
    assert load.cores and all(name.startswith("cpu") for name in load.cores)
    assert load.load1 is not None and load.busy_pct is not None


def test_probes_declare_the_family_metrics_with_core_names() -> None:
    assert CpuLoadProbe.metrics == CPU_METRICS and CpuLoadProbe.id == CPU_PROBE_ID
    assert DiskProbe.metrics == DISK_METRICS and DiskProbe.id == DISK_PROBE_ID
    assert NetProbe.metrics == NET_METRICS and NetProbe.id == NET_PROBE_ID
    assert [m.name for m in DISK_METRICS][:2] == ["read_iops", "write_iops"]


def test_other_samples_read_as_empty_records() -> None:
    other = Sample("cpu", 0, 1.0, {"eps": 1.0})
    assert CpuLoadInterval.from_sample(other).cores == {}
    assert DiskInterval.from_sample(other).disks == {}
    assert NetInterval.from_sample(other).nics == {}


def test_disk_without_busy_time_leaves_the_key_out() -> None:
    from probetop.probes.core.passive import DiskCounters

    record = DiskInterval({"vda": DiskCounters("vda", 1.0, 2.0, 3.0, 4.0, None, None, None)})
    values = record.to_sample(0, 1.0).values
    assert "busy_pct@vda" not in values and values["read_lat_ms@vda"] is None


def test_virtual_device_names() -> None:
    for nic in ("ifb0", "veth1a2b", "docker0", "br-1234", "virbr0", "tun0", "dummy0"):
        assert is_virtual_nic(nic), nic
    for nic in ("lo", "eth0", "enp3s0", "wlan0", "ens5"):
        assert not is_virtual_nic(nic), nic
    assert is_virtual_disk("loop0") and is_virtual_disk("zram0") and is_virtual_disk("nbd3")
    assert not is_virtual_disk("vda") and not is_virtual_disk("nvme0n1")
