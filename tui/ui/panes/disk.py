"""Panes for the disk family: ``iops`` (the probe's view beside the kernel's,
and latency) and ``warmup`` (progress, ETA, done map, plateau).

IopsPane:
- sparklines: IOPS per direction and p99 completion latency, per interval;
- "probe vs kernel": this interval's IOPS and bytes/s as the probe counted
  them beside the kernel's counters of the disk holding the target (the
  passive per-disk sample, read through ``DiskCounters`` in ``observe``), so a
  page cache hit (buffered I/O) or other I/O to the same disk shows as a gap;
  a target on NFS (no block device) shows the NFS client's view per RPC op
  instead (ops/s, kB/op, avg RTT and exe ms, as nfsiostat prints them);
- the latency distribution of the last interval at fio's percentiles, with a
  log-scaled bar per percentile.

WarmupPane: a progress bar with bytes done, ETA and elapsed time (and the
kernel's MB/s and IO/s for the same disk), MB/s and IOPS sparklines, the map
of done regions and the plateau state. A run of several passes (``--write
--read``) adds a row per pass and a total (bytes, time, bandwidth, IOPS in
the units every pane writes, plateau, outcome), added up from the samples with the same
``PassTotals`` the report uses; a pass's outcome comes from its bytes done
(``running`` while it runs).

Samples are read through the family's typed records (``IopsInterval``,
``WarmupInterval``) and parameters through ``IopsParams``/``WarmupParams``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from probetop.probes.core.passive import DiskCounters
from probetop.probes.core.sample import Sample
from probetop.probes.disk import (
    DIRECTION_METRICS,
    WARMUP_BW,
    WARMUP_IOPS,
    IopsInterval,
    IopsParams,
    PassTotals,
    WarmupInterval,
    WarmupParams,
    overall_outcome,
)
from probetop.tui.ui.widgets.bars import hbar, log_fraction, value_bar
from probetop.tui.ui.widgets.generic_pane import SPARK_POINTS, SparkRow
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.sparkrow import value_label
from probetop.tui.ui.widgets.textblock import TextBlock
from probetop.tui.ui.widgets.units import fmt_with_unit, scale_for
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

SHOWN_PERCENTILES = (1.0, 50.0, 90.0, 99.0, 99.9, 99.99)
BAR = 24


def log_bar(value: float, low: float, high: float, width: int = BAR) -> str:
    """A bar whose length is ``value`` on a log scale between low and high
    (empty for nothing to show; any positive value shows at least an eighth)."""
    if value <= 0 or high <= low or low <= 0:
        return ""
    return value_bar(log_fraction(value, low, high), 1.0, width, at_least_one=True).rstrip()


def kernel_rates(
    counters: DiskCounters | None, direction: str
) -> tuple[float | None, float | None, float | None]:
    """(IO/s, bytes/s, mean latency ms) of one direction as the kernel counted them."""
    if counters is None:
        return None, None, None
    if direction == "write":
        return counters.write_iops, counters.write_bps, counters.write_lat_ms
    return counters.read_iops, counters.read_bps, counters.read_lat_ms


class IopsPane(ProbePane):
    """See the module docstring."""

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = IopsParams.from_info(info)
        self.device: str | None = params.backing_device
        self.directions = list(params.directions)
        # (history key, label, unit) per sparkline
        self.spark_specs = [
            (DIRECTION_METRICS[d].iops, f"{d} IOPS", "IO/s") for d in self.directions
        ]
        self.spark_specs += [
            (DIRECTION_METRICS[d].clat_p99_us, f"p99 {d} latency", "µs") for d in self.directions
        ]
        self.spark_rows = [SparkRow(key, label) for key, label, _unit in self.spark_specs]
        self.compare = TextBlock(["compiling the native I/O loop..."], header_rows=1)
        self.latency = TextBlock([""], header_rows=1)  # not []: see WarmupPane
        self.kernel: DiskCounters | None = None
        self.interval: IopsInterval | None = None
        desc = (
            f"{params.rw} bs={params.bs} jobs={params.jobs} iodepth={params.iodepth} "
            f"{params.engine} {'direct' if params.direct else 'buffered'}"
        )
        self.queue_asked = params.jobs * params.iodepth
        self.engine = params.engine  # in the title too, but a narrow title drops it
        self.border_title = f"iops  {params.target}  {desc}"

    def compose(self) -> ComposeResult:
        yield from self.spark_rows
        yield self.compare
        yield self.latency

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        self.interval = IopsInterval.from_sample(sample)

    def observe(self, sample: Sample) -> None:
        if self.device:
            counters = DiskCounters.all_from_sample(sample).get(self.device)
            if counters is not None:
                self.kernel = counters

    def nfs_lines(self) -> list[str]:
        """A target on NFS: the client's view per RPC op this interval, the
        figures nfsiostat prints (ops/s, kB/op, avg RTT and exe ms)."""
        ops = self.interval.nfs if self.interval else None
        if ops is None:
            return []
        lines = [f"{'NFS client':<16} {'ops/s':>8} {'kB/op':>8} {'RTT ms':>8} {'exe ms':>8}"]
        shown = sorted(ops.items(), key=lambda kv: -float(kv[1].get("ops_per_s") or 0))[:4]
        for op, v in shown:
            lines.append(
                f"{op.lower():<16} {fmt_value(v.get('ops_per_s'), '', 8)} "
                f"{fmt_value(v.get('kb_per_op'), '', 8)} {fmt_value(v.get('avg_rtt_ms'), '', 8)} "
                f"{fmt_value(v.get('avg_exe_ms'), '', 8)}"
            )
        if not shown:
            lines.append("no NFS operations this interval")
        return lines

    def compare_lines(self) -> list[str]:
        # 22 columns: a device name is cut to fit; without one, say why whole.
        nfs = self.interval is not None and self.interval.nfs is not None
        kernel_head = (
            f"kernel {self.device[:15]}"
            if self.device
            else "kernel: NFS (below)"
            if nfs
            else "kernel: none (tmpfs?)"
        )
        lines = [f"{'this interval':<16} {'probe':>10} {kernel_head:>22}"]
        for d in self.directions:
            ours = self.interval.direction(d) if self.interval else None
            k_iops, k_bps, k_lat_ms = kernel_rates(self.kernel, d)
            mine_bps = ours.bps if ours else None
            # Bytes in one named unit for the row (kB/s, MB/s...), as the
            # other panes show them, not a bare "6.99M" under a "B/s" label.
            factor, bytes_unit = scale_for((mine_bps, k_bps), "B/s")
            rows = (  # label, probe, kernel, divisor, unit for fmt_value's prefix
                ("IOPS", ours.iops if ours else None, k_iops, 1.0, "IO/s"),
                (bytes_unit, mine_bps, k_bps, factor, ""),
            )
            for label, mine, theirs, scale, unit in rows:
                mine, theirs = (None if v is None else v / scale for v in (mine, theirs))
                kernel = fmt_value(theirs, unit, 22) if self.device else ""
                lines.append(f"{d + ' ' + label:<16} {fmt_value(mine, unit, 10)} {kernel}")
            mean = ours.clat_mean_us if ours else None
            kernel_us = k_lat_ms * 1000 if k_lat_ms is not None else None
            kernel = f"{fmt_value(kernel_us, 'us', 19)} µs" if self.device else ""
            lines.append(f"{d + ' mean lat':<16} {fmt_value(mean, 'us', 7)} µs {kernel}")
        # The engine and what its jobs keep queued, beside the queue the device
        # saw (iostat's aqu-sz): lower means the engine or the CPU cannot keep up.
        seen = self.kernel.queue_depth if self.kernel is not None else None
        kernel = fmt_value(seen, "", 22) if self.device else ""
        lines.append(f"{'queue ' + self.engine:<16} {self.queue_asked:>10} {kernel}")
        return lines + self.nfs_lines()

    def latency_lines(self) -> list[str]:
        per_direction = {
            d: rates
            for d in self.directions
            if self.interval and (rates := self.interval.direction(d)) is not None
        }
        values = [v for r in per_direction.values() for v in r.clat_us.values() if v]
        if not values:
            return [""]
        low, high = min(values) / 1.5, max(values) * 1.1
        lines = ["completion latency (µs), last interval, log scale"]
        for d, rates in per_direction.items():
            for p in SHOWN_PERCENTILES:
                v = rates.percentile_us(p)
                if v is None:
                    continue
                label = f"{d} p{p:g}"
                lines.append(f"{label:<14} {fmt_value(v, 'us', 8)} {log_bar(v, low, high)}")
        return lines

    def render_frame(self) -> None:
        super().render_frame()
        for row, (key, label, unit) in zip(self.spark_rows, self.spark_specs, strict=True):
            hist = self.history.get(key)
            if hist is None:
                continue
            row.label.set_lines([value_label(label, hist.latest, unit)])
            row.spark.set_values(hist.recent(SPARK_POINTS))
        if self.samples_seen:
            self.compare.set_lines(self.compare_lines())
            self.latency.set_lines(self.latency_lines())
            self.hide_lone_headings()

    def on_resize(self) -> None:
        super().on_resize()
        self.hide_lone_headings()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        """The primary metrics (IOPS per direction), labelled for people."""
        return {f"{d} IO/s": self.series(DIRECTION_METRICS[d].iops) for d in self.directions}


PROGRESS_WIDTH = 40


def progress_bar(fraction: float, width: int = PROGRESS_WIDTH) -> str:
    return "[" + hbar(max(0.0, min(1.0, fraction)), width, pad="·") + "]"


NEVER_GLYPH = "○"  # read back never written (a hole, all zeros): not warmed by a read
BAD_GLYPH = "✗"  # an I/O failed there
FRESH_SHARE = 0.5  # more than this of what was read never written: say "fresh volume"
FRESH_MIN_BYTES = 16 << 20


def _merge_cells(cells: tuple[float, ...] | list[float], width: int) -> list[float]:
    if width > 0 and len(cells) > width:
        n = len(cells)
        groups = [cells[i * n // width : (i + 1) * n // width] for i in range(width)]
        return [sum(g) / len(g) for g in groups]
    return list(cells)


def map_line(
    cells: tuple[float, ...] | list[float],
    width: int = 0,
    never: tuple[float, ...] | list[float] | None = None,
    bad: tuple[float, ...] | list[float] | None = None,
) -> str:
    """One character per region: █ done, ▒ partly done, · not yet; ○ mostly
    never written (read back as a hole or zeros), ✗ an I/O failed there.
    More regions than ``width`` (0: no limit) characters are merged,
    neighbours averaged, so the whole target shows (cropped, the map's end
    was cut off and a finished run looked unfinished)."""
    done = _merge_cells(cells, width)
    nev = _merge_cells(never, width) if never and len(never) == len(cells) else [0.0] * len(done)
    fail = _merge_cells(bad, width) if bad and len(bad) == len(cells) else [0.0] * len(done)
    out = []
    for c, n, b in zip(done, nev, fail, strict=True):
        if b > 0:
            out.append(BAD_GLYPH)
        elif n >= 0.5:
            out.append(NEVER_GLYPH)
        else:
            out.append("█" if c >= 0.999 else "▒" if c > 0 else "·")
    return "".join(out)


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class WarmupPane(ProbePane):
    """See the module docstring. ``W`` after the fresh-volume banner: end
    this run and start write then read on the same target, behind the
    same typed confirmation as ``--write`` (``tui.main``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("W", "write_then_read", "Write then read", show=False),
    ]

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        params = WarmupParams.from_info(info)
        self.border_title = (
            f"warmup  {params.target}  {params.pass_name} pass  "
            f"bs={params.bs} jobs={params.jobs} iodepth={params.iodepth} {params.engine}"
        )
        self.bw_row = SparkRow(WARMUP_BW, "throughput")
        self.iops_row = SparkRow(WARMUP_IOPS, "IOPS")
        self.spark_specs = ((self.bw_row, "throughput", "B/s"), (self.iops_row, "IOPS", "IO/s"))
        self.progress = TextBlock(["compiling the native I/O loop..."], wrap=True)
        self.map_block = TextBlock([""])  # [""]: TextBlock repaints [] -> 1 line only on resize
        self.plateau_block = TextBlock([""], wrap=True)
        self.interval: WarmupInterval | None = None
        self.device: str | None = params.backing_device
        self.kernel: DiskCounters | None = None
        self.multi_pass = "+" in params.pass_name  # write+read
        self.pass_rows: dict[str, PassTotals] = {}
        self.pass_block = TextBlock([""])
        self.target = params.target
        self.fresh_block = TextBlock([""], wrap=True)

    def compose(self) -> ComposeResult:
        yield self.progress
        yield self.bw_row
        yield self.iops_row
        yield self.map_block
        yield self.fresh_block
        yield self.plateau_block
        if self.multi_pass:
            yield self.pass_block

    def add_sample(self, sample: Sample) -> None:
        super().add_sample(sample)
        w = self.interval = WarmupInterval.from_sample(sample)
        row = self.pass_rows.get(w.pass_name)
        if row is None:
            row = self.pass_rows[w.pass_name] = PassTotals(
                w.pass_name, range_bytes=int(w.total_bytes or 0)
            )
        s = sample.interval_s
        row.add(round((w.bw_bps or 0.0) * s), round((w.iops or 0.0) * s), s)
        row.done_bytes = int(w.done_bytes or 0)
        row.plateau = w.plateau_view

    def pass_totals(self) -> list[PassTotals]:
        """A row per pass seen, outcome from its bytes done; the last one is
        ``running`` until the probe stops."""
        ended = self.last_status is not None and self.last_status.level in ("stopped", "error")
        rows = []
        names = list(self.pass_rows)
        for i, name in enumerate(names):
            seen = self.pass_rows[name]
            row = PassTotals(
                name, seen.range_bytes, seen.bytes, seen.ios, seen.seconds, plateau=seen.plateau
            )
            if i == len(names) - 1 and not ended:
                row.done_bytes = seen.done_bytes
            else:
                row.finish(done_bytes=None if row.time_based else seen.done_bytes, ran_to_end=False)
            rows.append(row)
        return rows

    def pass_lines(self) -> list[str]:
        rows = self.pass_totals()
        if not rows:
            return [""]
        total = PassTotals("total")
        for row in rows:
            total.add(row.bytes, row.ios, row.seconds)
        total.outcome = overall_outcome(rows)
        lines = [
            f"{'pass':<6} {'bytes':>8} {'time':>8} {'bandwidth':>10} {'IOPS':>6}  "
            f"{'plateau':<12} outcome"
        ]
        for row in [*rows, total]:
            p = row.plateau
            plateau = (
                f"at {p.reached_at_s:.0f} s"
                if p is not None and p.reached_at_s is not None
                else ("" if row is total else "not reached")
            )
            lines.append(
                f"{row.pass_name:<6} {fmt_with_unit(row.bytes, 'B', 8)} {row.seconds:>6.1f} s "
                f"{fmt_with_unit(row.bw_bytes, 'B/s', 10)} {fmt_value(row.iops, '', 6)}  "
                f"{plateau:<12} {row.outcome}"
            )
        return lines

    def observe(self, sample: Sample) -> None:
        if self.device:
            counters = DiskCounters.all_from_sample(sample).get(self.device)
            if counters is not None:
                self.kernel = counters

    def kernel_text(self) -> str:
        """The kernel's view of the same disk, to read beside the probe's rates."""
        if not self.device or self.kernel is None:
            return ""
        writes = self.interval is not None and self.interval.writes
        iops, bps, _lat = kernel_rates(self.kernel, "write" if writes else "read")
        depth = self.kernel.queue_depth
        queue = f" aqu-sz {fmt_value(depth, '')}" if depth is not None else ""
        return (
            f"  kernel {self.device}: {fmt_with_unit(bps, 'B/s')} {fmt_with_unit(iops, 'IO/s')}"
            f"{queue}"
        )

    def progress_lines(self) -> list[str]:
        w = self.interval
        if w is None:
            return [""]
        done = w.done_bytes or 0.0
        total = w.total_bytes or 0.0
        pct = w.progress_pct
        head = f"{w.pass_name} pass"
        if pct is None:  # time-based pattern: no end
            return [f"{head}: {fmt_with_unit(done, 'B')} written, elapsed "
                    f"{fmt_duration(w.elapsed_s)}"]  # fmt: skip
        return [
            f"{progress_bar(pct / 100.0)} {pct:5.1f} %  "
            f"{fmt_with_unit(done, 'B')} / {fmt_with_unit(total, 'B')}",
            f"{head}  ETA {fmt_duration(w.eta_s)}  elapsed "
            f"{fmt_duration(w.elapsed_s)}" + self.kernel_text(),
        ]

    def plateau_lines(self) -> list[str]:
        plateau = self.interval.plateau_view if self.interval else None
        if plateau is None:
            return [""]
        line = (
            f"plateau {plateau.criterion} over {plateau.window_s or 0:g} s: {plateau.state or '?'}"
        )
        if plateau.reached_at_s is not None:
            line += (
                f"; reached at {plateau.reached_at_s:.0f} s after "
                f"{fmt_with_unit(plateau.reached_at_bytes, 'B')}"
            )
        if plateau.left_at_s is not None:
            line += f"; LEFT at {plateau.left_at_s:.0f} s"
        return [line]

    def render_frame(self) -> None:
        super().render_frame()
        if not self.samples_seen:
            return
        for row, label, unit in self.spark_specs:
            hist = self.history.get(row.key)
            if hist is None:
                continue
            row.label.set_lines([value_label(label, hist.latest, unit)])
            row.spark.set_values(hist.recent(SPARK_POINTS))
        self.progress.set_lines(self.progress_lines())
        self.draw_map()
        self.fresh_block.set_lines(self.fresh_lines())
        self.plateau_block.set_lines(self.plateau_lines())
        if self.multi_pass:
            self.pass_block.set_lines(self.pass_lines())

    def fresh_lines(self) -> list[str]:
        """Said at once when the read so far is mostly never-written blocks
        (a fresh volume, which a read pass cannot warm), or far above what the
        kernel saw the disk under the target read (too good to be true: a
        fresh volume's zeros, or a cache)."""
        w = self.interval
        share = w.never_written_share if w is not None else None
        if w is None or share is None or (w.read_bytes or 0) < FRESH_MIN_BYTES:
            return [""]
        if share <= FRESH_SHARE:
            return self.implausible_lines(w)
        return [
            f"{NEVER_GLYPH} FRESH VOLUME: {100 * share:.0f} % of what was read so far was never "
            "written (holes, all-zero blocks): the volume answers with zeros without "
            "allocating anything, so this rate is too good to be true and a read pass "
            "cannot warm it. Write then read does (destroys every byte; you type the name "
            f"to confirm): probetop warmup {self.target} --write --read. Press W to "
            "switch to it now."
        ]

    def implausible_lines(self, w: WarmupInterval) -> list[str]:
        """The kernel-rate check: the probe read far more than the disk under
        the target did (``WarmupInterval.implausible_read``)."""
        if not w.implausible_read:
            return [""]
        if self.multi_pass:  # write then read: the write just put these blocks in a cache
            return [
                f"TOO GOOD TO BE TRUE: {fmt_with_unit(w.read_bytes, 'B')} read so far, but the "
                f"disk under the target ({w.kernel_device}) read only "
                f"{fmt_with_unit(max(0, w.kernel_bytes or 0), 'B')} (the kernel's view): a cache "
                "answers these reads (the write pass just wrote them), so this rate is the "
                "cache's, not the device's."
            ]
        return [
            f"{NEVER_GLYPH} TOO GOOD TO BE TRUE: {fmt_with_unit(w.read_bytes, 'B')} read so far, "
            f"but the disk under the target ({w.kernel_device}) read only "
            f"{fmt_with_unit(max(0, w.kernel_bytes or 0), 'B')} (the kernel's view): these "
            "reads do not reach the device. A fresh volume answers never-written blocks like "
            "this, and a read pass cannot warm it; write then read does (destroys every byte; "
            f"you type the name to confirm): probetop warmup {self.target} --write --read. "
            "Press W to switch to it. (A cache answers like this too: then this rate is the "
            "cache's, not the device's.)"
        ]

    def action_write_then_read(self) -> None:
        """Only once the pane has called the volume fresh: ask the app to end
        and run write then read (``switch_request``, read by ``tui.main``)."""
        if self.multi_pass or self.fresh_lines() == [""]:
            self.notify("W switches to write then read only after a fresh volume was seen")
            return
        self.app.switch_request = "write+read"  # type: ignore[attr-defined]
        self.app.exit()

    def draw_map(self) -> None:
        w = self.interval
        cells = w.done_map if w else None
        room = self.map_block.line_width - len("done map ") if self.map_block.is_mounted else 0
        line = map_line(cells, max(0, room), w.never_map, w.bad_map) if w and cells else ""
        self.map_block.set_lines([f"done map {line}"] if cells else [""])

    def on_resize(self) -> None:
        super().on_resize()
        self.draw_map()

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        """The primary metrics (bytes/s and IO/s), labelled for people."""
        return {"throughput B/s": self.series(WARMUP_BW), "IO/s": self.series(WARMUP_IOPS)}
