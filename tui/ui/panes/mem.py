"""Pane for the ``mem`` probe (sysbench memory): operations/s, MiB/s, threads.

- operations/s and MiB/s per interval, as one-colour sparklines (per-interval
  figures, as sysbench's ``--report-interval`` lines);
- per-thread bars: operations each worker thread completed in the last
  interval (fairness at a glance);
- what runs (access mode, operation, block size, scope) in the title, as
  the iops pane's I/O pattern: a headline carrying it wrapped to two rows
  at 80 columns;
- a headline with the threads, the operations so far and the mean latency
  (in the unit that fits it: "0.41 µs", never "0.00 ms"); the final
  figures once done;
- ``e`` toggles what one operation is.

Squeezed by the layout (80x24), the pane draws short forms rather than
losing its bottom rows, as the cpu pane does (``CpuBenchPane.fit_rows``):
the headline without its hint, the per-thread bars as one line under it
(``t0 1,307  t1 1,290``; more than four threads: ``min 24 max 25 (12
threads)``). When even that is taller than the rows the pane has, a
finished run drops its live headline (the "finished:" line has its
figures) before the per-thread line: cut from the bottom, the per-thread
view vanished without a word.

The pane stores in ``add_sample`` and draws in ``render_frame``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from probetop.probes.core.sample import Sample
from probetop.probes.mem import (
    LAT_AVG_MS,
    LAT_PCT_MS,
    MIBS,
    OPERATION_EXPLAINED,
    OPS,
    QUEUE_LENGTH,
    RATE,
    THREADS,
    MemInterval,
)
from probetop.tui.ui.widgets.bars import value_bar
from probetop.tui.ui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.ui.widgets.pane import PaneHelp, ProbePane, title_for
from probetop.tui.ui.widgets.sparkrow import value_label
from probetop.tui.ui.widgets.textblock import (
    TextBlock,
    counts_text,
    pack_fields,
    wrapped_rows,
)
from probetop.tui.ui.widgets.units import fmt_with_unit
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

BAR_WIDTH = 16
MAX_THREAD_ROWS = 16


def size_text(nbytes: int) -> str:
    """``1K``, ``1M``: a block size as sysbench's options spell it."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return str(nbytes)


