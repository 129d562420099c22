"""The wheel holds every package and data file, found by setuptools itself.

pyproject.toml lists no packages: setuptools' discovery reads its package-dir
(``probetop.probes`` = ``probes`` ...) and installs every folder under probes/,
tui/ and themes/ under ``probetop.``. This builds the wheel as pip does
(build isolation, the build-system's setuptools) from a copy of the tree with a
throwaway family package added, and compares the wheel's files with the
source's: a new family's package (and its data) is installed with no edit to
pyproject.toml, and the build prints no warning of setuptools'.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOPS = ("probes", "tui", "themes")
# Setuptools' own notes that are about this machine, not the project
# (PYTHONDONTWRITEBYTECODE=1 makes it say it skips byte-compiling).
MACHINE_NOTES = ("byte-compiling is disabled",)


def source_files(root: Path) -> set[str]:
    """Every file under the packages' folders, as the wheel names it."""
    return {
        "probetop/" + path.relative_to(root).as_posix()
        for top in TOPS
        for path in (root / top).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc",)
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], str]:
    """(the copied tree, the wheel's file names, the build's output)."""
    tree = tmp_path_factory.mktemp("tree")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for top in TOPS:
        shutil.copytree(REPO / top, tree / top, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, tree / name)
    # A throwaway family: a package, a subpackage and a data file, named in no list.
    fake = tree / "probes" / "zzthrowaway"
    (fake / "engine").mkdir(parents=True)
    (fake / "__init__.py").write_text('"""A throwaway family."""\n')
    (fake / "engine" / "__init__.py").write_text("")
    (fake / "catalogue.json").write_text("{}\n")
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = build.stdout + build.stderr
    if build.returncode != 0 and "Could not find a version" in log:
        pytest.skip("the build-system's setuptools cannot be fetched here")
    assert build.returncode == 0, log[-3000:]
    (wheel,) = out.glob("probetop-*.whl")
    return tree, set(zipfile.ZipFile(wheel).namelist()), log


def test_the_wheel_holds_every_source_file_and_nothing_else(
    built: tuple[Path, set[str], str],
) -> None:
    tree, names, _ = built
    expected = source_files(tree)
    assert "probetop/probes/zzthrowaway/engine/__init__.py" in expected
    assert "probetop/probes/record/schema/session-line.schema.json" in expected
    assert "probetop/themes/probetop.tcss" in expected
    packaged = {n for n in names if ".dist-info/" not in n}
    assert sorted(expected - packaged) == [], "not in the wheel"
    assert sorted(packaged - expected) == [], "in the wheel, not in the source"


def test_the_build_prints_no_setuptools_warning(built: tuple[Path, set[str], str]) -> None:
    _, _, log = built
    backend = [ln for ln in log.splitlines() if ln.startswith("  ")]  # pip indents its backend
    warned = [
        ln
        for ln in backend
        if any(w in ln.lower() for w in ("warn", "deprecat", "absent from"))
        and not any(note in ln for note in MACHINE_NOTES)
        and "Location 'file:" not in ln  # pip's own note on this machine's index config
    ]
    assert warned == []
