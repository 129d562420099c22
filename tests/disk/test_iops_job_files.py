"""A directory TARGET (fio's --directory): each refusal names its real cause."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from disk_fixtures import loop_device, run_cli
from probetop.probes.core.base import UsageProbeError
from probetop.probes.disk.settings import IopsSettings


@pytest.mark.parametrize("fmt", ["x/$jobnum", "../e.$jobnum", "/abs.$jobnum"])
def test_a_path_in_filename_format_is_named_as_the_fault(tmp_path: Path, fmt: str) -> None:
    """$jobnum is there: the message is about the '/', not about $jobnum."""
    with pytest.raises(UsageProbeError) as err:
        IopsSettings(str(tmp_path), jobs=2, size=1 << 20, filename_format=fmt).validate()
    text = str(err.value)
    assert "'/'" in text and "include $jobnum" not in text, text


def test_one_name_for_every_job_still_asks_for_jobnum(tmp_path: Path) -> None:
    with pytest.raises(UsageProbeError, match=r"include \$jobnum"):
        IopsSettings(str(tmp_path), jobs=2, size=1 << 20, filename_format="same").validate()


def test_a_job_file_linked_to_a_device_is_refused_as_such(tmp_path: Path) -> None:
    """The job file is a symlink to a block device: refused (nothing written),
    and the message says so instead of calling the directory TARGET invalid."""
    with loop_device(4 << 20, fill=b"\x5a") as dev:
        before = hashlib.sha256(Path(dev).read_bytes()).hexdigest()
        (tmp_path / "probetop.0.0").symlink_to(dev)
        for rw in ("write", "read"):
            proc = run_cli(["iops", str(tmp_path), "--rw", rw, "--size", "1M", "--time", "1",
                            f"--yes-destroy-data={tmp_path}"])  # fmt: skip
            assert proc.returncode == 2, proc.stderr
            assert "symlink" in proc.stderr and dev in proc.stderr, proc.stderr
            assert "is a directory" not in proc.stderr and "Traceback" not in proc.stderr
        assert hashlib.sha256(Path(dev).read_bytes()).hexdigest() == before
