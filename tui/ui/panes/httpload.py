"""Pane for the ``http.load`` probe (``probetop http URL --rate R``).

Top: sparklines of the achieved rate (requests sent per second, against the
target) and of the corrected p99 of successful responses. Then a table:
the rate line (target, sent, done, in flight, backlog, waits for a
connection), latency percentiles p50..p99.9 and max for this interval and
for the run so far, corrected (from the scheduled send time) beside service
(from the actual send), per status class; the counts per class; the phases
of the successful responses; the generator's own lag, loop busy share and
CPU. A loud line when the generator limits the run (its limit is not the
server's) and when errors pass 1 % (percentiles are over successes only).

Samples are read through the family's typed record (``LoadInterval``) and
the announcement through ``LoadParams``, never by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from probetop.probes.core.sample import Sample
from probetop.probes.http import (
    LOAD_METRICS,
    PCT_KEYS,
    ClassLatency,
    LoadInterval,
    LoadParams,
)
from probetop.tui.ui.widgets.generic_pane import SparkRow
from probetop.tui.ui.widgets.history import fmt_value
from probetop.tui.ui.widgets.pane import ProbePane
from probetop.tui.ui.widgets.textblock import TextBlock
from textual.app import ComposeResult

SENT_RPS = "sent_rps"
LAT_P99 = "lat_p99_ms"
SVC_P99 = "svc_p99_ms"
assert {m.name for m in LOAD_METRICS} >= {SENT_RPS, LAT_P99, SVC_P99}


class HttpLoadPane(ProbePane):
    """See the module docstring."""

    DEFAULT_CSS = """
    HttpLoadPane TextBlock.-loud > .textblock--body {
        color: $warning;
        text-style: bold;
    }
    """

    def __init__(self, info: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(info, **kw)
        self.params = LoadParams.from_mapping(info.get("params"))
        self.latest: LoadInterval | None = None
        self.limited_intervals = 0
        self.intervals = 0
        self.rate_row = SparkRow(SENT_RPS, "sent/s")
        self.p99_row = SparkRow(LAT_P99, "corrected p99 ms")
        self.table = TextBlock(["waiting for the first interval..."], header_rows=0)
        self.loud = TextBlock([""], wrap=True)
        self.loud.add_class("-loud")
        self.loud.display = False

    def compose(self) -> ComposeResult:
        yield self.rate_row
        yield self.p99_row
        yield self.table
        yield self.loud

    # -- storing ------------------------------------------------------------
    def add_sample(self, sample: Sample) -> None:
        interval = LoadInterval.from_sample(sample)
        self.history.add_values(
            sample.t_ns / 1e9,
            {
                SENT_RPS: interval.sent_rps,
                LAT_P99: interval.success().corrected_ms.get("p99"),
                SVC_P99: interval.success().service_ms.get("p99"),
            },
        )
        self.last_sample = sample
        self.samples_seen += 1
        if interval.final and interval.seconds < 0.05:
            # the empty tail after the last report: keep its end counts only
            if self.latest is not None:
                interval = _with_end(self.latest, interval)
        else:
            self.intervals += 1
            self.limited_intervals += interval.generator_limited
        self.latest = interval

    # -- drawing ------------------------------------------------------------
    def table_lines(self) -> list[str]:
        now = self.latest
        if now is None:
            return ["waiting for the first interval..."]
        target = self.params.rate or now.target_rps
        sent = now.sent_rps
        share = f" ({100.0 * sent / target:.1f} %)" if sent is not None and target else ""
        aim = f"target {target:g} req/s" if target else "closed loop"
        lines = [
            f"{aim}   sent {fmt_value(sent, 'req/s')}/s{share}   "
            f"done {fmt_value(now.done_rps, 'req/s')}/s   in flight {now.in_flight_max} "
            f"of {self.params.connections}   backlog {now.backlog}   waited {now.waited}",
            f"{'latency, ms':<24}" + "".join(f"{k:>9}" for k in PCT_KEYS) + f"{'n':>8}",
        ]
        ok = now.success()
        lines.append(_latency_row("now corrected 2xx/3xx", ok, "corrected"))
        lines.append(_latency_row("now service   2xx/3xx", ok, "service"))
        for name, run in now.run_rows():
            lines.append(_latency_row(f"run corrected {name}", run, "corrected"))
            lines.append(_latency_row(f"run service   {name}", run, "service"))
        counts = "  ".join(f"{name} {n}" for name, n in now.run_counts())
        share = now.run_error_share()
        err = "" if share is None else f"   errors {100.0 * share:.2f} %"
        lines.append(f"run status: {counts}{err}")
        if now.phases_ms:
            phases = "  ".join(
                f"{p} {fmt_value(t.get('p50'), 'ms')}" for p, t in now.phases_ms.items()
            )
            lines.append(f"phases p50, ms: {phases}")
        lines.append(
            f"generator: lag p99 {fmt_value(now.gen_lag_p99_ms, 'ms')} ms   busy "
            f"{fmt_value(now.gen_busy_pct, '%')} %   CPU {fmt_value(now.gen_cpu_pct, '%')} %   "
            f"waiting for a CPU {fmt_value(now.gen_wait_pct, '%')} %   "
            f"limited {self.limited_intervals} of {self.intervals} intervals"
        )
        if now.final and (now.unfinished or now.unsent):
            lines.append(f"at the end: {now.unfinished} in flight, {now.unsent} never sent")
        return lines

    def loud_lines(self) -> list[str]:
        now = self.latest
        if now is None:
            return []
        out = []
        reason = now.generator_reason()
        if reason:
            out.append(
                f"!! GENERATOR-LIMITED: {reason}; the rate and the corrected tail are then "
                "probetop's (or this machine's) limit, not the server's"
            )
        share = now.run_error_share()
        if now.error_marker and share is not None:
            out.append(
                f"!! ERRORS {100.0 * share:.1f} % of requests: latencies are over 2xx/3xx only"
            )
        return out

    def render_frame(self) -> None:
        super().render_frame()
        target = self.params.rate
        for row, key, title in (
            (self.rate_row, SENT_RPS, f"sent/s of {target:g}" if target else "sent/s"),
            (self.p99_row, LAT_P99, "corrected p99 ms"),
        ):
            hist = self.history.get(key)
            if hist is None:
                continue
            row.set(
                f"{title:<18} {fmt_value(hist.latest, '', 8)}",
                hist.recent(max(row.spark.size.width, 1)),
            )
        if self.samples_seen:
            self.table.set_lines(self.table_lines(), header_rows=0)
            loud = self.loud_lines()
            self.loud.display = bool(loud)
            if loud:
                self.loud.set_lines(loud)

    def headline_text(self) -> str:
        now = self.latest
        if now is None:
            return self.waiting_text()
        p99 = now.success().corrected_ms.get("p99")
        mark = "  GENERATOR-LIMITED" if now.generator_limited else ""
        target = f"/{self.params.rate:g}" if self.params.rate else " (closed loop)"
        return (
            f"{fmt_value(now.sent_rps, 'req/s')}{target} req/s  p99 {fmt_value(p99, 'ms')} ms{mark}"
        )

    def chart_series(self) -> dict[str, list[tuple[float, float]]]:
        return {
            "sent req/s": self.series(SENT_RPS),
            "corrected p99 ms": self.series(LAT_P99),
            "service p99 ms": self.series(SVC_P99),
        }


def _latency_row(name: str, latency: ClassLatency, which: str) -> str:
    table = latency.corrected_ms if which == "corrected" else latency.service_ms
    cells = "".join(fmt_value(table.get(k), "ms", 9) for k in PCT_KEYS)
    return f"{name:<24}{cells}{latency.count:>8}"


def _with_end(last: LoadInterval, tail: LoadInterval) -> LoadInterval:
    """The last full interval with the end-of-run counts of the empty tail."""
    return replace(
        last, final=True, unfinished=tail.unfinished, unsent=tail.unsent, run=tail.run or last.run
    )
