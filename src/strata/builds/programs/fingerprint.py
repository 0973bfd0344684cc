"""Program fingerprints: a hash of a transform's normalised code and its declaration.

The code part is the function's AST (docstrings, comments, formatting, decorators and
its own name do not count) with everything it references inside the pipeline folder:
helper functions, classes and whole helper modules, hashed the same way with their own
references, and plain constants (also through closures and defaults) by value. Library
code outside the folder counts by name only, so upgrading a library does not make
transforms out of date. The files touched are kept, so a program version can be run
again from what was stored.

The hash input is a list of entries, the function's first, each its normalised dump and
its references by name: a constant's value, ``object:<entry>`` for pipeline code or
``name`` for anything else. Entries point at each other by position, so recursion ends
and a name means what it means in its own scope.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
import sys
import sysconfig
import textwrap
import tokenize
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata.builds.programs.syntax import parse
from strata.errors import InvalidArgument

_Chain = tuple[str, ...]
_MISSING = object()
_SCALARS = (type(None), bool, int, float, str, bytes)


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
    declaration, as canonical JSON."""
    code = code_hash if version is None else version
    return _sha256({"code": code, "declaration": dict(declaration)})


Stamps = dict[str, tuple[str, int, int]]


def program_code(func: Callable[..., Any], root: Path, stamps: Stamps | None = None) -> ProgramCode:
    """Normalise ``func`` and what it references under ``root``; hash it all.

    ``stamps`` is a table of file states to share between the fingerprints of one load of
    the pipelines, so each file is looked at once per load (by default, once per call)."""
    if not isinstance(func, types.FunctionType):
        raise InvalidArgument(
            f"{func!r} is not a Python function; define transforms with def in a module file",
            name=repr(func),
        )
    file = _resolved(func.__code__.co_filename)
    if file is None:
        raise _no_source(func.__code__, None)
    walk = _Walk(_real_dir(root), {} if stamps is None else stamps)
    walk.visit(func, main=True)
    parts = _code_parts(func.__code__, True, walk.stamp(func.__code__.co_filename))
    rel = _relative(walk.root, file) or file.name  # defined outside the root: by file name
    files = {rel: walk.read(file), **walk.files}
    return ProgramCode(
        _entries_hash(walk.entries),
        dict(sorted(files.items())),
        parts.text,
        rel,
        parts.line,
    )


@dataclass(frozen=True)
class _Parts:
    """A definition's source, normalised dump, the names it loads and its first line
    (the first decorator's, as ``co_firstlineno``: where ``source`` starts)."""

    source: str
    dump: str
    chains: frozenset[_Chain]
    line: int

    @functools.cached_property
    def text(self) -> str:
        """``source`` dedented, as a program version stores it."""
        return textwrap.dedent(self.source)


