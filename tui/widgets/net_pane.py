"""Per-NIC pane for ``system.net``: packets/s and bytes/s in and out, errors
and drops per second (kernel counters via psutil, per interval, like
``sar -n DEV`` and ``sar -n EDEV``)."""

from __future__ import annotations

from probetop.tui.widgets.entity_pane import EntityPane


class NetPane(EntityPane):
    ENTITY_HEADER = "nic"
    COLUMNS = (
        ("rx pkt/s", "rx_pps", 1.0, 9),
        ("tx pkt/s", "tx_pps", 1.0, 9),
        ("rx MB/s", "rx_Bps", 1e6, 8),
        ("tx MB/s", "tx_Bps", 1e6, 8),
        ("rx err/s", "rx_errors", 1.0, 8),
        ("tx err/s", "tx_errors", 1.0, 8),
        ("rx drop/s", "rx_drops", 1.0, 9),
        ("tx drop/s", "tx_drops", 1.0, 9),
    )
    SPARK = ("rx_pps", "tx_pps")
    SPARK_LABEL = "pkt/s rx+tx"
