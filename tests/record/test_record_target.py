"""Class 3 of issue 11: a recording is never lost silently.

Real targets only: devices, FIFOs, sockets, /proc and /sys, a read-only
tmpfs, a 1 MiB tmpfs that fills mid-run, an ext4 on a loop device that
dies (EIO), a file size limit (EFBIG), the unprivileged user nobody.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from file_size import size_of
from forkserver import RUN_PRELOAD, Forked, run_probetop, spawn_probetop
from probetop.probes.core.sample import Sample
from probetop.probes.record.codec import RecordingError
from probetop.probes.record.linefile import LineFile, WriteFailed
from probetop.probes.record.reader import load_session
from probetop.probes.record.target import check_target, open_target
from probetop.probes.record.writer import RECORDING_INCOMPLETE_EXIT, Recorder
from probetop.probes.system import passive_probes
from probetop.tui.run.livesession import LiveSession
from record_helpers import (
    PROBETOP,
    as_nobody,
    ext4_on_loop,
    fill,
    need_root,
    nobody_cli,
    shut_down_ext4,
    tmpfs,
)


def run_cli(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``probetop ARGS`` forked from an interpreter that has imported the CLI,
    the system probes, numpy and numba (tests/forkserver.py: a process of its
    own with this argv, stdio, environment and exit status; the start-up is
    not what these tests look at). test_empty_path_is_refused, the prlimit
    and nobody cases, the first kill -9 attempt and the in-use case start the
    whole `python -m`."""
    return run_probetop(args, timeout=timeout, preload=RUN_PRELOAD)


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, one plain line on stderr naming the problem, nothing ran."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probetop: error: cannot record to"), lines
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert proc.stdout == ""  # no report: no probe started


# -- checked before anything starts ---------------------------------------------------


def _targets(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Bad targets that exist on any Linux box (no root needed)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link-to-full"
    link.symlink_to("/dev/full")
    dangling_into_proc = tmp_path / "link-into-proc"
    dangling_into_proc.symlink_to("/proc/probetop-nonexistent")
    plain = tmp_path / "plain"
    plain.write_text("")
    return {
        "/dev/full": (Path("/dev/full"), "character device"),
        "/dev/null": (Path("/dev/null"), "character device"),
        "symlink to /dev/full": (link, "a link to /dev/full"),
        "FIFO": (fifo, "FIFO"),
        "directory": (tmp_path, "directory"),
        "existing file under /proc": (Path("/proc/self/status"), "proc filesystem"),
        "root-writable /proc/sys file": (Path("/proc/sys/kernel/hostname"), "proc"),
        "new file under /proc": (Path("/proc/probetop.jsonl"), "proc filesystem"),
        "symlink into /proc": (dangling_into_proc, "proc filesystem"),
        "file under /sys": (Path("/sys/kernel/probetop.jsonl"), "sysfs"),
        "new file in /dev": (Path("/dev/probetop.jsonl"), "devtmpfs"),
        "missing directory": (tmp_path / "no" / "x.jsonl", "does not exist"),
        "a file as directory": (plain / "x.jsonl", "Not a directory"),
    }


def test_bad_targets_are_refused_before_any_probe_starts(tmp_path: Path) -> None:
    hostname = Path("/proc/sys/kernel/hostname").read_text()
    cases = _targets(tmp_path)
    for name, (target, words) in cases.items():
        started = time.monotonic()
        proc = run_cli(["--headless", "--time", "30", "--record", str(target)], timeout=30)
        refused(proc, words)
        assert time.monotonic() - started < 15, name  # a FIFO used to hang here
        with pytest.raises(RecordingError):
            check_target(target)
    assert Path("/proc/sys/kernel/hostname").read_text() == hostname  # never written
    assert not Path("/dev/probetop.jsonl").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fifo",
        "link-into-proc",
        "link-to-full",
        "plain",
    ]  # nothing created


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        refused(run_cli(["--headless", "--time", "5", "--record", str(path)]), "socket")
    finally:
        server.close()


def test_empty_path_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*PROBETOP, "--headless", "--time", "5", "--record", ""],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    refused(proc, "directory")


