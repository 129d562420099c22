"""The pane for any probe without its own: built from its MetricSpecs.

- One sparkline row per primary metric key (``MAX_SPARKLINES`` at most),
  entity keys (``read_iops@vda``) included, labelled with the latest value.
- A table of latest/min/max/mean/p99 for every metric, grouped by entity:
  plain keys first, then one block per entity (``vda``: its metrics).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import split_key
from probetop.tui.widgets.history import fmt_value
from probetop.tui.widgets.pane import ProbePane
from probetop.tui.widgets.sparkline import Sparkline
from probetop.tui.widgets.textblock import TextBlock
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

MAX_SPARKLINES = 6
SPARK_POINTS = 300  # more than the widest sparkline: the widget keeps the newest it can draw
LABEL_WIDTH = 28


class SparkRow(Horizontal):
    """``label latest [sparkline]`` on one row."""

    DEFAULT_CSS = """
    SparkRow { height: 1; }
    SparkRow > TextBlock { width: 28; }
    """

    def __init__(self, key: str, max_value: float | None = None) -> None:
        super().__init__()
        self.key = key
        self.label = TextBlock([key])
        self.spark = Sparkline(max_value)

    def compose(self) -> ComposeResult:
        yield self.label
        yield self.spark


class GenericPane(ProbePane):
    """Sparklines for primary metrics and a stats table. See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.rows: dict[str, SparkRow] = {}
        self.spark_box = Vertical(classes="sparks")
        self.table = TextBlock(["waiting for the first sample..."], header_rows=1)

    def compose(self) -> ComposeResult:
        yield self.spark_box  # SparkRows are mounted as primary keys appear
        yield self.table

    def on_mount(self) -> None:
        self.spark_box.styles.height = "auto"

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

    def table_lines(self) -> list[str]:
        lines = self.stats_lines([], label_width=LABEL_WIDTH - 2)[:1]
        for entity, keys in self.ordered_keys():
            if entity is not None:
                lines.append(f"{entity}:")
            labels = [key if entity is None else "  " + split_key(key)[0] for key in keys]
            lines.extend(self.stats_lines(keys, LABEL_WIDTH - 2, labels)[1:])
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        for key in self.primary_keys():
            row = self.rows.get(key)
            if row is None:
                max_value = 100.0 if self.unit(key) == "%" else None
                row = self.rows[key] = SparkRow(key, max_value)
                self.spark_box.mount(row)
            hist = self.history.get(key)
            if hist is None:
                continue
            label = f"{key[:15]:<15} {fmt_value(hist.latest, self.unit(key), 6)} {self.unit(key)}"
            row.label.set_lines([label[: LABEL_WIDTH - 1]])
            row.spark.set_values(hist.recent(max(row.spark.size.width, 1)))
        if self.history.keys:
            self.table.set_lines(self.table_lines(), header_rows=1)
