"""A recording that yields no first line says why, never "empty file" for bytes.

Found by a hostile review: the first 500 bytes of a 1.6 KB ``.jsonl.zst``
(a copy cut short) were refused as "empty file, not a probetop recording".
Real files: a recording made by the CLI, cut with head, zstd of nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

PROBETOP = [sys.executable, "-m", "probetop.tui.main"]


def report(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROBETOP, "report", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def zst(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    rec = tmp_path_factory.mktemp("zst") / "r.jsonl.zst"
    made = subprocess.run(
        [*PROBETOP, "cpu", "--time", "0.3", "--record", str(rec), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return rec.read_bytes()


def test_a_zst_cut_inside_its_first_block_says_cut_off(zst: bytes, tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(zst[:40])  # past the frame header, inside the first block
    out = report(cut)
    assert out.returncode == 2
    assert "40 bytes of zstandard that end before its first line is whole (cut off)" in out.stderr
    assert "empty file" not in out.stderr


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty file"),
        (b"\n \n", "empty file (3 bytes of blank lines)"),
        (zstandard.ZstdCompressor().compress(b""), "zstandard-compressed empty file"),
    ],
)
def test_no_first_line_names_what_the_file_holds(tmp_path: Path, content: bytes, words: str):
    path = tmp_path / "x.jsonl.zst"
    path.write_bytes(content)
    out = report(path)
    assert out.returncode == 2 and f"{words}, not a probetop recording" in out.stderr
