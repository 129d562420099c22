"""Warm-up job: the verdict. Did the run leave the volume warmed, and why.

The method (docs/warmup.md, the volume warm-up article): a never-written
block is answered with zeros at once, without being allocated, so a read
pass over a fresh volume is fast, "too good to be true", and leaves it as
slow as before; only writing every block allocates them (write, then read:
destroys data). A volume restored from a snapshot holds data everywhere,
fetched lazily: a read pass is the right job there.

``judge(...)`` turns what the passes found into ``passes.Findings``:

- never written: the holes of the file under the target where the
  filesystem can say (``holes``: exact), else the blocks the last read pass
  got back all zero (``blockmap``: a block written with zeros cannot be
  told apart), else the bytes a write pass did not reach;
- ``case``: "written" when a write pass covered the whole range (this run
  or an earlier, resumed one); after a whole read pass "fresh" (more than
  ``FRESH_FRACTION`` never written), "restored" (at most
  ``WARMED_FRACTION``), else "mixed"; "fresh" too when a read-only pass
  stopped early but already shows a fresh volume (``_fresh_so_far``: no
  resume is offered, the write is); "interrupted" when a pass was stopped
  (Ctrl-C, a signal, --time) before it covered the range;
  "unknown" when no pass covered the range otherwise (failed, not run);
- ``verdict`` "warmed" only when the range was covered and at most
  ``WARMED_FRACTION`` of it is never written, and no I/O failed; else
  "not warmed", with the reason and, where writing would fix it, the exact
  command (``fix_command``); ``resume_command`` when a sequential pass did
  not cover the range and its checkpoint can continue it (the reason ends
  with it too).
"""

from __future__ import annotations

from probetop.probes.core.base import ProbeError
from probetop.probes.disk.blockmap import BlockMap
from probetop.probes.disk.counters import B_BAD, B_HOLE, B_ZERO
from probetop.probes.disk.holes import Holes
from probetop.probes.disk.refusals import write_refusals
from probetop.probes.disk.signatures import data_signatures
from probetop.probes.disk.warmup.commands import fix_command, resume_command
from probetop.probes.disk.warmup.passes import Case, Findings, PassTotals
from probetop.probes.disk.warmup.settings import WarmupSettings

WARMED_FRACTION = 0.01  # never written at most this share of the range: warmed
FRESH_FRACTION = 0.5  # more than this: a fresh volume
FRESH_SAMPLE_BYTES = 1 << 30  # a stopped read pass judged by the zeros it read: at least this much


def holds_data(target: str) -> list[str]:
    """What makes a write pass over ``target`` destroy something someone
    uses: the refusals (mounted, held, swap, a loop device's backing file)
    and filesystem or partition signatures. [] when nothing is known."""
    try:
        return [*write_refusals(target), *data_signatures(target)]
    except (ProbeError, OSError):
        return []


def _fix_or_why_not(settings: WarmupSettings, held: list[str]) -> str:
    """The fix command, or why none is offered (``held``: holds_data)."""
    if held:
        return (
            f"not here: {settings.target} holds data ({'; '.join(held)}) that a write pass "
            "would destroy; warm a volume before it holds a filesystem"
        )
    return fix_command(settings)


def _fresh_finding(
    settings: WarmupSettings, seen: str, how: str, stopped_at: tuple[int, int] | None
) -> tuple[str, list[str], str]:
    """The "fresh" verdict of a read-only run, whole or stopped early (one
    text for both, so they cannot drift): its reason, what the target holds
    (``holds_data``: then no destructive command) and the fix or why none.
    ``seen``: what was never written ("N % of the range"); ``how``: how that
    was known; ``stopped_at``: (done, range) bytes when the read pass
    stopped before its end."""
    held = holds_data(settings.target)
    fix = _fix_or_why_not(settings, held)
    stop = (
        ""
        if stopped_at is None
        else f"; the read pass stopped at {stopped_at[0]:,} of {stopped_at[1]:,} bytes, and "
        "resuming it would change nothing"
    )
    reason = (
        f"fresh volume: {seen} was never written ({how}){stop}. A read pass cannot allocate "
        "these blocks: the volume answers them with zeros at once, so the read was fast and "
        "changed nothing. Write every block, then read it (destroys every byte of the range): "
        f"{fix}"
    )
    return reason, held, fix


def _fresh_so_far(read: PassTotals, never: int, source: str, range_bytes: int) -> bool:
    """A read pass stopped early already shows a fresh volume: the hole map
    (the whole range) says more than ``FRESH_FRACTION`` is never written, or
    at least ``FRESH_SAMPLE_BYTES`` were read and more than that share of
    them came back never written."""
    if read.completed or read.done_bytes <= 0:
        return False
    if source == "holes":
        return never > FRESH_FRACTION * range_bytes
    if source == "zeros":
        return read.done_bytes >= min(FRESH_SAMPLE_BYTES, range_bytes) and (
            never > FRESH_FRACTION * read.done_bytes
        )
    return False


def never_written_in_map(blockmap: BlockMap) -> int:
    """Bytes a read pass found never written: known holes and all-zero blocks."""
    return blockmap.bytes_in(B_ZERO) + blockmap.bytes_in(B_HOLE)


