"""`make setup` (and so `make demo`) runs `probetop compile` again after an
update that changes a native loop's sources (issue 28).

Before, its stamp followed pyproject.toml only: after a `git pull` that
changed probes/disk/native.py, `make demo` compiled nothing, the kept loops
were stale, and the first IOPS, warm-up or ICMP run compiled them with numba
on screen (20-55 s; every later run then imported numba).

The Makefile runs here as `make -n` (print, run nothing) on a copy of the
tree's Makefile and loop sources in a temporary directory, so no real
source's mtime moves (that would make numba's cache entries stale for every
other test)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from probetop.probes.disk import workers
from probetop.probes.icmp import loopstate

REPO = Path(__file__).resolve().parents[2]


def _native_sources_in_makefile() -> list[str]:
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("NATIVE_SOURCES :="):
            return line.split(":=", 1)[1].split()
    raise AssertionError("no NATIVE_SOURCES in the Makefile")


def test_the_makefile_lists_every_file_the_kept_loops_are_built_from() -> None:
    code = sorted(
        str(Path(p).resolve().relative_to(REPO)) for p in (*workers._SOURCES, *loopstate._SOURCES)
    )
    assert sorted(_native_sources_in_makefile()) == code


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The Makefile, pyproject.toml and the loop sources, then an installed
    venv's stamps (a `make setup` done), all older than now."""
    for rel in ("Makefile", "pyproject.toml", *_native_sources_in_makefile()):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    venv = tmp_path / ".venv"
    venv.mkdir()
    for stamp in (".installed-stamp", ".compiled-stamp"):
        (venv / stamp).touch()
    old = 1_000_000_000
    for path in tmp_path.rglob("*"):
        os.utime(path, (old, old))
    for stamp in (".installed-stamp", ".compiled-stamp"):
        os.utime(venv / stamp, (old + 10, old + 10))
    return tmp_path


def _dry_setup(tree: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    out = subprocess.run(
        ["make", "-n", "-C", str(tree), "setup"], capture_output=True, text=True, check=True
    )
    return out.stdout


def test_setup_compiles_nothing_when_the_loops_did_not_change(tree: Path) -> None:
    assert "probetop compile" not in _dry_setup(tree)


@pytest.mark.parametrize("source", _native_sources_in_makefile())
def test_setup_compiles_again_after_a_loop_source_changed(tree: Path, source: str) -> None:
    (tree / source).touch()  # a `git pull` that changed it
    dry = _dry_setup(tree)
    assert "probetop compile" in dry
    assert "pip install" not in dry  # the install itself is up to date
