"""The warm-up's headless report: text, or one JSON document.

Contract:
- ``warmup_document``: the probe's ``summary()`` (the fields in
  docs/warmup.md) plus ``error`` when the run failed.
- ``format_warmup_report`` turns the same document into the text report (no
  trailing newline): headline, a row per pass, the verdict, notes, the
  checkpoint, the same passes as fio commands and, after an interrupted
  sequential pass, the command that resumes it.
- ``warmup_exit_code``: 2 when the probe or a pass failed, 1 when
  ``--verify`` found bad sectors or I/Os failed (bad ranges),
  ``NOT_WARMED_EXIT`` (3) when a whole read pass left the volume "not warmed"
  (never-written blocks a read cannot allocate), or a read pass stopped by
  ``--time`` already found it fresh; 128 + the signal's number
  when a signal interrupted the run (130 for SIGINT, 143 for SIGTERM; the
  partial report is printed first); else 0.
- Every figure with a unit is written by ``units`` (fio's choice of unit and
  rounding).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from probetop.probes.disk import units
from probetop.probes.disk.warmup.passes import Findings, PassTotals, WarmupSummary

NOT_WARMED_EXIT = 3  # a read pass ran to its end and the volume is not warmed


def warmup_document(summary: Mapping[str, Any], error: str | None) -> dict[str, Any]:
    """The warm-up's JSON document: the summary, and ``error`` if it failed
    (the probe's own message, naming the checkpoint, wins)."""
    doc = dict(summary)
    if error and not doc.get("error"):
        doc["error"] = error
    return doc


def _pass_row(row: PassTotals) -> str:
    plateau = row.plateau
    if row.pass_name == "total":
        reached = ""
    elif plateau is not None and plateau.reached_at_s is not None:
        reached = f"at {plateau.reached_at_s:.0f} s" + (
            f", left {plateau.left_at_s:.0f} s" if plateau.left_at_s is not None else ""
        )
    else:
        reached = "not reached" if row.outcome != "not started" else "-"
    seconds = units.per_second  # fio's integer rates over a ms runtime
    outcome = row.outcome + (f": {row.reason}" if row.reason else "")
    return (
        f"  {row.pass_name:<10} {row.bytes:>17,} {row.seconds:>8.3f} s "
        f"{units.bandwidth(seconds(row.bytes, row.seconds)):>22} "
        f"{units.count(seconds(row.ios, row.seconds)):>6} {reached:<20} {outcome}"
    )


def format_warmup_report(doc: Mapping[str, Any], *, reason: str) -> str:
    """Text: the outcome, progress, a row per pass and the total (bytes, time,
    bandwidth and IOPS in fio's units, plateau, outcome), verify, checkpoint,
    fio's command. The headline never says "completed" for a run whose passes
    did not complete: a run that ended by itself shows its passes' outcome."""
    s = WarmupSummary.from_dict(doc)
    total = s.total
    said = total.outcome if reason == "completed" else reason
    lines = [f"probetop warmup {s.target}: {s.pass_name} pass, {said}"]
    if s.time_based:
        lines.append(
            f"  written: {total.bytes:,} bytes at random over {s.total_bytes:,} "
            f"(time-based), complete: {'yes' if total.completed else 'no'}"
        )
    else:
        pct = 100.0 * s.done_bytes / s.total_bytes if s.total_bytes else 0.0
        lines.append(
            f"  done: {s.done_bytes:,} of {s.total_bytes:,} bytes ({pct:.1f} %), "
            f"complete: {'yes' if total.completed else 'no'}"
        )
    lines.append(
        f"  {'pass':<10} {'bytes':>17} {'time':>10} {'bandwidth':>22} {'IOPS':>6} "
        f"{'plateau':<20} outcome"
    )
    lines += [_pass_row(row) for row in s.passes]
    if len(s.passes) > 1:
        lines.append(_pass_row(total))
    if s.resumed_from is not None:
        lines.append(f"  resumed from {s.resumed_from:,} bytes done")
    criterion = s.plateau.criterion if s.plateau else None
    lines.append(f"  plateau criterion: {criterion} (fio --steadystate), detected afresh per pass")
    if s.verify is not None:
        bad, _first = s.verify
        ok = bad == 0 and total.completed
        lines.append(f"  verify: {bad} bad sectors" + (" (ok)" if ok else ""))
    if s.findings is not None:
        lines += _findings_lines(s.findings)
    for note in s.notes:
        lines.append(f"  note: {note}")
    if s.checkpoint:
        lines.append(f"  checkpoint: {s.checkpoint}")
    if " && " in s.fio_command:  # write then read: the method's two fio commands
        lines.append(f"  same passes in fio: {s.fio_command}")
    else:
        lines.append(f"  same pass in fio: {s.fio_command}")
    if s.error:
        lines.append(f"  error: {s.error}")
    return "\n".join(lines)


def _findings_lines(f: Findings) -> list[str]:
    """The verdict, what it rests on, and the bad ranges (the first ten)."""
    pct = 100.0 * f.never_written_fraction
    lines = [
        # "interrupted" is said by the reason itself ("interrupted at X of Y").
        f"  verdict: {f.verdict}: {f.reason}"
        if f.case == "interrupted"
        else f"  verdict: {f.verdict} ({f.case}): {f.reason}",
        f"  never written: {f.never_written_bytes:,} of {f.range_bytes:,} bytes ({pct:.1f} %, "
        f"{f.never_written_source})"
        + (f"; read back all zero: {f.zero_bytes:,} bytes" if f.zero_bytes else ""),
    ]
    if f.bad_ranges:
        shown = ", ".join(f"{a:,}-{b:,}" for a, b in f.bad_ranges[:10])
        more = f" and {len(f.bad_ranges) - 10} more" if len(f.bad_ranges) > 10 else ""
        lines.append(
            f"  bad ranges: {len(f.bad_ranges)} ({f.bad_bytes:,} bytes failed): {shown}{more}"
        )
    return lines


def warmup_exit_code(doc: Mapping[str, Any], error: str | None, *, signal_status: int = 0) -> int:
    """2 when the probe failed or a pass failed (e.g. randwrite completed no
    I/O), 1 when ``--verify`` found bad sectors, else ``signal_status`` (128 +
    the number of the signal that stopped the run) when one did; then 1 when
    I/Os failed (bad ranges), ``NOT_WARMED_EXIT`` when a read-only run's
    whole read pass left the volume not warmed, or its stopped one already
    found it fresh (``--time``); else 0."""
    if error:
        return 2
    s = WarmupSummary.from_dict(doc)
    if s.total.outcome == "failed":
        return 2
    if s.verify is not None and s.verify[0]:
        return 1
    if signal_status:
        return signal_status
    f = s.findings
    if f is not None and f.bad_ranges:
        return 1
    read = [p for p in s.passes if p.pass_name == "read"]
    wrote = any(p.pass_name != "read" for p in s.passes)
    done = read and (read[0].completed or (f is not None and f.case == "fresh"))
    if f is not None and f.verdict == "not warmed" and done and not wrote:
        return NOT_WARMED_EXIT
    return 0
