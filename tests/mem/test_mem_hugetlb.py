"""``probetop mem --memory-hugetlb`` beside sysbench 1.0.20's: the blocks come
from the HugeTLB pool (a System V segment, as sysbench's ``hugetlb_alloc``),
the same number of huge pages in both tools, sysbench's FATAL lines and exit
1 when the pool cannot give them, and the pool whole again after the run,
after Ctrl-C and after SIGKILL (the segment is marked for removal as soon as
it is attached).

Root only: the test sets ``vm.nr_hugepages`` (0 for the refusals, a few
pages for the runs) and puts the value it found back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from privilege import sysbench

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
PAGES = 8  # a 1K block takes 3 (sysbench's 4 MiB + 1023 bytes); two 8M blocks take 8

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sets vm.nr_hugepages: root only")


def meminfo(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0])
    raise KeyError(key)


def set_pages(n: int) -> None:
    NR_HUGEPAGES.write_text(f"{n}\n")
    if meminfo("HugePages_Total") != n:
        pytest.skip(f"the kernel gave {meminfo('HugePages_Total')} of {n} huge pages")


@pytest.fixture
def pool() -> Iterator[None]:
    """The HugeTLB pool, put back as found."""
    found = int(NR_HUGEPAGES.read_text())
    if meminfo("HugePages_Total") != meminfo("HugePages_Free"):
        pytest.skip("another process holds huge pages: the pool is not this test's")
    try:
        yield
    finally:
        NR_HUGEPAGES.write_text(f"{found}\n")


def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))


def run(cmd: list[str], argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cmd, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env(tmp_path),
    )


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (
            ["--memory-hugetlb=on"],
            [
                "FATAL: Failed to allocate 4195327 bytes from HugeTLB memory. "
                "errno = 12 (Cannot allocate memory)",
                "FATAL: Failed to allocate buffer!",
            ],
        ),
        (
            ["--memory-hugetlb", "--memory-scope=local", "--threads=2", "--memory-block-size=8M"],
            [
                "FATAL: Failed to allocate 8388607 bytes from HugeTLB memory. "
                "errno = 12 (Cannot allocate memory)",
                "FATAL: Failed to allocate buffer for thread #0!",
            ],
        ),
    ],
    ids=["global", "local"],
)
def test_an_empty_pool_is_sysbenchs_fatal(
    pool: None, argv: list[str], lines: list[str], tmp_path: Path
) -> None:
    set_pages(0)
    full = ["memory", *argv, "--time=1", "run"]
    ref, ours = run([sysbench()], full, tmp_path), run(PROBETOP, full, tmp_path)
    assert ref.returncode == ours.returncode == 1, (ref, ours)
    for line in lines:
        assert line in ref.stdout + ref.stderr, ref
        assert line in ours.stdout + ours.stderr, ours
    assert "vm.nr_hugepages" in ours.stderr  # and what to do about it
    assert "Total operations" not in ours.stdout + ours.stderr


def hugetlb_kib(pid: int) -> int:
    """Private + Shared_Hugetlb of a process (kB), 0 once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return sum(
        int(line.split()[1])
        for line in text.splitlines()
        if line.endswith("kB") and "Hugetlb" in line
    )


def watch(cmd: list[str], argv: list[str], tmp_path: Path) -> tuple[int, int, int, str]:
    """Run to its end; (exit status, the most huge-page kB it mapped, the
    most huge pages taken from the pool meanwhile, stdout)."""
    proc = subprocess.Popen(
        [*cmd, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env(tmp_path),
    )
    mapped = taken = 0
    total = meminfo("HugePages_Total")
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        mapped = max(mapped, hugetlb_kib(proc.pid))
        taken = max(taken, total - meminfo("HugePages_Free") + meminfo("HugePages_Rsvd"))
        time.sleep(0.05)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, mapped, taken, out


@pytest.mark.parametrize(
    "argv",
    [
        ["--memory-hugetlb=on"],
        ["--memory-hugetlb=true", "--memory-scope=local", "--threads=2", "--memory-block-size=8M"],
    ],
    ids=["global-1K", "local-2x8M"],
)
def test_the_blocks_come_from_the_pool_as_sysbenchs(
    pool: None, argv: list[str], tmp_path: Path
) -> None:
    set_pages(PAGES)
    full = ["memory", *argv, "--time=2", "run"]
    ref = watch([sysbench()], full, tmp_path)
    ours = watch(PROBETOP, full, tmp_path)
    assert ref[0] == ours[0] == 0, (ref, ours)
    assert "Total operations" in ours[3], ours[3]
    # the same huge pages mapped and taken from the pool (sysbench's rounding)
    assert ours[1] == ref[1] > 0, (ref[:3], ours[:3])
    assert ours[2] == ref[2] > 0, (ref[:3], ours[:3])
    assert meminfo("HugePages_Free") == PAGES and meminfo("HugePages_Rsvd") == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_the_pool_is_whole_after_a_stop(pool: None, sig: signal.Signals, tmp_path: Path) -> None:
    set_pages(PAGES)
    proc = subprocess.Popen(
        [*PROBETOP, "memory", "--memory-hugetlb=on", "--time=30", "run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env(tmp_path),
    )
    assert proc.stdout is not None
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(proc.stdout or ()), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30  # the run under way: its blocks mapped, its threads started
    while "Threads started!\n" not in seen and proc.poll() is None:
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)
    assert hugetlb_kib(proc.pid) > 0, seen
    proc.send_signal(sig)
    proc.wait(timeout=30)
    reader.join(timeout=30)
    out = "".join(seen)
    if sig == signal.SIGINT:
        assert "Total operations" in out, out  # the partial report, as sysbench's
    assert meminfo("HugePages_Free") == PAGES and meminfo("HugePages_Rsvd") == 0


def test_off_and_bad_values(tmp_path: Path) -> None:
    """=off runs without the pool; a value sysbench does not take exits 1 in both."""
    for cmd in ([sysbench()], PROBETOP):
        done = run(
            cmd, ["memory", "--memory-hugetlb=off", "--memory-total-size=1M", "run"], tmp_path
        )
        assert done.returncode == 0 and "Total operations" in done.stdout, done
        bad = run(cmd, ["memory", "--memory-hugetlb=yes", "--time=1", "run"], tmp_path)
        assert bad.returncode == 1, bad
        assert "Total operations" not in bad.stdout
