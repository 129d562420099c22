"""The system family's descriptor: the passive CPU, disk and NIC collectors
every dashboard runs beside the probes (probes/core/family.py)."""

from __future__ import annotations

from probetop.probes.core.family import PassiveFamily
from probetop.probes.core.passive import CPU_PROBE_ID, DISK_PROBE_ID, NET_PROBE_ID
from probetop.probes.system.collectors import passive_probes
from probetop.probes.system.records import CpuLoadInterval, DiskInterval, NetInterval

FAMILY = PassiveFamily(
    name="system",
    help="this machine's CPU, disks and network, beside every probe",
    probes=passive_probes,
    records=lambda: (CpuLoadInterval, DiskInterval, NetInterval),
    panes={
        CPU_PROBE_ID: "probetop.tui.ui.panes.system:CpuPane",
        DISK_PROBE_ID: "probetop.tui.ui.panes.system:DiskPane",
        NET_PROBE_ID: "probetop.tui.ui.panes.system:NetPane",
    },
    docs="docs/dashboard.md",
    no_tracker="node_exporter already exports the machine's CPU, disk and network counters",
    no_checks="the passive panes show the machine's load; a run asserts on what it measures",
)
