"""The warm-up's per-pass figures and its summary, typed.

Contract:
- ``PassTotals``: one pass of one run: bytes, I/Os and I/O seconds *this
  run* did in it (``add``), the bytes of its range done (including earlier,
  resumed runs) and the pass's plateau, and an ``outcome`` that ``finish``
  derives from the bytes actually done, never from how the run ended:
  - a sequential pass is ``completed`` only when its whole range is done
    (``done_bytes >= range_bytes``), else ``stopped`` (with how far it got);
  - the time-based randwrite pattern is ``completed`` only when it ran its
    ``--time`` *and* wrote something; zero bytes written is ``failed``
    ("no I/O completed"), an earlier end ``stopped``;
  - an error that ended the pass makes it ``failed`` with that reason;
  - ``running`` until ``finish``; ``not started`` for a pass the run never
    reached.
- ``Findings``: what the passes found (never-written bytes, bad ranges) and
  the verdict, "warmed" or "not warmed" with its reason;
- ``WarmupSummary``: the warm-up's ``summary()``/``--json`` document,
  typed: the per-pass rows, ``total`` (their sum), and the run's facts.
  ``as_dict`` writes it (docs/warmup.md; old top-level keys kept),
  ``from_dict`` reads one back tolerantly (old footers have no per-pass
  figures: their rows read as zeros, outcome from ``complete``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from probetop.probes.disk.warmup.records import Plateau

Outcome = Literal["completed", "stopped", "failed", "running", "not started"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "stopped", "failed", "running", "not started")
TIME_BASED = "randwrite"


@dataclass
class PassTotals:
    """See the module docstring. ``range_bytes``: the bytes the pass covers
    (for randwrite: the range it writes in, never "done")."""

    pass_name: str
    range_bytes: int = 0
    bytes: int = 0
    ios: int = 0
    seconds: float = 0.0
    done_bytes: int = 0
    outcome: Outcome = "running"
    reason: str | None = None
    plateau: Plateau | None = None

    @property
    def time_based(self) -> bool:
        return self.pass_name == TIME_BASED

    @property
    def bw_bytes(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def iops(self) -> float:
        return self.ios / self.seconds if self.seconds > 0 else 0.0

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"

    def add(self, n_bytes: int, ios: int, seconds: float) -> None:
        self.bytes += n_bytes
        self.ios += ios
        self.seconds += seconds

    def finish(self, *, done_bytes: int | None, ran_to_end: bool, error: str | None = None) -> None:
        """Set ``outcome`` from what was done. ``done_bytes``: the range's bytes
        done (the checkpoint's count; None for randwrite, then this run's
        bytes count); ``ran_to_end``: the randwrite pattern reached its --time."""
        self.done_bytes = self.bytes if done_bytes is None else done_bytes
        if error:
            self.outcome, self.reason = "failed", error
        elif self.time_based:
            if self.bytes <= 0:
                self.outcome, self.reason = "failed", "no I/O completed"
            elif ran_to_end:
                self.outcome, self.reason = "completed", None
            else:
                self.outcome, self.reason = "stopped", "stopped before --time"
        elif self.range_bytes > 0 and self.done_bytes >= self.range_bytes:
            self.outcome, self.reason = "completed", None
        else:
            self.outcome = "stopped"
            self.reason = f"{self.done_bytes:,} of {self.range_bytes:,} bytes done"

    def as_dict(self) -> dict[str, Any]:
        p = self.plateau
        return {
            "pass": self.pass_name,
            "outcome": self.outcome,
            "reason": self.reason,
            "complete": self.completed,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 6),
            "bw_bytes": round(self.bw_bytes),
            "iops": self.iops,
            "total_ios": self.ios,
            "done_bytes": self.done_bytes,
            "range_bytes": self.range_bytes,
            "plateau": _plateau_dict(p) if p is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PassTotals:
        outcome = _outcome(d.get("outcome"), bool(d.get("complete")))
        plateau = d.get("plateau")
        return cls(
            pass_name=_str(d.get("pass")) or "?",
            range_bytes=_int(d.get("range_bytes")),
            bytes=_int(d.get("bytes")),
            ios=_int(d.get("total_ios")),
            seconds=_float(d.get("seconds")),
            done_bytes=_int(d.get("done_bytes")),
            outcome=outcome,
            reason=_str(d.get("reason")),
            plateau=Plateau.from_dict(plateau) if isinstance(plateau, Mapping) else None,
        )


Verdict = Literal["warmed", "not warmed"]
# What the run saw: "fresh" (more than half never written), "restored" (data
# nearly everywhere: a snapshot's volume), "mixed", "written" (a write pass
# covered the range), "interrupted" (a pass stopped before its end: Ctrl-C,
# a signal, --time), "unknown" (no pass looked at the whole range otherwise).
Case = Literal["fresh", "restored", "mixed", "written", "interrupted", "unknown"]
CASES: tuple[Case, ...] = ("fresh", "restored", "mixed", "written", "interrupted", "unknown")


@dataclass
class Findings:
    """What the run's passes found on the volume, and the verdict (see
    ``warmup.verdict.judge`` for the rules). ``never_written_bytes``: bytes
    of the range never written as far as can be told: the holes of the file
    under the target where the filesystem says (``never_written_source``
    "holes"), else the blocks a read pass got back all zero ("zeros"), or
    the bytes a stopped write pass did not reach ("not written")."""

    verdict: Verdict
    reason: str
    case: Case
    never_written_bytes: int
    range_bytes: int
    never_written_source: str
    zero_bytes: int = 0
    hole_bytes: int | None = None
    bad_ranges: list[tuple[int, int]] = field(default_factory=list)
    fix_command: str | None = None
    resume_command: str | None = None

    @property
    def never_written_fraction(self) -> float:
        return self.never_written_bytes / self.range_bytes if self.range_bytes else 0.0

    @property
    def bad_bytes(self) -> int:
        return sum(b - a for a, b in self.bad_ranges)

    def as_dict(self) -> dict[str, Any]:
        """The summary's top-level keys for the findings (docs/warmup.md)."""
        return {
            "verdict": self.verdict,
            "verdict_reason": self.reason,
            "case": self.case,
            "never_written_bytes": self.never_written_bytes,
            "never_written_fraction": round(self.never_written_fraction, 6),
            "never_written_source": self.never_written_source,
            "zero_bytes": self.zero_bytes,
            "hole_bytes": self.hole_bytes,
            "bad_ranges": [[a, b] for a, b in self.bad_ranges],
            "bad_bytes": self.bad_bytes,
            "fix_command": self.fix_command,
            "resume_command": self.resume_command,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Findings | None:
        verdict = d.get("verdict")
        if verdict not in ("warmed", "not warmed"):
            return None  # a summary written before findings existed
        case = d.get("case")
        bad = d.get("bad_ranges")
        hole = d.get("hole_bytes")
        return cls(
            verdict="warmed" if verdict == "warmed" else "not warmed",
            reason=_str(d.get("verdict_reason")) or "",
            case=next((c for c in CASES if c == case), "unknown"),
            never_written_bytes=_int(d.get("never_written_bytes")),
            range_bytes=_int(d.get("total_bytes")),
            never_written_source=_str(d.get("never_written_source")) or "",
            zero_bytes=_int(d.get("zero_bytes")),
            hole_bytes=_int(hole) if isinstance(hole, int) else None,
            bad_ranges=[
                (_int(r[0]), _int(r[1]))
                for r in (bad if isinstance(bad, list) else [])
                if isinstance(r, list) and len(r) == 2
            ],
            fix_command=_str(d.get("fix_command")),
            resume_command=_str(d.get("resume_command")),
        )


def overall_outcome(passes: list[PassTotals]) -> Outcome:
    """The run's outcome: failed if a pass failed, completed if every pass
    completed, else stopped (running while one still runs)."""
    if any(p.outcome == "failed" for p in passes):
        return "failed"
    if passes and all(p.completed for p in passes):
        return "completed"
    if any(p.outcome == "running" for p in passes):
        return "running"
    return "stopped"


@dataclass
class WarmupSummary:
    """The warm-up's summary document, typed (see the module docstring)."""

    target: str
    pass_name: str
    passes: list[PassTotals]
    done_bytes: int = 0
    total_bytes: int = 0
    resumed_from: int | None = None
    plateau: Plateau | None = None
    checkpoint: str | None = None
    notes: list[str] = field(default_factory=list)
    intervals: list[dict[str, Any]] = field(default_factory=list)
    intervals_dropped: int = 0  # older rows not kept (a run keeps the newest)
    fio_command: str = ""
    verify: tuple[int, int | None] | None = None  # (bad sectors, first bad offset)
    error: str | None = None
    findings: Findings | None = None  # None for summaries written before it existed

    @property
    def total(self) -> PassTotals:
        """Every pass added up (plateau: none; outcome: ``overall_outcome``)."""
        t = PassTotals("total", range_bytes=self.total_bytes)
        for p in self.passes:
            t.add(p.bytes, p.ios, p.seconds)
        t.done_bytes = self.done_bytes
        t.outcome = overall_outcome(self.passes)
        return t

    @property
    def complete(self) -> bool:
        return self.total.completed

    @property
    def time_based(self) -> bool:
        return self.pass_name == TIME_BASED

    def as_dict(self) -> dict[str, Any]:
        t = self.total
        p = self.plateau
        out: dict[str, Any] = {
            "target": self.target,
            "pass": self.pass_name,
            "outcome": t.outcome,
            "bytes": t.bytes,
            "done_bytes": self.done_bytes,
            "total_bytes": self.total_bytes,
            "seconds": round(t.seconds, 6),
            "bw_bytes": round(t.bw_bytes),
            "iops": t.iops,
            "total_ios": t.ios,
            "complete": t.completed,
            "resumed_from": self.resumed_from,
            "plateau": _plateau_dict(p if p is not None else Plateau.from_dict({})),
            "checkpoint": self.checkpoint,
            "passes": [row.as_dict() for row in self.passes],
            "notes": list(self.notes),
            "intervals": self.intervals,
            "fio_command": self.fio_command,
        }
        if self.intervals_dropped:
            out["intervals_dropped"] = self.intervals_dropped
        if self.verify is not None:
            bad, first = self.verify
            out["verify"] = {
                "bad_sectors": bad,
                "first_bad_offset": first,
                "ok": bad == 0 and t.completed,
            }
        if self.findings is not None:
            out.update(self.findings.as_dict())
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WarmupSummary:
        rows = d.get("passes")
        passes = (
            [PassTotals.from_dict(r) for r in rows if isinstance(r, Mapping)]
            if isinstance(rows, list)
            else []
        )
        old = isinstance(rows, list) and not any(
            isinstance(r, Mapping) and "bytes" in r for r in rows
        )  # probetop 0.1: pass rows without figures; one pass had the run's
        if old and len(passes) == 1:
            passes = []
        plateau = d.get("plateau")
        if not passes:  # an old footer or a run that never started a pass
            name = _str(d.get("pass")) or "?"
            row = PassTotals(
                name,
                range_bytes=_int(d.get("total_bytes")),
                bytes=_int(d.get("bytes")),
                ios=_int(d.get("total_ios")),
                seconds=_float(d.get("seconds")),
                done_bytes=_int(d.get("done_bytes")),
                outcome="completed" if d.get("complete") else "stopped",
                plateau=Plateau.from_dict(plateau) if isinstance(plateau, Mapping) else None,
            )
            passes = [row]
        verify = d.get("verify")
        notes = d.get("notes")
        intervals = d.get("intervals")
        return cls(
            target=_str(d.get("target")) or "",
            pass_name=_str(d.get("pass")) or "",
            passes=passes,
            done_bytes=_int(d.get("done_bytes")),
            total_bytes=_int(d.get("total_bytes")),
            resumed_from=d["resumed_from"] if isinstance(d.get("resumed_from"), int) else None,
            plateau=Plateau.from_dict(plateau) if isinstance(plateau, Mapping) else None,
            checkpoint=_str(d.get("checkpoint")),
            notes=[str(n) for n in notes] if isinstance(notes, list) else [],
            intervals=list(intervals) if isinstance(intervals, list) else [],
            intervals_dropped=_int(d.get("intervals_dropped")),
            fio_command=_str(d.get("fio_command")) or "",
            verify=(
                (_int(verify.get("bad_sectors")), verify.get("first_bad_offset"))
                if isinstance(verify, Mapping)
                else None
            ),
            error=_str(d.get("error")),
            findings=Findings.from_dict(d),
        )


def _plateau_dict(p: Plateau) -> dict[str, Any]:
    """The plateau as the summary has always written it."""
    return {
        "criterion": p.criterion,
        "reached_at_s": p.reached_at_s,
        "reached_at_bytes": p.reached_at_bytes,
        "left_at_s": p.left_at_s,
    }


def _outcome(v: Any, complete: bool) -> Outcome:
    for o in OUTCOMES:
        if v == o:
            return o
    return "completed" if complete else "stopped"


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _float(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None
