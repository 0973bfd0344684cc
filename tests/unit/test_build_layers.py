"""The build service's layers: only its state package speaks SQL, and its modules import
one another without a circle."""

from __future__ import annotations

from pathlib import Path

from module_imports import imported

import strata.builds

ROOT = Path(strata.builds.__file__).parent
SQL = ("sqlalchemy", "strata.store.schema", "strata.store.engine", "strata.store.bulk")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path) -> set[str]:
    """What ``path`` imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    return imported(path, package, type_checking=False)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def test_only_build_state_speaks_sql() -> None:
    modules = _modules()
    assert "strata.builds.state.catalog" in modules
    bad = sorted(
        f"{name} imports {imported}"
        for name, path in modules.items()
        if not name.startswith("strata.builds.state")
        for imported in _runtime_imports(path)
        if imported.startswith(SQL)
    )
    assert not bad, bad


def test_the_state_package_does_speak_sql() -> None:
    """The check above would pass on anything if it saw no imports."""
    assert any(i.startswith("sqlalchemy") for i in _runtime_imports(ROOT / "state" / "catalog.py"))


def test_the_build_modules_import_one_another_without_a_circle() -> None:
    modules = _modules()
    # A module importing its own package's __init__ (the package imports it): no circle.
    edges = {
        name: {
            i
            for i in _runtime_imports(path)
            if i in modules and i != name and not name.startswith(i + ".")
        }
        for name, path in modules.items()
    }
    done: set[str] = set()

    def walk(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise AssertionError(" -> ".join((*path[path.index(name) :], name)))
        if name in done:
            return
        for nxt in sorted(edges[name]):
            walk(nxt, (*path, name))
        done.add(name)

    for name in sorted(edges):
        walk(name, ())
