"""setuptools' list of packages: every package under probes/, tui/ and themes/,
found on disk and installed under ``probetop.`` (pyproject.toml's package-dir).

pyproject.toml cannot say this itself: its package discovery names packages
after their folders (``probes.cpu``), and the folders are remapped. So a new
package (a probe family) needs no edit anywhere. Everything else is in
pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

TOP = ("probes", "tui", "themes")


def packages() -> list[str]:
    """``probetop.probes``, ``probetop.probes.cpu``, ...: each folder holding
    Python or package data (``probes/record/schema``), never a cache."""
    found = find_namespace_packages(
        include=[f"{top}{tail}" for top in TOP for tail in ("", ".*")],
        exclude=["*.__pycache__"],
    )
    return sorted(f"probetop.{name}" for name in found)


if __name__ == "__main__":
    setup(packages=packages())
