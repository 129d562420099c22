"""The pane contract every probe's pane implements (base class ``ProbePane``).

The app drains the hub's lossy feed at a fixed frame rate and, per frame:

1. routes each ``Sample`` of this probe to ``add_sample`` and each ``Status``
   to ``add_status`` (both cheap: store only, never touch widgets);
2. routes every OTHER probe's ``Sample`` to ``observe`` (default: ignore), so
   a pane can show e.g. the per-disk counters of the disk it benchmarks;
3. calls ``render_frame`` once, only if 1. or 2. delivered something; this is
   where child widgets are updated (``SparkRow.set``,
   ``TextBlock.set_lines``), never a layout pass unless the shape changed.

``chart_series`` gives the longer history drawn by the maximised chart;
``chart_panels`` splits it by unit (one axis per unit: a panel each).

For the dashboard's layout (``tui/ui/widgets/panegrid.py``) every pane also has
``natural_height`` (the rows its content wants, border included) and
``headline_text`` (its one-line headline figure, shown in the compact list of a
small terminal); the defaults here work for every pane, from its widgets and
its primary MetricSpecs. The border title is fitted to the pane's width by
dropping whole words from its end, never by cutting one (no "…+1" stubs);
``full_title`` keeps it whole.

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
from dataclasses import dataclass
from typing import Any

from probetop.probes.core.sample import Sample, SeriesEnded, Status, split_key
from probetop.tui.ui.widgets.history import HistoryStore, MetricHistory, fmt_value
from probetop.tui.ui.widgets.textblock import TextBlock
from probetop.tui.ui.widgets.units import (
    fmt_with_unit,
    human_label,
    label_with_unit,
    scale_for,
    unit_family,
    unit_in_label,
)
from rich.cells import cell_len
from textual.color import Color
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MORE = re.compile(r"^(.*\S)\+(\d+)$")  # "http:host/a+2": the first target and 2 more
NBSP = "\u00a0"  # joins words that must be dropped together when a title is fitted
BORDER_CELLS = 6  # corners, the title's padding and a little border either side


def title_for(kind: str, probe_id: str) -> str:
    """``kind  target`` from a probe id: ``http:host/a+2`` -> ``http  host/a (+2 more)``."""
    target = probe_id[len(kind) + 1 :] if probe_id.startswith(kind + ":") else probe_id
    if target == kind:
        return kind
    more = _MORE.match(target)
    if more:
        target = f"{more.group(1)} (+{more.group(2)}{NBSP}more)"
    return f"{kind}  {target}"


def fit_title(title: str, width: int) -> str:
    """``title`` in at most ``width`` cells: whole words dropped from its end
    (a word joined by a no-break space goes as one), never a word cut into an
    ellipsis stub; only a first word longer than ``width`` is cut."""
    shown = title.replace(NBSP, " ")
    if width <= 0 or cell_len(shown) <= width:
        return shown if width > 0 else ""
    words = title.split(" ")
    while len(words) > 1:
        words.pop()
        while len(words) > 1 and words[-1] == "":
            words.pop()  # the double space between fields
        shown = " ".join(words).replace(NBSP, " ").rstrip()
        if cell_len(shown) <= width:
            return shown
    return words[0].replace(NBSP, " ")[:width]


def content_rows(widget: Widget) -> int:
    """Rows ``widget``'s children take when each gets its own height: fixed
    heights as set, ``auto`` containers summed (vertical) or maxed
    (horizontal), hidden children not at all. No layout pass needed."""
    horizontal = widget.styles.layout is not None and widget.styles.layout.name == "horizontal"
    total = 0
    for child in widget.children:
        if not child.display:
            continue
        height = child.styles.height
        cells = height.cells if height is not None else None
        if cells is not None:
            rows = cells
        elif child.children:
            rows = content_rows(child)
        else:
            rows = 1
        total = max(total, rows) if horizontal else total + rows
    return total


def pane_dom_id(probe_id: str) -> str:
    """A valid Textual id for a probe id like ``icmp:127.0.0.1``."""
    return "pane-" + _ID_UNSAFE.sub("_", probe_id)


@dataclass(frozen=True)
class PaneHelp:
    """A pane's part of the help screen: its title and (term, meaning) rows.

    Plain text, not markup (probe-provided text such as "[ 1s ]" is shown as
    it is); the help screen lays the rows out and wraps them at its width."""

    title: str
    rows: tuple[tuple[str, str], ...]


class PlainBorderText:
    """A pane's ``border_title`` or ``border_subtitle`` as plain text: shown
    as it is set, and read back as it was set.

    Why: Textual reads a ``str`` given to these as markup, and a pane's title
    or status carries text from outside probetop (a URL, a file path, an
    interface's name, a probe's error naming them). ``?filter[status]=open``
    lost its ``[status]`` (a style tag) and ``/tmp/[b]/x.img`` its ``[b]``,
    so the pane named another target; ``[/]`` or ``[link=http://...]``
    raised ``MarkupError`` and ended the dashboard with a traceback. Textual
    shows a ``Content`` as it is."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._attr = f"_plain_{name}"

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj, self._attr, None)

    def __set__(self, obj: Widget, value: object) -> None:
        text = None if value is None else str(value)
        setattr(obj, self._attr, text)
        vars(Widget)[self._name].__set__(obj, None if text is None else Content(text))


