"""The lineage package's layers: record and query never import each other, and no
function in it is longer than a reader can follow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from module_imports import imported

import strata.lineage

ROOT = Path(strata.lineage.__file__).parent
MAX_LINES = 80


def _modules(sub: str) -> list[Path]:
    return sorted((ROOT / sub).rglob("*.py"))


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, as absolute dotted names (lazy imports included)."""
    return imported(path, ["strata", "lineage", *path.relative_to(ROOT).parent.parts])


@pytest.mark.parametrize(("sub", "other"), [("query", "record"), ("record", "query")])
def test_a_path_never_imports_the_other(sub: str, other: str) -> None:
    modules = _modules(sub)
    assert modules, f"no modules under lineage/{sub}"
    bad = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules
        for name in _imported(path)
        if name == f"strata.lineage.{other}" or name.startswith(f"strata.lineage.{other}.")
    }
    assert not bad, sorted(bad)


def test_the_shared_modules_import_neither_path() -> None:
    shared = [p for p in ROOT.glob("*.py") if p.name not in ("__init__.py", "deletes.py")]
    assert {p.name for p in shared} >= {"producer.py"}
    bad = {
        f"{path.name} imports {name}"
        for path in shared
        for name in _imported(path)
        if name.startswith(("strata.lineage.record", "strata.lineage.query"))
    }
    assert not bad, sorted(bad)


def test_the_check_sees_imports() -> None:
    """The checks above would pass on anything if they saw no imports."""
    imported = _imported(ROOT / "query" / "graph.py")
    assert "strata.lineage.query.common" in imported
    assert "strata.store.owners.jobs.rows" in imported


def test_no_function_is_longer_than_a_reader_can_follow() -> None:
    long = sorted(
        (node.end_lineno - node.lineno + 1, f"{path.relative_to(ROOT)}:{node.name}")
        for path in sorted(ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_LINES
    )
    assert not long, long
