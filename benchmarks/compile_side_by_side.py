#!/usr/bin/env python3
"""Several `probetop compile` runs at once into one cache: all must succeed.

Usage:  .venv/bin/python benchmarks/compile_side_by_side.py [--procs 2,4] [--rounds 10]
            [--mode empty|stale|both] [--stale 100] [--round-timeout 900] [--budget 3000]

Why: a clean clone's `make test` once failed with FileNotFoundError when two
`probetop compile` processes built families side by side: both pruned the
cache at once and one sized a stale entry's code file the other was removing
(native_cache.prune is now one at a time per directory and never raises).
This runs N compiles released together into one cache directory, round
after round, and checks what a user would see:

- every compile exits 0 with every loop ready and kept as object code
  (``compile --json``), within ``--round-timeout`` (killed and counted as a
  failure past it);
- every seeded stale entry (numba entries and kept objects of removed
  clones) is gone after the round (a prune skipped by one process is done by
  another or the last);
- a process started before the compiles (``iops --time 4`` on a /dev/shm
  file, loops loaded from the cache) finishes with I/Os counted while the
  compiles prune and rewrite the cache beside it (``stale`` mode: its loops
  are loaded from the kept objects before the compiles start);
- a following ``probetop iops FILE --time 1`` on a /dev/shm file exits 0
  and counts I/Os.

Modes: ``empty``: each round a new empty cache directory (numba compiles
every loop from nothing in each process: ~50 CPU-s per process per round);
odd rounds also hold ``--stale`` entries of removed clones (the CI failure's
case). ``stale``: one cache, filled once, then every round seeds
``--stale`` stale entries and objects first (the compiles find the loops kept
and go straight to pruning, side by side: the race itself, cheaply).

The cache is chosen as a user's is (``XDG_CACHE_HOME``, ``NUMBA_CACHE_DIR``
unset: probetop's own directory, where prune removes any stale entry);
``XDG_STATE_HOME`` is private too. Every process is bounded in time; the
whole run stops starting rounds past ``--budget`` seconds (reported). Prints
counts, no timings (other work shares the machine). Exit 0 when every round
that ran passed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def entry_name(source_dir: str) -> str:
    """numba's entry name for ``source_dir`` (native_cache.entry_name)."""
    digest = hashlib.sha1(source_dir.encode()).hexdigest()
    return f"{os.path.basename(source_dir)}_{digest}"


def seed_stale(root: Path, where: Path, count: int, tag: str) -> list[Path]:
    """``count`` numba entries and ``count // 5`` kept objects of removed
    clones (sources under ``where``, never created), as numba and
    ``probetop compile`` lay them out; the paths that must be pruned."""
    stale = []
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    objects = root / "objects"
    objects.mkdir(exist_ok=True, mode=0o700)
    for i in range(count):
        gone = where / f"gone-{tag}-{i}" / "probes" / ("disk" if i % 2 else "icmp")
        entry = root / entry_name(str(gone))
        entry.mkdir(mode=0o700)
        (entry / "engine.run_slice-10.py311.nbi").write_bytes(b"index")
        for j in range(20):  # one code file per cached function, as numba writes
            (entry / f"engine.f{j}-10.py311.1.nbc").write_bytes(
                b"# File: " + str(gone / "engine.py").encode() + b"\n" + b"x" * 200
            )
        if i % 3 == 0:
            (entry / "probetop-source").write_text(f"{gone}\n")
        stale.append(entry)
        if i % 5 == 0:
            base = objects / f"disk.sync_loop-{hashlib.sha256(str(gone).encode()).hexdigest()[:16]}"
            Path(f"{base}.o").write_bytes(b"\x7fELF" + b"\0" * 60)
            Path(f"{base}.json").write_text(json.dumps({"paths": [str(gone / "native.py")]}))
            stale += [Path(f"{base}.o"), Path(f"{base}.json")]
    return stale