def judge(
    settings: WarmupSettings,
    passes: list[PassTotals],
    *,
    range_bytes: int,
    read_map: BlockMap | None,
    holes: Holes | None,
    bad_ranges: list[tuple[int, int]],
    checkpoint: str | None = None,
) -> Findings:
    """See the module docstring. ``read_map``: the last read pass's block map
    (None if no read pass ran); ``holes``: the file's holes after the run;
    ``checkpoint``: where the sequential pass's checkpoint is (the resume
    command names it)."""
    rows = {p.pass_name: p for p in passes}
    write, read = rows.get("write"), rows.get("read")
    zero = never_written_in_map(read_map) if read_map is not None else 0
    if holes is not None:
        never, source = holes.bytes, "holes"
    elif read_map is not None:
        never, source = zero, "zeros"
    elif write is not None:
        never, source = max(0, range_bytes - write.done_bytes), "not written"
    else:
        never, source = 0, "unknown"
    fraction = never / range_bytes if range_bytes else 0.0
    pct = f"{100.0 * fraction:.1f} %"
    how = {
        "holes": "holes of the file under the target",
        "zeros": "blocks that read back all zero",
        "not written": "bytes the write pass did not reach",
        "unknown": "not looked at",
    }[source]
    fix = fix_command(settings)
    resume: str | None = None
    held: list[str] = []
    case: Case
    if settings.pass_name == "randwrite":
        case, warmed = "unknown", False
        reason = (
            "randwrite writes random blocks for --time, not every block once: it draws the "
            f"fresh-SSD curve, it does not warm the volume ({fix})"
        )
        return Findings(
            "not warmed", reason, case, never, range_bytes, source, zero,
            holes.bytes if holes else None, bad_ranges, fix,
        )  # fmt: skip
    if write is not None and write.completed:
        case = "written"
        reason = "the write pass wrote every block of the range" + (
            ", the read pass read them back" if read is not None and read.completed else ""
        )
        warmed = fraction <= WARMED_FRACTION
        if not warmed:
            reason += f"; yet {pct} of the range is never written ({how})"
        if read is not None and not read.completed and checkpoint is not None:
            resume = resume_command(settings, checkpoint)
            reason += (
                f"; the read pass that checks them stopped at {read.done_bytes:,} of "
                f"{range_bytes:,} bytes; resume with: {resume}"
            )
    elif read is not None and read.completed and write is None:
        if fraction > FRESH_FRACTION:
            case = "fresh"
            reason, held, fix = _fresh_finding(settings, f"{pct} of the range", how, None)
        elif fraction > WARMED_FRACTION:
            case = "mixed"
            # Never a destructive command for a volume in use or holding a filesystem.
            held = holds_data(settings.target)
            fix = _fix_or_why_not(settings, held)
            reason = (
                f"the read pass fetched every block holding data, but {pct} of the range was "
                f"never written ({how}): those stay unallocated until written; only a write "
                f"pass allocates them, and it destroys the data: {fix}"
            )
        elif zero > FRESH_FRACTION * range_bytes:
            # Allocated (the hole map says so) yet read back zero: the reason
            # must agree with zero_bytes, not claim data.
            case = "restored"
            reason = (
                f"allocated but {100.0 * zero / range_bytes:.1f} % all zeros ({pct} never "
                f"written, {how}): written with zeros, by this or an earlier pass, or "
                "preallocated; the read pass read every block"
            )
        else:
            case = "restored"
            reason = (
                f"data nearly everywhere ({pct} never written, {how}): the read pass fetched "
                "every block, as a volume restored from a snapshot needs"
            )
        warmed = case == "restored"
    elif read is not None and write is None and _fresh_so_far(read, never, source, range_bytes):
        # Stopped early, yet already plainly fresh: resuming the read would
        # change nothing, writing would.
        case, warmed = "fresh", False
        seen = (
            f"{pct} of the range" if source == "holes" else
            f"{100.0 * never / read.done_bytes:.1f} % of the {read.done_bytes:,} bytes read"
        )  # fmt: skip
        stopped_at = (read.done_bytes, range_bytes)
        reason, held, fix = _fresh_finding(settings, seen, how, stopped_at)
    else:
        case, warmed = "unknown", False
        row = write if write is not None and not write.completed else read or write
        if row is not None and not row.completed and checkpoint is not None:
            resume = resume_command(settings, checkpoint)
        if row is None:
            reason = "no pass ran"
        elif row.outcome == "stopped" and row.done_bytes < range_bytes:
            case = "interrupted"
            share = 100.0 * row.done_bytes / range_bytes if range_bytes else 0.0
            both = settings.pass_name == "write+read" and row is write
            then = " (then the read pass)" if both else ""
            reason = (
                f"interrupted at {row.done_bytes:,} of {range_bytes:,} bytes ({share:.1f} %) of "
                f"the {row.pass_name} pass{then}"
            )
        else:
            reason = f"the {row.pass_name} pass covered {row.done_bytes:,} of {range_bytes:,} bytes"
        if resume is not None:
            reason += f"; resume with: {resume}"
    if bad_ranges:
        bad = sum(b - a for a, b in bad_ranges)
        warmed = False
        reason += (
            f"; {len(bad_ranges)} range(s) of {bad:,} bytes failed (I/O errors), first at byte "
            f"{bad_ranges[0][0]:,}"
        )
    return Findings(
        "warmed" if warmed else "not warmed",
        reason,
        case,
        never,
        range_bytes,
        source,
        zero,
        holes.bytes if holes is not None else None,
        bad_ranges,
        fix if case in ("fresh", "mixed") and not held else None,
        resume,
    )


def bad_ranges_of(maps: list[BlockMap]) -> list[tuple[int, int]]:
    """Every failed range of the run's passes, merged and sorted."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(e for m in maps for e in m.extents(B_BAD)):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
