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

from probetop.probes.core import native_cache
from probetop.probes.core.options import CommandSpec
from probetop.tui.cli.plan import CommonOptions, RunPlan

SPEC = CommandSpec(
    name="compile",
    help="compile the native disk and ICMP loops into the per-user cache (once)",
    description="""\
Compile the native loops of the disk probes (iops, warmup: psync, libaio and
io_uring) and of the ICMP probe into numba's per-user cache, so later runs
start at once. `make setup` (and so `make demo`) runs it; after `pip install`,
run it once per user. Sends nothing and touches no device: the disk loops
run once on an 8 KiB in-memory file. Exit 0 when every loop compiled, 2 when
one could not be built (the message says which and why).
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


def run(plan: RunPlan[CompileSettings]) -> int:
    """Build every loop; the lines as it goes, or with --json one document
    at the end (``cache``, ``loops[]``: ``name``, ``ready``, ``seconds``,
    ``error``): `compile --json` printed the text."""
    as_json = plan.common.json
    text = (lambda *a, **k: None) if as_json else print
    where = native_cache.configure()
    if where is None:
        print(f"probetop: {native_cache.note()}", file=sys.stderr)
    else:
        text(f"probetop compile: cache {where}")
    status = 0
    loops: list[dict[str, Any]] = []
    for label, build in _families():
        t0 = time.monotonic()
        text(f"  {label}: ", end="", flush=True)
        error: str | None = None
        kept = False
        try:
            kept = build()
        except Exception as exc:  # ProbeError/NativeCodeError: say which loop, go on
            error = str(exc)
            status = 2
        seconds = time.monotonic() - t0
        how = "kept as object code" if kept else "in numba's cache"
        text(f"failed: {error}" if error else f"ready, {how} ({seconds:.1f} s)")
        loops.append(
            {
                "name": label,
                "ready": error is None,
                "kept": kept,
                "seconds": round(seconds, 3),
                "error": error,
            }
        )
    if as_json:
        json.dump({"cache": str(where) if where else None, "loops": loops}, sys.stdout, indent=2)
        print()
    return status
