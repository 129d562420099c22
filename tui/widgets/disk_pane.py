"""Per-disk pane for ``system.disk``: r/w IOPS, MB/s, latency per I/O, busy %.

Numbers are the kernel's (/proc/diskstats via psutil) per interval, as
``iostat -x`` shows them: IOPS = completed I/Os per second, latency = time
spent per completed I/O, busy % = share of the interval with I/O in flight.
"""

from __future__ import annotations

from probetop.tui.widgets.entity_pane import EntityPane


class DiskPane(EntityPane):
    ENTITY_HEADER = "disk"
    COLUMNS = (
        ("r IO/s", ("read_iops",), 1.0, 8),
        ("w IO/s", ("write_iops",), 1.0, 8),
        ("r MB/s", ("read_Bps",), 1e6, 8),
        ("w MB/s", ("write_Bps",), 1e6, 8),
        ("r ms", ("read_lat_ms",), 1.0, 7),
        ("w ms", ("write_lat_ms",), 1.0, 7),
        ("busy%", ("busy_pct",), 1.0, 6),
    )
    SPARK = ("read_iops", "write_iops")
    SPARK_LABEL = "IO/s r+w"
