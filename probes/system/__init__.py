"""The system family's front door: passive CPU, disk and NIC collectors.

Everything outside ``probes/system/`` imports from here, never from the
modules behind it; this exports what is used outside the family and nothing more
(tests/core/test_front_door_surface.py holds that):

- ``FAMILY``: the passive family's descriptor (probes/core/family.py)
- ``passive_probes(interval_s)``: the three passive probes every dashboard runs
- ``CpuLoadProbe``, ``DiskProbe``, ``NetProbe``: the probes (psutil, /proc)
- ``CpuLoadInterval``, ``CoreReading``, ``DiskInterval``, ``NetInterval``: what
  their samples carry, typed (``to_sample`` / ``from_sample``); the per-disk
  and per-NIC figures are core's (``probes.core.passive``)
- ``CPU_METRICS``, ``DISK_METRICS``, ``NET_METRICS``: their MetricSpecs
- ``is_virtual_nic``, ``is_virtual_disk``: software devices, hidden while idle

The ids and metric names are core's (``probes.core.passive``): other
families' panes read the same samples.
"""

from probetop.probes.system.collectors import CpuLoadProbe, DiskProbe, NetProbe, passive_probes
from probetop.probes.system.family import FAMILY
from probetop.probes.system.records import (
    CPU_METRICS,
    DISK_METRICS,
    NET_METRICS,
    CoreReading,
    CpuLoadInterval,
    DiskInterval,
    NetInterval,
    is_virtual_disk,
    is_virtual_nic,
)

__all__ = [
    "CPU_METRICS",
    "DISK_METRICS",
    "FAMILY",
    "NET_METRICS",
    "CoreReading",
    "CpuLoadInterval",
    "CpuLoadProbe",
    "DiskInterval",
    "DiskProbe",
    "NetInterval",
    "NetProbe",
    "is_virtual_disk",
    "is_virtual_nic",
    "passive_probes",
]