class _Walk:
    """One fingerprint's walk over the pipeline code a function reaches."""

    def __init__(self, root: Path, stamps: Stamps) -> None:
        self.root = root
        self.entries: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}
        self._at: dict[int, int] = {}
        self._keep: list[object] = []  # ids stay unique while the walk holds the objects
        self._stamps = stamps

    def visit(self, obj: object, main: bool = False) -> int:
        """The position of ``obj``'s entry, described on first sight."""
        if id(obj) in self._at:
            return self._at[id(obj)]
        at = self._at[id(obj)] = len(self.entries)
        self._keep.append(obj)
        self.entries.append({})  # taken before describing, so a cycle points back here
        self.entries[at] = self._describe(obj, main)
        return at

    def contribution(self, value: object) -> str:
        """What a referenced value adds to the hash."""
        constant = _constant(value)
        if constant is not None:
            return f"const:{constant}"
        target = self._pipeline_object(value)
        return "name" if target is None else f"object:{self.visit(target)}"

    def stamp(self, filename: str) -> tuple[str, int, int]:
        """A file's name and state, read once per table of stamps."""
        found = self._stamps.get(filename)
        if found is None:
            found = self._stamps[filename] = _stamp(filename)
        return found

    def read(self, file: Path) -> str:
        _, mtime, size = self.stamp(str(file))
        return _read(file, mtime, size)

    def _describe(self, obj: object, main: bool) -> dict[str, Any]:
        if isinstance(obj, functools.partial):
            refs = {"func": self.contribution(obj.func)}
            refs.update((f"arg:{i}", self.contribution(a)) for i, a in enumerate(obj.args))
            refs.update((f"kwarg:{k}", self.contribution(v)) for k, v in obj.keywords.items())
            return {"code": "functools.partial", "refs": dict(sorted(refs.items()))}
        file = _file_of(obj)
        assert file is not None  # only objects with a file under the root get here
        text = self._keep_file(file)
        if isinstance(obj, types.FunctionType):
            parts = _code_parts(obj.__code__, main, self.stamp(obj.__code__.co_filename))
            return self._entry(parts.dump, parts.chains, obj.__globals__, _carried(obj))
        if isinstance(obj, type):
            found = _class_parts(obj, self.stamp(str(file)))
            dump, chains = (found.dump, found.chains) if found else _module_parts(text, file.name)
            return self._entry(dump, chains, _class_scope(obj), {})
        assert isinstance(obj, types.ModuleType)
        dump, chains = _module_parts(text, file.name)
        return self._entry(dump, chains, vars(obj), {})

    def _entry(
        self,
        dump: str,
        chains: frozenset[_Chain],
        scope: Mapping[str, Any],
        carried: Mapping[str, object],
    ) -> dict[str, Any]:
        refs = {name: self.contribution(value) for name, value in carried.items()}
        for chain in sorted(chains):
            value = scope.get(chain[0], _MISSING)
            if chain[0] in carried or value is _MISSING:
                continue  # closure variables are done; builtins count by name
            refs[chain[0]] = self.contribution(value)
            # `import pkg.sub` binds `pkg` only: follow the chain through pipeline modules.
            for i in range(1, len(chain)):
                if not isinstance(value, types.ModuleType) or self._inside(value) is None:
                    break
                value = vars(value).get(chain[i], _MISSING)
                if not isinstance(value, types.ModuleType):
                    break
                refs[".".join(chain[: i + 1])] = self.contribution(value)
        return {"code": dump, "refs": dict(sorted(refs.items()))}

    def _pipeline_object(self, value: object) -> object | None:
        """The pipeline function, class or module ``value`` is (or wraps), if any."""
        if isinstance(value, functools.partial):
            return value
        for candidate in (value, _unwrapped(value)):
            if self._inside(candidate) is not None:
                return candidate
        return None

    def _inside(self, obj: object) -> str | None:
        file = _file_of(obj)
        return None if file is None else _relative(self.root, file)

    def _keep_file(self, file: Path) -> str:
        text = self.read(file)
        rel = _relative(self.root, file)
        if rel is not None:
            self.files[rel] = text
        return text


@functools.lru_cache(maxsize=4096)
def _code_parts(code: types.CodeType, main: bool, stamp: tuple[str, int, int]) -> _Parts:
    """Cached by code object and file state: a factory's many functions parse once."""
    try:
        source = inspect.getsource(code)
    except (OSError, TypeError) as exc:
        raise _no_source(code, exc) from exc
    tree = _parse(source, code.co_qualname)
    node: ast.AST = tree
    if code.co_name == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        node = lambdas[0] if len(lambdas) == 1 else tree
    top = tree.body[0] if len(tree.body) == 1 else None
    if main and isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) and node is tree:
        top.decorator_list = []
        top.name = "_"
    chains = frozenset(c for c in _chains(node) if _global_in(c[0], code))
    return _Parts(source, ast.dump(node, include_attributes=False), chains, code.co_firstlineno)


