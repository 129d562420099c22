"""Front doors that load on first use hide no import edges.

A family's front door may serve names lazily (``__getattr__`` + importlib) so
`probetop --version` and a one-off request do not pay for what they do not
use. import-linter reads import statements only, so every module a front door
loads that way must also be imported under ``if TYPE_CHECKING:`` in it: then
the contracts (layers, one front door, panes by family) see the edge. This test
resolves every public name of every front door and checks that the module
defining it is an edge of the import graph from that front door.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import grimp
import probetop.probes
import pytest

# core is not a front door: its modules are imported one by one.
FRONT_DOORS = sorted(
    f"probetop.probes.{m.name}"
    for m in pkgutil.iter_modules(probetop.probes.__path__)
    if m.ispkg and m.name != "core"
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("probetop.probes", exclude_type_checking_imports=False, cache_dir=None)


def _served(front_door: str) -> dict[str, str]:
    """Public name -> the module that defines it, for names the front door
    serves lazily (defined in a module it does not import at run time)."""
    module = importlib.import_module(front_door)
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    served: dict[str, str] = {}
    for name in names:
        value = getattr(module, name)  # a lazy name must resolve
        if inspect.ismodule(value):
            continue
        owner = inspect.getmodule(value)
        if owner is None or not owner.__name__.startswith(front_door + "."):
            continue
        served[name] = owner.__name__
    return served


@pytest.mark.parametrize("front_door", FRONT_DOORS)
def test_every_name_a_front_door_serves_is_a_visible_import(
    graph: grimp.ImportGraph, front_door: str
) -> None:
    imported = graph.find_modules_directly_imported_by(front_door)

    def visible(owner: str) -> bool:
        # the defining module, or a package of the family above it (its own
        # front door, e.g. probes.disk.warmup for probes.disk.warmup.probe)
        parts = owner.split(".")
        chain = {".".join(parts[:i]) for i in range(len(front_door.split(".")) + 1, len(parts) + 1)}
        return bool(chain & imported)

    hidden = {name: owner for name, owner in _served(front_door).items() if not visible(owner)}
    assert not hidden, f"{front_door} serves names from modules it never imports: {hidden}"
