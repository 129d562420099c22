"""Panes of the system family (passive collectors): CPU load, disks, NICs.

``EntityPane`` is the shared shape of the per-disk and per-NIC panes: a table
row per entity (latest values) and a sparkline per entity of one headline rate.

Subclasses set ``COLUMNS`` (header, metric names summed, scale, width), ``SPARK``
(the metric names summed into each entity's sparkline) and ``SPARK_LABEL``.

Also here: CPU pane for ``system.cpu``: all-core busy % sparkline, load averages,

Also here: Per-disk pane for ``system.disk``: r/w IOPS, MB/s, latency per I/O, busy %.

Also here: Per-NIC pane for ``system.net``: packets/s and bytes/s in and out, errors
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import metric_key, split_key
from probetop.tui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult
from textual.containers import Vertical

MAX_SPARK_ENTITIES = 4


class EntityPane(ProbePane):
    """Per-entity latest values and headline sparklines. See the module docstring."""

    COLUMNS: tuple[tuple[str, tuple[str, ...], float, int], ...] = ()
    SPARK: tuple[str, ...] = ()
    SPARK_LABEL = ""
    ENTITY_HEADER = "name"

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.table = TextBlock(["waiting for the first sample..."], header_rows=1)
        self.spark_box = Vertical(classes="sparks")
        self.rows: dict[str, SparkRow] = {}
        self._sums: dict[str, list[float | None]] = {}

    def compose(self) -> ComposeResult:
        yield self.table
        yield self.spark_box

    def on_mount(self) -> None:
        self.spark_box.styles.height = "auto"

    def entities(self) -> list[str]:
        return self.history.entities()

    def add_sample(self, sample: Any) -> None:
        super().add_sample(sample)
        # Keep the headline sum per entity as its own series (sparkline input).
        for entity in self.entities():
            parts = [sample.values.get(metric_key(name, entity)) for name in self.SPARK]
            known = [p for p in parts if p is not None]
            series = self._sums.setdefault(entity, [])
            series.append(sum(known) if known else None)
            if len(series) > SPARK_POINTS:
                del series[: len(series) - SPARK_POINTS]

    def table_lines(self) -> list[str]:
        width = max(len(self.ENTITY_HEADER), *(len(e) for e in self.entities()), 4)
        head = f"{self.ENTITY_HEADER:<{width}}" + "".join(
            f" {h:>{w}}" for h, _m, _s, w in self.COLUMNS
        )
        lines = [head]
        for entity in self.entities():
            cells = []
            for _h, names, scale, w in self.COLUMNS:
                parts = [self.latest(metric_key(name, entity)) for name in names]
                known = [p for p in parts if p is not None]
                value = sum(known) if known else None
                scaled = value / scale if value is not None else None
                name = names[0]
                # Pre-scaled columns (MB/s) keep plain digits: no k/M prefix on top.
                cells.append(f" {fmt_value(scaled, self.unit(name), w, si=scale == 1)}")
            lines.append(f"{entity:<{width}}" + "".join(cells))
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        if not self.history.keys:
            return
        self.table.set_lines(self.table_lines(), header_rows=1)
        for entity in self.entities()[:MAX_SPARK_ENTITIES]:
            row = self.rows.get(entity)
            if row is None:
                row = self.rows[entity] = SparkRow(entity)
                self.spark_box.mount(row)
            series = self._sums.get(entity, [])
            latest = series[-1] if series else None
            label = f"{entity[:8]:<8} {fmt_value(latest, 'x', 6)} {self.SPARK_LABEL}"
            row.label.set_lines([label])
            row.spark.set_values(series)

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {}
        for entity in self.entities()[:MAX_SPARK_ENTITIES]:
            for name in self.SPARK:
                key = metric_key(name, entity)
                out[key] = self.series(key)
        return out


BAR_WIDTH = 10
CORE_CELL = 34  # "cpu12 [##########]  99.9%  3500 MHz" + gap


def core_bar(busy: float | None, width: int = BAR_WIDTH) -> str:
    """A fixed-width text bar of busy %, in eighths, one colour."""
    if busy is None:
        return " " * width
    eighths = round(max(0.0, min(100.0, busy)) / 100.0 * width * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return bar.ljust(width)


class CpuPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.busy_row = SparkRow("busy_pct", max_value=100.0)
        self.summary = TextBlock(["waiting for the first sample..."])
        self.cores = TextBlock([""])

    def compose(self) -> ComposeResult:
        yield self.busy_row
        yield self.summary
        yield self.cores

    def core_names(self) -> list[str]:
        names = [split_key(k)[1] for k in self.history.keys if k.startswith("core_busy_pct@")]
        return sorted((n for n in names if n), key=lambda n: (len(n), n))

    def core_lines(self, width: int) -> list[str]:
        cells = []
        for core in self.core_names():
            busy = self.latest(metric_key("core_busy_pct", core))
            mhz = self.latest(metric_key("core_mhz", core))
            mhz_text = f"{mhz:5.0f} MHz" if mhz is not None else ""
            cells.append(f"{core:<5} {core_bar(busy)} {fmt_value(busy, '%', 5)}% {mhz_text}")
        per_line = max(1, (width + 2) // CORE_CELL)
        lines = []
        for i in range(0, len(cells), per_line):
            lines.append("  ".join(c.ljust(CORE_CELL - 2) for c in cells[i : i + per_line]))
        return lines or [""]

    def render_frame(self) -> None:
        super().render_frame()
        busy = self.metric("busy_pct")
        if busy is None:
            return
        label = f"{'all cores':<13} {fmt_value(busy.latest, '%', 6)} %"
        self.busy_row.label.set_lines([label])
        self.busy_row.spark.set_values(busy.recent(SPARK_POINTS))
        s = busy.stats
        loads = " ".join(fmt_value(self.latest(k), "", 5) for k in ("load1", "load5", "load15"))
        stats = " ".join(
            f"{name} {fmt_value(v, '%')}"
            for name, v in (("min", s.min), ("max", s.max), ("mean", s.mean), ("p99*", busy.p99))
        )
        self.summary.set_lines([f"load avg {loads}    busy % {stats}"])
        self.cores.set_lines(self.core_lines(self.content_region.width or 80))

    def on_resize(self) -> None:
        if self.history.keys:
            self.render_frame()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {"busy_pct": self.series("busy_pct")}
        for core in self.core_names()[:8]:
            key = metric_key("core_busy_pct", core)
            out[key] = self.series(key)
        return out


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
