"""No import cycles between probetop's modules, TYPE_CHECKING imports included.

import-linter's layers and front-door contracts do not see a cycle inside one
package (``icmp.probe`` <-> ``icmp.stream``) or inside one layer; a cycle
there is two modules that are one job, or a callback into a caller. Function-
local imports count too: grimp reads every import statement in a module.
"""

from __future__ import annotations

import grimp
import pytest

ROOTS = ("probetop.probes", "probetop.tui", "probetop.themes")

# A package's front door (``__init__``) re-exports what its own modules define;
# those modules importing a sibling THROUGH the front door would be a cycle,
# and are counted like any other.


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:
        nonlocal counter
        # Iterative, so a deep graph cannot hit the recursion limit.
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.y", imported="a.z")
    assert _cycles(graph) == [["a.x", "a.y"]]


def test_no_import_cycles() -> None:
    try:
        graph = grimp.build_graph(*ROOTS, exclude_type_checking_imports=False, cache_dir=None)
    except Exception as exc:  # pragma: no cover - grimp cannot read the installed tree
        pytest.fail(f"grimp cannot build the import graph: {exc}")
    cycles = _cycles(graph)
    assert not cycles, "import cycles (each line one cycle):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )
