"""Disk warm-up metrics per target and pass: bytes, I/Os, errors, rate,
progress, ETA, the plateau detector's verdict, and what the probe runs.

Contract: ``WarmupTracker`` reads samples only through
``WarmupInterval`` and params through ``WarmupParams``; gauges a
sample leaves unset are absent, not zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.core.metricdefs import Point, metric_def
from probetop.probes.core.sample import Sample
from probetop.probes.core.tracker import (
    Tracker,
    by_metric,
    events_in,
)
from probetop.probes.disk.warmup.records import WARMUP_KIND, WarmupInterval, WarmupParams

_WARMUP_LABELS = ("probe", "target", "pass")

WARMUP_BYTES = metric_def(
    "probetop_warmup_bytes", "counter", "bytes", "bytes transferred", _WARMUP_LABELS
)
WARMUP_IOS = metric_def("probetop_warmup_ios", "counter", "", "I/Os completed", _WARMUP_LABELS)
WARMUP_ERRORS = metric_def("probetop_warmup_errors", "counter", "", "failed I/Os", _WARMUP_LABELS)
WARMUP_BW = metric_def(
    "probetop_warmup_bytes_per_second",
    "gauge",
    "",
    "bytes per second over the latest interval",
    _WARMUP_LABELS,
)
WARMUP_PROGRESS = metric_def(
    "probetop_warmup_progress_ratio",
    "gauge",
    "ratio",
    "share of the range done in this pass (absent for the time-based randwrite pass)",
    _WARMUP_LABELS,
)
WARMUP_DONE = metric_def(
    "probetop_warmup_done_bytes", "gauge", "bytes", "bytes of the range done", _WARMUP_LABELS
)
WARMUP_RANGE = metric_def(
    "probetop_warmup_range_bytes", "gauge", "bytes", "bytes in the range", _WARMUP_LABELS
)
WARMUP_ETA = metric_def(
    "probetop_warmup_eta_seconds",
    "gauge",
    "seconds",
    "time left at the rate of the last 5 intervals",
    _WARMUP_LABELS,
)
WARMUP_STEADY = metric_def(
    "probetop_warmup_steady",
    "gauge",
    "",
    "1 while the plateau detector finds the pass steady (fio's steadystate), else 0",
    _WARMUP_LABELS,
)
WARMUP_INFO = metric_def(
    "probetop_warmup",
    "info",
    "",
    "what the warm-up probe runs",
    ("probe", "target", "bs", "iodepth", "jobs", "steadystate"),
)


class _Pass:
    def __init__(self) -> None:
        self.bytes = 0
        self.ios = 0
        self.errors = 0
        self.gauges: dict[str, float] = {}


class WarmupTracker(Tracker):
    KIND = WARMUP_KIND
    COMMAND = "warmup"
    DEFS = (
        WARMUP_BYTES,
        WARMUP_IOS,
        WARMUP_ERRORS,
        WARMUP_BW,
        WARMUP_PROGRESS,
        WARMUP_DONE,
        WARMUP_RANGE,
        WARMUP_ETA,
        WARMUP_STEADY,
        WARMUP_INFO,
    )

    def __init__(self, probe_id: str, info: Mapping[str, Any]) -> None:
        self.passes: dict[str, _Pass] = {}
        self.params: WarmupParams | None = None
        super().__init__(probe_id, info)

    def announce(self, info: Mapping[str, Any]) -> None:
        self.params = WarmupParams.from_info(info)

    def observe(self, sample: Sample) -> None:
        iv = WarmupInterval.from_sample(sample)
        name = iv.pass_name or (self.params.pass_name if self.params else "")
        state = self.passes.setdefault(name, _Pass())
        seconds = sample.interval_s
        state.bytes += events_in(iv.bw_bps, seconds)
        state.ios += events_in(iv.iops, seconds)
        state.errors += max(0, round(iv.errors or 0))
        gauges: dict[str, float | None] = {
            WARMUP_BW.name: iv.bw_bps,
            WARMUP_PROGRESS.name: iv.progress_pct / 100.0 if iv.progress_pct is not None else None,
            WARMUP_DONE.name: iv.done_bytes,
            WARMUP_RANGE.name: iv.total_bytes,
            WARMUP_ETA.name: iv.eta_s,
            WARMUP_STEADY.name: 1.0 if iv.plateau_state == "steady" else 0.0,
        }
        state.gauges = {k: v for k, v in gauges.items() if v is not None}

    def points(self) -> list[Point]:
        target = self.params.target if self.params else ""
        out: list[Point] = []
        for name, state in self.passes.items():
            labels = (self.probe_id, target, name)
            out.append(Point(WARMUP_BYTES, labels, float(state.bytes)))
            out.append(Point(WARMUP_IOS, labels, float(state.ios)))
            out.append(Point(WARMUP_ERRORS, labels, float(state.errors)))
            for metric in self.DEFS:
                if metric.name in state.gauges:
                    out.append(Point(metric, labels, state.gauges[metric.name]))
        if self.params is not None:
            p = self.params
            out.append(
                Point(
                    WARMUP_INFO,
                    (self.probe_id, target),
                    {
                        "bs": str(p.bs),
                        "iodepth": str(p.iodepth),
                        "jobs": str(p.jobs),
                        "steadystate": p.steadystate,
                    },
                )
            )
        return by_metric(out, self.DEFS)


WARMUP_TRACKER = WarmupTracker
