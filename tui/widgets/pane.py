"""The pane contract every probe's pane implements (base class ``ProbePane``).

The app drains the hub's lossy feed at a fixed frame rate and, per frame:

1. routes each ``Sample`` of this probe to ``add_sample`` and each ``Status``
   to ``add_status`` (both cheap: store only, never touch widgets);
2. routes every OTHER probe's ``Sample`` to ``observe`` (default: ignore), so
   a pane can show e.g. the per-disk counters of the disk it benchmarks;
3. calls ``render_frame`` once, only if 1. or 2. delivered something; this is
   where child widgets are updated (``Sparkline.set_values``,
   ``TextBlock.set_lines``), never a layout pass unless the shape changed.

``chart_series`` gives the longer history drawn by the maximised chart.

The base class already keeps every metric's history (``self.history``: latest,
run-long min/max/mean, p99 over the recent window) and shows the last status
in the border subtitle, so a subclass usually only composes its widgets and
writes ``render_frame`` (calling ``super().render_frame()``).

In replay, ``Sample.t_ns`` counts from the session start; live it is the
monotonic clock. Panes use only differences, never wall time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from probetop.probes.core.sample import Sample, Status, split_key
from probetop.tui.widgets.history import HistoryStore, MetricHistory, fmt_value
from rich.markup import escape
from textual.widget import Widget

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def pane_dom_id(probe_id: str) -> str:
    """A valid Textual id for a probe id like ``icmp:127.0.0.1``."""
    return "pane-" + _ID_UNSAFE.sub("_", probe_id)


class ProbePane(Widget, can_focus=True):
    """Base pane for one probe instance. See the module docstring."""

    DEFAULT_CSS = """
    ProbePane {
        height: auto;
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    ProbePane:focus {
        border: round $accent;
    }
    ProbePane.-error {
        border: round $error;
    }
    """

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        kw.setdefault("id", pane_dom_id(str(info["id"])))
        super().__init__(**kw)
        self.info: dict[str, Any] = dict(info)
        self.probe_id: str = str(info["id"])
        self.kind: str = str(info.get("kind", "?"))
        self.specs: dict[str, dict[str, Any]] = {
            str(m["name"]): dict(m) for m in info.get("metrics", [])
        }
        self.history = HistoryStore()
        self.last_sample: Sample | None = None
        self.last_status: Status | None = None
        self.samples_seen = 0
        self.border_title = (
            self.probe_id if self.probe_id == self.kind else (f"{self.kind}  {self.probe_id}")
        )

    # -- the contract --------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        """This probe's sample. Store only: called for every sample in a frame."""
        self.history.add_values(sample.t_ns / 1e9, sample.values)
        self.last_sample = sample
        self.samples_seen += 1

    def add_status(self, status: Status) -> None:
        """This probe's lifecycle event or in-interval error. Store only."""
        self.last_status = status

    def observe(self, sample: Sample) -> None:
        """Another probe's sample (e.g. system.disk while benchmarking a disk)."""

    def render_frame(self) -> None:
        """Update child widgets from stored data; called at most once a frame."""
        status = self.last_status
        subtitle = ""
        if status is not None and status.level in ("error", "warning", "stopped"):
            same = status.message in ("", status.level)
            subtitle = status.level if same else f"{status.level}: {status.message}"
        self.set_class(status is not None and status.level == "error", "-error")
        if subtitle != self.border_subtitle:
            self.border_subtitle = subtitle

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        """(t seconds, value) series for the maximised chart: primary metrics by default."""
        primary = {name for name, spec in self.specs.items() if spec.get("primary")}
        return {
            key: self.series(key)
            for key in self.history.keys
            if split_key(key)[0] in primary or not primary
        }

    # -- helpers for subclasses ----------------------------------------
    def series(self, key: str) -> list[tuple[float, float]]:
        hist = self.history.get(key)
        if hist is None:
            return []
        return [(t, v) for t, v in hist.points if v is not None]

    def unit(self, key: str) -> str:
        return str(self.specs.get(split_key(key)[0], {}).get("unit", ""))

    def description(self, key: str) -> str:
        return str(self.specs.get(split_key(key)[0], {}).get("description", ""))

    def metric(self, key: str) -> MetricHistory | None:
        return self.history.get(key)

    def latest(self, key: str) -> float | None:
        hist = self.history.get(key)
        return hist.latest if hist is not None else None

    def fmt(self, key: str, width: int = 0) -> str:
        return fmt_value(self.latest(key), self.unit(key), width)

    def stats_lines(
        self, keys: list[str], label_width: int = 18, labels: list[str] | None = None
    ) -> list[str]:
        """A header and one row per key: latest/min/max/mean/p99 and unit.

        p99 is over the last ``history.P99_WINDOW`` samples (hence ``p99*``);
        min/max/mean cover the whole run.
        """
        head = (
            f"{'metric':<{label_width}} {'latest':>8} {'min':>8} {'max':>8} "
            f"{'mean':>8} {'p99*':>8}  unit"
        )
        rows = [head]
        for i, key in enumerate(keys):
            label = labels[i] if labels is not None else key
            hist = self.history.get(key)
            if hist is None:
                continue
            unit = self.unit(key)
            s = hist.stats
            cells = [hist.latest, s.min if s.count else None, s.max if s.count else None]
            cells += [s.mean, hist.p99]
            text = " ".join(fmt_value(v, unit, 8) for v in cells)
            rows.append(f"{label[:label_width]:<{label_width}} {text}  {unit}")
        return rows

    def help_text(self) -> str:
        """What this pane's numbers mean, for the help screen."""
        # Rich markup: escape probe-provided text ("[ 1s ]" would be a tag).
        lines = [f"[b]{escape(str(self.border_title))}[/b]"]
        ref = self.info.get("reference_command")
        if ref:
            lines.append(f"  reference: {escape(str(ref))}")
        for name, spec in self.specs.items():
            unit = f" ({spec.get('unit')})" if spec.get("unit") else ""
            lines.append(escape(f"  {name}{unit}: {spec.get('description', '')}"))
        return "\n".join(lines)
