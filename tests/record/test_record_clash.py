"""A file probetop writes at the user's word is never a file its probes use.

``--record`` and ``--textfile`` open (truncate, replace) their file before
any probe takes its target's lock: pointed at the IOPS or warm-up target, or
at a warm-up checkpoint, they destroyed it and only then was the clash seen.
Each case here is a real run on real files; the file must keep every byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from record_helpers import PROBETOP


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused_intact(args: list[str], victim: Path, *words: str) -> None:
    """Exit 2 with one plain line naming the clash; ``victim`` unchanged."""
    before = digest(victim)
    proc = subprocess.run(
        [*PROBETOP, *args], capture_output=True, text=True, timeout=60, cwd=victim.parent
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probetop: error: cannot "), lines
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert proc.stdout == ""  # nothing ran
    assert digest(victim) == before


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.img"
    path.write_bytes(os.urandom(1 << 20))
    return path


RUN = ["--headless", "--time", "1"]


def test_record_onto_the_iops_target(data_file: Path) -> None:
    refused_intact(
        ["iops", str(data_file), *RUN, "--record", str(data_file)], data_file, "iops", "destroy"
    )


def test_record_onto_the_iops_target_through_a_symlink_and_a_hard_link(data_file: Path) -> None:
    link = data_file.with_name("link.img")
    link.symlink_to(data_file.name)
    hard = data_file.with_name("hard.img")
    os.link(data_file, hard)
    for other in (link, hard):
        refused_intact(["iops", str(data_file), *RUN, "--record", str(other)], data_file, "iops")


def test_record_onto_the_warmup_target(data_file: Path) -> None:
    refused_intact(
        ["warmup", str(data_file), *RUN, "--record", str(data_file)], data_file, "warmup"
    )


def test_record_onto_the_warmup_checkpoint(data_file: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "data.ckpt"
    first = subprocess.run(
        [*PROBETOP, "warmup", str(data_file), "--headless", "--checkpoint", str(checkpoint)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.returncode == 0, first.stderr
    refused_intact(
        [
            "warmup",
            str(data_file),
            *RUN,
            "--resume",
            "--checkpoint",
            str(checkpoint),
            "--record",
            str(checkpoint),
        ],
        checkpoint,
        "checkpoint",
    )


def test_textfile_onto_the_iops_target(tmp_path: Path) -> None:
    target = tmp_path / "probetop.prom"
    target.write_bytes(os.urandom(1 << 20))
    refused_intact(["iops", str(target), *RUN, "--textfile", str(tmp_path)], target, "iops")


def test_record_onto_the_textfile(tmp_path: Path) -> None:
    recording = tmp_path / "probetop.prom"
    recording.write_text("an earlier scrape\n")
    refused_intact(
        ["cpu", *RUN, "--record", str(recording), "--textfile", str(tmp_path)],
        recording,
        "--textfile",
    )


def test_distinct_files_still_run(data_file: Path, tmp_path: Path) -> None:
    """The check refuses clashes only: separate files run and record."""
    recording = tmp_path / "run.jsonl"
    proc = subprocess.run(
        [
            *PROBETOP,
            "iops",
            str(data_file),
            *RUN,
            "--record",
            str(recording),
            "--textfile",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert recording.read_text().startswith('{"type":"header"')
    assert (tmp_path / "probetop.prom").exists()
