"""Stop latency of the disk commands: signal -> process exit, in seconds.

Not a test (pytest does not collect it): the measurement quoted in
docs/reliability-disk.md. Each scenario runs headless, is interrupted with
SIGINT, SIGTERM and SIGHUP in turn once it is busy, and is timed until the
process has exited. It lays out a 20 GiB file on the disk holding
$PROBETOP_BENCH_DIR (default /var/tmp/probetop-stop-latency; each stop
removes it) and reads sparse files there (no space used).

    .venv/bin/python tests/disk/stop_latency.py 3     # 3 rounds of the 3 signals
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
D = Path(os.environ.get("PROBETOP_BENCH_DIR", "/var/tmp/probetop-stop-latency"))


def one(args: list[str], ready: Callable[[], bool], sig: int) -> float:
    proc = subprocess.Popen(
        [sys.executable, "-m", "probetop.tui.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > 60 or proc.poll() is not None:
            proc.kill()
            raise SystemExit(f"{args}: never got busy: {proc.communicate()}")
        time.sleep(0.02)
    t0 = time.monotonic()
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    return time.monotonic() - t0


def samples_recorded(path: Path) -> Callable[[], bool]:
    return lambda: _text(path).count('"type":"sample"') >= 3


def checkpoint_progress(path: Path) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return json.loads(path.read_text())["done_bytes"] > 0
        except (OSError, ValueError, KeyError):
            return False

    return ready


def _size(path: Path) -> int:
    """-1 while missing; one stat (the start-up check creates and removes a new target)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def _text(path: Path) -> str:
    """ "" while missing; one open (the start-up check creates and removes a new target)."""
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def main(rounds: int) -> None:
    D.mkdir(parents=True, exist_ok=True)
    rec, ckpt, big = D / "r.jsonl", D / "c.json", D / "big.img"
    for name, size in (("sparse64g", 64 << 30), ("sparse1t", 1 << 40)):
        with open(D / name, "wb") as f:
            f.truncate(size)
    scenarios: dict[str, tuple[list[str], Callable[[], bool]]] = {
        "iops: layout of 20 GiB on disk": (
            ["iops", str(big), "--size", "20G", "--rw", "write", "--time", "30",
             "--record", str(rec)],
            lambda: _size(big) > 64 << 20,
        ),
        "iops: 64 jobs x iodepth 256": (
            ["iops", str(D / "sparse64g"), "--jobs", "64", "--iodepth", "256", "--buffered",
             "--interval", "0.1", "--record", str(rec)],
            samples_recorded(rec),
        ),
        "warmup: 64 jobs x iodepth 1024": (
            ["warmup", str(D / "sparse1t"), "--jobs", "64", "--iodepth", "1024", "--bs", "4k",
             "--interval", "0.1", "--checkpoint", str(ckpt), "--record", str(rec)],
            checkpoint_progress(ckpt),
        ),
    }  # fmt: skip
    try:
        for name, (args, ready) in scenarios.items():
            latencies = []
            for sig in [signal.SIGINT, signal.SIGTERM, signal.SIGHUP] * rounds:
                for stale in (rec, ckpt):
                    stale.unlink(missing_ok=True)
                latencies.append(one(args, ready, sig))
            print(
                f"{name}: n={len(latencies)} min={min(latencies):.2f} "
                f"median={statistics.median(latencies):.2f} max={max(latencies):.2f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(D, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
