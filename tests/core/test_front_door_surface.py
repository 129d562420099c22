"""A family's front door exports what is used outside the family, and says so.

Each name in a front door's ``__all__`` (``probetop.probes.<family>``) must be
imported by something outside ``probes/<family>/``: the program, a benchmark,
another family, or a test (a family's own tests count: they drive the family
through its door, as a user would). The descriptor the registry reads by
name counts as used. A name nobody outside imports is an internal: it stays
in its module, and the door stops promising it. Every exported name is also
named in the door's docstring, the family's contents page.

Usages are read from the source (``ast``): ``from probetop.probes.<f> import
NAME``, ``<f>.NAME`` after ``from probetop.probes import <f>`` or ``import
probetop.probes.<f> as <f>``, and ``probetop.probes.<f>.NAME``.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from astnames import dotted_parts
from probetop.probes import registry

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "probetop.probes."
DOORS = sorted({listed.module for listed in registry.COMMANDS + registry.PASSIVE})


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if any(part.startswith(".") or part in ("build", "node_modules") for part in rel.parts):
            continue
        yield rel.as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(rel))


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes (what ``ast.unparse``
    prints for one), else None."""
    parts = dotted_parts(node)
    return None if parts is None else ".".join(parts)


def _uses(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(front door, name) for every name of a front door this module uses.
    One walk of the tree: the attributes are resolved after it, once every
    import (an alias may be imported below its first use) is known."""
    aliases: dict[str, str] = {}  # local name -> front door module
    attributes: list[ast.Attribute] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in DOORS:
                for alias in node.names:
                    yield node.module, alias.name
            elif node.module == PREFIX.rstrip("."):
                for alias in node.names:
                    if PREFIX + alias.name in DOORS:
                        aliases[alias.asname or alias.name] = PREFIX + alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in DOORS and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in attributes:
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            yield aliases[node.value.id], node.attr
        elif isinstance(node.value, ast.Attribute):
            door = _dotted(node.value)
            if door is not None and door in DOORS:
                yield door, node.attr


@pytest.fixture(scope="module")
def used_outside() -> dict[str, set[str]]:
    """Front door -> the names of it used by modules outside its family."""
    used: dict[str, set[str]] = defaultdict(set)
    for rel, tree in _sources():
        for door, name in _uses(tree):
            family_dir = "probes/" + door.removeprefix(PREFIX) + "/"
            if not rel.startswith(family_dir):
                used[door].add(name)
    for listed in registry.COMMANDS + registry.PASSIVE:  # read by name
        used[listed.module].add(listed.attr)
    return used


def _exported(door: str) -> list[str]:
    names = getattr(importlib.import_module(door), "__all__", None)
    assert names is not None, f"{door} has no __all__: its exports are not stated"
    return list(names)


@pytest.mark.parametrize("door", DOORS)
def test_a_front_door_exports_only_what_is_used_outside_its_family(
    door: str, used_outside: dict[str, set[str]]
) -> None:
    unused = sorted(set(_exported(door)) - used_outside[door])
    assert not unused, (
        f"{door} exports names nothing outside its family imports: {unused}; "
        "drop them from its __all__ and imports (import them from their module inside the family)"
    )


@pytest.mark.parametrize("door", DOORS)
def test_every_exported_name_resolves_and_is_documented(door: str) -> None:
    module = importlib.import_module(door)
    doc = module.__doc__ or ""
    for name in _exported(door):
        getattr(module, name)  # a lazy name must resolve
    undocumented = [name for name in _exported(door) if f"``{name}" not in doc]
    assert not undocumented, f"{door}'s docstring does not name {undocumented}"


def test_the_usage_scan_sees_each_import_form() -> None:
    """The scan finds a name however it is imported, and only front doors' names."""
    source = (
        "from probetop.probes.cpu import EPS\n"
        "from probetop.probes import mem\n"
        "import probetop.probes.icmp as icmp\n"
        "import probetop.probes.http\n"
        "from probetop.probes.cpu.records import THREADS\n"
        "mem.OPS, icmp.PPS, probetop.probes.http.SPEC\n"
    )
    found = set(_uses(ast.parse(source)))
    assert found == {
        ("probetop.probes.cpu", "EPS"),
        ("probetop.probes.mem", "OPS"),
        ("probetop.probes.icmp", "PPS"),
        ("probetop.probes.http", "SPEC"),
    }
