"""--textfile and compare --plot against hostile targets (issue 11, class 2).

Both write through ``probes/record/output.replace_file`` (checked like a
recording target, a private temporary file with a random name, synced,
renamed). Real CLI processes, a real small tmpfs, real kernel filesystems.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from metrics_fixtures import PROBETOP

DATA = Path(__file__).parents[1] / "data"
DEMO = DATA / "demo_session.jsonl"


def run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, *argv], capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def one_error(out: subprocess.CompletedProcess[str], *words: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, out.stderr
    for word in words:
        assert word in errors[0], errors[0]


def test_textfile_refuses_kernel_filesystems() -> None:
    for directory in ("/dev", "/proc", "/sys/kernel"):
        if os.path.isdir(directory):
            one_error(run("--time", "1", "--headless", "--textfile", directory), "kernel interface")
    assert not os.path.exists("/dev/probetop.prom")


def test_textfile_refuses_a_fifo_or_device_at_its_name(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "probetop.prom").symlink_to(tmp_path / "fifo")
    one_error(run("--time", "1", "--headless", "--textfile", str(tmp_path)), "FIFO")
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "probetop.prom"]


def test_one_run_per_textfile(tmp_path: Path) -> None:
    """Two runs writing the same file would make every series flap between
    them: the second is refused, naming the first one's PID."""
    first = subprocess.Popen(
        [*PROBETOP, "cpu", "--threads", "1", "--time", "8", "--headless",
         "--textfile", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        prom = tmp_path / "probetop.prom"
        deadline = time.monotonic() + 60
        while not prom.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert prom.exists()
        second = run("cpu", "--threads", "1", "--time", "1", "--headless",
                     "--textfile", str(tmp_path))  # fmt: skip
        one_error(second, "in use by probetop PID", str(first.pid))
    finally:
        first.terminate()
        first.wait(timeout=30)
    assert first.returncode in (0, 130, 143), first.stderr.read() if first.stderr else ""
    # readable by a collector running as another user; no temporary file left
    assert stat.S_IMODE(os.stat(tmp_path / "probetop.prom").st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probetop.prom"]
    # the lock went with the run: a third run may write it again
    assert run("--time", "0.5", "--headless", "--textfile", str(tmp_path)).returncode == 0


def test_plot_on_a_full_filesystem_leaves_the_old_file_whole(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], check=True)
    try:
        plot = mount / "p.svg"
        plot.write_text("<svg>previous</svg>\n")
        # leave less than an SVG's worth free (bounded: the tmpfs is 96 KiB)
        filler = mount / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1k", "count=80"],
                       capture_output=True, check=False)  # fmt: skip
        out = run("compare", str(DEMO), str(DEMO), "--plot", str(plot), "--no-charts")
        assert "Traceback" not in out.stderr
        if out.returncode == 0:  # the SVG fitted after all: then it is whole
            assert plot.read_text().rstrip().endswith("</svg>")
        else:
            one_error(out, "--plot")
            assert "No space left" in out.stderr or "is full" in out.stderr
            assert plot.read_text() == "<svg>previous</svg>\n"
        assert sorted(p.name for p in mount.iterdir()) == ["filler", "p.svg"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_plot_never_replaces_a_device_fifo_or_kernel_file(tmp_path: Path) -> None:
    fifo = tmp_path / "f.svg"
    os.mkfifo(fifo)
    for target in (fifo, Path("/proc/probetop.svg")):
        one_error(run("compare", str(DEMO), str(DEMO), "--plot", str(target), "--no-charts"),
                  "--plot")  # fmt: skip
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
