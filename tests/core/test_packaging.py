"""The wheel holds every package: pyproject.toml lists each folder under probes/,
tui/ and themes/ that holds Python (the top-level folders are remapped under
``probetop.``, so setuptools' own discovery cannot name them), and this test
names any that is missing, so a new probe family's package cannot be left out
of an install silently."""

from __future__ import annotations

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]


def source_packages() -> set[str]:
    found = set()
    for top in ("probes", "tui", "themes"):
        for init in (REPO / top).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            rel = init.parent.relative_to(REPO).parts
            found.add(".".join(("probetop", *rel)))
    return found


def listed_packages() -> list[str]:
    doc = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(doc["tool"]["setuptools"]["packages"])


def test_pyproject_lists_every_source_package_and_the_schema_data() -> None:
    listed = set(listed_packages())
    missing = sorted(source_packages() - listed)
    assert not missing, "add to [tool.setuptools] packages in pyproject.toml: " + ", ".join(
        f'"{name}"' for name in missing
    )
    assert "probetop.probes.record.schema" in listed  # data only: the JSON schemas


def test_pyproject_lists_no_package_that_is_not_there() -> None:
    gone = [name for name in listed_packages() if not (REPO / Path(*name.split(".")[1:])).is_dir()]
    assert not gone, gone


def test_the_list_has_no_duplicates() -> None:
    names = listed_packages()
    assert len(names) == len(set(names))
