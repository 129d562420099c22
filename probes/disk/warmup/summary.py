"""Warm-up job: the report's figures. What this run adds up to, over all passes.

``RunTotals`` counts each interval (``add_interval``: this interval's MB/s,
IOPS, bytes done and ETA at the rate of the last 5 intervals) and the I/O
completed after the last one (``add_tail``), keeps the rows of ``intervals``
and ``passes``, and builds ``summary()``: the warm-up's JSON document
(docs/warmup.md). ``bytes`` and ``io_seconds`` cover this run's I/O only
(from the moment the workers start to the last completion), so
``bw_bytes = bytes / seconds`` compares with fio's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.disk.settings import WarmupSettings
from probetop.probes.disk.warmup.pass_engine import Step

ETA_INTERVALS = 5


@dataclass(frozen=True, slots=True)
class IntervalFigures:
    bw_bytes: float
    iops: float
    done: int
    eta_s: float | None


@dataclass
class RunTotals:
    """See the module docstring. ``seconds`` is the wall time of the run at
    the last interval; ``error`` the message that stopped it."""

    bytes: int = 0
    ios: int = 0
    io_seconds: float = 0.0
    seconds: float = 0.0
    bad_sectors: int = 0
    first_bad_offset: int | None = None
    complete: bool = False
    error: str | None = None
    intervals: list[dict[str, Any]] = field(default_factory=list)
    passes: list[dict[str, Any]] = field(default_factory=list)
    _recent: list[tuple[float, int]] = field(default_factory=list)

    def start_pass(self) -> None:
        self._recent = []

    def add_interval(
        self,
        pass_name: str,
        step: Step,
        *,
        elapsed_s: float,
        total: int,
        checkpoint_done: int | None,
    ) -> IntervalFigures | None:
        """Count one interval; None if it has no length. ``checkpoint_done``:
        the bytes the checkpoint holds (None without one: then done is what
        this run did, and there is no ETA)."""
        self.io_seconds += step.seconds
        if step.seconds <= 0:
            return None
        delta = step.delta
        self.bytes += delta.bytes
        self.ios += delta.ios
        self.seconds = elapsed_s
        self.bad_sectors = step.bad_sectors
        bw = delta.bytes / step.seconds
        iops = delta.ios / step.seconds
        self._recent.append((step.seconds, delta.bytes))
        del self._recent[:-ETA_INTERVALS]
        done = checkpoint_done if checkpoint_done is not None else self.bytes
        rate = sum(b for _, b in self._recent) / max(1e-9, sum(s for s, _ in self._recent))
        eta = (total - done) / rate if checkpoint_done is not None and rate > 0 else None
        self.intervals.append(
            {
                "t_s": round(self.seconds, 3),
                "pass": pass_name,
                "bw_bytes": round(bw),
                "iops": round(iops, 1),
                "done_bytes": done,
                "errors": delta.errors,
            }
        )
        return IntervalFigures(bw, iops, done, eta)

    def add_tail(self, step: Step) -> None:
        """I/O completed after the last interval (stop, Ctrl-C) counts too."""
        if step.delta.ios or step.delta.bytes:
            self.bytes += step.delta.bytes
            self.ios += step.delta.ios
            self.io_seconds += step.seconds

    def note_bad_offset(self, offset: int | None) -> None:
        if offset is not None and (self.first_bad_offset is None or offset < self.first_bad_offset):
            self.first_bad_offset = offset

    def finish_pass(
        self, pass_name: str, complete: bool, done_bytes: int, plateau: Mapping[str, Any]
    ) -> None:
        self.passes.append(
            {
                "pass": pass_name,
                "complete": complete,
                "done_bytes": done_bytes,
                "plateau": dict(plateau),
            }
        )

    def summary(
        self,
        settings: WarmupSettings,
        *,
        done_bytes: int,
        total_bytes: int,
        resumed_from: int | None,
        plateau: Mapping[str, Any],
        checkpoint: str | None,
        notes: list[str],
        fio_command: str,
    ) -> dict[str, Any]:
        seconds = self.io_seconds
        out: dict[str, Any] = {
            "target": settings.target,
            "pass": settings.pass_name,
            "bytes": self.bytes,
            "done_bytes": done_bytes,
            "total_bytes": total_bytes,
            "seconds": round(seconds, 6),
            "bw_bytes": round(self.bytes / seconds) if seconds > 0 else 0,
            "iops": self.ios / seconds if seconds > 0 else 0.0,
            "total_ios": self.ios,
            "complete": self.complete,
            "resumed_from": resumed_from,
            "plateau": dict(plateau),
            "checkpoint": checkpoint,
            "passes": self.passes,
            "notes": notes,
            "intervals": self.intervals,
            "fio_command": fio_command,
        }
        if settings.verify:
            out["verify"] = {
                "bad_sectors": self.bad_sectors,
                "first_bad_offset": self.first_bad_offset,
                "ok": self.bad_sectors == 0 and self.complete,
            }
        if self.error:
            out["error"] = self.error
        return out