class MemBenchPane(ProbePane):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "explain", "What is one operation?"),
    ]

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.ops_row = SparkRow(OPS, "ops/s")
        self.mibs_row = SparkRow(MIBS, "MiB/s")
        self.headline = TextBlock(["starting: compiling the loop..."], wrap=True)
        self.threads_block = TextBlock([""])
        self.explain_block = TextBlock([], wrap=True)
        self.show_explain = False
        self.per_thread: list[int] = []
        self.total_ops = 0
        self.final: dict[str, Any] | None = None
        p = info.get("params", {}) or {}
        self.border_title = (
            f"{title_for(self.kind, self.probe_id)}  {p.get('access_mode', '?')} "
            f"{p.get('oper', '?')}  block {size_text(int(p.get('block_size') or 0))}  "
            f"scope {p.get('scope', '?')}"
        )

    def on_mount(self) -> None:
        self.explain_block.display = False

    def compose(self) -> ComposeResult:
        yield self.ops_row
        yield self.mibs_row
        yield self.headline
        yield self.explain_block
        yield self.threads_block

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        interval = MemInterval.from_sample(sample)
        self.per_thread = list(interval.per_thread_ops)
        self.total_ops = interval.total_ops or self.total_ops
        if interval.summary:
            self.final = dict(interval.summary)

    def action_explain(self) -> None:
        self.show_explain = not self.show_explain
        self.explain_block.set_lines([OPERATION_EXPLAINED] if self.show_explain else [])
        self.explain_block.display = self.show_explain

    def thread_lines(self) -> list[str]:
        top = max(self.per_thread, default=0)
        lines = ["operations per thread (interval)"]
        for i, n in enumerate(self.per_thread[:MAX_THREAD_ROWS]):
            lines.append(f"t{i:<3} {value_bar(n, top, BAR_WIDTH)} {n:>9,}")
        if len(self.per_thread) > MAX_THREAD_ROWS:
            lines.append(f"... {len(self.per_thread) - MAX_THREAD_ROWS} more threads")
        return lines

    def headline_fields(self) -> list[tuple[int, str]]:
        """The live headline's fields, each with its priority in a pane too
        short for them all (``pack_fields``); what runs is in the title."""
        p = self.info.get("params", {}) or {}
        fields = [
            (2, f"threads {int(self.latest(THREADS) or p.get('threads') or 0)}"),
            (6, f"ops {self.total_ops:,}"),
            (7, f"avg lat {fmt_with_unit(self.latest(LAT_AVG_MS), 'ms')}"),
        ]
        if p.get("rate"):
            # --rate: the target and sysbench's queue (operations due, no thread free)
            queue = self.latest(QUEUE_LENGTH)
            fields.insert(1, (4, f"rate {int(self.latest(RATE) or p['rate']):,}/s target"))
            fields.insert(2, (5, f"queue {'-' if queue is None else f'{int(queue):,}'}"))
        return fields

    def finished_fields(self) -> list[tuple[int, str]]:
        """The "finished:" line's fields (none while the run goes on): above
        the live headline's in priority, which they make stale."""
        if self.final is None:
            return []
        f = self.final
        return [
            (10, f"finished: {f['ops_per_second']:.2f} ops/s"),
            (5, f"{f['mib_per_second']:.2f} MiB/s"),
            (8, f"{f['total_events']:,} ops in {f['total_time']:.2f} s"),
            (3, f"stopped by {f['stopped_by']}"),
        ]

    def headline_lines(self, hint: bool = True) -> list[str]:
        live = "  ".join(text for _p, text in self.headline_fields())
        lines = [live + ("   (e: what is one operation?)" if hint else "")]
        if self.final is not None:
            lines.append("  ".join(text for _p, text in self.finished_fields()))
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        ops = self.metric(OPS)
        mibs = self.metric(MIBS)
        if ops is not None:
            self.ops_row.set(value_label("ops/s", ops.latest, ""), ops.recent(SPARK_POINTS))
        if mibs is not None:
            self.mibs_row.set(value_label("MiB/s", mibs.latest, ""), mibs.recent(SPARK_POINTS))
        self.fit_rows()

    def fit_rows(self) -> None:
        """Full forms when the pane's rows hold them, else the short ones."""
        width = self.threads_block.line_width if self.threads_block.is_mounted else 0
        head, threads = self.headline_lines(), self.thread_lines()
        full = wrapped_rows(head, width) + len(threads)
        room = self.content_room() - 2  # the ops/s and MiB/s rows come first
        if self.explain_block.display:
            room -= len(self.explain_block.rows)
        squeezed = bool(self.content_room()) and room < full and bool(self.per_thread)
        if squeezed:  # the per-thread bars as one line of fields under the headline
            # after the headline's lines: a "finished:" line comes first
            line = counts_text("operations per thread (interval) ", self.per_thread)
            head = [*self.headline_lines(hint=False), line]
            if wrapped_rows(head, width) > room:  # the fields that matter most, packed
                short = counts_text("per thread ", self.per_thread)
                live = self.headline_fields()
                if self.final is not None:  # stale once finished: below the finished figures
                    live = [(p - 5, t) for p, t in live]
                head = pack_fields([*self.finished_fields(), *live, (9, short)], room, width)
            threads = []
        self.squeezed_rows = full - wrapped_rows(head, width) - len(threads)
        self.headline.set_lines(head)
        if threads:
            self.threads_block.set_lines(threads)
        if self.threads_block.display == squeezed:  # a layout pass only when it changes
            self.threads_block.display = not squeezed

    def on_resize(self) -> None:
        super().on_resize()
        if self.samples_seen:
            self.fit_rows()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        return {
            "ops/s": self.series(OPS),
            "MiB/s": self.series(MIBS),
            "latency ms": self.series(LAT_PCT_MS),
        }

    def help_text(self) -> PaneHelp:
        base = super().help_text()
        return PaneHelp(base.title, (*base.rows, ("one operation", OPERATION_EXPLAINED)))