@functools.lru_cache(maxsize=1024)
def _class_parts(cls: type, stamp: tuple[str, int, int]) -> _Parts | None:
    """None for a class made by a call (namedtuple): its module's text says how."""
    try:
        source = inspect.getsource(cls)  # reads the whole module file: cached
    except (OSError, TypeError):
        return None
    tree = _parse(source, cls.__qualname__)
    return _Parts(source, ast.dump(tree, include_attributes=False), _chains(tree), 0)


@functools.lru_cache(maxsize=256)
def _module_parts(text: str, name: str) -> tuple[str, frozenset[_Chain]]:
    tree = _parse(text, name)
    return ast.dump(tree, include_attributes=False), _chains(tree)


def _parse(source: str, name: str) -> ast.Module:
    """The source's tree without docstrings; an indented one parses in place."""
    try:
        tree = parse(textwrap.dedent(source))
    except SyntaxError:
        # dedent stops at a less indented line inside a string: parse it as a block.
        try:
            block = parse("if 1:\n" + source).body[0]
        except SyntaxError as exc:
            raise InvalidArgument(
                f"cannot parse the source of {name}; define it with def in a module file",
                name=name,
            ) from exc
        assert isinstance(block, ast.If)
        tree = ast.Module(body=block.body, type_ignores=[])
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def _chains(tree: ast.AST) -> frozenset[_Chain]:
    """Names the code loads, with the attribute chains hanging off them."""
    found: set[_Chain] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.add((node.id,))
        elif isinstance(node, ast.Attribute):
            parts, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                found.add((value.id, *reversed(parts)))
    return frozenset(found)


def _global_in(name: str, code: types.CodeType) -> bool:
    """False for a name only ever local: a local shadowing a global does not count it."""
    local, loaded = _scopes(code)
    return name not in local or name in loaded


@functools.lru_cache(maxsize=4096)
def _scopes(code: types.CodeType) -> tuple[frozenset[str], frozenset[str]]:
    """Local names and non-local names of ``code`` and the code nested in it."""
    local = {*code.co_varnames, *code.co_cellvars, *code.co_freevars}
    loaded = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner_local, inner_loaded = _scopes(const)
            local |= inner_local
            loaded |= inner_loaded
    return frozenset(local), frozenset(loaded)


def _carried(func: types.FunctionType) -> dict[str, object]:
    """Values a function carries with it: closure cells and default arguments."""
    out: dict[str, object] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable was never bound
            continue
    out.update((f"default:{i}", v) for i, v in enumerate(func.__defaults__ or ()))
    out.update((f"default:{k}", v) for k, v in (func.__kwdefaults__ or {}).items())
    return out


def _class_scope(cls: type) -> Mapping[str, Any]:
    """The globals a class's code sees (its methods', or its module's)."""
    for method in _methods(cls):
        return method.__globals__
    module = sys.modules.get(cls.__module__)
    return vars(module) if module is not None else {}


def _methods(cls: type) -> list[types.FunctionType]:
    """Functions defined in the class body (not generated or library ones put there)."""
    out = []
    for attr in vars(cls).values():
        inner = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
        inner = inner.fget if isinstance(inner, property) else inner
        if not isinstance(inner, types.FunctionType):
            continue
        if inner.__code__.co_qualname.startswith(f"{cls.__qualname__}."):
            out.append(inner)
    return out


def _unwrapped(value: object) -> object:
    """What a decorator's wrapper (``functools.wraps``, ``lru_cache``, ``udf``) wraps."""
    seen = {id(value)}
    while callable(value):
        try:
            inner = vars(value).get("__wrapped__")
        except TypeError:  # no __dict__
            break
        if inner is None or id(inner) in seen:
            break
        seen.add(id(inner))
        value = inner
    return value


