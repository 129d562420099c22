"""Per-NIC pane for ``system.net``: packets/s and bytes/s in and out, errors
and drops per second (rx+tx in the table, each direction when maximised);
kernel counters via psutil, per interval, like ``sar -n DEV`` / ``sar -n EDEV``."""

from __future__ import annotations

from probetop.tui.widgets.entity_pane import EntityPane


class NetPane(EntityPane):
    ENTITY_HEADER = "nic"
    COLUMNS = (
        ("rx pkt/s", ("rx_pps",), 1.0, 9),
        ("tx pkt/s", ("tx_pps",), 1.0, 9),
        ("rx MB/s", ("rx_Bps",), 1e6, 8),
        ("tx MB/s", ("tx_Bps",), 1e6, 8),
        # rx+tx in one column each so the table fits 80 columns; the
        # maximised view lists every direction separately.
        ("err/s", ("rx_errors", "tx_errors"), 1.0, 7),
        ("drop/s", ("rx_drops", "tx_drops"), 1.0, 7),
    )
    SPARK = ("rx_pps", "tx_pps")
    SPARK_LABEL = "pkt/s in+out"
