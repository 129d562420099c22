"""fio's bw/iops samples (issue 27): ``bw_*``/``iops_*`` and their
``*_samples`` are rates over fio's averaging windows (--bwavgtime,
--iopsavgtime, default 500 ms), not over the dashboard's interval.

Real runs beside fio (installed), on a file in /dev/shm, buffered, as
test_iops_fio_parity.py does. fio's rule for the count: one sample per
whole window of the measured time, but the window that ends as the job
ends is sampled only if fio's helper thread reads it before the job leaves
its running state (fio 3.33-3.36: seldom without a ramp; 3.37+ counts a
finishing job too, so mostly). So for ``T`` seconds and ``w`` ms fio gives
``T/w - 1`` or ``T/w``; probetop gives ``T/w - 1`` (it ends that window
with the run, as the fio it is compared with mostly does).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import disk_fixtures
import numpy as np
import pytest
from disk_fixtures import run_cli
from probetop.probes.disk.ratewindows import RateWindows

fast_dir = disk_fixtures.fast_dir
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
RATE = 2000


def _fio(path: Path, seconds: int, avg_ms: int | None, ramp: str = "") -> dict[str, Any]:
    args = ["fio", "--name=windows", f"--filename={path}", "--rw=randread", "--bs=4k",
            "--ioengine=psync", "--iodepth=1", "--numjobs=1", "--direct=0",
            f"--rate_iops={RATE}", "--time_based", f"--runtime={seconds}",
            "--output-format=json"]  # fmt: skip
    if avg_ms is not None:
        args += [f"--bwavgtime={avg_ms}", f"--iopsavgtime={avg_ms}"]
    if ramp:
        args.append(f"--ramp_time={ramp}")
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out[out.index("{") :])["jobs"][0]["read"]


def _ours(path: Path, seconds: int, avg_ms: int | None, ramp: str = "") -> dict[str, Any]:
    args = ["iops", str(path), "--rw", "randread", "--bs", "4k", "--buffered",
            "--rate-iops", str(RATE), "--time", str(seconds), "--json"]  # fmt: skip
    if avg_ms is not None:
        args += ["--bw-avg-time", str(avg_ms), "--iops-avg-time", f"{avg_ms}ms"]
    if ramp:
        args += ["--ramp", ramp]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["jobs"][0]["read"]


def _target(fast_dir: Path) -> Path:
    target = fast_dir / "windows.img"
    target.write_bytes(b"\x5a" * (16 << 20))
    return target


@needs_fio
@pytest.mark.parametrize(("seconds", "avg_ms"), [(2, None), (3, None), (2, 250)])
def test_sample_counts_follow_fios_windows(
    fast_dir: Path, seconds: int, avg_ms: int | None
) -> None:
    """The same job in both tools: the same number of bw and iops samples
    (fio's off-by-one rule, module docstring), and with the rate cap the
    iops_mean of the windows agrees within 10 % (paired, median ratio).
    --iops-avg-time 250 doubles the windows of the default 500 in both."""
    target = _target(fast_dir)
    windows = seconds * 1000 // (avg_ms or 500)
    runs = []
    with disk_fixtures.promptly_scheduled():
        for _ in range(2):
            runs.append((_ours(target, seconds, avg_ms), _fio(target, seconds, avg_ms)))
    for ours, fio in runs:
        for key in ("bw_samples", "iops_samples"):
            assert fio[key] in (windows - 1, windows), (key, fio[key], windows)
            assert ours[key] == windows - 1, (key, ours[key], windows)
        # min <= mean <= max: whole rates of the same windows
        assert ours["iops_min"] <= ours["iops_mean"] <= ours["iops_max"]
        assert ours["bw_min"] <= ours["bw_mean"] <= ours["bw_max"]
    ratios = [o["iops_mean"] / f["iops_mean"] for o, f in runs]
    assert 0.9 <= statistics.median(ratios) <= 1.1, ratios
    bw = [o["bw_mean"] / f["bw_mean"] for o, f in runs]
    assert 0.9 <= statistics.median(bw) <= 1.1, bw


@needs_fio
def test_windows_start_at_the_ramps_end(fast_dir: Path) -> None:
    """With --ramp the windows start when the ramp ends (fio's
    reset_all_stats restarts its sample clock): 2 s after a 500 ms ramp
    have the 2 s run's windows, none of the ramp's."""
    target = _target(fast_dir)
    with disk_fixtures.promptly_scheduled():
        ours, fio = _ours(target, 2, None, "500ms"), _fio(target, 2, None, "500ms")
    for key in ("bw_samples", "iops_samples"):
        assert fio[key] in (3, 4), (key, fio[key])
        assert ours[key] == 3, (key, ours[key])
    assert 0.9 <= ours["iops_mean"] / fio["iops_mean"] <= 1.1


@needs_fio
def test_normal_output_samples_are_the_windows(fast_dir: Path) -> None:
    """The fio text report's bw and iops lines count the same windows."""
    target = _target(fast_dir)
    proc = run_cli(
        ["iops", str(target), "--rw", "randread", "--buffered", "--rate-iops", str(RATE),
         "--time", "2", "--iops_avg_time", "250", "--output-format", "normal"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    bw_line = next(line for line in proc.stdout.splitlines() if "bw (" in line)
    iops_line = next(line for line in proc.stdout.splitlines() if "iops        :" in line)
    assert bw_line.rstrip().endswith("samples=3"), bw_line
    assert iops_line.rstrip().endswith("samples=7"), iops_line


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "abc", "10h"])
def test_bad_avg_time_is_refused(tmp_path: Path, value: str) -> None:
    proc = run_cli(["iops", str(tmp_path / "x.img"), "--size", "1M", "--iops-avg-time", value])
    assert proc.returncode == 2, proc.stderr
    assert "--iops-avg-time" in proc.stderr and "ms" in proc.stderr, proc.stderr
    assert "unrecognized" not in proc.stderr, proc.stderr


def _counts(ios: list[list[int]]) -> np.ndarray:
    """(jobs, 2 directions, [ios, bytes]) counters, 4 KiB I/Os, reads only."""
    out = np.zeros((len(ios), 2, 2), dtype=np.int64)
    for j, n in enumerate(ios):
        out[j, 0] = n[0], n[0] * 4096
    return out


def test_windows_skip_idle_and_ended_jobs_and_sum_for_the_group() -> None:
    ms = 1_000_000
    w = RateWindows(
        directions=["read"],
        windows_ms={"bw_bytes": 500, "iops": 250},
        start_ns=0,
        counts=_counts([[0], [0]]),
    )
    assert w.next_due_ns() == 249 * ms  # fio's 1 ms slack
    w.sample(250 * ms, _counts([[100], [50]]), [True, True])  # iops only
    # the next iops window is late: it ends when read, at 520 ms (270 ms long)
    w.sample(520 * ms, _counts([[100], [104]]), [True, True])
    # job 1 has ended: it is no longer sampled
    w.sample(750 * ms, _counts([[200], [154]]), [True, False])
    job0, job1 = w.job_table(0), w.job_table(1)
    # job 0 was idle in its second window: no sample (fio's "no entries")
    assert job0["read_iops"]["samples"] == 2 and job0["read_iops"]["min"] == 400
    assert job1["read_iops"]["samples"] == 2 and job1["read_iops"]["max"] == 200
    assert job1["read_iops"]["min"] == 54 * 1000 // 270
    assert job0["read_bw_bytes"]["samples"] == 1
    assert job0["read_bw_bytes"]["mean"] == 100 * 4096 * 1000 // 520 // 1024 * 1024
    group = w.group_table()["read_iops"]
    assert group["samples"] == 4
    assert group["min"] == 400 + 200 and group["max"] == 100_000 // 230 + 200
    assert group["mean"] == pytest.approx(job0["read_iops"]["mean"] + job1["read_iops"]["mean"])
    assert w.job_table(0)["read_bw_bytes"]["dev"] == 0.0
