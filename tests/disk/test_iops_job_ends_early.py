"""A job that ends before the others stops being sampled, as in fio.

fio samples each job's bandwidth and IOPS only while it runs
(``calc_log_samples`` skips a job that is not TD_RUNNING), so a job that
ended early has ``bw_samples``/``iops_samples`` of its own time, and its
``bw_min`` is a rate it ran at. Here fio runs two jobs of which one has a
shorter --runtime; probetop runs two jobs over files in a directory (fio's
--directory) and one job's file is truncated under it after the first
interval, so its next read is short and its loop ends while the other goes
on. One reader reads both JSON documents (fio's own keys). Before, probetop
kept sampling the ended job with zeros: 5 samples and bw_min 0 for a job
that ran 1 s of a 5 s run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from probetop.probes.disk import IopsProbe, IopsSettings
from probetop.probes.disk.fiodoc import fio_document
from probetop.tui.run.runner import run_headless

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
SIZE = 4 << 20


def early_and_late(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reader: the job that ran shortest and the one that ran longest,
    each as (job_runtime ms, read bw_samples, bw_min, iops_samples, iops_min)."""
    jobs = sorted(doc["jobs"], key=lambda j: j["job_runtime"])
    view = [
        {
            "runtime_ms": j["job_runtime"],
            "bw_samples": j["read"]["bw_samples"],
            "bw_min": j["read"]["bw_min"],
            "iops_samples": j["read"]["iops_samples"],
            "iops_min": j["read"]["iops_min"],
            "ios": j["read"]["total_ios"],
        }
        for j in jobs
    ]
    return view[0], view[-1]


def check(doc: dict[str, Any], period_ms: int) -> None:
    """The early job has samples only of its own time, each a rate it ran at."""
    early, late = early_and_late(doc)
    assert early["runtime_ms"] < late["runtime_ms"] / 2, (early, late)
    assert early["ios"] > 0, early
    for key in ("bw", "iops"):
        assert 1 <= early[f"{key}_samples"] <= early["runtime_ms"] // period_ms + 1, early
        assert early[f"{key}_samples"] < late[f"{key}_samples"], (early, late)
        assert early[f"{key}_min"] > 0, early


@needs_fio
def test_fio_samples_a_job_only_while_it_runs(tmp_path: Path) -> None:
    """The reference: fio's second job runs 1.2 s of the group's 4 s (its
    samples are 500 ms windows)."""
    r = subprocess.run(
        [
            "fio", f"--directory={tmp_path}", "--rw=randread", "--bs=4k", "--ioengine=psync",
            f"--size={SIZE}", "--time_based", "--output-format=json",
            "--name=long", "--runtime=4", "--name=short", "--runtime=1.2",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    check(json.loads(r.stdout), 500)


def test_probetop_samples_a_job_only_while_it_runs(tmp_path: Path) -> None:
    probe = IopsProbe(IopsSettings(str(tmp_path), bs=4096, jobs=2, size=SIZE, time_s=4))
    probe.prepare()
    victim = tmp_path / "probetop.1.0"
    done = threading.Event()

    def truncate_after_first_interval() -> None:
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            if len(probe.intervals) >= 1:
                os.truncate(victim, 0)  # job 1's next read is short: its loop ends
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=truncate_after_first_interval)
    watcher.start()
    try:
        result = asyncio.run(run_headless([probe]))
    finally:
        done.set()
        watcher.join()
    assert not result.errors, result.errors
    assert victim.stat().st_size == 0, "the run ended before the truncation"
    check(fio_document(probe.summary()), 1000)
