"""Shared shape of the per-disk and per-NIC panes: a table row per entity
(latest values) and a sparkline per entity of one headline rate.

Subclasses set ``COLUMNS`` (header, metric names summed, scale, width), ``SPARK``
(the metric names summed into each entity's sparkline) and ``SPARK_LABEL``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import metric_key
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
