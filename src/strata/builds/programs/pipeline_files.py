"""The files a pipeline module needs to be imported again: itself and, transitively, the
modules of its own folder it imports.

A program version keeps these beside the files its fingerprint read, so a past version
can be re-run from what was stored even when the pipeline module imports helpers the
transform itself never calls, or declares a transform made by a factory elsewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

from strata.builds.programs.syntax import parse

# (module file, root) -> (each file's stamp, the files): a pipeline file declaring
# thousands of transforms is read and parsed once, not once per new program version.
_known: dict[tuple[Path, Path], tuple[dict[str, tuple[int, int]], dict[str, str]]] = {}


def imported_files(module_file: Path, root: Path) -> dict[str, str]:
    """``module_file`` and each module under ``root`` it imports, by path relative to
    ``root``; imports that do not resolve to a file under ``root`` are libraries."""
    key = (module_file.resolve(), root.resolve())
    known = _known.get(key)
    if known is not None and all(_stamp(key[1] / rel) == st for rel, st in known[0].items()):
        return known[1]
    files = _read_imported(*key)
    _known[key] = ({rel: _stamp(key[1] / rel) for rel in files}, files)
    return files


def _stamp(file: Path) -> tuple[int, int]:
    try:
        st = file.stat()
    except FileNotFoundError:  # deleted since: read again
        return -1, -1
    return st.st_mtime_ns, st.st_size


def _read_imported(module_file: Path, root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    pending = [module_file]
    while pending:
        file = pending.pop()
        rel = file.relative_to(root).as_posix()
        if rel in found:
            continue
        found[rel] = text = file.read_text(encoding="utf-8")
        try:
            tree = parse(text, str(file))
        except SyntaxError:  # discovery names syntax errors; nothing more to follow here
            continue
        pending.extend(_local_modules(tree, file, root))
    return dict(sorted(found.items()))


def _local_modules(tree: ast.Module, file: Path, root: Path) -> list[Path]:
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.extend(_module_files(root, alias.name.split(".")))
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, file, root)
            if base is None:
                continue
            out.extend(_module_files(root, base))
            for alias in node.names:  # ``from pkg import module``
                out.extend(_module_files(root, [*base, alias.name]))
    return out


def _base(node: ast.ImportFrom, file: Path, root: Path) -> list[str] | None:
    """The dotted path ``from X import`` names, relative to ``root``."""
    parts = node.module.split(".") if node.module else []
    if node.level == 0:
        return parts
    package = file.parent
    for _ in range(node.level - 1):
        package = package.parent
    if not package.is_relative_to(root):
        return None
    return [*package.relative_to(root).parts, *parts]


def _module_files(root: Path, parts: list[str]) -> list[Path]:
    """The files that importing ``parts`` from ``root`` executes: packages' ``__init__``
    on the way, then the module itself."""
    out: list[Path] = []
    folder = root
    for i, part in enumerate(parts):
        if not part:
            return out
        module, package = folder / f"{part}.py", folder / part / "__init__.py"
        if i == len(parts) - 1 and module.is_file():
            out.append(module)
        elif package.is_file():
            out.append(package)
        elif not (folder / part).is_dir():
            return out
        folder = folder / part
    return out
