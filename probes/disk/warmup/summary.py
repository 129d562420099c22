"""Warm-up job: the report's figures. What this run adds up to, per pass and
over all passes.

``RunTotals`` keeps one ``passes.PassTotals`` per pass (``start_pass``),
counts each interval into the current one (``add_interval``: this
interval's MB/s, IOPS, bytes done and ETA at the rate of the last 5
intervals; the I/O completed after a stop is its last interval), closes
a pass with its outcome derived from the bytes done (``finish_pass``), keeps
the rows of ``intervals`` and builds ``summary()``: a
``passes.WarmupSummary`` (docs/warmup.md). A pass's ``bytes`` and
``seconds`` cover this run's I/O in it only (from the moment its workers
start to the last completion), so ``bw_bytes = bytes / seconds`` compares
with fio's; the total is the sum of the passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.intervallog import IntervalLog
from probetop.probes.disk.warmup.pass_engine import Step
from probetop.probes.disk.warmup.passes import Outcome, PassTotals, WarmupSummary
from probetop.probes.disk.warmup.records import Plateau
from probetop.probes.disk.warmup.settings import WarmupSettings

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

    passes: list[PassTotals] = field(default_factory=list)
    seconds: float = 0.0
    bad_sectors: int = 0
    first_bad_offset: int | None = None
    error: str | None = None
    # The newest rows only: a warm-up of a large disk runs for hours (issue 29).
    intervals: IntervalLog[dict[str, Any]] = field(default_factory=IntervalLog)
    _recent: list[tuple[float, int]] = field(default_factory=list)

    @property
    def current(self) -> PassTotals | None:
        return self.passes[-1] if self.passes else None

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.passes)

    @property
    def complete(self) -> bool:
        return bool(self.passes) and all(p.completed for p in self.passes)

    def start_pass(self, pass_name: str, range_bytes: int) -> PassTotals:
        self._recent = []
        row = PassTotals(pass_name, range_bytes=range_bytes)
        self.passes.append(row)
        return row

    def skip_pass(self, pass_name: str, range_bytes: int, outcome: Outcome, reason: str) -> None:
        """A pass this run did not run: done in an earlier run, or never reached."""
        row = PassTotals(pass_name, range_bytes=range_bytes, outcome=outcome, reason=reason)
        if outcome == "completed":
            row.done_bytes = range_bytes
        self.passes.append(row)

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
        this pass did in this run, and there is no ETA)."""
        row = self.current
        assert row is not None and row.pass_name == pass_name, "start_pass first"
        delta = step.delta
        row.add(delta.bytes, delta.ios, step.seconds)
        if step.seconds <= 0:
            return None
        self.seconds = elapsed_s
        self.bad_sectors = step.bad_sectors
        bw = delta.bytes / step.seconds
        iops = delta.ios / step.seconds
        self._recent.append((step.seconds, delta.bytes))
        del self._recent[:-ETA_INTERVALS]
        done = checkpoint_done if checkpoint_done is not None else row.bytes
        rate = sum(b for _, b in self._recent) / max(1e-9, sum(s for s, _ in self._recent))
        eta = (total - done) / rate if checkpoint_done is not None and rate > 0 else None
        self.intervals.append(
            {
                "t_s": round(self.seconds, 3),
                "pass": pass_name,
                "seconds": round(step.seconds, 6),
                "bytes": delta.bytes,  # exact: a pass's rows add up to its bytes
                "total_ios": delta.ios,
                "bw_bytes": round(bw),
                "iops": round(iops, 1),
                "done_bytes": done,
                "errors": delta.errors,
            }
        )
        return IntervalFigures(bw, iops, done, eta)

    def note_bad_offset(self, offset: int | None) -> None:
        if offset is not None and (self.first_bad_offset is None or offset < self.first_bad_offset):
            self.first_bad_offset = offset

    def finish_pass(
        self,
        *,
        done_bytes: int | None,
        ran_to_end: bool,
        plateau: Mapping[str, Any],
        error: str | None = None,
    ) -> PassTotals:
        """Close the current pass: its outcome from the bytes done (see
        ``PassTotals.finish``) and its plateau."""
        row = self.current
        assert row is not None, "start_pass first"
        row.plateau = Plateau.from_dict(plateau)
        row.finish(done_bytes=done_bytes, ran_to_end=ran_to_end, error=error)
        return row

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
    ) -> WarmupSummary:
        return WarmupSummary(
            target=settings.target,
            pass_name=settings.pass_name,
            passes=list(self.passes),
            done_bytes=done_bytes,
            total_bytes=total_bytes,
            resumed_from=resumed_from,
            plateau=Plateau.from_dict(plateau),
            checkpoint=checkpoint,
            notes=list(notes),
            intervals=self.intervals.rows(),
            intervals_dropped=self.intervals.dropped,
            fio_command=fio_command,
            verify=(self.bad_sectors, self.first_bad_offset) if settings.verify else None,
            error=self.error,
        )