def test_opening_rechecks_the_descriptor(tmp_path: Path) -> None:
    """A FIFO or device swapped in after the check is refused at open, never
    written and never waited on (the open is non-blocking)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, words in ((fifo, "FIFO"), (Path("/dev/full"), "character device")):
        started = time.monotonic()
        with pytest.raises(RecordingError, match=words):
            open_target(target)
        assert time.monotonic() - started < 2
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO someone reads
    try:
        with pytest.raises(RecordingError, match="FIFO"):
            open_target(fifo)
        with pytest.raises(RecordingError, match="FIFO"):
            check_target(fifo)
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


def test_read_only_filesystem_is_refused(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", options="ro") as ro:
        refused(
            run_cli(["--headless", "--time", "5", "--record", str(ro / "x.jsonl")]),
            "Read-only file system",
        )
    with tmpfs(tmp_path / "rw") as rw:
        existing = rw / "old.jsonl"
        existing.write_text("keep me\n")
        subprocess.run(["mount", "-o", "remount,ro", str(rw)], check=True)
        refused(
            run_cli(["--headless", "--time", "5", "--record", str(existing)]),
            "Read-only file system",
        )
        assert existing.read_text() == "keep me\n"


def test_full_filesystem_is_refused_with_numbers(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "full", "1m") as full:
        fill(full, 16 * 1024)
        refused(
            run_cli(["--headless", "--time", "5", "--record", str(full / "x.jsonl")]),
            "is full",
            "KiB free",
        )


def test_unprivileged_user_gets_permission_denied(tmp_path: Path) -> None:
    need_root()
    tmp_path.chmod(0o755)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    locked.chmod(0o000)
    theirs = tmp_path / "roots.jsonl"
    theirs.write_text("root's\n")
    theirs.chmod(0o644)
    for target in (locked / "x.jsonl", theirs):
        kind, message = as_nobody(check_target, str(target))
        assert kind == "RecordingError" and "Permission denied" in message, (kind, message)
        proc = nobody_cli(["--headless", "--time", "5", "--record", str(target)])
        refused(proc, "Permission denied")
    assert theirs.read_text() == "root's\n"
    assert list(locked.iterdir()) == []


# -- a write error mid-run -------------------------------------------------------------


def _whole_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]  # the last line is whole
    return [json.loads(row) for row in data.decode().splitlines()]


def _kept_lines(message: str) -> int:
    """N from "... it keeps the N whole lines written before ..."."""
    words = message.split()
    return int(words[words.index("keeps") + 2])


def test_disk_full_mid_run_warns_keeps_whole_lines_and_exits_74(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "1m") as small:
        fill(small, 96 * 1024)  # room for the header and a few seconds
        out = small / "rec.jsonl"
        started = time.monotonic()
        proc = run_cli(
            ["--headless", "--time", "6", "--sample-interval", "0.05", "--record", str(out)],
            timeout=60,
        )
        took = time.monotonic() - started
        assert proc.returncode == RECORDING_INCOMPLETE_EXIT, proc.stderr
        assert "Traceback" not in proc.stderr
        warning, final = proc.stderr.strip().splitlines()
        assert warning.startswith("probetop: warning: recording to") and "No space left" in warning
        assert final.startswith("probetop: error: the recording is incomplete")
        # The probes went on to --time and the final report was printed.
        assert "probetop: ran 6" in proc.stdout and "(time)" in proc.stdout
        assert "== system.cpu" in proc.stdout
        assert took < 20
        lines = _whole_lines(out)
        assert len(lines) == _kept_lines(warning)
        assert lines[0]["type"] == "header" and lines[-1]["type"] != "footer"
        session = load_session(out)
        assert any("no footer" in w for w in session.warnings)
        assert session.samples()


def test_file_size_limit_mid_write_is_cut_back_to_a_whole_line(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel write part of a batch, then fail (EFBIG):
    the part line is truncated away."""
    out = tmp_path / "rec.jsonl"
    limit = 40_000
    proc = subprocess.run(
        [
            "prlimit",
            f"--fsize={limit}",
            *PROBETOP,
            "--headless",
            "--time",
            "4",
            "--interval",
            "0.05",
            "--record",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == RECORDING_INCOMPLETE_EXIT, proc.stderr
    assert "File too large" in proc.stderr and "Traceback" not in proc.stderr
    assert "probetop: ran 4" in proc.stdout
    size = out.stat().st_size
    assert size < limit
    lines = _whole_lines(out)
    assert len(lines) == _kept_lines(proc.stderr)


def test_dying_disk_eio_mid_run(tmp_path: Path) -> None:
    """An ext4 on a loop device shut down mid-run: every write fails with EIO."""
    with ext4_on_loop(tmp_path / "disk.img", tmp_path / "mnt") as (mnt, _dev):
        out = mnt / "rec.jsonl"
        proc = subprocess.Popen(
            [*PROBETOP, "--headless", "--time", "5", "--interval", "0.05", "--record", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if size_of(out) > 20_000:
                    break
                time.sleep(0.05)
            shut_down_ext4(mnt)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == RECORDING_INCOMPLETE_EXIT, stderr
        assert "Input/output error" in stderr and "Traceback" not in stderr
        assert "probetop: ran 5" in stdout
        kept = _kept_lines(stderr)
        # What reached the disk, read through a second, read-only loop device
        # (mounting the dead one again can reuse its shut-down superblock).
        subprocess.run(["umount", str(mnt)], check=True)
        view = tmp_path / "view"
        view.mkdir()
        second = subprocess.run(
            ["losetup", "--find", "--show", "--read-only", str(tmp_path / "disk.img")],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        try:
            subprocess.run(["mount", "-o", "ro,noload", second, str(view)], check=True)
            try:
                lines = _whole_lines(view / "rec.jsonl")
                assert len(lines) == kept
                load_session(view / "rec.jsonl")
            finally:
                subprocess.run(["umount", str(view)], check=False)
        finally:
            subprocess.run(["losetup", "-d", second], check=False)


def test_line_file_never_leaves_a_torn_line(tmp_path: Path) -> None:
    """Batches of lines into a tmpfs with any amount of room left: the file
    is always exactly the lines written whole, in order."""
    with tmpfs(tmp_path / "t", "256k") as mount:
        rows = [json.dumps({"n": i, "pad": "x" * (i % 700)}).encode() + b"\n" for i in range(900)]
        for leave in (0, 1, 100, 4095, 4096, 4097, 10_000, 50_000):
            for child in mount.iterdir():
                child.unlink()
            fill(mount, leave)
            fd = os.open(mount / "f", os.O_WRONLY | os.O_CREAT, 0o600)
            file = LineFile(fd)
            written = 0
            failed = None
            for start in range(0, len(rows), 7):
                batch = rows[start : start + 7]
                try:
                    file.write_lines(b"".join(batch))
                    written += len(batch)
                except WriteFailed as exc:
                    failed = exc
                    break
            file.close()
            assert failed is not None and not failed.torn
            data = (mount / "f").read_bytes()
            assert data == b"".join(rows[: file.lines]), leave
            assert written <= file.lines < written + 7


async def test_session_goes_on_and_tells_once(tmp_path: Path) -> None:
    """The live session after a write error: the probes and the feed go on, the
    recorder is dropped, one error notification, the failure is kept for exit."""
    with tmpfs(tmp_path / "small", "1m") as small:
        fill(small, 72 * 1024)
        notes: list[tuple[str, str, str]] = []
        changes: list[bool] = []

        def notify(message: str, *, title: str = "", severity: str = "information") -> None:
            notes.append((severity, title, message))

        session = LiveSession(
            passive_probes(0.02),
            record=small / "rec.jsonl",
            notify=notify,
            on_change=lambda: changes.append(True),
        )
        feed = await session.start(lossless=False, strict=True)
        import asyncio

        deadline = time.monotonic() + 30
        while not session.recording_failures and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            feed.drain()
        assert session.recording_failures, "the filesystem never filled"
        assert session.recorder is None and changes
        await asyncio.sleep(0.3)
        after = [r for r in feed.drain() if isinstance(r, Sample)]
        assert after, "probes stopped with the recording"
        assert "system.cpu" in session.running()
        await session.shutdown("completed")
        errors = [n for n in notes if n[0] == "error"]
        assert len(errors) == 1 and errors[0][1] == "recording stopped"
        assert not any("recording saved" in n[2] for n in notes)
        assert len(session.recording_failures) == 1
        _whole_lines(small / "rec.jsonl")


def test_recorder_start_on_a_full_filesystem_raises(tmp_path: Path) -> None:
    """Room for the check but not for the header: RecordingError, nothing subscribed."""
    import asyncio

    from probetop.probes.core.hub import Hub

    with tmpfs(tmp_path / "small", "1m") as small:
        fill(small, 72 * 1024)
        hub = Hub()
        for probe in passive_probes(1.0):
            hub.add(probe)
        recorder = Recorder(small / "rec.jsonl", hub, ["x" * 200_000])  # a huge header
        with pytest.raises(RecordingError, match="No space left"):
            asyncio.run(recorder.start())
        assert not hub._subs
        assert (small / "rec.jsonl").read_bytes() == b""


def _holds_a_sample_batch(path: Path) -> bool:
    """Whether ``path`` holds the header and a first batch of samples. The
    file can vanish between two looks: before recording, the start-up check
    creates the target and removes it again (CI, load 59: exists() then
    FileNotFoundError)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    return len(data) > 4096 and b'"type":"sample"' in data


def test_kill_9_at_random_moments_leaves_a_readable_file(tmp_path: Path) -> None:
    """Lines are written whole with one write each batch: whatever moment a
    kill -9 lands, the reader gets every complete line (a cut last line is
    skipped with a warning)."""
    import random
    import signal

    rng = random.Random(11)
    with open(os.devnull, "wb") as devnull:
        for attempt in range(6):
            out = tmp_path / f"k{attempt}.jsonl"
            # forked from the zygote (tests/forkserver.py), as run_cli's runs; the
            # first attempt starts the whole `python -m`
            args = ["--headless", "--interval", "0.05", "--record", str(out)]
            proc: subprocess.Popen[bytes] | Forked
            if attempt:
                proc = spawn_probetop(args, stdout=devnull, stderr=devnull)
            else:
                proc = subprocess.Popen(
                    [*PROBETOP, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            deadline = time.monotonic() + 60
            # Past the header and the first batch of samples (the recorder writes
            # one batch per 0.5 s flush period), however loaded the machine.
            while time.monotonic() < deadline and not _holds_a_sample_batch(out):
                assert proc.poll() is None, f"probetop exited {proc.returncode} before recording"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.7))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            session = load_session(out)
            assert session.footer is None and session.samples()
            assert all("no footer" in w or "torn last line" in w for w in session.warnings), (
                session.warnings
            )


def test_a_recording_in_use_by_another_probetop_is_never_written_over(tmp_path: Path) -> None:
    """Class 2 for recordings: the file another probetop is recording to is
    refused, by PID, to a second recording and to an iops write."""
    import subprocess
    import sys
    import time

    probetop = [sys.executable, "-m", "probetop.tui.main"]
    target = tmp_path / "busy.jsonl"
    # Long enough to outlive the two refused runs however slow their start-up
    # (5.7-6.8 s each at load 23 outlived a 6 s first run); ended by SIGTERM,
    # which completes its recording and exits 0.
    first = subprocess.Popen(
        [*probetop, "--headless", "--time", "300", "--interval", "0.2", "--record", str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while size_of(target) <= 0:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        size = target.stat().st_size
        for args in (
            ["--headless", "--time", "0.2", "--record", str(target)],
            ["iops", str(target), "--rw", "write", "--time", "0.5", "--headless"],
        ):
            out = subprocess.run([*probetop, *args], capture_output=True, text=True, timeout=60)
            assert out.returncode == 2, out.stderr
            assert f"in use by probetop PID {first.pid}" in out.stderr
            assert first.poll() is None, "the first run ended: the refusal proves nothing"
        assert target.stat().st_size >= size  # only the first run wrote to it
    finally:
        first.terminate()
        first.wait(timeout=30)
    assert first.returncode == 0, first.stderr.read() if first.stderr else ""


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2", ".GZ"])
def test_a_name_promising_another_compression_is_refused(tmp_path: Path, suffix: str) -> None:
    """--record s.jsonl.gz wrote plain JSON Lines under a gzip name (zcat then
    fails on it); refused before anything starts, naming what is written."""
    target = tmp_path / f"s.jsonl{suffix}"
    proc = run_cli(["cpu", "--time", "0.5", "--headless", "--record", str(target)])
    refused(proc, suffix, ".jsonl.zst")
    assert not target.exists()
