"""Panes of the system family (passive collectors): CPU load, disks, NICs.

- ``CpuPane`` (``system.cpu``): all-core busy % as a sparkline that takes the
  free width, load averages and busy % statistics, and a bar per core.
- ``DiskPane`` (``system.disk``) and ``NetPane`` (``system.net``) share
  ``EntityPane``: ONE row per device, its latest figures in columns followed by
  the sparkline of its headline rate (IO/s read + write; packets in + out) in
  the rest of the row. Columns that do not fit a narrow pane are left out in
  a fixed order (latency first); the maximised view lists every metric.
- A device whose series ended (the hub's ``SeriesEnded``: a loop device
  detached, a veth removed) loses its row and history at that moment, live
  and in a replay, and the last row says ``gone: loop4 (12 s ago)`` for
  ``GONE_NOTE_SAMPLES`` samples (the last ``GONE_NOTED`` such devices).
- Idle and virtual devices are hidden by default: an interface that carried
  no packet yet, a virtual one (``ifb*``, ``veth*``, bridges, tunnels...) or a
  loop/RAM device with no traffic in the last ``IDLE_WINDOW`` samples. The
  last row names what is hidden; ``show_hidden(True)`` (the app's ``i`` key)
  shows them.

Samples are read through the family's typed records (``CpuLoadInterval``,
``DiskInterval``, ``NetInterval``); the base class's history keeps every
metric key for statistics and the maximised chart.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from probetop.probes.core.passive import (
    BUSY_PCT,
    CORE_BUSY_PCT,
    LOAD1,
    LOAD5,
    LOAD15,
    READ_BPS,
    READ_IOPS,
    RX_BPS,
    RX_PPS,
    TX_BPS,
    TX_PPS,
    WRITE_BPS,
    WRITE_IOPS,
    DiskCounters,
    NicCounters,
)
from probetop.probes.core.sample import Sample, SeriesEnded, metric_key
from probetop.probes.system import (
    CpuLoadInterval,
    DiskInterval,
    NetInterval,
    is_virtual_disk,
    is_virtual_nic,
)
from probetop.tui.ui.widgets.bars import value_bar
from probetop.tui.ui.widgets.generic_pane import SPARK_POINTS
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import ProbePane, headline_part
from probetop.tui.ui.widgets.seriestable import GAP, SeriesRow, SeriesTable
from probetop.tui.ui.widgets.sparkrow import LABEL_CELLS
from probetop.tui.ui.widgets.units import fit_fields
from textual.app import ComposeResult

IDLE_WINDOW = 60  # samples: a virtual device idle this long is hidden again
MIN_SPARK = 12  # columns are left out before the sparkline gets narrower than this
CHART_ENTITIES = 3  # devices drawn in the maximised chart
PANE_CHROME = 4  # border and padding, left + right


def names_line(head: str, names: list[str], tail: str, room: int, sep: str) -> str:
    """``head`` + as many ``names`` as fit in ``room`` cells + `` +N`` for
    the rest + ``tail``: the key hint at the end stays whole at 80 columns
    (``9 idle hidden: loop0 ... loop8  (i: sh`` was cut there)."""
    whole = head + sep.join(names) + tail
    if room <= 0 or len(whole) <= room:
        return whole
    for shown in range(len(names) - 1, -1, -1):
        more = f"{sep if shown else ''}+{len(names) - shown}"
        line = head + sep.join(names[:shown]) + more + tail
        if len(line) <= room:
            return line
    return whole[:room]


GONE_NOTE_SAMPLES = 30  # samples a gone device stays named in the last row
GONE_NOTED = 3  # gone devices named at most


@dataclass(frozen=True, slots=True)
class Column:
    """One table column: header, the record fields summed into it, scale, and
    ``drop``: columns with a higher number are left out first when narrow
    (0: always shown)."""

    header: str
    fields: tuple[str, ...]
    scale: float = 1.0
    drop: int = 0
    unit: str = ""

    @property
    def width(self) -> int:
        return max(len(self.header), 6)

    def value(self, counters: Any) -> float | None:
        parts = [getattr(counters, f) for f in self.fields]
        known = [p for p in parts if p is not None]
        return sum(known) / self.scale if known else None

    def cell(self, counters: Any) -> str:
        # Pre-scaled columns (MB/s) keep plain digits: no k/M prefix on top.
        return fmt_value(self.value(counters), self.unit, self.width, si=self.scale == 1)


class EntityPane(ProbePane):
    """One row per device with its sparkline. See the module docstring."""

    COLUMNS: ClassVar[tuple[Column, ...]] = ()
    SPARK: ClassVar[tuple[str, ...]] = ()  # record fields summed into the sparkline
    SPARK_LABEL = ""
    SPARK_UNIT = ""
    CHART: ClassVar[tuple[str, ...]] = ()  # metric names charted per device when maximised
    ENTITY_HEADER = "name"
    HIDE_IDLE = True  # hide a device that never carried traffic (else only virtual ones)
    NOUN = "devices"

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.table = SeriesTable([SeriesRow("waiting for the first sample...")], header_rows=1)
        self.counters: dict[str, Any] = {}  # entity -> its latest typed counters
        self.sums: dict[str, deque[float | None]] = {}  # entity -> sparkline series
        self.last_active: dict[str, int] = {}  # entity -> sample number of its last traffic
        # (entity, t_ns it ended at, sample number then): bounded
        self.gone: deque[tuple[str, int, int]] = deque(maxlen=GONE_NOTED)
        self.show_all = False

    def compose(self) -> ComposeResult:
        yield self.table

    # -- storing ---------------------------------------------------------
    def read(self, sample: Sample) -> Mapping[str, Any]:
        """The sample's devices as typed counters (one record class per pane)."""
        raise NotImplementedError

    def is_virtual(self, entity: str) -> bool:
        raise NotImplementedError

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        present = self.read(sample)
        # A device or interface gone from the sample (a veth of a stopped
        # container, a detached loop device) is gone: free its state, so
        # churning devices do not grow the pane for the life of the run.
        for gone in self.counters.keys() - present.keys():
            del self.counters[gone]
            self.sums.pop(gone, None)
            self.last_active.pop(gone, None)
        for entity, counters in present.items():
            self.counters[entity] = counters
            parts = [getattr(counters, f) for f in self.SPARK]
            known = [p for p in parts if p is not None]
            total = sum(known) if known else None
            series = self.sums.get(entity)
            if series is None:
                series = self.sums[entity] = deque(maxlen=SPARK_POINTS)
            series.append(total)
            if total:
                self.last_active[entity] = self.samples_seen

    def end_series(self, ended: SeriesEnded) -> None:
        """The device's series ended (the hub said so, live or in a replay):
        its row goes at that moment, with its history."""
        super().end_series(ended)
        self.gone.append((ended.entity, ended.t_ns, self.samples_seen))
        self.counters.pop(ended.entity, None)
        self.sums.pop(ended.entity, None)
        self.last_active.pop(ended.entity, None)

    # -- which devices ---------------------------------------------------
    def entities(self) -> list[str]:
        return list(self.counters)

    def hidden(self, entity: str) -> bool:
        """Idle or virtual devices are hidden unless ``show_all``."""
        if self.show_all:
            return False
        last = self.last_active.get(entity)
        virtual = self.is_virtual(entity)
        if last is None:
            return virtual or self.HIDE_IDLE
        return virtual and self.samples_seen - last > IDLE_WINDOW

    def shown_entities(self) -> list[str]:
        return [e for e in self.entities() if not self.hidden(e)]

    def show_hidden(self, show: bool) -> None:
        if show != self.show_all:
            self.show_all = show
            if self.counters:
                self.render_frame()

    # -- drawing ---------------------------------------------------------
    def columns(self, name_width: int) -> list[Column]:
        """The columns that fit beside a sparkline of at least MIN_SPARK cells."""
        cols = list(self.COLUMNS)
        room = self.size.width - PANE_CHROME
        if room <= 0:
            return cols

        def width() -> int:
            return name_width + sum(c.width + 1 for c in cols) + GAP + MIN_SPARK

        while width() > room and any(c.drop for c in cols):
            worst = max(c.drop for c in cols)
            cols = [c for c in cols if c.drop != worst] if worst else cols
        return cols

    def table_rows(self) -> tuple[list[SeriesRow], int]:
        shown = self.shown_entities()
        name_w = max([len(self.ENTITY_HEADER), 4, *(len(e) for e in shown)])
        cols = self.columns(name_w)
        head = f"{self.ENTITY_HEADER:<{name_w}}" + "".join(f" {c.header:>{c.width}}" for c in cols)
        text_w = len(head)
        rows = [SeriesRow(f"{head:<{text_w + GAP}}{self.SPARK_LABEL}")]
        for entity in shown:
            counters = self.counters[entity]
            text = f"{entity:<{name_w}}" + "".join(f" {c.cell(counters)}" for c in cols)
            rows.append(SeriesRow(text, self.sums.get(entity, ())))
        hidden = [e for e in self.entities() if e not in shown]
        room = self.size.width - PANE_CHROME
        if hidden and not shown:
            rows.append(SeriesRow(f"no traffic on {len(hidden)} {self.NOUN}  (i: show them)"))
        elif hidden:
            line = names_line(f"{len(hidden)} idle hidden: ", hidden, "  (i: show)", room, " ")
            rows.append(SeriesRow(line))
        # "ago", not "at": a live record's time is the monotonic clock's
        now_ns = self.last_sample.t_ns if self.last_sample is not None else 0
        gone = [
            f"{entity} ({max(0.0, (now_ns - t_ns) / 1e9):.0f} s ago)"
            for entity, t_ns, seen in self.gone
            if self.samples_seen - seen <= GONE_NOTE_SAMPLES and entity not in self.counters
        ]
        if gone:
            rows.append(SeriesRow(names_line("gone: ", gone, "", room, ", ")))
        return rows, text_w

    def render_frame(self) -> None:
        super().render_frame()
        if not self.counters:
            return
        rows, text_w = self.table_rows()
        self.table.set_rows(rows, header_rows=1, text_width=text_w)

    def on_resize(self) -> None:
        if self.counters:
            self.render_frame()

    def headline_text(self) -> str:
        shown = self.shown_entities()
        if not shown:
            return self.waiting_text() if not self.samples_seen else f"no {self.NOUN} active"
        busiest = max(shown, key=lambda e: (self.sums[e][-1] or 0.0) if self.sums[e] else 0.0)
        series = self.sums[busiest]
        latest = series[-1] if series else None
        return f"{busiest} " + headline_part(self.SPARK_LABEL, latest, self.SPARK_UNIT)

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {}
        for entity in self.shown_entities()[:CHART_ENTITIES]:
            for name in self.CHART:
                key = metric_key(name, entity)
                out[key] = self.series(key)
        return out


class DiskPane(EntityPane):
    ENTITY_HEADER = "disk"
    COLUMNS = (
        Column("r IO/s", ("read_iops",), unit="IO/s"),
        Column("w IO/s", ("write_iops",), unit="IO/s"),
        Column("r MB/s", ("read_bps",), 1e6, drop=1),
        Column("w MB/s", ("write_bps",), 1e6, drop=1),
        Column("r ms", ("read_lat_ms",), drop=3, unit="ms"),
        Column("w ms", ("write_lat_ms",), drop=3, unit="ms"),
        Column("busy%", ("busy_pct",), drop=2, unit="%"),
    )
    SPARK = ("read_iops", "write_iops")
    SPARK_LABEL = "r+w IO/s"
    SPARK_UNIT = "IO/s"
    CHART = (READ_IOPS, WRITE_IOPS, READ_BPS, WRITE_BPS)
    HIDE_IDLE = False  # a real disk doing nothing is worth seeing; idle loop devices are not
    NOUN = "disks"

    def read(self, sample: Sample) -> Mapping[str, DiskCounters]:
        return DiskInterval.from_sample(sample).disks

    def is_virtual(self, entity: str) -> bool:
        return is_virtual_disk(entity)


class NetPane(EntityPane):
    ENTITY_HEADER = "nic"
    COLUMNS = (
        Column("rx pkt/s", ("rx_pps",), unit="pkt/s"),
        Column("tx pkt/s", ("tx_pps",), unit="pkt/s"),
        Column("rx MB/s", ("rx_bps",), 1e6, drop=1),
        Column("tx MB/s", ("tx_bps",), 1e6, drop=1),
        # rx+tx in one column each so the table fits 80 columns; the
        # maximised view lists every direction separately.
        Column("err/s", ("rx_errors", "tx_errors"), drop=2, unit="/s"),
        Column("drop/s", ("rx_drops", "tx_drops"), drop=2, unit="/s"),
    )
    SPARK = ("rx_pps", "tx_pps")
    SPARK_LABEL = "rx+tx pkt/s"
    SPARK_UNIT = "pkt/s"
    CHART = (RX_PPS, TX_PPS, RX_BPS, TX_BPS)
    NOUN = "interfaces"

    def read(self, sample: Sample) -> Mapping[str, NicCounters]:
        return NetInterval.from_sample(sample).nics

    def is_virtual(self, entity: str) -> bool:
        return is_virtual_nic(entity)


BAR_WIDTH = 10
CORE_GAP = 2  # cells between two cores on a line


def core_bar(busy: float | None, width: int = BAR_WIDTH) -> str:
    """A fixed-width text bar of busy %, in eighths, one colour."""
    return value_bar(busy, 100.0, width)


class CpuPane(ProbePane):
    """All-core busy % sparkline, load and busy statistics, a bar per core."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        # ONE widget for the pane (the busy % row with its sparkline, the
        # summary, the core lines): each widget costs Textual per frame.
        self.table = SeriesTable(
            [SeriesRow("all cores"), SeriesRow("waiting for the first sample..."), SeriesRow("")]
        )
        self._load: CpuLoadInterval | None = None  # parsed from last_sample when drawn

    def compose(self) -> ComposeResult:
        yield self.table

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        self._load = None  # parsed when drawn: a seek feeds thousands of samples at once

    @property
    def load(self) -> CpuLoadInterval | None:
        """The latest interval, parsed once from ``last_sample``."""
        if self._load is None and self.last_sample is not None:
            self._load = CpuLoadInterval.from_sample(self.last_sample)
        return self._load

    def core_names(self) -> list[str]:
        names = self.load.cores if self.load is not None else {}
        return sorted(names, key=lambda n: (len(n), n))

    def core_lines(self, width: int) -> list[str]:
        """A bar per core, as many side by side as fit ``width``; MHz left out
        when that puts two cores on a line instead of one."""
        cores = self.load.cores if self.load is not None else {}
        names = self.core_names()
        short = [
            f"{c:<5} {core_bar(cores[c].busy_pct)} {fmt_value(cores[c].busy_pct, '%', 5)}%"
            for c in names
        ]
        long = [
            text + (f" {cores[c].mhz:5.0f} MHz" if cores[c].mhz is not None else "")
            for c, text in zip(names, short, strict=True)
        ]

        def per_line(cells: list[str]) -> int:
            return max(1, (width + CORE_GAP) // (max(map(len, cells), default=1) + CORE_GAP))

        cells = long if per_line(long) >= min(2, len(long)) else short
        n = per_line(cells)
        cell = max(map(len, cells), default=0)
        gap = " " * CORE_GAP
        lines = [
            gap.join(c.ljust(cell) for c in cells[i : i + n]).rstrip()
            for i in range(0, len(cells), n)
        ]
        return lines or [""]

    def summary_line(self, width: int) -> str:
        """Load averages and busy % statistics, whole figures only."""
        busy = self.metric(BUSY_PCT)
        loads = " ".join(fmt_value(self.latest(k), "") for k in (LOAD1, LOAD5, LOAD15))
        fields = [f"load avg {loads}"]
        if busy is not None:
            s = busy.stats
            fields.append("busy %")
            fields += [
                f"{name} {fmt_value(v, '%')}"
                for name, v in (
                    ("min", s.min),
                    ("max", s.max),
                    ("mean", s.mean),
                    ("p99*", busy.p99),
                )
            ]
        return fit_fields("  ".join(fields), width)

    def render_frame(self) -> None:
        super().render_frame()
        busy = self.metric(BUSY_PCT)
        if busy is None:
            return
        label = f"{'all cores':<13} {fmt_value(busy.latest, '%', 6)} %"
        width = self.content_size.width or 80
        rows = [
            SeriesRow(label, busy.recent(SPARK_POINTS), 100.0),
            SeriesRow(self.summary_line(width)),
            *(SeriesRow(line) for line in self.core_lines(width)),
        ]
        # The sparkline starts where a SparkRow's does (its label cells).
        self.table.set_rows(rows, header_rows=0, text_width=LABEL_CELLS - GAP)

    def on_resize(self) -> None:
        if self.history.keys:
            self.render_frame()

    def headline_text(self) -> str:
        if self.load is None:
            return self.waiting_text()
        return (
            f"busy {fmt_value(self.load.busy_pct, '%')} %  "
            f"load {fmt_value(self.load.load1, '')}  {len(self.load.cores)} cores"
        )

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        out = {BUSY_PCT: self.series(BUSY_PCT)}
        for core in self.core_names()[:8]:
            key = metric_key(CORE_BUSY_PCT, core)
            out[key] = self.series(key)
        return out
