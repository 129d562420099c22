"""fio's --name=JOB in a pasted fio line (every fio command line has one).

It was refused ("--name names a session ... a headless run has none"), so no
fio line ran as pasted. Now, in iops and warmup, a headless run's --name is
the job's name: fio's ``jobname`` in the JSON and the terse line, the head of
the text report's job block, $jobname in --filename_format, and the name in
the equivalent fio command; with --detach it names the session as well.
Compared with fio 3.x on the same lines, on a tmpfs file.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from disk_fixtures import run_cli

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

# A job name with a space and a colon: fio takes any string.
JOB = "rand read:4k"


def _line(target: Path, fmt: str) -> list[str]:
    return [
        f"--name={JOB}", f"--filename={target}", "--rw=randread", "--bs=4k", "--size=4M",
        "--rate_iops=500", "--runtime=1", "--time_based", f"--output-format={fmt}",
    ]  # fmt: skip


def _both(target: Path, fmt: str) -> tuple[str, str]:
    fio = subprocess.run(
        ["fio", *_line(target, fmt)], capture_output=True, text=True, timeout=60, check=True
    )
    ours = run_cli(["iops", *_line(target, fmt)])
    assert ours.returncode == 0, ours.stderr
    return fio.stdout, ours.stdout


@needs_fio
def test_a_pasted_fio_line_names_its_job_in_every_format(tmp_path: Path) -> None:
    target = tmp_path / "f.img"
    target.write_bytes(b"\1" * (4 << 20))
    fio, ours = (json.loads(text) for text in _both(target, "json"))
    assert ours["jobs"][0]["jobname"] == fio["jobs"][0]["jobname"] == JOB
    assert ours["jobs"][0]["job options"]["name"] == fio["jobs"][0]["job options"]["name"]
    fio_terse, ours_terse = _both(target, "terse")
    # terse v3: version;fio version;jobname;groupid;error;...
    assert ours_terse.split(";")[2] == fio_terse.split(";")[2] == JOB
    fio_text, ours_text = _both(target, "normal")
    assert f"\n{JOB}: (groupid=0, jobs=1): err= 0: pid=" in f"\n{fio_text}"
    assert f"\n{JOB}: (groupid=0, jobs=1): err= 0: pid=" in f"\n{ours_text}"
    assert shlex.quote(f"--name={JOB}") in ours_text  # the same job in fio's words


@needs_fio
def test_the_job_name_is_jobname_in_filename_format(tmp_path: Path) -> None:
    ours = run_cli(
        ["iops", str(tmp_path), "--name=w", "--rw=randwrite", "--size=1M", "--jobs=2",
         "--filename_format=$jobname.$jobnum", "--time=0.3", "--yes-destroy-data", str(tmp_path)]
    )  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.0", "w.1"]


def test_a_pasted_fio_warmup_line_runs(tmp_path: Path) -> None:
    target = tmp_path / "v.img"
    target.write_bytes(b"\1" * (8 << 20))
    ours = run_cli(
        ["warmup", "--name=init", f"--filename={target}", "--rw=read", "--bs=1M",
         "--iodepth=32", "--direct=1", "--headless"]
    )  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    assert "same pass in fio: fio --name=init --filename=" in ours.stdout
    # fio --rw values that are no warm-up pass are refused, naming those that are
    refused = run_cli(["warmup", f"--filename={target}", "--rw=randread", "--headless"])
    assert refused.returncode == 2
    assert "fio's --rw takes read or write or randwrite here, got 'randread'" in refused.stderr


def test_name_without_a_job_is_still_refused_headless() -> None:
    done = run_cli(["cpu", "--name=x", "--time=1", "--headless"])
    assert done.returncode == 2 and "--name names a session" in done.stderr
