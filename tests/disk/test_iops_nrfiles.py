"""--nrfiles and --file-service-type as fio means them, against fio itself.

Each job spreads its I/O over its --nrfiles files in a directory TARGET, of
--size split as fio splits it; the next I/O's file is fio's
--file_service_type (default roundrobin: the next file after each I/O); the
job's figures are over all its files. Real files on tmpfs; fio runs the
command probetop prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import disk_fixtures
import pytest
from disk_fixtures import run_cli
from probetop.probes.disk.engineplan import EnginePlan
from probetop.probes.disk.workers import Engine

fast_dir = disk_fixtures.fast_dir
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


def _files(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir())}


def _fio(command: str, *extra: str) -> dict:
    out = subprocess.run(
        [*shlex.split(command), *extra, "--output-format=json"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    return json.loads(out[out.index("{") :])


@needs_fio
@pytest.mark.parametrize(
    "size, bs",
    # 4, 3, 3 bytes (the remainder's whole blocks go to the first files);
    # 349,525 bytes each, of which I/O uses the whole blocks
    [("10", "1"), ("1M", "4k"), ("1M", "64k")],
)
def test_files_are_fios_names_and_sizes(fast_dir: Path, size: str, bs: str) -> None:
    """The same files as fio's for the same job: names ($jobname.$jobnum.$filenum)
    and sizes (--size split, the first files a block bigger for the rest).
    Both tools lay the files out before the job runs, so the job is capped at
    100 I/Os per second for 1 s (fio gets the cap and the time through the
    command line): at full speed each side kept two cores busy for its whole
    --time, about 4 CPU-s a case, for files that were already there."""
    ours, theirs = fast_dir / "ours", fast_dir / "fio"
    ours.mkdir()
    theirs.mkdir()
    proc = run_cli(
        ["iops", str(ours), "--jobs", "2", "--nrfiles", "3", "--size", size, "--bs", bs,
         "--rw", "write", "--buffered", "--rate-iops", "100", "--time", "1", "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    command = json.loads(proc.stdout)["probetop"]["fio_command"]
    assert "--nrfiles=3" in command and "--rate_iops=100" in command
    _fio(command.replace(f"--directory={ours}", f"--directory={theirs}"))
    assert _files(ours) == _files(theirs), (_files(ours), _files(theirs))
    assert sorted(_files(ours)) == [f"probetop.{j}.{f}" for j in range(2) for f in range(3)]


def _order(trace: Path, directory: Path, count: int) -> list[str]:
    """(file, offset) of the first ``count`` 1-byte writes to files in ``directory``,
    from strace."""
    fds: dict[str, str] = {}
    seen: list[str] = []
    opened = re.compile(r'openat\(AT_FDCWD, "' + re.escape(str(directory)) + r'/([^"]+)".*= (\d+)')
    # 1-byte writes only: the job's, not a layout's
    write = re.compile(r"pwrite64\((\d+), .*, 1, (\d+)\)\s+= 1")
    for line in _whole_calls(trace.read_text()):
        if m := opened.search(line):
            fds[m.group(2)] = m.group(1)
        elif (m := write.search(line)) and m.group(1) in fds:
            seen.append(f"{fds[m.group(1)]}@{m.group(2)}")
    return seen[:count]


_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$")


def _whole_calls(text: str) -> list[str]:
    """strace -f's lines with each call whole: a call that another thread's
    traced call interrupted is printed in two lines, "PID pwrite64(5, "x", 1,
    1 <unfinished ...>" then "PID <... pwrite64 resumed>) = 1", in neither of
    which a pattern for the whole call matches (under load, one of probetop's
    18 writes went missing that way). Joined, at the place the call returned."""
    unfinished: dict[str, str] = {}
    lines = []
    for line in text.splitlines():
        if line.endswith(" <unfinished ...>"):
            unfinished[line.split(None, 1)[0]] = line.removesuffix(" <unfinished ...>")
        elif (m := _RESUMED.match(line)) and m.group(1) in unfinished:
            lines.append(unfinished.pop(m.group(1)) + m.group(2))
        else:
            lines.append(line)
    return lines


def test_a_call_strace_split_in_two_lines_is_read_whole(tmp_path: Path) -> None:
    trace = tmp_path / "t.strace"
    trace.write_text(
        f'7 openat(AT_FDCWD, "{tmp_path}/a.0.0", O_RDWR|O_CREAT, 0644) = 5\n'
        '7 pwrite64(5, "x", 1, 0) = 1\n'
        '7 pwrite64(5, "x", 1, 1 <unfinished ...>\n'
        '8 openat(AT_FDCWD, "/proc/self/stat", O_RDONLY) = 9\n'
        "7 <... pwrite64 resumed>)           = 1\n"
    )
    assert _order(trace, tmp_path, 18) == ["a.0.0@0", "a.0.0@1"]


@needs_fio
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("service", ["roundrobin", "sequential", "roundrobin:2"])
def test_files_are_served_in_fios_order(fast_dir: Path, service: str) -> None:
    """Which file each write goes to, and at which offset, is fio's: strace of
    both tools on the same job (3 files of 2 bytes, sequential 1-byte writes)."""
    orders = {}
    for who in ("probetop", "fio"):
        directory = fast_dir / who
        directory.mkdir()
        trace = fast_dir / f"{who}.strace"
        job = ["--rw", "write", "--bs", "1", "--size", "6", "--time", "2"]
        if who == "probetop":
            argv = [*disk_fixtures.PROBETOP, "iops", str(directory), "--nrfiles", "3",
                    "--buffered", "--rate-iops", "300", "--file-service-type", service,
                    *job, "--json"]  # fmt: skip
        else:
            argv = ["fio", f"--directory={directory}", "--nrfiles=3", "--rw=write", "--bs=1",
                    "--size=6", "--rate_iops=300", "--time_based", "--runtime=2",
                    f"--file_service_type={service}", "--name=probetop"]  # fmt: skip
        proc = subprocess.run(
            ["strace", "-f", "-qq", "-e", "trace=openat,pwrite64", "-o", str(trace), *argv],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, (who, proc.stdout[-2000:], proc.stderr)
        orders[who] = _order(trace, directory, 18)
    assert len(orders["fio"]) == 18, orders
    assert orders["probetop"] == orders["fio"], orders


@needs_fio
def test_json_global_options_are_fios_for_the_printed_command(fast_dir: Path) -> None:
    """probetop's --json "global options" (nrfiles, file_service_type) are what
    fio's own JSON says for the fio command probetop prints; the job's IOPS is
    over all its files, as fio's (a per-job cap of 400 IO/s holds for the
    job, not per file)."""
    ours, theirs = fast_dir / "ours", fast_dir / "fio"
    ours.mkdir()
    theirs.mkdir()
    proc = run_cli(
        ["iops", str(ours), "--nrfiles", "4", "--size", "64k", "--rw", "randwrite",
         "--buffered", "--file-service-type", "random", "--rate-iops", "400", "--time", "2",
         "--json"]
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    command = doc["probetop"]["fio_command"]
    fio = _fio(command.replace(f"--directory={ours}", f"--directory={theirs}"))
    mine = dict(doc["global options"], directory=str(theirs))
    assert mine == fio["global options"]
    assert mine["nrfiles"] == "4" and mine["file_service_type"] == "random"
    assert doc["probetop"]["params"]["nrfiles"] == 4
    for d in (doc, fio):
        assert len(d["jobs"]) == 1
        # The cap is the job's: capped per file, 4 files would make up to 1,600/s.
        assert 0 < d["jobs"][0]["write"]["iops"] <= 410, d["jobs"][0]["write"]["iops"]
    assert _files(ours) == _files(theirs)


@pytest.mark.parametrize("engine, depth", [("psync", 1), ("libaio", 4), ("io_uring", 4)])
def test_every_engine_round_robins_over_the_files(fast_dir: Path, engine: str, depth: int) -> None:
    """Sequential writes, 3 files per job, 2 jobs: every file of every job
    gets the same share (roundrobin), each from offset 0 in its own sequence;
    the job's counters are the sum over its files. Room for ~12 s at the
    capped rate before a file wraps: the test's poll may lose the CPU on a
    loaded machine, and the pacer catches up what it missed (up to 1 s)."""
    bs, blocks = 4096, 2048
    files = []
    for j in range(2):
        row = []
        for f in range(3):
            path = fast_dir / f"probetop.{j}.{f}"
            path.write_bytes(bytes(bs * blocks))
            row.append(str(path))
        files.append(tuple(row))
    plan = EnginePlan(
        path=str(fast_dir), bs=bs, extents=[(0, bs * blocks)], jobs=2, iodepth=depth,
        readpct=0, seq=True, direct=False, stamp=True, ioengine=engine, rate_iops=500,
        files=tuple(files), file_ends=((bs * blocks,) * 3,) * 2,
    )  # fmt: skip
    eng = Engine(plan)
    eng.start()
    deadline = time.monotonic() + 60
    while eng.snapshot(0).dirs[1].ios < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    eng.stop()
    assert eng.join(5) and not eng.failures
    ios = eng.snapshot(0).dirs[1].ios
    assert 300 <= ios < 2 * 3 * blocks  # no file wrapped: each one's prefix is written
    written = []
    for row in files:
        for path in row:
            data = Path(path).read_bytes()
            # stamped blocks carry their own offset in the first 8 bytes of each sector
            n = sum(
                1 for b in range(blocks) if int.from_bytes(data[b * bs + 512 : b * bs + 520],
                                                           "little") == b * bs + 512
            )  # fmt: skip
            written.append(n)
    assert sum(written) == ios, (written, ios)
    for j in range(2):
        share = written[3 * j : 3 * j + 3]
        assert max(share) - min(share) <= depth, share


# -- refusals: nothing outside TARGET, nothing that is not a regular file ------


def test_nrfiles_needs_a_directory_and_leaves_a_file_alone(fast_dir: Path) -> None:
    """fio aborts on --filename with --nrfiles (an assertion); probetop refuses."""
    target = fast_dir / "data.img"
    target.write_bytes(b"\x5a" * 8192)
    proc = run_cli(["iops", str(target), "--nrfiles", "2", "--size", "8k", "--rw", "write",
                    "--time", "1"])  # fmt: skip
    assert proc.returncode == 2 and "needs TARGET to be a directory" in proc.stderr, proc.stderr
    assert target.read_bytes() == b"\x5a" * 8192 and _files(fast_dir) == {"data.img": 8192}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--size", "2", "--bs", "1"], "--size at least 3"),  # fio: a 0-byte file "ignored"
        (["--size", "30", "--bs", "16"], "less than one --bs block"),
        (["--size", "12k", "--filename-format", "f.$jobnum"], "include $filenum"),
        (["--size", "12k", "--file-service-type", "zipf"], "zipf"),
        (["--size", "12k", "--file-service-type", "random:0"], "1 or more"),
    ],
)
def test_bad_file_options_are_refused_before_any_file(
    fast_dir: Path, extra: list[str], message: str
) -> None:
    proc = run_cli(["iops", str(fast_dir), "--nrfiles", "3", "--rw", "write", "--time", "1",
                    *extra])  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(fast_dir.iterdir())


def test_a_later_job_file_linked_elsewhere_is_refused(fast_dir: Path, tmp_path: Path) -> None:
    """The third file of job 0 is a symlink out of TARGET: refused before any
    file is made, and the file it points to is untouched."""
    outside = tmp_path / "precious"
    outside.write_bytes(b"keep" * 1024)
    (fast_dir / "probetop.0.2").symlink_to(outside)
    proc = run_cli(["iops", str(fast_dir), "--nrfiles", "3", "--size", "12k", "--rw", "write",
                    "--time", "1"])  # fmt: skip
    assert proc.returncode == 2 and "symlink" in proc.stderr and str(outside) in proc.stderr
    assert outside.read_bytes() == b"keep" * 1024
    assert sorted(os.listdir(fast_dir)) == ["probetop.0.2"]


@pytest.mark.parametrize("nrfiles", [1, 3])
def test_a_job_file_hard_linked_elsewhere_is_refused(fast_dir: Path, nrfiles: int) -> None:
    """A job file that is a hard link of a file outside TARGET (the same inode
    under another name) is refused, for reads too (a layout may extend it)."""
    outside = fast_dir.parent / f"{fast_dir.name}-precious"
    outside.write_bytes(b"keep" * 1024)
    try:
        os.link(outside, fast_dir / f"probetop.0.{nrfiles - 1}")
        for rw in ("write", "read"):
            proc = run_cli(["iops", str(fast_dir), "--nrfiles", str(nrfiles), "--size", "12k",
                            "--rw", rw, "--time", "1"])  # fmt: skip
            assert proc.returncode == 2 and "hard links" in proc.stderr, proc.stderr
        assert outside.read_bytes() == b"keep" * 1024
        assert sorted(os.listdir(fast_dir)) == [f"probetop.0.{nrfiles - 1}"]
    finally:
        outside.unlink()


def test_a_rerun_reuses_the_files_and_touches_nothing_else(fast_dir: Path) -> None:
    """A second identical run uses the first run's files as they are (fio
    does too); other files in TARGET are left alone."""
    other = fast_dir / "notes.txt"
    other.write_text("mine")
    argv = ["iops", str(fast_dir), "--jobs", "2", "--nrfiles", "2", "--size", "8k",
            "--rw", "randwrite", "--buffered", "--time", "2", "--json"]  # fmt: skip
    first = run_cli(argv)
    assert first.returncode == 0, first.stderr
    sizes = _files(fast_dir)
    again = run_cli(argv)
    assert again.returncode == 0, again.stderr
    assert _files(fast_dir) == sizes
    assert other.read_text() == "mine"
    assert sorted(sizes) == sorted(
        ["notes.txt"] + [f"probetop.{j}.{f}" for j in range(2) for f in range(2)]
    )
