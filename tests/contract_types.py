"""import-linter contract types that read the families from probes/registry.py,
so a new family is in the layers and behind its front door without an edit
to pyproject.toml (``[tool.importlinter] contract_types``; ``lint-imports``
runs from the repository root, which it puts on the path).

- ``family_layers``: a ``layers`` contract whose layer named ``FAMILIES``
  is every registered family's front door, independent of each other.
- ``front_doors``: every registered family's modules are imported only
  through its front door (``probetop.probes.<family>``): one ``protected``
  contract per family, checked and reported as one.
"""

from __future__ import annotations

from typing import Any

import grimp
from importlinter import Contract, ContractCheck, output
from importlinter.contracts.layers import LayersContract
from importlinter.contracts.protected import ProtectedContract

FAMILIES = "FAMILIES"
"""The layer a ``family_layers`` contract fills with the registered families."""


def front_doors() -> list[str]:
    """Each registered family's front door package, once (disk holds two families)."""
    from probetop.probes import registry

    return sorted({listed.module for listed in registry.COMMANDS + registry.PASSIVE})


class FamilyLayersContract(LayersContract):
    type_name = "family_layers"

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        layers = [
            " | ".join(front_doors()) if layer.strip() == FAMILIES else layer
            for layer in contract_options.get("layers", [])
        ]
        super().__init__(name, session_options, {**contract_options, "layers": layers})


class FrontDoorsContract(Contract):
    type_name = "front_doors"

    def __init__(
        self, name: str, session_options: dict[str, Any], contract_options: dict[str, Any]
    ) -> None:
        super().__init__(name, session_options, contract_options)
        self.doors = [
            (
                door,
                ProtectedContract(
                    f"the {door} front door",
                    session_options,
                    {"protected_modules": [f"{door}.*"], "allowed_importers": [door]},
                ),
            )
            for door in front_doors()
        ]

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        broken = []
        for door, contract in self.doors:
            result = contract.check(graph, verbose)
            if not result.kept:
                broken.append((door, contract, result))
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for door, contract, result in check.metadata["broken"]:
            output.print_error(f"{door}'s modules are imported past its front door:")
            output.new_line()
            contract.render_broken_contract(result)
