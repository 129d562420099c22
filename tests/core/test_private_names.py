"""No module reaches into another module's private names (issue 25, want 4).

A name another module needs is part of its owner's contract: it is public (no
underscore) and its docstring says what it promises. A private name imported
across modules is the sign of a wrong cut: either the name is public, or the
two modules do one job and are one module.

The scan reads probes/ and tui/ with ast (nothing is imported) and finds:
- ``from M import _name`` where M is another probetop module;
- ``m._name`` where ``m`` is bound to another probetop module by an import;
- ``getattr``/``setattr``/``hasattr``/``delattr`` with a private name as a
  string constant on anything but ``self``/``cls`` (a private attribute reached
  around the type checker).

Run it as a script to list the sites: ``python tests/core/test_private_names.py``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from astnames import dotted_parts

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"probes": "probetop.probes", "tui": "probetop.tui"}

# Private attributes of OTHER projects' objects, each reached because the
# library offers no public way (a site here is a risk on every upgrade of that
# library; the tests around each one fail when the attribute goes away).
THIRD_PARTY = {
    # asyncio: drop a signal's handler from the loop without remove_signal_handler
    # resetting its disposition to SIG_DFL (a fallback takes the public way).
    ("tui/run/livesession.py", "getattr(loop, '_signal_handlers', None)"),
    # asyncio: its signal wake-up socket, set again with warn_on_full_buffer=False
    # (a flood of kill printed a traceback per signal; without it: as asyncio does).
    ("tui/run/livesession.py", "getattr(loop, '_csock', None)"),
    # Textual's input parser: its pending timeout, so the blocking input thread
    # wakes for it instead of polling (a Textual without it: polled as Textual does).
    ("tui/ui/quietdriver.py", "getattr(parser, '_timeout_time', _MISSING)"),
    # CPython's regular-expression compiler (3.11-3.13 only, keyed by the
    # interpreter's build): its compiled programs kept across start-ups; any
    # other layout compiles as ``re`` does (tests/tui/test_codecache.py).
    ("tui/run/codecache.py", "getattr(re, '_compiler', None)"),
    # Textual: a widget's line-filter background, cached beside Textual's own
    # line cache that the panes redraw from (None: Textual's own path).
    ("tui/ui/widgets/pane.py", "getattr(widget, '_filter_background', None)"),
}

_REFLECTION = ("getattr", "setattr", "hasattr", "delattr")


@dataclass(frozen=True)
class Site:
    """One reach into another module's private name."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module under probes/ and tui/."""
    found: dict[str, Path] = {}
    for folder, dotted in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((dotted, *parts))] = path
    return found


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def scan() -> list[Site]:
    modules = _modules()
    sites: list[Site] = []
    for module, path in modules.items():
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        is_package = path.name == "__init__.py"
        bound: dict[str, str] = {}  # local name -> the probetop module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("probetop."):
                        if alias.asname:
                            bound[alias.asname] = alias.name
                        else:
                            bound["probetop"] = "probetop"
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(node, module, is_package)
                if not source.startswith("probetop."):
                    continue
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{source}.{alias.name}"
                    elif _private(alias.name) and source != module:
                        sites.append(Site(rel, node.lineno, f"from {source} import {alias.name}"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                chain = dotted_parts(node)
                if not chain or chain[0] not in bound:
                    continue
                owner = ".".join([bound[chain[0]], *chain[1:-1]])
                if owner != module and owner in modules:
                    sites.append(Site(rel, node.lineno, ast.unparse(node)))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in _REFLECTION
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
                and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))
            ):
                sites.append(Site(rel, node.lineno, ast.unparse(node)))
    return sorted(sites, key=lambda s: (s.path, s.line, s.text))


def test_scan_finds_a_cross_module_private_import(tmp_path: Path, monkeypatch) -> None:
    # The check itself can fail: a planted reach of each kind is found.
    pkg = tmp_path / "probes" / "fam"
    pkg.mkdir(parents=True)
    (tmp_path / "tui").mkdir()
    (tmp_path / "probes" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("_SECRET = 1\n_own = _SECRET\n")
    (pkg / "b.py").write_text(
        "from .a import _SECRET\n"
        "from probetop.probes.fam import a\n"
        "import probetop.probes.fam.a as aa\n"
        "x = a._SECRET + aa._SECRET\n"
        "y = getattr(x, '_hidden')\n"
        "z = getattr(self, '_mine')\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = [s.text for s in scan()]
    assert found == [
        "from probetop.probes.fam.a import _SECRET",
        "a._SECRET",
        "aa._SECRET",
        "getattr(x, '_hidden')",
    ], found


def test_no_private_name_crosses_modules() -> None:
    left = [s for s in scan() if (s.path, s.text) not in THIRD_PARTY]
    assert left == [], "\n".join(map(str, left))


def test_the_third_party_list_is_current() -> None:
    found = {(s.path, s.text) for s in scan()}
    stale = [item for item in THIRD_PARTY if item not in found]
    assert stale == [], stale


if __name__ == "__main__":
    found = scan()
    print("\n".join(map(str, found)))
    print(f"{len(found)} sites")