class ProbePane(Widget, can_focus=True):
    """Base pane for one probe instance. See the module docstring.

    ``border_title`` and ``border_subtitle`` are plain text (``PlainBorderText``)."""

    border_title = PlainBorderText()  # type: ignore[assignment]
    border_subtitle = PlainBorderText()  # type: ignore[assignment]

    DEFAULT_CSS = """
    ProbePane {
        height: auto;
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
    }
    ProbePane:focus {
        /* Heavy lines and a bold title: focus seen without colour (NO_COLOR). */
        border: heavy $accent;
        border-title-style: bold;
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
        self.border_title = title_for(self.kind, self.probe_id)
        self.full_title = ""  # the unfitted title; see fit_border_title
        self._fitted_title = ""

    # -- drawing the border -----------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        """The pane's own lines (border, blank padding) from Textual's line
        cache when none of them changed. Textual's pipeline works out the
        pane's backgrounds and its border title's styles before it looks at
        that cache, for every frame in which one of the pane's rows changed
        (a frame's dirty rectangle crosses every pane it spans); here that
        happens only when a line must really be drawn again."""
        strips = _cached_lines(self, crop)
        return strips if strips is not None else super().render_lines(crop)

    def notify_style_update(self) -> None:
        self._filter_background: Color | None = None
        super().notify_style_update()

    # -- the contract --------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        """This probe's sample. Store only: called for every sample in a frame."""
        self.history.add_values(sample.t_ns / 1e9, sample.values)
        self.last_sample = sample
        self.samples_seen += 1

    def add_status(self, status: Status) -> None:
        """This probe's lifecycle event or in-interval error. Store only.
        The "stopped: failed" (or "crashed") that follows the error which
        ended the probe does not replace it: the border kept only
        "stopped: failed", the reason (a target in use by another run's PID)
        was nowhere on screen."""
        last = self.last_status
        if (
            status.level == "stopped"
            and status.message in ("failed", "crashed")
            and last is not None
            and last.level == "error"
        ):
            return
        self.last_status = status

    def observe(self, sample: Sample) -> None:
        """Another probe's sample (e.g. system.disk while benchmarking a disk)."""

    def end_series(self, ended: SeriesEnded) -> None:
        """One entity's series of this probe ended (a device gone): forget its
        history, so no statistic or chart shows it with a frozen last value
        and churning devices do not grow the pane. Store only."""
        self.history.drop_entity(ended.entity)

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
        """(t seconds, value) series for the maximised chart: primary metrics by default.

        Keys are metric keys or free labels; ``chart_unit`` tells their unit."""
        primary = {name for name, spec in self.specs.items() if spec.get("primary")}
        return {
            key: self.series(key)
            for key in self.history.keys
            if split_key(key)[0] in primary or not primary
        }

    def chart_unit(self, label: str) -> str:
        """The unit of one ``chart_series`` entry: its MetricSpec's for a
        metric key, else the unit its label names ("loss %", "rtt p99 µs")."""
        name = split_key(label)[0]
        if name in self.specs:
            return str(self.specs[name].get("unit", ""))
        unit = unit_in_label(label)
        if not unit and label.split():
            # "ttfb 127.0.0.1/x": the metric whose name starts with the first word
            first = label.split()[0].lower()
            for spec_name, spec in self.specs.items():
                if spec_name.lower().split("_")[0] == first:
                    return str(spec.get("unit", ""))
        return unit

    def chart_panels(self) -> list[tuple[str, dict[str, list[tuple[float, float]]]]]:
        """``chart_series`` split by unit family: one (unit, series) panel per
        axis, so packets/s, loss % and RTT µs never share one y axis. A series
        plotted against something other than time ("... by threads") gets a
        panel of its own; its unit is then ``"by threads"``."""
        panels: dict[str, dict[str, list[tuple[float, float]]]] = {}
        units: dict[str, list[str]] = {}
        for label, points in self.chart_series().items():
            unit = self.chart_unit(label)
            by = label.rsplit(" by ", 1)
            family = f"by {by[1]}" if len(by) == 2 else unit_family(unit)
            legend = label_with_unit(label, unit) if label in self.history.keys else label
            if split_key(label)[0] in self.specs:
                name, entity = split_key(label)
                legend = label_with_unit(name, unit) + (f" {entity}" if entity else "")
            panels.setdefault(family, {})[legend] = points
            if unit and unit not in units.setdefault(family, []):
                units[family].append(unit)
        return [
            (family if family.startswith("by ") else ", ".join(units.get(family, [])), series)
            for family, series in panels.items()
        ]

    # -- layout --------------------------------------------------------
    squeezed_rows = 0
    """Rows a pane drawing its short forms (``fit_rows`` in the cpu and mem
    panes) saves: ``natural_height`` still asks for the full forms, so a
    terminal that grows gives them back (else the short forms, once drawn,
    would be all the pane ever asked for)."""

    hidden_rows = 0
    """Rows of the tables ``hide_lone_headings`` hid (asked for all the same)."""

    def natural_height(self) -> int:
        """Rows this pane wants to show everything: its content plus the border."""
        return content_rows(self) + 2 + self.squeezed_rows + self.hidden_rows

    def hide_lone_headings(self) -> None:
        """Hide a table (a text block with header rows) of which the rows the
        layout gave the pane would show the heading and no row under it (the
        iops pane at 120x40 in the demo ended in "completion latency (µs),
        last interval, log scale" and no percentile); show it again once a
        row of it fits. For panes whose tables are shown unless this hides
        them (``IopsPane``)."""
        room = self.content_room()
        used, hidden = 0, 0
        for child in self.children:
            if isinstance(child, TextBlock) and child.header_rows > 0:
                rows = len(child.rows)
                lone = bool(room) and rows > child.header_rows and room - used <= child.header_rows
                if child.display == lone:  # a layout pass only when it changes
                    child.display = not lone
                if lone:
                    hidden += rows
                    continue
            if child.display:
                height = child.styles.height
                cells = height.cells if height is not None else None
                used += cells if cells is not None else content_rows(child) or 1
        self.hidden_rows = hidden

    def content_room(self) -> int:
        """Rows inside the border the layout gave this pane; 0 before the first layout."""
        return self.size.height if self.is_mounted else 0

    def waiting_text(self) -> str:
        """The compact list's line for a pane with nothing to show yet: what
        the probe last said (compiling its loop, an error that stopped it
        before its first sample), else that it waits for data. A plain
        "waiting for data" beside a probe that had failed read as forever."""
        status = self.last_status
        if status is None or status.level == "started" or not status.message:
            return "waiting for data"
        if status.level in ("error", "warning", "stopped"):
            return f"{status.level}: {status.message}"
        return f"{status.message}..." if status.level == "info" else status.message

    def headline_text(self) -> str:
        """The pane's headline figure on one line, for the compact list: the
        latest value of each primary metric (an entity metric is summed over
        entities when it is a rate, else its largest value is shown)."""
        parts = []
        for name, spec in self.specs.items():
            if not spec.get("primary"):
                continue
            unit = str(spec.get("unit", ""))
            value = self.latest(name)
            if value is None:
                known = [
                    hist.latest
                    for key, hist in self.history.keys.items()
                    if split_key(key)[0] == name
                    and split_key(key)[1] is not None
                    and hist.latest is not None
                ]
                if not known:
                    continue
                rate = unit_family(unit) == "/s" or unit.endswith("B/s")
                value = sum(known) if rate else max(known)
            parts.append(headline_part(self.label(name), value, unit))
        if not parts:
            return self.waiting_text() if not self.samples_seen else "-"
        return "  ".join(parts)

    def show_hidden(self, show: bool) -> None:
        """Show (True) or hide again (False) rows hidden by default, such as
        idle or virtual devices. Panes without such rows ignore it."""

    def fit_border_title(self) -> None:
        """Fit the border title to the pane's width (see ``fit_title``)."""
        current = str(self.border_title or "")
        if current != self._fitted_title:  # set by the pane since the last fit
            self.full_title = current
        width = self.size.width - BORDER_CELLS
        fitted = fit_title(self.full_title, width) if width > 0 else self.full_title
        self._fitted_title = fitted
        if fitted != current:
            self.border_title = fitted

    def on_resize(self) -> None:
        self.fit_border_title()

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

    def label(self, key: str) -> str:
        """A human label for a metric key: ``read_clat_p99_us@vda`` ->
        ``p99 read latency vda`` (the unit goes beside the value)."""
        name, entity = split_key(key)
        label = human_label(name, self.unit(key))
        return f"{label} {entity}" if entity else label

    def stats_lines(
        self,
        keys: list[str],
        label_width: int = 18,
        labels: list[str] | None = None,
        width: int | None = None,
    ) -> list[str]:
        """A header and one row per key: latest/min/max/mean/p99 and unit.

        Labels are human (``label``) unless given; byte rates are scaled per
        row (MB/s). p99 is over the last ``history.P99_WINDOW`` samples (hence
        ``p99*``); min/max/mean cover the whole run. Within ``width`` cells
        (None: no limit) columns are left out from the right (p99*, mean,
        max, min; latest stays) rather than the unit: a number cut off from
        its unit reads as a number in another unit.
        """
        body: list[tuple[str, list[float | None], str]] = []
        for i, key in enumerate(keys):
            label = labels[i] if labels is not None else self.label(key)
            hist = self.history.get(key)
            if hist is None:
                continue
            s = hist.stats
            cells = [hist.latest, s.min if s.count else None, s.max if s.count else None]
            cells += [s.mean, hist.p99]
            factor, unit = scale_for(cells, self.unit(key))
            body.append((label, [None if v is None else v / factor for v in cells], unit))
        names = ["latest", "min", "max", "mean", "p99*"]
        unit_cells = max([4, *(len(unit) for _label, _cells, unit in body)])
        shown = len(names)
        while width is not None and shown > 1 and label_width + 9 * shown + 2 + unit_cells > width:
            shown -= 1
        head = " ".join([f"{'metric':<{label_width}}", *(f"{n:>8}" for n in names[:shown])])
        rows = [f"{head}  unit"]
        for label, cells, unit in body:
            text = " ".join(fmt_value(v, unit, 8) for v in cells[:shown])
            rows.append(f"{label[:label_width]:<{label_width}} {text}  {unit}".rstrip())
        return rows

    def help_text(self) -> PaneHelp:
        """What this pane's numbers mean, for the help screen."""
        rows: list[tuple[str, str]] = []
        # The pane's own keys, which the key line shows while it has focus.
        for binding in self._bindings.key_to_bindings.values():
            for b in binding:
                if b.show and b.description:
                    rows.append((f"key {b.key_display or b.key}", b.description))
        ref = self.info.get("reference_command")
        if ref:
            rows.append(("reference", str(ref)))
        for name, spec in self.specs.items():
            label = label_with_unit(name, str(spec.get("unit") or ""))
            rows.append((f"{label} ({name})", str(spec.get("description", ""))))
        return PaneHelp(str(self.border_title), tuple(rows))


def _cached_lines(widget: ProbePane, crop: Region) -> list[Strip] | None:
    """``crop`` of ``widget`` as Textual's styles cache holds it (line
    filters applied, as its ``render`` does), or None when a line is missing
    or dirty, or this Textual keeps its cache otherwise: then the caller
    takes Textual's own path."""
    cache = widget._styles_cache
    try:
        lines, dirty, width = cache._cache, cache._dirty_lines, cache._width
    except AttributeError:
        return None
    if width != widget.outer_size.width:
        return None
    ys = crop.line_range
    if dirty and not dirty.isdisjoint(ys):
        return None
    strips = [lines.get(y) for y in ys]
    if any(strip is None for strip in strips):
        return None
    out: list[Strip] = [strip for strip in strips if strip is not None]
    filters = widget.app.get_line_filters()
    if filters:
        background = getattr(widget, "_filter_background", None)
        if background is None:
            background = widget._filter_background = widget.background_colors[1]
        for line_filter in filters:
            out = [strip.apply_filter(line_filter, background) for strip in out]
    x1, x2 = crop.column_span
    if (x1, x2) != (0, width):
        out = [strip.crop(x1, x2) for strip in out]
    return out


def headline_part(label: str, value: float | None, unit: str) -> str:
    """``read 2234 IO/s``, ``2684 events/s`` (a label that is its unit goes
    after the value), ``busy 37.2 %``, ``rx 9.20 MB/s``."""
    if unit and label.endswith(unit) and scale_for([value], unit)[0] == 1.0:
        return f"{fmt_value(value, unit)} {label}"
    return f"{label} {fmt_with_unit(value, unit)}"
