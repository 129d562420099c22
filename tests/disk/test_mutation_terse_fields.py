"""``iops --output-format terse``: fio's terse version 3 read fields (fio's
HOWTO, "Terse output": 6 read KiB, 7 bandwidth KiB/s, 8 IOPS, 9 runtime ms,
10-13 slat, 14-17 clat and 38-41 lat as min;max;mean;stddev in us) keep
their order and units: KiB = bandwidth x runtime, IOPS = KiB / 4 per
second for 4 KiB reads, min <= mean <= max. Mutation review of issue 29
item 9 (docs/reliability.md): clat's min and max swapped, and read KiB
counted in 1000s, passed the iops tests before this one."""

from __future__ import annotations

from pathlib import Path

import pytest
from disk_fixtures import fast_dir
from forkserver import RUN_PRELOAD, run_probetop

__all__ = ["fast_dir"]  # the fixture, imported for pytest


def test_terse_read_fields_keep_fios_order_and_units(fast_dir: Path) -> None:
    target = fast_dir / "terse.img"
    argv = ["iops", str(target), "--rw", "randread", "--bs", "4k", "--size", "4M"]
    argv += ["--time", "1", "--output-format", "terse"]
    proc = run_probetop(argv, preload=(*RUN_PRELOAD, "probetop.probes.disk.family"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("3;"))
    f = line.split(";")
    kib, bw, iops, runtime = int(f[5]), int(f[6]), int(f[7]), int(f[8])
    assert runtime > 500 and kib > 100, line
    # bw and IOPS are whole numbers (fio truncates): 1 % covers it at > 100 KiB
    assert kib == pytest.approx(bw * runtime / 1000, rel=0.01), line
    assert iops == pytest.approx(kib / 4 * 1000 / runtime, rel=0.01), line
    for first in (13, 37):  # clat, lat: min;max;mean;stddev
        lo, hi, mean = int(f[first]), int(f[first + 1]), float(f[first + 2])
        assert 0 <= lo <= mean <= hi, (first, line)
