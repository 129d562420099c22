"""The system family's front door: passive CPU, disk and NIC collectors.

- ``passive_probes(interval_s)``: the three passive probes every dashboard runs
- ``CpuLoadProbe``, ``DiskProbe``, ``NetProbe``
"""

from probetop.probes.system.collectors import CpuLoadProbe, DiskProbe, NetProbe, passive_probes

__all__ = ["CpuLoadProbe", "DiskProbe", "NetProbe", "passive_probes"]
