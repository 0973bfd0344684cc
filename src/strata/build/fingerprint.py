"""Program fingerprints: a hash of a transform's normalised code and its declaration.

The code part is the function's AST (docstrings, comments, formatting, decorators and
its own name do not count) with everything it references inside the pipeline folder:
module-level helper functions, classes and whole helper modules, hashed the same way,
and plain constants by value. Library code outside the folder counts by name only, so
upgrading a library does not make transforms out of date. The files touched are kept,
so a program version can be run again from what was stored.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from strata.errors import InvalidArgument

_CONSTANTS = (type(None), bool, int, float, str, bytes)


@dataclass(frozen=True)
class ProgramCode:
    """A transform function's code as the fingerprint sees it."""

    code_hash: str
    files: dict[str, str]
    source: str
    module_path: str
    line: int


def program_fingerprint(
    code_hash: str, declaration: Mapping[str, Any], version: str | None = None
) -> str:
    """sha256 of the code (or the explicit ``version``, which replaces it) and the
    declaration."""
    doc = {"code": f"version:{version}" if version is not None else code_hash}
    doc["declaration"] = declaration  # type: ignore[assignment]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def program_code(func: Callable[..., Any], root: Path) -> ProgramCode:
    """Normalise ``func`` and what it references under ``root``; hash it all."""
    root = root.resolve()
    walk = _Walk(root)
    main = walk.function(func)
    doc = {"main": main, "refs": dict(sorted(walk.refs.items()))}
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()
    file = _file_of(func)
    assert file is not None
    rel = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
    walk.files.setdefault(rel, _read(file))
    return ProgramCode(
        digest,
        dict(sorted(walk.files.items())),
        textwrap.dedent(_parsed(func)[0]),
        rel,
        func.__code__.co_firstlineno,
    )


class _Walk:
    """One fingerprint's walk: what was hashed, by name, and the files it came from."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.refs: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self.seen: set[int] = set()

    def function(self, func: Callable[..., Any]) -> str:
        self.seen.add(id(func))
        names, dump = _code_of(func)
        code = getattr(func, "__code__", None)
        closure = getattr(func, "__closure__", None) or ()
        if code is not None:
            for name, cell in zip(code.co_freevars, closure, strict=False):
                try:
                    self._reference(f"{func.__qualname__}:{name}", cell.cell_contents)
                except ValueError:  # an empty cell: the variable was never bound
                    continue
        scope = getattr(func, "__globals__", {})
        for name in sorted(names):
            if name in scope:
                self._reference(name, scope[name])
        return dump

    def _reference(self, name: str, value: Any) -> None:
        if id(value) in self.seen:
            return
        constant = _constant(value)
        if constant is not None:
            self.refs[name] = constant
            return
        file = _file_of(value)
        if file is None or not file.is_relative_to(self.root):
            return  # library code counts by name only
        self.seen.add(id(value))
        self.files.setdefault(file.relative_to(self.root).as_posix(), _read(file))
        if isinstance(value, types.ModuleType):
            self.refs[name] = ast.dump(_normalised(_read(file)))
        elif isinstance(value, types.FunctionType):
            self.refs[name] = self.function(value)
        else:
            self.refs[name] = _parsed(value)[2]


def _code_of(func: Callable[..., Any]) -> tuple[frozenset[str], str]:
    """The names a function's code loads, and the dump of its normalised tree."""
    _, tree, dump = _parsed(func)
    key = getattr(func, "__code__", None)
    names = _NAMES.get(key) if key is not None else None
    if names is None:
        names = frozenset(_names(tree))
        if key is not None:
            _NAMES[key] = names
    return names, dump


_NAMES: dict[Any, frozenset[str]] = {}


# Keyed by code object (equal code, equal source): a factory that registers one function
# thousands of times has it read and parsed once. Bounded, for workers that reload.
_CODE_CACHE: dict[Any, tuple[str, ast.AST, str]] = {}


def _parsed(func: Callable[..., Any]) -> tuple[str, ast.AST, str]:
    """A function's source, normalised tree and dump."""
    key = getattr(func, "__code__", None)  # classes have none: not cached
    found = _CODE_CACHE.get(key) if key is not None else None
    if found is None:
        source = _source(func)
        tree = _normalised(source)
        found = (source, tree, ast.dump(tree, include_attributes=False))
        if key is not None:
            if len(_CODE_CACHE) > 4096:
                _CODE_CACHE.clear()
                _NAMES.clear()
            _CODE_CACHE[key] = found
    return found


def _read(path: Path) -> str:
    stat = path.stat()
    return _read_cached(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=1024)
def _read_cached(path: Path, mtime: int, size: int) -> str:
    return path.read_text(encoding="utf-8")


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError) as exc:
        name = getattr(obj, "__qualname__", repr(obj))
        raise InvalidArgument(
            f"cannot read the source of {name}; define transforms and their helpers in a "
            "module file",
            name=name,
        ) from exc


def _file_of(value: Any) -> Path | None:
    if isinstance(value, types.FunctionType):
        return _resolved(value.__code__.co_filename)
    if not isinstance(value, types.ModuleType | type):
        return None
    try:
        path = inspect.getsourcefile(value)
    except TypeError:
        return None
    return _resolved(path) if path else None


@lru_cache(maxsize=4096)
def _resolved(path: str) -> Path | None:
    found = Path(path)
    return found.resolve() if found.exists() else None


def _constant(value: Any) -> str | None:
    """A stable text for plain constants; None for anything else."""
    if isinstance(value, _CONSTANTS):
        return repr(value)
    if isinstance(value, tuple | list | frozenset | set):
        found = [_constant(v) for v in value]
        parts = [p for p in found if p is not None]
        if len(parts) != len(found):
            return None
        items = sorted(parts) if isinstance(value, frozenset | set) else parts
        return f"{type(value).__name__}({','.join(str(p) for p in items)})"
    if isinstance(value, dict):
        keys = [_constant(k) for k in value]
        values = [_constant(v) for v in value.values()]
        if None in keys or None in values:
            return None
        return (
            "dict(" + ",".join(sorted(f"{k}:{v}" for k, v in zip(keys, values, strict=True))) + ")"
        )
    return None


@lru_cache(maxsize=4096)
def _normalised(source: str) -> ast.AST:
    """The AST without docstrings, decorators or the definition's own name."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    top = tree.body[0] if isinstance(tree, ast.Module) and len(tree.body) == 1 else None
    if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        top.decorator_list = []
        top.name = "_"
    return tree


def _names(tree: ast.AST) -> set[str]:
    """Names the code loads (the first name of attribute chains included)."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
