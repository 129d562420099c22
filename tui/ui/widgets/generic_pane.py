"""The pane for any probe without its own: built from its MetricSpecs.

ONE row per metric key: a human label (``p99 read latency``, not
``read_clat_p99_us``), latest/min/max/mean/p99 and the unit (byte rates
scaled per row: MB/s), grouped by entity: plain keys first, then one block
per entity (``vda:`` and its metrics). The rows of primary metrics
(``MAX_SPARKLINES`` at most) end in their sparkline, which takes the free
width of the pane; no series is shown twice.

``SparkRow`` (``label [sparkline]`` on one row, the shared row of the family
panes) lives in ``sparkrow.py``; it is re-exported here for the panes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import split_key
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.seriestable import SeriesRow, SeriesTable
from probetop.tui.ui.widgets.sparkrow import SparkRow
from textual.app import ComposeResult

MAX_SPARKLINES = 6
SPARK_POINTS = 300  # more than the widest sparkline: the widget keeps the newest it can draw
LABEL_WIDTH = 28  # as SparkRow's label cells; the generic table's labels are cut here too

__all__ = ["SPARK_POINTS", "GenericPane", "SparkRow"]


class GenericPane(ProbePane):
    """One row per metric key, primary ones with their sparkline. See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.rows: dict[str, SeriesRow] = {}  # the rows that carry a sparkline, by key
        self.table = SeriesTable([SeriesRow("waiting for the first sample...")], header_rows=1)

    def compose(self) -> ComposeResult:
        yield self.table

    def primary_keys(self) -> list[str]:
        primary = [n for n, s in self.specs.items() if s.get("primary")]
        keys = [k for k in self.history.keys if split_key(k)[0] in primary]
        return keys[:MAX_SPARKLINES]

    def ordered_keys(self) -> list[tuple[str | None, list[str]]]:
        """Keys grouped by entity: (None, plain keys), then (entity, its keys)."""
        order = {name: i for i, name in enumerate(self.specs)}
        groups: dict[str | None, list[str]] = {None: []}
        for key in self.history.keys:
            groups.setdefault(split_key(key)[1], []).append(key)
        for keys in groups.values():
            keys.sort(key=lambda k: order.get(split_key(k)[0], len(order)))
        return [(e, ks) for e, ks in groups.items() if ks]

    def table_rows(self) -> tuple[list[SeriesRow], int]:
        groups = self.ordered_keys()
        labels = {
            key: self.label(key) if entity is None else "  " + self.label(split_key(key)[0])
            for entity, keys in groups
            for key in keys
        }
        width = min(LABEL_WIDTH, max([6, *(len(v) for v in labels.values())]))
        head = self.stats_lines([], label_width=width)[0]
        rows = [SeriesRow(head)]
        sparks = set(self.primary_keys())
        self.rows = {}
        for entity, keys in groups:
            if entity is not None:
                rows.append(SeriesRow(f"{entity}:"))
            for key in keys:
                line = self.stats_lines([key], width, [labels[key]])[1:]
                if not line:
                    continue
                hist = self.history.get(key)
                if key in sparks and hist is not None:
                    top = 100.0 if self.unit(key) == "%" else None
                    row = self.rows[key] = SeriesRow(line[0], hist.recent(SPARK_POINTS), top)
                else:
                    row = SeriesRow(line[0])
                rows.append(row)
        return rows, len(head)

    def table_lines(self) -> list[str]:
        return [row.text for row in self.table_rows()[0]]

    def render_frame(self) -> None:
        super().render_frame()
        if self.history.keys:
            rows, text_w = self.table_rows()
            self.table.set_rows(rows, header_rows=1, text_width=text_w)
