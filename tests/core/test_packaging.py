"""The wheel holds every package: setup.py finds each folder under probes/,
tui/ and themes/ (the top-level folders are remapped under ``probetop.``, so
pyproject.toml's own discovery cannot name them), and a new one (a probe
family) needs no edit."""

from __future__ import annotations

import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def source_packages() -> set[str]:
    found = set()
    for top in ("probes", "tui", "themes"):
        for init in (REPO / top).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO).parts
            found.add(".".join(("probetop", *rel)))
    return found


def test_setup_finds_every_source_package_and_the_schema_data() -> None:
    packages = runpy.run_path(str(REPO / "setup.py"), run_name="not-main")["packages"]
    found = set(packages())
    assert source_packages() <= found, sorted(source_packages() - found)
    assert "probetop.probes.record.schema" in found  # data only: the JSON schemas
    assert not [p for p in found if "__pycache__" in p]


def test_pyproject_keeps_no_package_list() -> None:
    """One way to list packages: two would drift."""
    text = (REPO / "pyproject.toml").read_text()
    assert "\npackages = [" not in text and "packages.find" not in text
