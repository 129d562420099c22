"""`probetop compile`: build the native loops into the per-user cache now.

Why a command: numba compiles the disk and ICMP loops the first time they
run (15-25 s on a 2-core machine), and caches the result per user. Doing it
once at set-up (``make setup`` runs this) means the first dashboard shows
numbers within seconds instead of "compiling the native I/O loop...". The
CPU probe needs nothing here: its loop is LLVM IR that compiles in
milliseconds at every start.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from probetop.probes.core import native_cache, native_objects
from probetop.probes.core.options import CommandSpec
from probetop.tui.cli.plan import CommonOptions, RunPlan

SPEC = CommandSpec(
    name="compile",
    help="compile the native disk and ICMP loops into the per-user cache (once)",
    description="""\
Compile the native loops of the disk probes (iops, warmup: psync, libaio and
io_uring) and of the ICMP probe into numba's per-user cache, so later runs
start at once. `make setup` (and so `make demo`) runs it; after `pip install`,
run it once. Run by the install's owner (who owns the Python prefix: the venv,
or root for a system install), it also copies the loops kept as object code to
<prefix>/share/probetop/objects, which every other user of the install then
loads (a user whose own cache has none started with a minute of compiling).
The families compile one after the other.
Sends nothing and touches no device: the disk loops run once on an 8 KiB
in-memory file. Then removes cache entries and kept objects whose source
directory is gone or that no probetop used for 30 days (never one a running
probetop uses). Exit 0
when every loop compiled, 2 when one could not be built (the message says
which and why).
""",
    options=(),
)


@dataclass(frozen=True, slots=True)
class CompileSettings:
    """`compile` takes no options of its own."""


def settings(values: Mapping[str, Any], common: CommonOptions) -> CompileSettings:
    return CompileSettings()


def _families() -> list[tuple[str, Callable[[], bool]]]:
    from probetop.probes import disk, icmp

    return [
        ("disk I/O loops (iops, warmup)", disk.compile_native),
        ("ICMP loop", icmp.compile_native),
    ]


def _build(build: Callable[[], bool]) -> tuple[str | None, float, bool]:
    """Run one family's compile (in a worker process); its error or None, the
    seconds it took, and whether its loops were kept as object code."""
    t0 = time.monotonic()
    try:
        kept = build()
    except Exception as exc:  # ProbeError/NativeCodeError: say which loop, go on
        return str(exc), time.monotonic() - t0, False
    return None, time.monotonic() - t0, kept


def _build_all(builds: list[Callable[[], bool]]) -> list[tuple[str | None, float, bool]]:
    """Every family, one after the other in this process. Side by side (a
    process each) failed once in a clean clone (FileNotFoundError on a stale
    entry's .nbc file): both processes pruned at once, one reading an entry
    the other was removing. Prunes are now one at a time and never raise
    (native_cache.prune): whole compiles run 2 and 4 at once into one cache
    pass (benchmarks/compile_side_by_side.py), but families in parallel here
    were not tried again, nor timed."""
    return [_build(build) for build in builds]


def run(plan: RunPlan[CompileSettings]) -> int:
    """Build every loop, then prune stale cache entries; the lines when done,
    or with --json one document (``cache``, ``loops[]``: ``name``, ``ready``,
    ``kept``, ``seconds``, ``error``; ``pruned``: ``entries``, ``bytes``;
    ``shared``: the install's directory of kept loops, or null): `compile
    --json` printed the text."""
    as_json = plan.common.json
    text = (lambda *a, **k: None) if as_json else print
    where = native_cache.configure()
    if where is None:
        print(f"probetop: {native_cache.note()}", file=sys.stderr)
    else:
        text(f"probetop compile: cache {where}")
    status = 0
    loops: list[dict[str, Any]] = []
    families = _families()
    results = _build_all([build for _, build in families])
    for (label, _), (error, seconds, kept) in zip(families, results, strict=True):
        status = 2 if error else status
        how = "kept as object code" if kept else "in numba's cache"
        text(f"  {label}: " + (f"failed: {error}" if error else f"ready, {how} ({seconds:.1f} s)"))
        loops.append(
            {
                "name": label,
                "ready": error is None,
                "kept": kept,
                "seconds": round(seconds, 3),
                "error": error,
            }
        )
    pruned = native_cache.prune()
    if pruned.entries:
        text(
            f"  pruned {pruned.entries} stale cache entries ({pruned.bytes / 1e6:.1f} MB: "
            "source gone or unused for "
            f"{native_cache.KEEP_UNUSED_DAYS} days)"
        )
    shared = None
    if status == 0:
        try:
            shared = native_objects.publish()
        except OSError as exc:
            print(f"probetop: warning: cannot share the kept loops: {exc}", file=sys.stderr)
        if shared:
            text(f"  shared with every user of this install: {shared}")
    if as_json:
        document = {
            "cache": str(where) if where else None,
            "loops": loops,
            "pruned": {"entries": pruned.entries, "bytes": pruned.bytes},
            "shared": shared,
        }
        json.dump(document, sys.stdout, indent=2)
        print()
    return status
