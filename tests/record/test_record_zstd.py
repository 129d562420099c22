"""Compressed (.zst) recordings: written by real runs, read by every command,
cut off by kill -9 or truncation, corrupted in the middle, bombs refused."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard
from file_size import size_of
from probetop.probes.record.rawlines import MAGIC, MAX_FILE_BYTES
from probetop.probes.record.reader import RecordingFollower, load_session, stream_session
from probetop.probes.record.writer import RecordingError

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROBETOP, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `probetop cpu --time 2 --record x.jsonl.zst` run."""
    out = tmp_path_factory.mktemp("zst") / "x.jsonl.zst"
    proc = run("cpu", "--time", "2", "--interval", "0.2", "--headless", "--record", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def plain_lines(path: Path) -> list[bytes]:
    with path.open("rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    return data.splitlines()


def test_cli_round_trip_is_compressed_private_and_readable(recorded: Path, tmp_path: Path):
    raw = recorded.read_bytes()
    assert raw[:4] == MAGIC
    assert stat.S_IMODE(os.stat(recorded).st_mode) == 0o600
    lines = [json.loads(row) for row in plain_lines(recorded)]  # standard zstd: zstdcat reads it
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "footer"
    session = load_session(recorded)
    assert session.warnings == []
    assert len(session.samples()) == sum(1 for line in lines if line["type"] == "sample") > 5

    report = run("report", "--no-charts", str(recorded))
    assert report.returncode == 0, report.stderr
    assert "cpu" in report.stdout
    replay = run("replay", "--headless", str(recorded))
    assert replay.returncode == 0, replay.stderr
    csv = tmp_path / "x.csv"
    export = run("export", "-O", "csv", "--out", str(csv), str(recorded))
    assert export.returncode == 0, export.stderr
    assert len(csv.read_text().splitlines()) > 2

    # The same recording, uncompressed and named .zst-less, compares as equal.
    plain = tmp_path / "x.jsonl"
    plain.write_bytes(b"\n".join(plain_lines(recorded)) + b"\n")
    compare = run("compare", "--no-charts", str(plain), str(recorded))
    assert compare.returncode == 0, compare.stderr
    # Detection is by magic number, not by name.
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_bytes(raw)
    assert len(load_session(renamed).lines) == len(session.lines)


def test_truncated_file_keeps_whole_blocks_with_a_warning(recorded: Path, tmp_path: Path):
    raw = recorded.read_bytes()
    full = load_session(recorded)
    seen = set()
    for cut in (len(raw) - 2, len(raw) * 2 // 3, len(raw) // 2):
        part = tmp_path / f"cut{cut}.jsonl.zst"
        part.write_bytes(raw[:cut])
        session = load_session(part)  # no error
        assert any("truncated last zstd frame" in w for w in session.warnings)
        assert session.lines == full.lines[: len(session.lines)]
        seen.add(len(session.lines))
        with stream_session(part) as stream:
            assert sum(1 for _ in stream.records()) >= len(session.lines)
        assert any("truncated" in w for w in stream.warnings)
        proc = run("report", "--no-charts", str(part))
        assert proc.returncode == 0, proc.stderr
        assert "truncated" in proc.stderr + proc.stdout
    assert len(seen) > 1  # the cuts kept different amounts: blocks decode on their own


def test_corrupted_block_in_the_middle_is_an_error_naming_the_offset(
    recorded: Path, tmp_path: Path
):
    raw = bytearray(recorded.read_bytes())
    bad = tmp_path / "bad.jsonl.zst"
    raw[len(raw) // 2] ^= 0xFF
    raw[len(raw) // 2 + 1] ^= 0x5A
    bad.write_bytes(bytes(raw))
    with pytest.raises(RecordingError, match=r"(corrupted zstd data at byte \d+|line \d+)"):
        load_session(bad)
    for command in (["report"], ["replay", "--headless"], ["export", "-O", "csv"]):
        proc = run(*command, str(bad))
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert str(bad) in proc.stderr
        assert "byte" in proc.stderr or "line" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    # Garbage appended after whole frames is not mistaken for a cut-off frame.
    junk = tmp_path / "junk.jsonl.zst"
    junk.write_bytes(recorded.read_bytes() + b"not zstd at all, and long enough")
    with pytest.raises(RecordingError, match="bad magic"):
        load_session(junk)


def test_zst_bomb_is_refused_within_the_plain_caps(tmp_path: Path):
    header = json.dumps({"type": "header", "format": "probetop-session", "schema": 1})
    cctx = zstandard.ZstdCompressor(level=19)
    # One endless line: a few KiB on disk, refused at the line cap.
    long_line = tmp_path / "line.jsonl.zst"
    long_line.write_bytes(cctx.compress(header.encode() + b"\n" + b"x" * (64 << 20)))
    assert long_line.stat().st_size < 64 << 10
    with pytest.raises(RecordingError, match="line 2 is longer than"):
        load_session(long_line)
    # Many short lines beyond the total cap: refused at MAX_FILE_BYTES decompressed.
    many = tmp_path / "many.jsonl.zst"
    with many.open("wb") as f, cctx.stream_writer(f) as w:
        w.write(header.encode() + b"\n")
        chunk = (b'{"type":"x","pad":"' + b"p" * 240 + b'"}\n') * 4_000
        for _ in range(MAX_FILE_BYTES // len(chunk) + 2):
            w.write(chunk)
    assert many.stat().st_size < 4 << 20
    with pytest.raises(RecordingError, match="reads recordings up to"):
        load_session(many)


def test_kill_9_loses_at_most_the_last_second(tmp_path: Path):
    out = tmp_path / "s.jsonl.zst"
    proc = subprocess.Popen(
        [*PROBETOP, "--headless", "--interval", "0.2", "--record", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if size_of(out) > 0:
                with RecordingFollower(out) as f:
                    if sum(1 for _ in f.poll()) >= 8:
                        break
            time.sleep(0.2)
        else:
            pytest.fail("recording did not start")
        time.sleep(1.5)
        killed_at = dt.datetime.now(dt.timezone.utc)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    session = load_session(out)
    assert session.footer is None
    started = dt.datetime.fromisoformat(session.header["started_at"])
    ran_for = (killed_at - started).total_seconds()
    last_t = max(s["t"] for s in session.samples())
    assert last_t >= ran_for - 1.0, (last_t, ran_for)


def test_follower_reads_a_growing_zst_block_by_block(recorded: Path, tmp_path: Path):
    raw = recorded.read_bytes()
    growing = tmp_path / "g.jsonl.zst"
    growing.write_bytes(b"")
    follower = RecordingFollower(growing)
    got = []
    with growing.open("ab") as f:
        for start in range(0, len(raw), 37):  # arbitrary cuts: blocks arrive in pieces
            f.write(raw[start : start + 37])
            f.flush()
            got.extend(follower.poll())
    got.extend(follower.poll())
    assert follower.footer is not None
    assert [r for _, r in got] == [r for _, r in load_session(recorded).records()]
    assert len(follower.tail(4096)) > 1
