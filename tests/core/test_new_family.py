"""A new probe family is its own parts plus one registry line, and nothing else.

docs/architecture.md ("How to add a probe family") promises that a family
touches, outside its folder, its pane, its docs and its tests, one line:
``Listed("x")`` in probes/registry.py. This holds the promise: in a copy of
the tree it adds a throwaway family ``zz`` that way (a clone of mem under
another name: its package, its pane, its docs page, its docs/metrics.md
section and docs/usage.md --assert row, its tests and benchmark, and the
registry line) and runs, against the copy, the import contracts and every
test that reads the registry (families whole, catalogues agreeing, metrics
documented, front doors, option docs), then ``probetop zz`` headless. A list
kept anywhere else (a package list, a catalogue, a contract) would fail here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(900)  # a nested pytest over the copy: minutes on a loaded machine

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# The tests that read the registry: each fails when a family lacks a part.
REGISTRY_TESTS = (
    "tests/core/test_families.py",
    "tests/analysis/test_catalogues_agree.py",
    "tests/metrics/test_catalog.py",
    "tests/core/test_front_door_surface.py",
    "tests/core/test_option_docs.py",
)


def rename(text: str) -> str:
    """mem's names as zz's: the command, kind, package, pane, docs page,
    --assert names and Prometheus names."""
    text = re.sub(r"\bmem\b", "zz", text)
    return re.sub(r"probetop_mem(?=_|\b)", "probetop_zz", text)


def add_family(root: Path) -> None:
    """What a developer adds for family zz, as docs/architecture.md says."""
    ignore = shutil.ignore_patterns("__pycache__")
    # 1. the family package
    shutil.copytree(root / "probes/mem", root / "probes/zz", ignore=ignore)
    for path in (root / "probes/zz").rglob("*.py"):
        path.write_text(rename(path.read_text()))
    # 2. the one registry line
    registry = root / "probes/registry.py"
    line = '    Listed("mem"),\n'
    text = registry.read_text()
    assert line in text
    registry.write_text(text.replace(line, line + '    Listed("zz"),\n', 1))
    # 3. the pane
    (root / "tui/ui/panes/zz.py").write_text(rename((root / "tui/ui/panes/mem.py").read_text()))
    # 4. docs: its page, its docs/metrics.md section, its --assert row; tests, benchmark
    (root / "docs/zz.md").write_text(rename((root / "docs/mem.md").read_text()))
    metrics = (root / "docs/metrics.md").read_text()
    section = metrics.split("\n### mem\n", 1)[1].split("\n### ", 1)[0]
    (root / "docs/metrics.md").write_text(
        metrics.replace("\n### mem\n", f"\n### zz\n{rename(section)}\n### mem\n", 1)
    )
    usage = (root / "docs/usage.md").read_text()
    row = next(ln for ln in usage.splitlines() if ln.startswith("| mem |"))
    (root / "docs/usage.md").write_text(usage.replace(f"{row}\n", f"{row}\n{rename(row)}\n", 1))
    (root / "tests/zz").mkdir()
    for path in (root / "tests/mem").glob("*.py"):
        (root / "tests/zz" / rename(path.name).replace("_mem_", "_zz_")).write_text(
            rename(path.read_text())
        )
    bench = (root / "benchmarks/mem_vs_sysbench.py").read_text()
    (root / "benchmarks/zz_vs_sysbench.py").write_text(rename(bench))


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(a copy of the tree with zz added, an environment importing ``probetop``
    from the copy)."""
    base = tmp_path_factory.mktemp("newfamily")
    copy = base / "tree"
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", ".*_cache", "build", "dist"
    )
    shutil.copytree(REPO, copy, ignore=ignore, symlinks=True)
    add_family(copy)
    # `probetop.<top>` from the copy: the top-level folders under a probetop/ of links
    # (what pyproject.toml's package-dir does for an install).
    (base / "path" / "probetop").mkdir(parents=True)
    for top in ("probes", "tui", "themes"):
        (base / "path" / "probetop" / top).symlink_to(copy / top)
    env = {**os.environ, "PYTHONPATH": f"{base / 'path'}{os.pathsep}{copy}"}
    return copy, env


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_copy_imports_probetop_from_the_copy(tree: tuple[Path, dict[str, str]]) -> None:
    copy, env = tree
    code = "import probetop.probes.registry as r; print(r.__file__); print(r.NAMES)"
    out = run([sys.executable, "-c", code], copy, env)
    assert out.returncode == 0, out.stderr
    where, names = out.stdout.splitlines()
    assert str(copy.parent) in where and "'zz'" in names


def test_the_contracts_hold_for_the_new_family(tree: tuple[Path, dict[str, str]]) -> None:
    copy, env = tree
    out = run([str(BIN / "lint-imports")], copy, env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_the_registry_tests_pass_with_the_new_family(tree: tuple[Path, dict[str, str]]) -> None:
    copy, env = tree
    out = run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *REGISTRY_TESTS],
        copy,
        {**env, "PROBETOP_TESTS_NO_NATIVE_WARMUP": "1"},  # they start no native loop
    )
    assert out.returncode == 0, out.stdout[-4000:]
    assert "[zz]" in out.stdout  # the new family was among those checked


def test_the_new_command_runs(tree: tuple[Path, dict[str, str]]) -> None:
    copy, env = tree
    main = [sys.executable, "-m", "probetop.tui.main"]
    listed = run([*main, "--help"], copy, env)
    assert listed.returncode == 0 and re.search(r"^\s+zz\s", listed.stdout, re.M), listed.stdout
    ran = run([*main, "zz", "--time", "1", "--headless", "--json"], copy, env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout)["total_events"] > 0
