"""What a module imports, read from its source: the layer tests' one parser."""

from __future__ import annotations

import ast
from pathlib import Path


def imported(path: Path, package: list[str], *, type_checking: bool = True) -> set[str]:
    """Every module ``path`` (of ``package``) imports, as absolute dotted names, lazy
    imports in functions included; ``type_checking=False`` leaves out what
    ``if TYPE_CHECKING:`` blocks import (nothing imported when the module runs)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        skip = isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        if skip and not type_checking:
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                within = package[: len(package) - node.level + 1]
                base = ".".join(within + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text("utf-8")))
    return found