def iops(env: dict[str, str], target: str, seconds: float) -> subprocess.Popen[str]:
    cmd = [*PROBETOP, "iops", target, "--size", "8M", "--buffered", "--time", str(seconds)]
    return subprocess.Popen(
        [*cmd, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def iops_result(proc: subprocess.Popen[str], timeout: float) -> str | None:
    """None when the run exited 0 and counted I/Os, else what went wrong."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"iops: no exit within {timeout:.0f} s (killed)"
    if proc.returncode != 0:
        return f"iops: exit {proc.returncode}: {err.strip()[-300:]}"
    try:
        ios = sum(j[d]["total_ios"] for j in json.loads(out)["jobs"] for d in ("read", "write"))
    except (ValueError, KeyError, TypeError) as exc:
        return f"iops: unreadable --json ({exc})"
    return None if ios > 0 else "iops: 0 I/Os counted"


def one_round(
    procs: int, root: Path, env: dict[str, str], stale: list[Path], live: bool, timeout: float
) -> list[str]:
    """Run ``procs`` compiles at once; the failures found (empty: passed)."""
    failures: list[str] = []
    target = f"/dev/shm/race-compile-{os.getpid()}.img"
    holder = iops(env, target + ".live", 4.0) if live else None
    if holder is not None:
        time.sleep(1.5)  # its loops loaded (kept objects: milliseconds after import)
    started = time.monotonic()
    compiles = [
        subprocess.Popen(
            [*PROBETOP, "compile", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(procs)
    ]
    for i, p in enumerate(compiles):
        left = max(1.0, timeout - (time.monotonic() - started))
        try:
            out, err = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            for q in compiles:
                q.kill()
            p.communicate()
            failures.append(f"compile {i}: no exit within {timeout:.0f} s (all killed)")
            break
        if p.returncode != 0:
            failures.append(f"compile {i}: exit {p.returncode}: {err.strip()[-400:]}")
            continue
        try:
            loops = json.loads(out)["loops"]
        except (ValueError, KeyError) as exc:
            failures.append(f"compile {i}: unreadable --json ({exc})")
            continue
        bad = [lp["name"] for lp in loops if not (lp["ready"] and lp["kept"])]
        if bad or not loops:
            failures.append(f"compile {i}: not ready and kept: {bad or 'no loops'}")
    for p in compiles:  # reaped (killed ones too)
        if p.poll() is None:
            p.kill()
            p.communicate()
    if holder is not None:
        why = iops_result(holder, 60.0)
        if why:
            failures.append(f"live {why}")
        remove(target + ".live")
    left_over = [str(p) for p in stale if p.exists()]
    if left_over:
        failures.append(f"{len(left_over)} stale paths left, e.g. {left_over[0]}")
    why = iops_result(iops(env, target, 1.0), 60.0)
    if why:
        failures.append(f"after: {why}")
    remove(target)
    return failures


def remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="2,4", help="compiles at once, a list (default 2,4)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--mode", choices=("empty", "stale", "both"), default="both")
    ap.add_argument("--stale", type=int, default=100, help="stale entries seeded per round")
    ap.add_argument("--round-timeout", type=float, default=900.0)
    ap.add_argument("--budget", type=float, default=3000.0, help="no round starts after this")
    args = ap.parse_args()
    modes = ["stale", "empty"] if args.mode == "both" else [args.mode]
    work = Path(tempfile.mkdtemp(prefix="race-compile-"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_STATE_HOME"] = str(work / "state")
    began = time.monotonic()
    summary: list[str] = []
    failed = 0
    try:
        for mode in modes:
            for procs in [int(n) for n in args.procs.split(",")]:
                ran = passed = 0
                xdg = work / f"{mode}-{procs}" / "xdg"
                root = xdg / "probetop" / "numba"
                env["XDG_CACHE_HOME"] = str(xdg)
                if mode == "stale":  # filled once, by one compile
                    fill = subprocess.run(
                        [*PROBETOP, "compile", "--json"],
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=args.round_timeout,
                    )
                    if fill.returncode != 0:
                        print(f"{mode} x{procs}: the first compile failed: {fill.stderr[-400:]}")
                        failed += 1
                        continue
                for r in range(args.rounds):
                    if time.monotonic() - began > args.budget:
                        break
                    if mode == "empty":
                        shutil.rmtree(xdg, ignore_errors=True)
                        root.mkdir(parents=True, mode=0o700)
                    count = args.stale if (mode == "stale" or r % 2) else 0
                    stale = seed_stale(root, work / "gone", count, f"{mode}{procs}r{r}")
                    failures = one_round(
                        procs, root, env, stale, live=mode == "stale", timeout=args.round_timeout
                    )
                    ran += 1
                    passed += not failures
                    status = "ok" if not failures else "FAILED: " + " | ".join(failures)
                    print(
                        f"{mode} x{procs} round {r + 1}: {count} stale seeded: {status}", flush=True
                    )
                line = f"{mode}: {procs} compiles at once: {passed}/{ran} rounds passed"
                if ran < args.rounds:
                    line += f" ({args.rounds - ran} not run: --budget {args.budget:.0f} s spent)"
                summary.append(line)
                failed += ran - passed
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
