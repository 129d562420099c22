"""The wheel holds every package: pyproject.toml lists each one (the top-level
folders are remapped under ``probetop.``, so setuptools cannot find them)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = None


def source_packages() -> set[str]:
    found = set()
    for top in ("probes", "tui", "themes"):
        for init in (REPO / top).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO).parts
            found.add(".".join(("probetop", *rel)))
    return found


def test_every_source_package_is_listed_in_pyproject() -> None:
    text = (REPO / "pyproject.toml").read_text()
    if tomllib is not None:
        listed = set(tomllib.loads(text)["tool"]["setuptools"]["packages"])
    else:  # the names appear quoted in the packages list
        listed = {p for p in source_packages() if f'"{p}"' in text}
    missing = sorted(source_packages() - listed)
    assert missing == [], f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
