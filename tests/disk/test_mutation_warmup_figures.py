"""The warm-up's figures a user reads, with expectations computed here:
the ETA (seconds) against the rate cap and the bytes left, and the
report's "never written" line for a file whose holes are known.
Mutation review of issue 29 item 9 (docs/reliability.md): an ETA in
minutes and a never-written share printed as a fraction (0.8 %) for a
percent passed every disk test before these."""

from __future__ import annotations

import json
import os
from pathlib import Path

from disk_fixtures import fast_dir
from forkserver import RUN_PRELOAD, run_probetop

__all__ = ["fast_dir"]  # the fixture, imported for pytest

MIB = 1 << 20
PRELOAD = (*RUN_PRELOAD, "probetop.probes.disk.family", "probetop.tui.run.launch")


def test_eta_is_the_bytes_left_at_the_capped_rate_in_seconds(fast_dir: Path) -> None:
    """64 MiB read at 16 x 1 MiB I/Os a second (fio --rate_iops 16): each
    sample's ETA is (64 MiB - done) / 16 MiB/s, within what the pacing's
    burst and a loaded machine move it (0.5x-3x; minutes would be 1/60)."""
    target = fast_dir / "eta.img"
    target.write_bytes(os.urandom(64 * MIB))
    rec = fast_dir / "eta.jsonl"
    argv = ["warmup", str(target), "--rate-iops", "16", "--bs", "1M", "--time", "2"]
    argv += ["--sample-interval", "0.5", "--headless", "--record", str(rec)]
    argv += ["--checkpoint", str(fast_dir / "eta.ckpt")]
    proc = run_probetop(argv, preload=PRELOAD)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr  # 3: not warmed (stopped)
    checked = 0
    for line in rec.read_text().splitlines():
        doc = json.loads(line)
        values = doc.get("values") or {}
        if doc.get("type") != "sample" or values.get("eta_s") is None:
            continue
        left = 64 * MIB - values["done_bytes"]
        if left < 8 * MIB:
            continue
        expected = left / (16 * MIB)
        assert 0.5 * expected <= values["eta_s"] <= 3 * expected, (values, expected)
        checked += 1
    assert checked >= 1, rec.read_text()[:2000]


def test_never_written_line_gives_bytes_and_percent(fast_dir: Path) -> None:
    """A 16 MiB sparse file with 4 MiB written at 2 MiB: 12,582,912 of
    16,777,216 bytes never written, 75.0 %."""
    target = fast_dir / "sparse.img"
    with open(target, "wb") as f:
        f.truncate(16 * MIB)
        f.seek(2 * MIB)
        f.write(os.urandom(4 * MIB))
    argv = ["warmup", str(target), "--headless", "--checkpoint", str(fast_dir / "s.ckpt")]
    proc = run_probetop(argv, preload=PRELOAD)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # not warmed
    assert "  never written: 12,582,912 of 16,777,216 bytes (75.0 %, " in proc.stdout, proc.stdout