def _file_of(obj: object) -> Path | None:
    """The source file of a function, class or module; None for anything else."""
    if isinstance(obj, types.FunctionType):
        return _resolved(obj.__code__.co_filename)
    if isinstance(obj, types.ModuleType):
        path = getattr(obj, "__file__", None)
        return _resolved(path) if isinstance(path, str) and path.endswith(".py") else None
    if isinstance(obj, type):
        methods = _methods(obj)
        if methods:
            return _resolved(methods[0].__code__.co_filename)
        module = sys.modules.get(obj.__module__)
        return _file_of(module) if module is not None else None
    return None


# The strata package's folder (this module is strata/builds/programs/fingerprint.py).
_STRATA = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=64)
def _real_dir(root: Path) -> Path:
    """``root`` resolved once: a pipeline of thousands of transforms asks for each."""
    return root.resolve()


@functools.lru_cache(maxsize=4096)
def _resolved(path: str) -> Path | None:
    found = Path(path)
    return found.resolve() if found.is_file() else None


@functools.cache  # sysconfig and resolve cost about 0.25 ms a call
def _library_dirs() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    dirs = [Path(paths[k]).resolve() for k in ("stdlib", "platstdlib") if k in paths]
    return (*dirs, _STRATA)  # strata itself is a library too


@functools.lru_cache(maxsize=4096)
def _relative(root: Path, file: Path) -> str | None:
    """``file`` relative to ``root``; None outside it or for installed or standard
    library code (a .venv in the folder)."""
    if not file.is_relative_to(root) or is_library_file(file):
        return None
    return file.relative_to(root).as_posix()


def is_library_file(file: Path) -> bool:
    """True for installed or standard library code (and Strata's own)."""
    if {"site-packages", "dist-packages"} & set(file.parts):
        return True
    return any(file.is_relative_to(d) for d in _library_dirs())


def _constant(value: object, depth: int = 0) -> str | None:
    """A stable text for plain constants; None for anything else."""
    if depth > 32:  # a container holding itself is no constant
        return None
    if type(value) in _SCALARS:
        return repr(value)
    if type(value) in (tuple, list, set, frozenset):
        assert isinstance(value, tuple | list | set | frozenset)
        parts = [_constant(v, depth + 1) for v in value]
        if None in parts:
            return None
        texts = [p for p in parts if p is not None]
        items = sorted(texts) if isinstance(value, set | frozenset) else texts
        return f"{type(value).__name__}({','.join(items)})"
    if type(value) is dict:
        assert isinstance(value, dict)
        pairs = [(_constant(k, depth + 1), _constant(v, depth + 1)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "dict(" + ",".join(sorted(f"{k}:{v}" for k, v in pairs)) + ")"
    return None


def _stamp(filename: str) -> tuple[str, int, int]:
    """A file's name and state, so cached parses of an edited file are not reused."""
    try:
        stat = os.stat(filename)
    except OSError:
        return (filename, -1, -1)
    return (filename, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _read(path: Path, mtime: int, size: int) -> str:
    with tokenize.open(path) as f:  # honours a coding cookie, as the import did
        return f.read()


def _no_source(code: types.CodeType, exc: BaseException | None) -> InvalidArgument:
    where = f"{code.co_filename}:{code.co_firstlineno}"
    reason = f" ({exc})" if exc is not None else ""
    return InvalidArgument(
        f"cannot read the source of {code.co_qualname} ({where}){reason}; define transforms "
        "and their helpers in a module file",
        name=code.co_qualname,
    )


def _entries_hash(entries: list[dict[str, Any]]) -> str:
    """sha256 of ``{"entries": entries}`` as canonical JSON."""
    return _hash_of_entries(tuple((e["code"], tuple(e["refs"].items())) for e in entries))


# Keyed by the entries' content: the transforms a factory makes from one function share
# one, and a code dump is the same string object each time, so a look-up is cheap.
@functools.lru_cache(maxsize=4096)
def _hash_of_entries(entries: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> str:
    return _sha256({"entries": [{"code": code, "refs": dict(refs)} for code, refs in entries]})


def _sha256(doc: Mapping[str, Any]) -> str:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
