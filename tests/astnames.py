"""AST helpers shared by the tests that read the source tree."""

from __future__ import annotations

import ast


def dotted_parts(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]: the names of a chain of attributes
    that starts at a name; None when it starts anywhere else (a call, a
    subscript, a literal)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]
